//! The service side of a PDF child: start it, hand it the HTML, read its answer within the
//! deadline (killing it when the deadline passes) and read its death when it gives none.
use crate::child::{CONFINEMENT, FAILED, OVER_MEMORY, PDF, TIMED_OUT};
use crate::child_args::ChildArgs;
use reporter_child_confine::{Confinement, Death, LastReport, ReapedChild, StderrTail};
use reporter_ports::ports::PdfError;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Mutex, mpsc};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::oneshot;
use tokio::time::{Instant, timeout_at};

/// Bytes of a child's stderr kept to explain its death.
const STDERR_TAIL: usize = 4096;
/// Room for the answer's tag on top of the largest document.
const ANSWER_SLACK: u64 = 1024 * 1024;

/// How the service starts a PDF child: an executable and the arguments before the child's
/// own (e.g. `reporter` and `pdf-render`). The program MUST run [`crate::child::run`] with the
/// remaining arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PdfChildCommand {
    /// The executable.
    pub exe: PathBuf,
    /// Arguments before the child's own (the subcommand).
    pub args: Vec<String>,
}

type SpawnRequest = (
    Command,
    oneshot::Sender<std::io::Result<std::process::Child>>,
);

/// Forks children from one dedicated thread that lives as long as the renderer: a child's
/// parent-death signal is tied to the thread that forked it, so it must not be forked from a
/// runtime thread that may exit (a blocking-pool thread) while the child still works.
#[derive(Default)]
pub(crate) struct Spawner(Mutex<Option<mpsc::Sender<SpawnRequest>>>);

impl Spawner {
    async fn spawn(&self, command: Command) -> std::io::Result<std::process::Child> {
        let (tx, rx) = oneshot::channel();
        self.sender()?
            .send((command, tx))
            .map_err(|_| std::io::Error::other("the pdf spawner thread is gone"))?;
        rx.await
            .map_err(|_| std::io::Error::other("the pdf spawner thread is gone"))?
    }

    fn sender(&self) -> std::io::Result<mpsc::Sender<SpawnRequest>> {
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tx) = slot.as_ref() {
            return Ok(tx.clone());
        }
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("pdf-spawner".into())
            .spawn(move || {
                while let Ok((mut command, reply)) = rx.recv() {
                    let _ = reply.send(command.spawn());
                }
            })?;
        *slot = Some(tx.clone());
        Ok(tx)
    }
}

/// Keeps the confinement a child reported in `reports`; logs it when it is the first or
/// differs from the last (a warning names each mechanism that is not enforced).
fn record(reports: &LastReport, confinement: Confinement) {
    if !reports.record(confinement.clone()) {
        return;
    }
    let summary = confinement.summary();
    let missing = confinement.missing();
    if missing.is_empty() {
        tracing::info!(confinement = %summary, "pdf children are confined");
    } else {
        tracing::warn!(confinement = %summary, missing = %missing.join("; "), "pdf children lack part of their confinement");
    }
}

/// Splits the child's confinement report ([`CONFINEMENT`], JSON, newline) from the answer
/// after it; `None` (and the output unchanged) when the output does not start with one.
fn split_report(mut output: Vec<u8>) -> (Option<Confinement>, Vec<u8>) {
    if output.first() != Some(&CONFINEMENT) {
        return (None, output);
    }
    let Some(end) = output.iter().position(|b| *b == b'\n') else {
        return (None, output);
    };
    let Ok(report) = serde_json::from_slice::<Confinement>(&output[1..end]) else {
        return (None, output);
    };
    (Some(report), output.split_off(end + 1))
}

/// One conversion in a fresh child: `args` on its command line, `html` on its stdin; the
/// confinement the child reports is kept in `reports`. The child is killed (and reaped) when
/// `deadline` passes ([`PdfError::Timeout`] of `timeout`) and when this future is dropped.
pub(crate) async fn convert_in_child(
    spawner: &Spawner,
    reports: &LastReport,
    command: &PdfChildCommand,
    args: &ChildArgs,
    html: &[u8],
    deadline: Instant,
    timeout: Duration,
) -> Result<Vec<u8>, PdfError> {
    let mut cmd = Command::new(&command.exe);
    cmd.args(&command.args)
        .args(args.to_args())
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let unavailable = |e: std::io::Error| {
        PdfError::Unavailable(format!(
            "cannot start the pdf child {}: {e}",
            command.exe.display()
        ))
    };
    let mut child = spawner.spawn(cmd).await.map_err(unavailable)?;
    let pipes = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    // Reaped on a thread of its own (killed when dropped), before anything below can fail.
    let mut child = ReapedChild::watch(child, "pdf-reaper").map_err(unavailable)?;
    let (Some(stdin), Some(stdout), Some(stderr)) = pipes else {
        return Err(PdfError::Unavailable(
            "the pdf child's pipes are missing".into(),
        ));
    };
    let mut stdin = ChildStdin::from_std(stdin).map_err(unavailable)?;
    let mut stdout = ChildStdout::from_std(stdout).map_err(unavailable)?;
    let stderr = tokio::spawn(stderr_tail(
        ChildStderr::from_std(stderr).map_err(unavailable)?,
    ));
    let max_answer = args.memory_bytes.saturating_add(ANSWER_SLACK);
    let talk = async {
        // A child that dies while reading breaks the pipe: its death explains more.
        let _ = stdin.write_all(html).await;
        drop(stdin);
        let mut answer = Vec::new();
        let read = (&mut stdout)
            .take(max_answer)
            .read_to_end(&mut answer)
            .await;
        let status = child.wait().await;
        (answer, read, status)
    };
    let Ok((answer, read, status)) = timeout_at(deadline, talk).await else {
        let _ = child.start_kill();
        let _ = child.wait().await;
        stderr.abort();
        tracing::warn!(
            ?timeout,
            "a pdf conversion passed its deadline; its child was killed"
        );
        return Err(PdfError::Timeout(timeout));
    };
    let stderr = stderr.await.unwrap_or_default();
    let (confinement, answer) = split_report(answer);
    if let Some(c) = confinement {
        record(reports, c);
    }
    let status =
        status.map_err(|e| PdfError::Failed(format!("cannot wait for the pdf child: {e}")))?;
    if let Err(e) = read {
        return Err(PdfError::Failed(format!(
            "cannot read the pdf child's answer: {e}"
        )));
    }
    let answered = status.success()
        && matches!(
            answer.first(),
            Some(&(PDF | FAILED | TIMED_OUT | OVER_MEMORY))
        );
    let result = classify(answer, status, &stderr, args.memory_bytes, timeout);
    if !answered && let Err(e) = &result {
        tracing::warn!(error = %e, ?status, %stderr, "a pdf child died without answering");
    }
    result
}

