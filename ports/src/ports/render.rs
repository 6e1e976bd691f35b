use super::EvaluationFault;
use crate::template::MappedFields;
use async_trait::async_trait;
use std::time::Duration;

/// Bounds of one template parse or render. Every bound is enforced by the engine itself, so a
/// malicious template cannot loop forever, recurse without end, exhaust memory or produce
/// unbounded output. (The process sandbox around the engine adds OS-enforced bounds on top.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderLimits {
    /// Instruction budget (engine "fuel").
    pub fuel: u64,
    /// Maximum nesting of calls/includes/macros at render time.
    pub max_recursion: usize,
    /// Maximum size of the rendered output in bytes.
    pub max_output_bytes: usize,
    /// Maximum bytes of values (strings, lists, maps) the template itself may create while
    /// rendering, on top of the data it was given.
    pub max_memory_bytes: usize,
    /// Maximum nesting of blocks and expressions in the source (parse time).
    pub max_nesting_depth: usize,
}

impl Default for RenderLimits {
    fn default() -> Self {
        Self {
            fuel: 50_000_000,
            max_recursion: 64,
            max_output_bytes: 64 * 1024 * 1024,
            max_memory_bytes: 256 * 1024 * 1024,
            max_nesting_depth: 256,
        }
    }
}

/// Why a parse or render failed. Texts are for logs only.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// The template does not parse.
    #[error("template syntax error: {0}")]
    Syntax(String),
    /// An error while evaluating (unknown filter, bad argument, type error, ...).
    #[error("template evaluation error: {0}")]
    Evaluation(String),
    /// An evaluation error the engine classified, with the template line when it knows it
    /// (see [`EvaluationFault`]; [`RenderError::failure`] is what a report shows of it).
    #[error("template evaluation error: {0}")]
    Fault(Box<EvaluationFault>),
    /// The instruction budget ran out (e.g. an endless loop).
    #[error("template exceeded its instruction budget")]
    FuelExhausted,
    /// Too deep recursion.
    #[error("template exceeded its recursion limit")]
    RecursionLimit,
    /// The output grew past the limit.
    #[error("template output exceeded {0} bytes")]
    OutputTooLarge(usize),
    /// The values the template created grew past the limit.
    #[error("template exceeded its memory limit of {0} bytes")]
    MemoryLimit(usize),
    /// Blocks or expressions nested deeper than the limit.
    #[error("template nesting exceeds {0} levels")]
    NestingTooDeep(usize),
    /// The render or parse took longer than its wall-clock or CPU bound (sandbox).
    #[error("template work exceeded its time limit")]
    Timeout,
    /// The process running the template died (sandbox); the text says how.
    #[error("template process failed: {0}")]
    Crashed(String),
}

impl RenderError {
    /// The error of a render context that is not JSON text ([`TemplateEngine::render_json`]).
    pub fn context_not_json(e: impl std::fmt::Display) -> Self {
        RenderError::Evaluation(format!("the render context is not JSON: {e}"))
    }
}

/// What a template reads, found by parsing it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TemplateAnalysis {
    /// Every `datasource.table.field` the template can read when rendered.
    pub mapped_fields: MappedFields,
}

