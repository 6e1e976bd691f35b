//! [`ProcessPool`]: pre-started, confined children; one request each; bounded concurrency;
//! a deadline per request; every used or dead child replaced.
use crate::limits::ChildLimits;
use crate::protocol::{
    self, DATA, ERROR, HEADER, HELLO, Hello, OK, RequestHeader, SOURCE, VERSION, WireError,
};
use reporter_child_confine::{Confinement, Death, LastReport, NICENESS, StderrTail};
use reporter_ports::ports::{RenderContext, RenderError, RunnerError};
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};
use tokio::task::JoinHandle;
use tokio::time::timeout;

use crate::deadline::Deadline;
use crate::session::Opening;
pub use crate::session::Session;
use reporter_child_confine::ReapedChild;

/// Bytes of a child's stderr kept to explain its death.
const STDERR_TAIL: usize = 16 * 1024;
/// How long a child that broke the protocol may take to exit before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// Pause after a failed spawn before the background refill tries again.
const RESPAWN_BACKOFF: Duration = Duration::from_millis(500);

/// Settings of one pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolConfig {
    /// Name in logs (`parse`, `render`).
    pub name: &'static str,
    /// The child executable.
    pub exe: PathBuf,
    /// Arguments before the limits (e.g. the hidden subcommand).
    pub args: Vec<String>,
    /// Children kept started, and requests running at once.
    pub size: usize,
    /// Heap bound of a child (bytes).
    pub memory_bytes: u64,
    /// CPU seconds of a child.
    pub cpu_seconds: u64,
    /// Stack of the engine thread (bytes).
    pub stack_bytes: u64,
    /// Largest answer (bytes).
    pub max_output_bytes: u64,
    /// Time bound of one request, from when its child is ready, on the child's clock (the
    /// time it was at work, not the time it waited for a CPU; the wall clock ends it at
    /// [`BACKSTOP_FACTOR`](crate::BACKSTOP_FACTOR) times the bound): the child is killed when
    /// it passes.
    pub time_bound: Duration,
    /// Longest wait for a free slot; `None` waits as long as it takes.
    pub queue_timeout: Option<Duration>,
    /// Longest wait for a child to start and confine itself (on its clock, as `time_bound`).
    pub start_timeout: Duration,
}

/// A pool of sandbox children. Cheap to clone (shared).
#[derive(Clone)]
pub struct ProcessPool {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ProcessPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessPool")
            .field("config", &self.inner.config)
            .field("idle", &self.idle_children())
            .finish()
    }
}

pub(crate) struct Inner {
    pub(crate) config: PoolConfig,
    slots: Arc<Semaphore>,
    idle: Mutex<Vec<Warm>>,
    refilling: AtomicUsize,
    spawner: Mutex<Option<mpsc::Sender<SpawnRequest>>>,
    /// What the last child that said hello reported.
    confinement: LastReport,
}

type SpawnRequest = oneshot::Sender<std::io::Result<std::process::Child>>;

/// A started child, not yet used.
pub(crate) struct Warm {
    pub(crate) child: ReapedChild,
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: ChildStdout,
    pub(crate) stderr: JoinHandle<String>,
    /// Its hello was read (a child started in the background is greeted before it waits).
    greeted: bool,
}

impl ProcessPool {
    /// A pool; no child is started until [`warm_up`](Self::warm_up) or the first request.
    pub fn new(config: PoolConfig) -> Self {
        let size = config.size.max(1);
        Self {
            inner: Arc::new(Inner {
                slots: Arc::new(Semaphore::new(size)),
                config: PoolConfig { size, ..config },
                idle: Mutex::new(Vec::new()),
                refilling: AtomicUsize::new(0),
                spawner: Mutex::new(None),
                confinement: LastReport::default(),
            }),
        }
    }

    /// The settings.
    pub fn config(&self) -> &PoolConfig {
        &self.inner.config
    }

    /// Starts children in the background until `size` are waiting.
    pub fn warm_up(&self) {
        for _ in 0..self.inner.config.size {
            Inner::refill(&self.inner);
        }
    }