async fn stderr_tail(mut stderr: ChildStderr) -> String {
    let mut tail = StderrTail::new(STDERR_TAIL);
    let mut buf = [0u8; 4096];
    while let Ok(n @ 1..) = stderr.read(&mut buf).await {
        tail.push(&buf[..n]);
    }
    tail.text()
}

/// Reads a child's answer, or its death when it gave none: an allocation refused by its
/// memory limit is [`PdfError::MemoryLimit`], its CPU limit (`SIGXCPU`) a timeout, anything
/// else [`PdfError::Failed`].
pub(crate) fn classify(
    mut answer: Vec<u8>,
    status: ExitStatus,
    stderr: &str,
    memory_bytes: u64,
    timeout: Duration,
) -> Result<Vec<u8>, PdfError> {
    match answer.first().copied() {
        Some(PDF) if status.success() => {
            answer.remove(0);
            return Ok(answer);
        }
        Some(FAILED) if status.success() => {
            return Err(PdfError::Failed(
                String::from_utf8_lossy(&answer[1..]).into_owned(),
            ));
        }
        Some(TIMED_OUT) if status.success() => return Err(PdfError::Timeout(timeout)),
        Some(OVER_MEMORY) if status.success() => return Err(PdfError::MemoryLimit(memory_bytes)),
        _ => {}
    }
    Err(match Death::classify(Some(status), stderr) {
        Death::MemoryLimit => PdfError::MemoryLimit(memory_bytes),
        Death::CpuLimit => PdfError::Timeout(timeout),
        Death::Exited(code) => PdfError::Failed(format!(
            "the pdf child exited with {code} without a document"
        )),
        death => PdfError::Failed(format!("the pdf child died: {death}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    fn exited(code: i32) -> ExitStatus {
        ExitStatus::from_raw(code << 8)
    }

    fn killed(signal: i32) -> ExitStatus {
        ExitStatus::from_raw(signal)
    }

    const T: Duration = Duration::from_secs(3);

    #[test]
    fn answers_are_read_by_their_tag() {
        let mut pdf = vec![PDF];
        pdf.extend_from_slice(b"%PDF-1.7 body");
        assert_eq!(
            classify(pdf, exited(0), "", 5, T),
            Ok(b"%PDF-1.7 body".to_vec())
        );
        let mut failed = vec![FAILED];
        failed.extend_from_slice(b"bad html");
        assert_eq!(
            classify(failed, exited(0), "", 5, T),
            Err(PdfError::Failed("bad html".into()))
        );
        assert_eq!(
            classify(vec![TIMED_OUT], exited(0), "", 5, T),
            Err(PdfError::Timeout(T))
        );
        assert_eq!(
            classify(vec![OVER_MEMORY], exited(0), "", 5, T),
            Err(PdfError::MemoryLimit(5))
        );
    }

    #[test]
    fn the_confinement_report_is_split_from_the_answer() {
        let report = Confinement::as_designed();
        let mut output = vec![CONFINEMENT];
        output.extend(serde_json::to_vec(&report).expect("json"));
        output.push(b'\n');
        output.extend_from_slice(&[PDF, b'%']);
        assert_eq!(split_report(output), (Some(report), vec![PDF, b'%']));
        assert_eq!(split_report(vec![PDF, b'\n']), (None, vec![PDF, b'\n']));
        let cut = vec![CONFINEMENT, b'{'];
        assert_eq!(split_report(cut.clone()), (None, cut));
        let reports = LastReport::default();
        record(&reports, Confinement::as_designed());
        assert_eq!(reports.last(), Some(Confinement::as_designed()));
    }

    #[test]
    fn deaths_are_read_from_the_status_and_stderr() {
        assert_eq!(
            classify(
                vec![],
                killed(6),
                "memory allocation of 4096 bytes failed",
                5,
                T
            ),
            Err(PdfError::MemoryLimit(5))
        );
        // A document cut short by a death is not a document.
        assert_eq!(
            classify(
                vec![PDF, b'%'],
                killed(6),
                "memory allocation of 1 bytes failed",
                5,
                T
            ),
            Err(PdfError::MemoryLimit(5))
        );
        assert_eq!(
            classify(vec![], killed(24), "", 5, T),
            Err(PdfError::Timeout(T))
        );
        assert!(
            matches!(classify(vec![], killed(9), "", 5, T), Err(PdfError::Failed(m)) if m.contains("SIGKILL"))
        );
        assert!(
            matches!(classify(vec![], killed(11), "", 5, T), Err(PdfError::Failed(m)) if m.contains("segmentation"))
        );
        assert!(
            matches!(classify(vec![], exited(2), "pdf child: missing --paper", 5, T), Err(PdfError::Failed(m)) if m.contains("exited with 2"))
        );
    }
}
