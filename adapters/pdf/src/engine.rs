//! The conversion itself (sghtmltopdf), run only inside the PDF child (see [`crate::child`]).
use crate::page::PageSetup;
use sghtmltopdf::{
    EdgeSizes, Engine, EngineError, EngineOptions, FontSpec, LocalAccess, MemorySink, PageSize,
    with_render_stack,
};
use std::path::PathBuf;
use std::time::Instant;

/// CSS px per inch.
const PX_PER_INCH: f64 = 96.0;
/// HTML is fed in chunks of this size, so the deadline is checked between them.
const FEED_CHUNK: usize = 64 * 1024;

/// Why a conversion produced no document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ConvertError {
    /// The engine noticed its deadline and stopped.
    #[error("the conversion passed its deadline")]
    TimedOut,
    /// The engine refused the document or failed.
    #[error("{0}")]
    Failed(String),
}

/// Page geometry, fonts and deadline of one conversion.
pub(crate) struct Job<'a> {
    /// Paper and margins.
    pub page: PageSetup,
    /// Font files (the bundled DejaVu faces); system fonts are never used.
    pub fonts: &'a [PathBuf],
    /// The engine stops at this instant.
    pub deadline: Instant,
}

fn engine_options(job: &Job<'_>) -> EngineOptions {
    let (w, h) = job.page.paper.inches();
    let px = |inches: f64| (inches * PX_PER_INCH) as f32;
    let mut o = EngineOptions::default();
    o.settings.size = PageSize {
        width: px(w),
        height: px(h),
    };
    o.settings.margin = EdgeSizes {
        top: px(job.page.margins.top),
        right: px(job.page.margins.right),
        bottom: px(job.page.margins.bottom),
        left: px(job.page.margins.left),
    };
    o.fonts = job
        .fonts
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
    o.deadline = Some(job.deadline);
    o
}

/// Converts `html` on a thread with sghtmltopdf's render stack (16 MiB). No local file
/// access and no remote fetches from the HTML (`<img>`, stylesheets).
pub(crate) fn convert(html: &[u8], job: &Job<'_>) -> Result<Vec<u8>, ConvertError> {
    let map = |e: EngineError<std::io::Error>| match e {
        EngineError::TimedOut => ConvertError::TimedOut,
        other => ConvertError::Failed(other.to_string()),
    };
    // EngineOptions is !Send: build it on the render thread.
    with_render_stack(|| {
        let mut engine = Engine::new(engine_options(job), MemorySink::new());
        for chunk in html.chunks(FEED_CHUNK) {
            engine.feed(chunk).map_err(map)?;
        }
        engine.finish().map_err(map)
    })
}