    /// Children started and waiting for a request.
    pub fn idle_children(&self) -> usize {
        self.inner.idle().len()
    }

    /// What the operating system enforces on this pool's children, as the last child that
    /// said hello reported it; `None` until one did.
    pub fn confinement(&self) -> Option<Confinement> {
        self.inner.confinement.last()
    }

    /// Process ids of the children waiting for a request.
    pub fn idle_pids(&self) -> Vec<u32> {
        self.inner
            .idle()
            .iter()
            .filter_map(|w| w.child.id())
            .collect()
    }

    /// Sends one request (header, source and, for a render, the JSON context) to a fresh
    /// child and returns the payload of its `OK` answer.
    ///
    /// MUST return [`RunnerError::Unavailable`] when no slot frees up within the queue bound
    /// or no child can be started, [`RenderError::Timeout`] when the deadline passes (the
    /// child is killed) and the child's death otherwise read as described in the crate docs.
    pub async fn run(
        &self,
        header: &RequestHeader,
        source: &[u8],
        data: Option<&RenderContext>,
    ) -> Result<Vec<u8>, RunnerError> {
        let (_permit, header, warm) = self.take_child(header).await?;
        self.inner.exchange(warm, &header, source, data).await
    }

    /// Starts a streamed render (`header.stream`): sends the header and source to a fresh
    /// child and reads its plan. The session holds the slot and the child until it is
    /// finished or dropped (dropping kills the child).
    ///
    /// MUST fail as [`run`](Self::run) does; a template that does not parse answers its
    /// error here.
    pub async fn start(
        &self,
        header: &RequestHeader,
        source: &[u8],
    ) -> Result<Session, RunnerError> {
        let opening = Opening {
            analysis: None,
            plan: header.stream,
        };
        self.open(header, source, opening).await
    }

    /// Starts a render that answers its analysis first (`header.analysis`): sends the header
    /// and source to a fresh child and reads its analysis
    /// ([`Session::take_analysis`]), then its plan for a streamed render. The session is then
    /// used as [`start`](Self::start)'s.
    ///
    /// MUST fail as [`run`](Self::run) does; a template whose analysis fails answers its
    /// error here, and an analysis that passes `analysis_timeout` (or the pool's deadline)
    /// is [`RenderError::Timeout`] (the child is killed).
    pub async fn start_analyzed(
        &self,
        header: &RequestHeader,
        source: &[u8],
        analysis_timeout: Duration,
    ) -> Result<Session, RunnerError> {
        let opening = Opening {
            analysis: Some(analysis_timeout),
            plan: header.stream,
        };
        self.open(header, source, opening).await
    }

    async fn open(
        &self,
        header: &RequestHeader,
        source: &[u8],
        opening: Opening,
    ) -> Result<Session, RunnerError> {
        let (permit, header, warm) = self.take_child(header).await?;
        Session::start(self.inner.clone(), permit, warm, (&header, source), opening).await
    }

    /// A slot, the request header's bytes and a ready child, for one request.
    async fn take_child(
        &self,
        header: &RequestHeader,
    ) -> Result<(OwnedSemaphorePermit, Vec<u8>, Warm), RunnerError> {
        let permit = self.acquire().await?;
        let header = serde_json::to_vec(header)
            .map_err(|e| RunnerError::Unavailable(format!("request header: {e}")))?;
        let warm = self.ready_child().await?;
        Ok((permit, header, warm))
    }

    /// A slot, within the queue bound.
    async fn acquire(&self) -> Result<OwnedSemaphorePermit, RunnerError> {
        let inner = &self.inner;
        let acquire = inner.slots.clone().acquire_owned();
        match inner.config.queue_timeout {
            Some(t) => timeout(t, acquire).await.map_err(|_| {
                RunnerError::Unavailable(format!(
                    "every {} sandbox slot stayed busy for {t:?}",
                    inner.config.name
                ))
            })?,
            None => acquire.await,
        }
        .map_err(|_| RunnerError::Unavailable("the sandbox pool is closed".into()))
    }

