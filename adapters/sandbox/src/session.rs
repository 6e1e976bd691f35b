//! [`Session`]: one streamed render in a child, from its plan to its answer.
use crate::deadline::Deadline;
use crate::pool::{Inner, Warm};
use crate::protocol::{self, ANALYSIS, DATA, END, HEADER, OK, PIECE, PLAN, ROWS, SOURCE};
use bytes::Bytes;
use reporter_child_confine::ReapedChild;
use reporter_ports::ports::{RenderContext, RenderError, RunnerError, StreamPlan};
use std::io;
use std::sync::Arc;
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::{OwnedSemaphorePermit, mpsc};
use tokio::task::JoinHandle;
use tokio::time::Duration;

/// Largest plan frame a child may send.
const MAX_PLAN: u64 = 64 * 1024;

/// What a child answers before it reads its context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Opening {
    /// Its analysis ([`ANALYSIS`]), within this bound (the request's own bound also holds).
    pub analysis: Option<Duration>,
    /// Its plan ([`PLAN`]): a streamed render.
    pub plan: bool,
}

/// How the child's opening went.
enum Opened {
    /// It answered what it owed.
    Ready,
    /// It answered something else (its last frame), or the pipes failed.
    Early(io::Result<Answer>),
    /// Its analysis passed its bound.
    Late,
}

/// The child's last frame: its kind and payload.
type Answer = (u8, Vec<u8>);

/// Output pieces read from the child and not yet taken by the session's reader
/// ([`Session::take_output`]); past them, the child waits.
const PIECES_QUEUED: usize = 4;

/// Size asked for a streamed render's input and output pipes (the Linux default is 64 KiB;
/// unprivileged processes may ask up to `/proc/sys/fs/pipe-max-size`, 1 MiB by default). The
/// rows then queue a few chunks deep, and the output a few pieces deep: the query runs ahead
/// of the render, and the render ahead of the reader, instead of each waking the other for
/// every 64 KiB. Only a session's pipes are widened (the size counts against the user's
/// `pipe-user-pages-soft` while the child lives; its pages are only taken as data waits).
pub const PIPE_BYTES: usize = 1024 * 1024;

/// Widens a streamed render's pipes to [`PIPE_BYTES`]; best effort: a narrower pipe only
/// means the writer waits more often.
fn widen_pipes(stdin: &ChildStdin, stdout: &tokio::process::ChildStdout) {
    for e in [
        rustix::pipe::fcntl_setpipe_size(stdin, PIPE_BYTES).err(),
        rustix::pipe::fcntl_setpipe_size(stdout, PIPE_BYTES).err(),
    ]
    .into_iter()
    .flatten()
    {
        tracing::debug!(error = %e, "a sandbox pipe keeps its default size");
    }
}

/// A streamed render under way: the child has parsed the template and named the table it
/// takes as a stream ([`Self::plan`]); the context, then that table's rows, then the end
/// follow. The child's answer is read from the context on (before it the child only reads),
/// so a child that answers early (a template error, or a template done before the last row)
/// never waits on a parent that is still writing. Dropping a session kills its child and
/// frees its slot.
pub struct Session {
    inner: Arc<Inner>,
    _permit: OwnedSemaphorePermit,
    child: ReapedChild,
    stdin: ChildStdin,
    stderr: Option<JoinHandle<String>>,
    /// The child's output until its answer is read ([`Self::read_from_now`]).
    stdout: Option<ChildStdout>,
    /// Where the output's pieces go, once taken ([`Self::take_output`]).
    pieces: Option<mpsc::Sender<Bytes>>,
    answer: Option<JoinHandle<io::Result<Answer>>>,
    plan: Option<StreamPlan>,
    /// The analysis the child answered before its context, until taken.
    analysis: Option<Vec<u8>>,
    /// The bound: from the start, then from the context's arrival.
    deadline: Deadline,
    /// The child still reads rows (false once a write found it gone or answered).
    taking_rows: bool,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("plan", &self.plan)
            .field("taking_rows", &self.taking_rows)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Sends the header and the source and reads what the child answers before its context
    /// ([`Opening`]): the analysis, the plan. A template that does not parse answers its error
    /// here.
    pub(crate) async fn start(
        inner: Arc<Inner>,
        permit: OwnedSemaphorePermit,
        warm: Warm,
        request: (&[u8], &[u8]),
        opening: Opening,
    ) -> Result<Self, RunnerError> {
        let Warm {
            mut child,
            mut stdin,
            mut stdout,
            stderr,
            ..
        } = warm;
        let (header, source) = request;
        if opening.plan {
            widen_pipes(&stdin, &stdout);
        }
        let pid = child.id();
        let deadline = Deadline::start(pid, inner.config.time_bound);
        let mut analysis = None;
        let mut plan = None;
        let talk = async {
            let sent = async {
                protocol::write_frame_async(&mut stdin, HEADER, header).await?;
                protocol::write_frame_async(&mut stdin, SOURCE, source).await
            };
            if let Err(e) = sent.await {
                return Opened::Early(Err(e));
            }
            if let Some(bound) = opening.analysis {
                let read = protocol::read_frame_async(&mut stdout, inner.max_answer());
                match Deadline::start(pid, bound).run(read).await {
                    Some(Ok((ANALYSIS, bytes))) => analysis = Some(bytes),
                    Some(other) => return Opened::Early(other),
                    None => return Opened::Late,
                }
            }
            if opening.plan {
                match protocol::read_frame_async(&mut stdout, MAX_PLAN).await {
                    Ok((PLAN, bytes)) => plan = Some(bytes),
                    other => return Opened::Early(other),
                }
            }
            Opened::Ready
        };
        let answer = match deadline.run(talk).await {
            Some(Opened::Ready) => None,
            // An `OK` before the context is a child that skipped what it owed.
            Some(Opened::Early(Ok((OK, _)))) => {
                Some(Some(Err(io::Error::other("answered before its context"))))
            }
            Some(Opened::Early(answer)) => Some(Some(answer)),
            Some(Opened::Late) | None => Some(None),
        };
        if let Some(answer) = answer {
            return Err(match inner.settle(&mut child, stderr, answer).await {
                Err(e) => e,
                Ok(_) => RenderError::Crashed("answered before its context".into()).into(),
            });
        }
        let plan = match plan {
            Some(bytes) => serde_json::from_slice::<Option<StreamPlan>>(&bytes).map_err(|e| {
                RenderError::Crashed(format!("unreadable plan from the child: {e}"))
            })?,
            None => None,
        };
        Ok(Self {
            inner,
            _permit: permit,
            child,
            stdin,
            stderr: Some(stderr),
            stdout: Some(stdout),
            pieces: None,
            answer: None,
            plan,
            analysis,
            deadline,
            // Only a streamed render reads rows (and the end of them).
            taking_rows: opening.plan,
        })
    }

