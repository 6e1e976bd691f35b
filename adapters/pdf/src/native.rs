//! [`NativePdfRenderer`]: pure-Rust HTML → PDF with sghtmltopdf and bundled DejaVu Sans.
use crate::page::{PageSetup, validate};
use async_trait::async_trait;
use reporter_ports::ports::{PdfError, PdfRenderer};
use sghtmltopdf::{
    EdgeSizes, Engine, EngineError, EngineOptions, FontSpec, LocalAccess, MemorySink, PageSize,
    with_render_stack,
};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// CSS px per inch.
const PX_PER_INCH: f64 = 96.0;
/// HTML is fed in chunks of this size, so the deadline is checked between them.
const FEED_CHUNK: usize = 64 * 1024;

/// Options of a [`NativePdfRenderer`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NativePdfOptions {
    /// Paper and margins. Default: US Letter, 0.5 in.
    pub page: PageSetup,
    /// Longest a caller waits for one conversion, slot wait included. Default: 90 s (the
    /// reference's `PDF_TIMEOUT_SECONDS`).
    pub timeout: Duration,
    /// Conversions running at once (each holds a blocking thread with a 16 MiB stack).
    /// Default: 2 (the reference's `PDF_POOL_WORKERS`). At least 1.
    pub max_concurrency: usize,
}

impl Default for NativePdfOptions {
    fn default() -> Self {
        Self {
            page: PageSetup::default(),
            timeout: Duration::from_secs(90),
            max_concurrency: 2,
        }
    }
}

/// The four DejaVu Sans faces, written once per renderer into a private (0700) temp dir that
/// is removed when the renderer is dropped.
struct Fonts {
    dir: tempfile::TempDir,
    files: Vec<PathBuf>,
}

impl Fonts {
    fn write() -> std::io::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("reporter-fonts-")
            .tempdir()?;
        let mut files = Vec::new();
        for (name, bytes) in [
            ("DejaVuSans.ttf", dejavu::sans::regular()),
            ("DejaVuSans-Bold.ttf", dejavu::sans::bold()),
            ("DejaVuSans-Oblique.ttf", dejavu::sans::oblique()),
            ("DejaVuSans-BoldOblique.ttf", dejavu::sans::bold_oblique()),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes)?;
            files.push(path);
        }
        Ok(Self { dir, files })
    }

    fn present(&self) -> bool {
        self.dir.path().is_dir() && self.files.iter().all(|f| f.is_file())
    }
}

/// A [`PdfRenderer`] that needs nothing installed: sghtmltopdf (no browser) with bundled
/// DejaVu Sans (regular, bold, oblique, bold oblique), system fonts disabled so output is the
/// same on every machine.
///
/// - Each conversion runs on a blocking thread (`spawn_blocking` + a 16 MiB render stack).
/// - At most `max_concurrency` run at once; a timed-out conversion keeps its slot until its
///   thread notices the deadline and stops.
/// - The whole call (slot wait + conversion) is bounded by `timeout` ([`PdfError::Timeout`]).
/// - No local file access and no remote fetches from the HTML (`<img>`, stylesheets).
/// - Output under 1,000 bytes or not starting with `%PDF-` is [`PdfError::Failed`].
pub struct NativePdfRenderer {
    options: NativePdfOptions,
    fonts: Arc<Fonts>,
    slots: Arc<Semaphore>,
}

impl std::fmt::Debug for NativePdfRenderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativePdfRenderer")
            .field("options", &self.options)
            .field("font_dir", &self.fonts.dir.path())
            .finish()
    }
}

impl NativePdfRenderer {
    /// Writes the bundled fonts to a private temp dir. Fails with
    /// [`PdfError::Unavailable`] if they cannot be written.
    pub fn new(options: NativePdfOptions) -> Result<Self, PdfError> {
        let fonts = Fonts::write()
            .map_err(|e| PdfError::Unavailable(format!("cannot write bundled fonts: {e}")))?;
        Ok(Self {
            options,
            fonts: Arc::new(fonts),
            slots: Arc::new(Semaphore::new(options.max_concurrency.max(1))),
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
            fonts: Arc::clone(&self.fonts),
            slots: Arc::clone(&self.slots),
        }
    }

    /// Concurrency slots free right now. A conversion holds its slot until its thread ends,
    /// even after its caller timed out.
    pub fn idle_slots(&self) -> usize {
        self.slots.available_permits()
    }
}

fn engine_options(page: &PageSetup, fonts: &Fonts, deadline: Instant) -> EngineOptions {
    let (w, h) = page.paper.inches();
    let px = |inches: f64| (inches * PX_PER_INCH) as f32;
    let mut o = EngineOptions::default();
    o.settings.size = PageSize {
        width: px(w),
        height: px(h),
    };
    o.settings.margin = EdgeSizes {
        top: px(page.margins.top),
        right: px(page.margins.right),
        bottom: px(page.margins.bottom),
        left: px(page.margins.left),
    };
    o.fonts = fonts
        .files
        .iter()
        .map(|path| FontSpec {
            path: path.clone(),
            index: 0,
        })
        .collect();
    o.disable_system_fonts = true;
    o.allow_remote_assets = false;
    let mut local = LocalAccess::default();
    local.allow = false;
    o.local_access = local;
    o.deadline = Some(deadline);
    o
}

fn convert(
    html: &str,
    page: &PageSetup,
    fonts: &Fonts,
    deadline: Instant,
    timeout: Duration,
) -> Result<Vec<u8>, PdfError> {
    let map = |e: EngineError<std::io::Error>| match e {
        EngineError::TimedOut => PdfError::Timeout(timeout),
        other => PdfError::Failed(other.to_string()),
    };
    // EngineOptions is !Send: build it on the render thread.
    with_render_stack(|| {
        let mut engine = Engine::new(engine_options(page, fonts, deadline), MemorySink::new());
        for chunk in html.as_bytes().chunks(FEED_CHUNK) {
            engine.feed(chunk).map_err(map)?;
        }
        engine.finish().map_err(map)
    })
}

#[async_trait]
impl PdfRenderer for NativePdfRenderer {
    async fn render(&self, html: &str) -> Result<Vec<u8>, PdfError> {
        let timeout = self.options.timeout;
        let deadline = Instant::now() + timeout;
        let run = async {
            let permit = Arc::clone(&self.slots)
                .acquire_owned()
                .await
                .map_err(|_| PdfError::Unavailable("renderer closed".into()))?;
            let html = html.to_owned();
            let page = self.options.page;
            let fonts = Arc::clone(&self.fonts);
            let job = tokio::task::spawn_blocking(move || {
                let _permit = permit;
                convert(&html, &page, &fonts, deadline, timeout)
            });
            match job.await {
                Ok(result) => result,
                Err(e) if e.is_panic() => Err(PdfError::Failed("pdf engine panicked".into())),
                Err(e) => Err(PdfError::Failed(format!("pdf task failed: {e}"))),
            }
        };
        let pdf = tokio::time::timeout(timeout, run)
            .await
            .map_err(|_| PdfError::Timeout(timeout))??;
        validate(pdf)
    }

    async fn check(&self) -> Result<(), PdfError> {
        if self.fonts.present() {
            Ok(())
        } else {
            Err(PdfError::Unavailable("bundled fonts are missing".into()))
        }
    }
}