    /// A child that said hello: a waiting one, or a fresh one.
    async fn ready_child(&self) -> Result<Warm, RunnerError> {
        let inner = &self.inner;
        let mut last_error = String::new();
        // Waiting children may have died (killed from outside): skip them, then one fresh one.
        for _ in 0..inner.config.size + 1 {
            let taken = inner.idle().pop();
            Inner::refill(inner);
            let mut warm = match taken {
                Some(w) => w,
                None => Inner::spawn(inner).await.map_err(|e| {
                    RunnerError::Unavailable(format!(
                        "cannot start {}: {e}",
                        inner.config.exe.display()
                    ))
                })?,
            };
            match inner.greet(&mut warm).await {
                // Its hello may have been written before it died while waiting.
                Ok(()) if warm.child.has_exited() => {
                    last_error = "died while waiting".into();
                }
                Ok(()) => return Ok(warm),
                Err(e) => last_error = e,
            }
            let _ = warm.child.start_kill();
            let stderr = stderr_tail(warm.stderr).await;
            tracing::warn!(pool = inner.config.name, error = %last_error, %stderr, "a sandbox child was not ready; replacing it");
            last_error = format!("{last_error} {stderr}");
        }
        Err(RunnerError::Unavailable(format!(
            "the sandbox child did not start: {}",
            last_error.trim()
        )))
    }
}

/// Reads the child's hello: what confines it.
async fn ready(warm: &mut Warm) -> Result<Confinement, String> {
    let (kind, bytes) = protocol::read_frame_async(&mut warm.stdout, 1024)
        .await
        .map_err(|e| format!("no hello: {e}"))?;
    let hello: Hello = serde_json::from_slice(&bytes).map_err(|e| format!("bad hello: {e}"))?;
    if kind != HELLO || hello.version != VERSION {
        return Err(format!(
            "not a sandbox child of protocol {VERSION} (got '{}', {hello:?})",
            kind as char
        ));
    }
    Ok(hello.confinement)
}

async fn stderr_tail(task: JoinHandle<String>) -> String {
    timeout(Duration::from_secs(1), task)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default()
}

impl Inner {
    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Warm>> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads the child's hello (once, within the start bound) and records its confinement.
    async fn greet(&self, warm: &mut Warm) -> Result<(), String> {
        if warm.greeted {
            return Ok(());
        }
        let deadline = Deadline::start(warm.child.id(), self.config.start_timeout);
        let confinement = deadline
            .run(ready(warm))
            .await
            .ok_or_else(|| "did not start in time".to_owned())??;
        warm.greeted = true;
        self.record(confinement);
        Ok(())
    }

    /// Keeps a child's confinement report; logs it when it is the pool's first or differs
    /// from the last (a warning names each mechanism that is not enforced).
    fn record(&self, confinement: Confinement) {
        if !self.confinement.record(confinement.clone()) {
            return;
        }
        let (name, summary) = (self.config.name, confinement.summary());
        let missing = confinement.missing();
        if missing.is_empty() {
            tracing::info!(pool = name, confinement = %summary, "template sandbox children are confined");
        } else {
            tracing::warn!(pool = name, confinement = %summary, missing = %missing.join("; "), "template sandbox children lack part of their confinement");
        }
    }

    /// Starts one child in the background if fewer than `size` are waiting or starting.
    fn refill(this: &Arc<Self>) {
        let size = this.config.size;
        let starting = this.refilling.fetch_add(1, Ordering::SeqCst);
        if this.idle().len() + starting >= size {
            this.refilling.fetch_sub(1, Ordering::SeqCst);
            return;
        }
        let weak = Arc::downgrade(this);
        tokio::spawn(async move {
            let Some(this) = weak.upgrade() else { return };
            match Self::spawn(&this).await {
                Ok(mut w) => match this.greet(&mut w).await {
                    Ok(()) => this.idle().push(w),
                    Err(e) => {
                        let _ = w.child.start_kill();
                        let stderr = stderr_tail(w.stderr).await;
                        tracing::warn!(pool = this.config.name, error = %e, %stderr, "a sandbox child did not start");
                        tokio::time::sleep(RESPAWN_BACKOFF).await;
                    }
                },
                Err(e) => {
                    tracing::warn!(pool = this.config.name, error = %e, exe = %this.config.exe.display(), "cannot start a sandbox child");
                    tokio::time::sleep(RESPAWN_BACKOFF).await;
                }
            }
            this.refilling.fetch_sub(1, Ordering::SeqCst);
        });
    }