    /// The analysis the child answered first (once).
    pub fn take_analysis(&mut self) -> Option<Vec<u8>> {
        self.analysis.take()
    }

    /// The table the child takes as a stream, if any.
    pub fn plan(&self) -> Option<&StreamPlan> {
        self.plan.as_ref()
    }

    /// Takes the output's pieces as the child hands them out (a queue of [`PIECES_QUEUED`]):
    /// [`Self::finish`] then answers only what follows the last piece. `None` once the answer
    /// is being read (after [`Self::send_context`]). The pieces are checked to be UTF-8 and
    /// count against the output bound as before; the queue ends when the answer is read or
    /// the session dropped.
    pub fn take_output(&mut self) -> Option<mpsc::Receiver<Bytes>> {
        self.stdout.as_ref()?;
        let (tx, rx) = mpsc::channel(PIECES_QUEUED);
        self.pieces = Some(tx);
        Some(rx)
    }

    /// Starts reading the child's answer (once).
    fn read_from_now(&mut self) {
        if let Some(mut stdout) = self.stdout.take() {
            let max = self.inner.max_answer();
            let pieces = self.pieces.take();
            self.answer = Some(tokio::spawn(async move {
                read_answer(&mut stdout, max, pieces).await
            }));
        }
    }

    /// Sends the context; the bound counts from here.
    pub async fn send_context(&mut self, context: &RenderContext) -> Result<(), RunnerError> {
        self.read_from_now();
        self.deadline = Deadline::start(self.child.id(), self.inner.config.time_bound);
        let write = protocol::write_frame_parts_async(&mut self.stdin, DATA, context.parts());
        let done = self.deadline.run(write).await;
        self.written(done).await?;
        Ok(())
    }

    /// Sends one chunk of rows (a JSON array). `Ok(false)` once the child takes no more.
    pub async fn send_rows(&mut self, chunk: &[u8]) -> Result<bool, RunnerError> {
        if !self.taking_rows {
            return Ok(false);
        }
        let write = protocol::write_frame_async(&mut self.stdin, ROWS, chunk);
        let done = self.deadline.run(write).await;
        self.written(done).await
    }

    /// Ends the rows (when the child still reads them) and reads the answer.
    pub async fn finish(mut self) -> Result<Vec<u8>, RunnerError> {
        self.read_from_now();
        if self.taking_rows {
            let end = protocol::write_frame_async(&mut self.stdin, END, b"");
            let done = self.deadline.run(end).await;
            self.written(done).await?;
        }
        let answer = match self.answer.as_mut() {
            Some(reading) => match self.deadline.run(reading).await {
                Some(Ok(read)) => Some(read),
                Some(Err(e)) => Some(Err(io::Error::other(e))),
                None => None,
            },
            None => Some(Err(io::Error::other("the answer was never read"))),
        };
        let stderr = self
            .stderr
            .take()
            .unwrap_or_else(|| tokio::spawn(async { String::new() }));
        self.inner.settle(&mut self.child, stderr, answer).await
    }

