//! [`NativePdfRenderer`]: pure-Rust HTML → PDF with sghtmltopdf and bundled DejaVu Sans, in a
//! bounded child process per conversion.
use crate::child_args::ChildArgs;
use crate::page::{PageSetup, validate};
use crate::process::{PdfChildCommand, Spawner, convert_in_child};
use async_trait::async_trait;
use reporter_child_confine::{Confinement, LastReport};
use reporter_ports::ports::{PdfError, PdfRenderer};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::time::{Instant, timeout_at};

/// The document of [`NativePdfRenderer::probe_confinement`].
const PROBE_HTML: &str =
    "<!DOCTYPE html><html><body><p>Reporter: pdf child confinement probe</p></body></html>";

/// Options of a [`NativePdfRenderer`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NativePdfOptions {
    /// Paper and margins. Default: US Letter, 0.5 in.
    pub page: PageSetup,
    /// Longest a caller waits for one conversion, slot wait included; the child is killed
    /// then, and its CPU time is bounded to the same number of seconds (rounded up).
    /// Default: 90 s (the reference's `PDF_TIMEOUT_SECONDS`).
    pub timeout: Duration,
    /// Conversions (children) running at once. Default: 2 (the reference's
    /// `PDF_POOL_WORKERS`). At least 1.
    pub max_concurrency: usize,
    /// Heap one conversion may use (bytes), the HTML included: the child's `RLIMIT_DATA` (plus
    /// the 16 MiB render stack). Over it the conversion is [`PdfError::MemoryLimit`].
    /// Default: [`NativePdfOptions::DEFAULT_MEMORY_BYTES`].
    pub memory_bytes: u64,
}

impl NativePdfOptions {
    /// The default heap bound of one conversion: 1 GiB.
    pub const DEFAULT_MEMORY_BYTES: u64 = 1024 * 1024 * 1024;
}

impl Default for NativePdfOptions {
    fn default() -> Self {
        Self {
            page: PageSetup::default(),
            timeout: Duration::from_secs(90),
            max_concurrency: 2,
            memory_bytes: Self::DEFAULT_MEMORY_BYTES,
        }
    }
}

/// What clones of a renderer ([`NativePdfRenderer::with_timeout`]) share.
struct Shared {
    slots: Semaphore,
    /// What the last child reported of its confinement.
    confinement: LastReport,
    child: PdfChildCommand,
    spawner: Spawner,
}

/// A [`PdfRenderer`] that needs nothing installed: sghtmltopdf (no browser) with bundled
/// DejaVu Sans (regular, bold, oblique, bold oblique), system fonts disabled so output is the
/// same on every machine.
///
/// - Each conversion runs in a fresh child process ([`PdfChildCommand`], running
///   [`crate::child::run`]): env cleared, cwd `/`, and before it reads the HTML the child
///   confines itself as the template sandbox's children do ([`reporter_child_confine`]):
///   only its pipes, `nobody`/`nogroup` without capabilities under a root service,
///   parent-death `SIGKILL`, `no_new_privs`, low priority, no file writes, Landlock (no
///   filesystem access, no TCP), seccomp (no socket, exec or new process), and the OS
///   limits of the options: heap (`memory_bytes`, over it [`PdfError::MemoryLimit`]) and CPU
///   seconds (`timeout`). The layout's memory is the child's, never the service's. The
///   fonts come from the child's own memory. Its report is kept
///   ([`NativePdfRenderer::confinement`]) and logged when it changes.
/// - At most `max_concurrency` children run at once; a slot is held until its child has
///   exited (or was killed and reaped).
/// - The whole call (slot wait + conversion) is bounded by `timeout`: then the child is killed
///   ([`PdfError::Timeout`]). Dropping the call kills the child too.
/// - No local file access and no remote fetches from the HTML (`<img>`, stylesheets).
/// - Output under 1,000 bytes or not starting with `%PDF-` is [`PdfError::Failed`].
pub struct NativePdfRenderer {
    options: NativePdfOptions,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for NativePdfRenderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativePdfRenderer")
            .field("options", &self.options)
            .field("child", &self.shared.child)
            .finish()
    }
}

impl NativePdfRenderer {
    /// A renderer whose conversions run `child` (which carries the fonts itself). Never
    /// fails today; the `Result` is kept for renderers that need set-up.
    pub fn new(options: NativePdfOptions, child: PdfChildCommand) -> Result<Self, PdfError> {
        Ok(Self {
            options,
            shared: Arc::new(Shared {
                slots: Semaphore::new(options.max_concurrency.max(1)),
                confinement: LastReport::default(),
                child,
                spawner: Spawner::default(),
            }),
        })
    }

    /// The options in force.
    pub fn options(&self) -> &NativePdfOptions {
        &self.options
    }

    /// The same renderer — same fonts, same concurrency slots — with another timeout (e.g.
    /// a shorter one for interactive previews).
    pub fn with_timeout(&self, timeout: Duration) -> Self {
        Self {
            options: NativePdfOptions {
                timeout,
                ..self.options
            },
            shared: Arc::clone(&self.shared),
        }
    }

    /// What the operating system enforces on this renderer's children, as the last child
    /// reported it; `None` until a child did (children start per conversion).
    pub fn confinement(&self) -> Option<Confinement> {
        self.shared.confinement.last()
    }

    /// Runs one small conversion to learn what confines the children (its report is kept
    /// and logged as any child's): for the start-up log and readiness before the first
    /// report. Takes a concurrency slot like any conversion.
    pub async fn probe_confinement(&self) -> Result<Confinement, PdfError> {
        self.render(PROBE_HTML).await?;
        self.confinement()
            .ok_or_else(|| PdfError::Failed("the pdf child reported no confinement".into()))
    }

    /// Concurrency slots free right now. A conversion holds its slot until its child has
    /// exited, even after its caller timed out.
    pub fn idle_slots(&self) -> usize {
        self.shared.slots.available_permits()
    }

    /// The child's command line for a conversion that must end by `deadline`.
    fn child_args(&self, deadline: Instant) -> ChildArgs {
        ChildArgs {
            memory_bytes: self.options.memory_bytes,
            cpu_seconds: (self.options.timeout.as_secs_f64().ceil() as u64).max(1),
            timeout: deadline.saturating_duration_since(Instant::now()),
            parent_pid: std::process::id(),
            page: self.options.page,
        }
    }
}

#[async_trait]
impl PdfRenderer for NativePdfRenderer {
    async fn render(&self, html: &str) -> Result<Vec<u8>, PdfError> {
        let timeout = self.options.timeout;
        let deadline = Instant::now() + timeout;
        let _permit = match timeout_at(deadline, self.shared.slots.acquire()).await {
            Ok(Ok(permit)) => permit,
            Ok(Err(_)) => return Err(PdfError::Unavailable("renderer closed".into())),
            Err(_) => return Err(PdfError::Timeout(timeout)),
        };
        let args = self.child_args(deadline);
        let pdf = convert_in_child(
            &self.shared.spawner,
            &self.shared.confinement,
            &self.shared.child,
            &args,
            html.as_bytes(),
            deadline,
            timeout,
        )
        .await?;
        validate(pdf)
    }

    async fn check(&self) -> Result<(), PdfError> {
        if !self.shared.child.exe.is_file() {
            return Err(PdfError::Unavailable(format!(
                "the pdf child {} is missing",
                self.shared.child.exe.display()
            )));
        }
        Ok(())
    }
}