    /// Starts one child. The fork happens on a dedicated thread that lives as long as the
    /// pool: the children's parent-death signal is tied to the thread that forked them, so
    /// they must not be forked from a runtime thread that may exit. That thread runs at the
    /// children's priority, which they start with. The child is then handed to a reaper
    /// thread ([`ReapedChild`]) started from here, at the service's priority.
    async fn spawn(this: &Arc<Self>) -> std::io::Result<Warm> {
        let (tx, rx) = oneshot::channel();
        this.spawner()?
            .send(tx)
            .map_err(|_| std::io::Error::other("the sandbox spawner thread is gone"))?;
        let mut child = rx
            .await
            .map_err(|_| std::io::Error::other("the sandbox spawner thread is gone"))??;
        let pipes = (child.stdin.take(), child.stdout.take(), child.stderr.take());
        // Watched first: from here on, an error below kills and reaps the child.
        let child = ReapedChild::watch(child, &format!("sandbox-{}-reap", this.config.name))?;
        let (Some(stdin), Some(stdout), Some(stderr)) = pipes else {
            return Err(std::io::Error::other("child pipes missing"));
        };
        let (stdin, stdout) = (ChildStdin::from_std(stdin)?, ChildStdout::from_std(stdout)?);
        let mut stderr = ChildStderr::from_std(stderr)?;
        let stderr = tokio::spawn(async move {
            let mut tail = StderrTail::new(STDERR_TAIL);
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = stderr.read(&mut buf).await {
                tail.push(&buf[..n]);
            }
            tail.text()
        });
        Ok(Warm {
            child,
            stdin,
            stdout,
            stderr,
            greeted: false,
        })
    }

    fn spawner(&self) -> std::io::Result<mpsc::Sender<SpawnRequest>> {
        let mut slot = self.spawner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tx) = slot.as_ref() {
            return Ok(tx.clone());
        }
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        let config = self.config.clone();
        std::thread::Builder::new()
            .name(format!("sandbox-{}-spawner", config.name))
            .spawn(move || {
                // The children start at their low priority, which they keep (confinement
                // sets it again): their start, in the background, yields the CPU to the
                // service and to the children at work. Linux keeps a priority per thread,
                // and a child takes the one of the thread that forked it.
                if let Err(e) = rustix::process::setpriority_process(None, NICENESS) {
                    tracing::debug!(error = %e, "sandbox children start at the spawner's priority");
                }
                while let Ok(reply) = rx.recv() {
                    let _ = reply.send(command(&config).spawn());
                }
            })?;
        *slot = Some(tx.clone());
        Ok(tx)
    }

    async fn exchange(
        &self,
        mut warm: Warm,
        header: &[u8],
        source: &[u8],
        data: Option<&RenderContext>,
    ) -> Result<Vec<u8>, RunnerError> {
        let deadline = Deadline::start(warm.child.id(), self.config.time_bound);
        let max_answer = self.max_answer();
        let stdin = &mut warm.stdin;
        let stdout = &mut warm.stdout;
        let talk = async {
            protocol::write_frame_async(stdin, HEADER, header).await?;
            protocol::write_frame_async(stdin, SOURCE, source).await?;
            if let Some(d) = data {
                protocol::write_frame_parts_async(stdin, DATA, d.parts()).await?;
            }
            protocol::read_frame_async(stdout, max_answer).await
        };
        let answer = deadline.run(talk).await;
        self.settle(&mut warm.child, warm.stderr, answer).await
    }

    /// The largest answer frame a child may send.
    pub(crate) fn max_answer(&self) -> u64 {
        self.config.max_output_bytes.saturating_add(1024 * 1024)
    }

    /// Reads a child's answer: `None` when the deadline passed first (the child is killed).
    pub(crate) async fn settle(
        &self,
        child: &mut ReapedChild,
        stderr: JoinHandle<String>,
        answer: Option<std::io::Result<(u8, Vec<u8>)>>,
    ) -> Result<Vec<u8>, RunnerError> {
        let name = self.config.name;
        match answer {
            Some(Ok((OK, bytes))) => Ok(bytes),
            Some(Ok((ERROR, bytes))) => {
                let e: WireError = serde_json::from_slice(&bytes).map_err(|e| {
                    RenderError::Crashed(format!("unreadable error from the child: {e}"))
                })?;
                Err(RenderError::from(e).into())
            }
            None => {
                let _ = child.start_kill();
                let _ = child.wait().await;
                tracing::warn!(
                    pool = name,
                    timeout = ?self.config.time_bound,
                    "template work passed its deadline; the child was killed"
                );
                Err(RenderError::Timeout.into())
            }
            Some(other) => {
                let detail = match other {
                    Ok((kind, _)) => format!("unexpected frame '{}'", kind as char),
                    Err(e) => e.to_string(),
                };
                let status = match timeout(EXIT_GRACE, child.wait()).await {
                    Ok(Ok(s)) => Some(s),
                    _ => {
                        let _ = child.start_kill();
                        let _ = child.wait().await;
                        None
                    }
                };
                let stderr = stderr_tail(stderr).await;
                let error = classify(status, &stderr, self.config.memory_bytes, &detail);
                tracing::warn!(pool = name, error = %error, ?status, %stderr, "a sandbox child died; it is replaced");
                Err(error.into())
            }
        }
    }
}