    /// The outcome of a write (`None`: the bound passed first, which kills the child: a
    /// timeout); a failed write means the child stopped reading (its answer says why).
    async fn written(&mut self, write: Option<io::Result<()>>) -> Result<bool, RunnerError> {
        match write {
            Some(Ok(())) => Ok(true),
            Some(Err(_)) => {
                self.taking_rows = false;
                Ok(false)
            }
            None => {
                let _ = self.child.start_kill();
                let _ = self.child.wait().await;
                tracing::warn!(
                    pool = self.inner.config.name,
                    timeout = ?self.inner.config.time_bound,
                    "a streamed render passed its deadline; the child was killed"
                );
                Err(RenderError::Timeout.into())
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(reading) = &self.answer {
            reading.abort();
        }
        let _ = self.child.start_kill();
    }
}

/// The child's answer: the output's pieces ([`PIECE`]) joined with the [`OK`] frame's
/// payload, or, when `pieces` takes them, sent there (UTF-8 checked) and the payload alone;
/// at most `max` bytes in all. Any other last frame is answered as it is (an error discards
/// the pieces).
async fn read_answer(
    stdout: &mut (impl tokio::io::AsyncRead + Unpin),
    max: u64,
    pieces: Option<mpsc::Sender<Bytes>>,
) -> io::Result<Answer> {
    let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_owned());
    let mut output: Vec<u8> = Vec::new();
    let mut handed_out: u64 = 0;
    loop {
        let left = max.saturating_sub(handed_out);
        let (kind, payload) = protocol::read_frame_async(stdout, left).await?;
        if kind != PIECE {
            if kind != OK || output.is_empty() {
                return Ok((kind, payload));
            }
            output.extend_from_slice(&payload);
            return Ok((OK, output));
        }
        // A piece ends a line: an empty one is a child that sends frames without output.
        if payload.is_empty() {
            return Err(invalid("an empty output piece"));
        }
        handed_out += payload.len() as u64;
        match &pieces {
            Some(queue) => {
                if std::str::from_utf8(&payload).is_err() {
                    return Err(invalid("an output piece that is not UTF-8"));
                }
                // A reader that went away no longer wants the output: it is only counted.
                let _ = queue.send(Bytes::from(payload)).await;
            }
            None if output.is_empty() => output = payload,
            None => output.extend_from_slice(&payload),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(list: &[(u8, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        for (kind, payload) in list {
            protocol::write_frame(&mut out, *kind, payload).expect("a frame in memory");
        }
        out
    }

    async fn read(
        bytes: Vec<u8>,
        max: u64,
        pieces: Option<mpsc::Sender<Bytes>>,
    ) -> io::Result<(u8, Vec<u8>)> {
        read_answer(&mut bytes.as_slice(), max, pieces).await
    }

    #[tokio::test]
    async fn pieces_are_joined_with_the_answer_or_queued_apart_from_it() {
        let answer = frames(&[(PIECE, b"a\n"), (PIECE, b"b\n"), (OK, b"end")]);
        let joined = read(answer.clone(), 100, None).await.expect("an answer");
        assert_eq!(joined, (OK, b"a\nb\nend".to_vec()));
        let (tx, mut rx) = mpsc::channel(PIECES_QUEUED);
        let tail = read(answer, 100, Some(tx)).await.expect("an answer");
        assert_eq!(tail, (OK, b"end".to_vec()));
        assert_eq!(rx.recv().await.as_deref(), Some(&b"a\n"[..]));
        assert_eq!(rx.recv().await.as_deref(), Some(&b"b\n"[..]));
        assert_eq!(rx.recv().await, None, "the queue ends with the answer");
    }

    #[tokio::test]
    async fn queued_pieces_are_bounded_checked_and_dropped_with_an_error() {
        // The bound counts the queued pieces.
        let answer = frames(&[(PIECE, b"0123456789\n"), (OK, b"0123456789")]);
        let (tx, _rx) = mpsc::channel(PIECES_QUEUED);
        assert!(read(answer, 15, Some(tx)).await.is_err());
        // A piece that is not UTF-8 ends the answer as invalid.
        let answer = frames(&[(PIECE, b"\xff\xfe\n"), (OK, b"")]);
        let (tx, _rx) = mpsc::channel(PIECES_QUEUED);
        let e = read(answer, 100, Some(tx)).await.expect_err("refused");
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        // An error answer is answered as it is: the pieces before it are not an output.
        let answer = frames(&[(PIECE, b"a\n"), (protocol::ERROR, b"{}")]);
        let (tx, _rx) = mpsc::channel(PIECES_QUEUED);
        let got = read(answer, 100, Some(tx)).await.expect("an answer");
        assert_eq!(got.0, protocol::ERROR);
        // A reader gone away: the pieces are counted, not queued, and the answer still read.
        let answer = frames(&[(PIECE, b"a\n"), (PIECE, b"b\n"), (OK, b"end")]);
        let (tx, rx) = mpsc::channel(1);
        drop(rx);
        assert_eq!(
            read(answer, 100, Some(tx)).await.expect("an answer"),
            (OK, b"end".to_vec())
        );
    }
}