/// Parses and renders template sources. Implementations MUST NOT give templates access to
/// files, the environment or the network, and MUST NOT panic or abort on any input.
pub trait TemplateEngine: Send + Sync {
    /// Parses `source` (used at upload) and returns what it reads. MUST be linear in the size
    /// of `source` and bounded by `limits.max_nesting_depth`; MUST return
    /// [`RenderError::Syntax`] for a source that does not parse.
    fn analyze(&self, source: &str, limits: &RenderLimits)
    -> Result<TemplateAnalysis, RenderError>;
    /// Renders `source` with `data` as its context: `data` is an object
    /// `{ "<data source>": { "<table>": [ {row}, ... ] } }`. Synchronous and CPU-bound: async
    /// callers run it off the runtime's threads.
    fn render(
        &self,
        source: &str,
        data: &serde_json::Value,
        limits: &RenderLimits,
    ) -> Result<String, RenderError>;
    /// Renders `source` with the context given as its JSON text (see
    /// [`RenderContext`](super::RenderContext)). MUST give what [`render`](Self::render) gives
    /// for the parsed text, and [`RenderError::Evaluation`] when `context` is not JSON. The
    /// default parses the text into a `serde_json::Value`; an engine may read it in place.
    fn render_json(
        &self,
        source: &str,
        context: &[u8],
        limits: &RenderLimits,
    ) -> Result<String, RenderError> {
        let data: serde_json::Value =
            serde_json::from_slice(context).map_err(RenderError::context_not_json)?;
        self.render(source, &data, limits)
    }
    /// The table `source` can take as a stream ([`StreamPlan`](super::StreamPlan)), if any.
    /// MUST give the same answer for the same source every time. The default streams nothing.
    fn stream_plan(
        &self,
        source: &str,
        limits: &RenderLimits,
    ) -> Result<Option<super::StreamPlan>, RenderError> {
        let _ = (source, limits);
        Ok(None)
    }
    /// Renders like [`render_json`](Self::render_json), the planned table's rows taken from
    /// `feed` when the template comes to them (`context` holds that table empty). The pieces
    /// handed to the feed's `output` (if it takes output), then the result, MUST give what
    /// `render_json` gives over the context with those rows in it, and the render MUST NOT
    /// read `feed` past its end. The default reads every chunk into the context first and
    /// hands out no piece.
    fn render_json_streamed(
        &self,
        source: &str,
        context: &[u8],
        feed: &mut dyn super::RowFeed,
        limits: &RenderLimits,
    ) -> Result<String, RenderError> {
        let Some(plan) = self.stream_plan(source, limits)? else {
            return self.render_json(source, context, limits);
        };
        let mut data: serde_json::Value =
            serde_json::from_slice(context).map_err(RenderError::context_not_json)?;
        let mut rows = Vec::new();
        while let Some(chunk) = feed.next_chunk()? {
            let chunk: Vec<serde_json::Value> =
                serde_json::from_slice(&chunk).map_err(RenderError::context_not_json)?;
            rows.extend(chunk);
        }
        if let Some(ds) = data
            .get_mut(&plan.data_source)
            .and_then(|d| d.as_object_mut())
        {
            ds.insert(plan.table, serde_json::Value::Array(rows));
        }
        self.render(source, &data, limits)
    }
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
    /// Conversion needed more memory than its bound (bytes) allows.
    #[error("pdf conversion exceeded its memory limit of {0} bytes")]
    MemoryLimit(u64),
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

#[cfg(test)]
mod tests {
    use super::{RenderError, RenderLimits, TemplateAnalysis, TemplateEngine};

    /// Renders its context back as JSON text.
    struct Echo;

    impl TemplateEngine for Echo {
        fn analyze(&self, _: &str, _: &RenderLimits) -> Result<TemplateAnalysis, RenderError> {
            Ok(TemplateAnalysis::default())
        }

        fn render(
            &self,
            _: &str,
            data: &serde_json::Value,
            _: &RenderLimits,
        ) -> Result<String, RenderError> {
            Ok(data.to_string())
        }
    }

    #[test]
    fn the_default_render_json_renders_the_parsed_text() {
        let limits = RenderLimits::default();
        let text = br#"{"ds":{"t":[{"b":1,"a":"x"}]}}"#;
        assert_eq!(
            Echo.render_json("", text, &limits),
            Echo.render("", &serde_json::from_slice(text).expect("json"), &limits)
        );
        for bad in [&b""[..], b"{", b"[1,]"] {
            assert!(matches!(
                Echo.render_json("", bad, &limits),
                Err(RenderError::Evaluation(m)) if m.contains("not JSON")
            ));
        }
    }
}