fn command(config: &PoolConfig) -> std::process::Command {
    let limits = ChildLimits {
        memory_bytes: config.memory_bytes,
        cpu_seconds: config.cpu_seconds,
        stack_bytes: config.stack_bytes,
        max_output_bytes: config.max_output_bytes,
        parent_pid: std::process::id(),
    };
    let mut cmd = std::process::Command::new(&config.exe);
    cmd.args(&config.args)
        .args(limits.to_args())
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Reads how a child died ([`Death`]). `status` is `None` when it had to be killed after
/// breaking the protocol: the CPU-time limit is a timeout, a refused allocation the memory
/// limit, anything else a crash.
fn classify(
    status: Option<ExitStatus>,
    stderr: &str,
    memory_bytes: u64,
    detail: &str,
) -> RenderError {
    match Death::classify(status, stderr) {
        Death::MemoryLimit => {
            RenderError::MemoryLimit(usize::try_from(memory_bytes).unwrap_or(usize::MAX))
        }
        Death::CpuLimit => RenderError::Timeout,
        Death::Unknown => RenderError::Crashed(format!("protocol error: {detail}")),
        Death::Exited(code) => {
            RenderError::Crashed(format!("exited with {code} without answering ({detail})"))
        }
        death => RenderError::Crashed(death.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    fn status(raw: i32) -> Option<ExitStatus> {
        Some(ExitStatus::from_raw(raw))
    }

    #[test]
    fn deaths_are_read() {
        assert_eq!(classify(status(24), "", 5, ""), RenderError::Timeout);
        assert_eq!(
            classify(status(6), "memory allocation of 99 bytes failed", 5, ""),
            RenderError::MemoryLimit(5)
        );
        assert_eq!(
            classify(
                status(6),
                "thread 'template' has overflowed its stack",
                5,
                ""
            ),
            RenderError::Crashed("stack overflow".into())
        );
        assert!(matches!(
            classify(status(11), "", 5, ""),
            RenderError::Crashed(_)
        ));
        assert!(matches!(
            classify(status(3 << 8), "", 5, ""),
            RenderError::Crashed(m) if m.contains("exited with 3")
        ));
        assert!(matches!(
            classify(None, "", 5, "x"),
            RenderError::Crashed(_)
        ));
    }
}
