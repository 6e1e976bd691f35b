use async_trait::async_trait;
use std::time::Duration;

/// Bounds of one template render. Every bound is enforced by the engine itself, so a malicious
/// template cannot loop forever, recurse without end or produce unbounded output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderLimits {
    /// Instruction budget (engine "fuel").
    pub fuel: u64,
    /// Maximum nesting of calls/includes/macros.
    pub max_recursion: usize,
    /// Maximum size of the rendered output in bytes.
    pub max_output_bytes: usize,
}

impl Default for RenderLimits {
    fn default() -> Self {
        Self {
            fuel: 50_000_000,
            max_recursion: 64,
            max_output_bytes: 64 * 1024 * 1024,
        }
    }
}

/// Why a render failed. Texts are for logs only.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// The template does not parse.
    #[error("template syntax error: {0}")]
    Syntax(String),
    /// An error while evaluating (unknown filter, bad argument, type error, ...).
    #[error("template evaluation error: {0}")]
    Evaluation(String),
    /// The instruction budget ran out (e.g. an endless loop).
    #[error("template exceeded its instruction budget")]
    FuelExhausted,
    /// Too deep recursion.
    #[error("template exceeded its recursion limit")]
    RecursionLimit,
    /// The output grew past the limit.
    #[error("template output exceeded {0} bytes")]
    OutputTooLarge(usize),
}

/// Renders template sources. Implementations MUST NOT give templates access to files, the
/// environment or the network.
pub trait TemplateEngine: Send + Sync {
    /// Checks that a source parses (used at upload).
    fn check_syntax(&self, source: &str) -> Result<(), RenderError>;
    /// Renders `source` with `data` as its context: `data` is an object
    /// `{ "<data source>": { "<table>": [ {row}, ... ] } }`. Synchronous and CPU-bound: async
    /// callers run it on a blocking thread.
    fn render(
        &self,
        source: &str,
        data: &serde_json::Value,
        limits: &RenderLimits,
    ) -> Result<String, RenderError>;
}

/// Why an HTML → PDF conversion failed. Texts are for logs only.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PdfError {
    /// The renderer is not available (binary missing, pool closed).
    #[error("pdf renderer unavailable: {0}")]
    Unavailable(String),
    /// Conversion failed.
    #[error("pdf conversion failed: {0}")]
    Failed(String),
    /// Conversion took longer than the configured timeout.
    #[error("pdf conversion timed out after {0:?}")]
    Timeout(Duration),
}

/// Converts rendered HTML into a PDF document.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait PdfRenderer: Send + Sync {
    /// Converts a complete HTML document. The result MUST be a valid PDF (starts with `%PDF-`).
    async fn render(&self, html: &str) -> Result<Vec<u8>, PdfError>;
    /// Readiness probe.
    async fn check(&self) -> Result<(), PdfError>;
}
