//! [`Session`]: one streamed render in a child, from its plan to its answer.
use crate::pool::{Inner, Warm};
use crate::protocol::{self, DATA, END, HEADER, OK, PIECE, PLAN, ROWS, SOURCE};
use reporter_ports::ports::{RenderContext, RenderError, RunnerError, StreamPlan};
use std::io;
use std::sync::Arc;
use tokio::process::{Child, ChildStdin};
use tokio::sync::OwnedSemaphorePermit;
use tokio::task::JoinHandle;
use tokio::time::{Instant, timeout_at};

/// Largest plan frame a child may send.
const MAX_PLAN: u64 = 64 * 1024;

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
/// follow. The child's answer is read from the start, so a child that answers early (a
/// template error, or a template done before the last row) never waits on a parent that is
/// still writing. Dropping a session kills its child and frees its slot.
pub struct Session {
    inner: Arc<Inner>,
    _permit: OwnedSemaphorePermit,
    child: Child,
    stdin: ChildStdin,
    stderr: Option<JoinHandle<String>>,
    answer: JoinHandle<io::Result<(u8, Vec<u8>)>>,
    plan: Option<StreamPlan>,
    /// The wall-clock bound: from the start, then from the context's arrival.
    deadline: Instant,
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
    /// Sends the header and the source and reads the plan. A template that does not parse
    /// answers its error here.
    pub(crate) async fn start(
        inner: Arc<Inner>,
        permit: OwnedSemaphorePermit,
        warm: Warm,
        header: &[u8],
        source: &[u8],
    ) -> Result<Self, RunnerError> {
        let Warm {
            mut child,
            mut stdin,
            mut stdout,
            stderr,
        } = warm;
        widen_pipes(&stdin, &stdout);
        let deadline = Instant::now() + inner.config.wall_timeout;
        let talk = async {
            protocol::write_frame_async(&mut stdin, HEADER, header).await?;
            protocol::write_frame_async(&mut stdin, SOURCE, source).await?;
            protocol::read_frame_async(&mut stdout, MAX_PLAN).await
        };
        let plan = match timeout_at(deadline, talk).await {
            Ok(Ok((PLAN, bytes))) => {
                serde_json::from_slice::<Option<StreamPlan>>(&bytes).map_err(|e| {
                    RenderError::Crashed(format!("unreadable plan from the child: {e}"))
                })?
            }
            other => {
                let answer = other.ok().map(|a| match a {
                    Ok((protocol::OK, _)) => Err(io::Error::other("answered before its plan")),
                    a => a,
                });
                return Err(match inner.settle(&mut child, stderr, answer).await {
                    Err(e) => e,
                    Ok(_) => RenderError::Crashed("answered before its plan".into()).into(),
                });
            }
        };
        let max_answer = inner.max_answer();
        let answer = tokio::spawn(async move { read_answer(&mut stdout, max_answer).await });
        Ok(Self {
            inner,
            _permit: permit,
            child,
            stdin,
            stderr: Some(stderr),
            answer,
            plan,
            deadline,
            taking_rows: true,
        })
    }

    /// The table the child takes as a stream, if any.
    pub fn plan(&self) -> Option<&StreamPlan> {
        self.plan.as_ref()
    }

    /// Sends the context; the wall-clock bound counts from here.
    pub async fn send_context(&mut self, context: &RenderContext) -> Result<(), RunnerError> {
        self.deadline = Instant::now() + self.inner.config.wall_timeout;
        let write = protocol::write_frame_parts_async(&mut self.stdin, DATA, context.parts());
        let done = timeout_at(self.deadline, write).await;
        self.written(done).await?;
        Ok(())
    }

    /// Sends one chunk of rows (a JSON array). `Ok(false)` once the child takes no more.
    pub async fn send_rows(&mut self, chunk: &[u8]) -> Result<bool, RunnerError> {
        if !self.taking_rows {
            return Ok(false);
        }
        let write = protocol::write_frame_async(&mut self.stdin, ROWS, chunk);
        let done = timeout_at(self.deadline, write).await;
        self.written(done).await
    }

    /// Ends the rows (when the child still reads them) and reads the answer.
    pub async fn finish(mut self) -> Result<Vec<u8>, RunnerError> {
        if self.taking_rows {
            let end = protocol::write_frame_async(&mut self.stdin, END, b"");
            let done = timeout_at(self.deadline, end).await;
            self.written(done).await?;
        }
        let answer = match timeout_at(self.deadline, &mut self.answer).await {
            Ok(Ok(read)) => Some(read),
            Ok(Err(e)) => Some(Err(io::Error::other(e))),
            Err(_) => None,
        };
        let stderr = self
            .stderr
            .take()
            .unwrap_or_else(|| tokio::spawn(async { String::new() }));
        self.inner.settle(&mut self.child, stderr, answer).await
    }

    /// The outcome of a write: the deadline passing kills the child (a timeout); a failed
    /// write means the child stopped reading (its answer says why).
    async fn written(
        &mut self,
        write: Result<io::Result<()>, tokio::time::error::Elapsed>,
    ) -> Result<bool, RunnerError> {
        match write {
            Ok(Ok(())) => Ok(true),
            Ok(Err(_)) => {
                self.taking_rows = false;
                Ok(false)
            }
            Err(_) => {
                let _ = self.child.start_kill();
                let _ = self.child.wait().await;
                tracing::warn!(
                    pool = self.inner.config.name,
                    timeout = ?self.inner.config.wall_timeout,
                    "a streamed render passed its deadline; the child was killed"
                );
                Err(RenderError::Timeout.into())
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.answer.abort();
        let _ = self.child.start_kill();
    }
}

/// The child's answer: the output's pieces ([`PIECE`]) joined with the [`OK`] frame's
/// payload (at most `max` bytes in all), or its last frame as it is (an error discards the
/// pieces).
async fn read_answer(
    stdout: &mut (impl tokio::io::AsyncRead + Unpin),
    max: u64,
) -> io::Result<(u8, Vec<u8>)> {
    let mut output: Vec<u8> = Vec::new();
    loop {
        let left = max.saturating_sub(output.len() as u64);
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
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "an empty output piece",
            ));
        }
        if output.is_empty() {
            output = payload;
        } else {
            output.extend_from_slice(&payload);
        }
    }
}
