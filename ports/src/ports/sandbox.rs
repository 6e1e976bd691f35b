use super::render::{RenderError, RenderLimits, TemplateAnalysis};
use super::render_context::RenderContext;
use super::streamed::RenderSession;
use async_trait::async_trait;
use std::sync::Arc;

/// Why a sandboxed parse or render did not produce its result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunnerError {
    /// The template itself failed or went over a bound (syntax, budget, memory, time, a crash
    /// of the process that ran it). Caused by the template: a 400 at upload, an `Errored`
    /// report at render.
    #[error(transparent)]
    Template(#[from] RenderError),
    /// The sandbox could not run the work at all (no child process could be started, every
    /// slot stayed busy past the wait bound). Not caused by the template: retry later.
    #[error("template sandbox unavailable: {0}")]
    Unavailable(String),
}

/// One render: the template, the data it reads, the engine bounds and whether the output is
/// an HTML document to sanitize before it leaves the sandbox.
#[derive(Debug, Clone)]
pub struct RenderJob {
    /// Template source.
    pub source: Arc<str>,
    /// Context `{ "<data source>": { "<table>": [ {row}, ... ] } }`, as JSON text.
    pub data: RenderContext,
    /// Engine bounds (fuel, recursion, output, memory, nesting).
    pub limits: RenderLimits,
    /// Pass the output through the HTML sanitizer (html and pdf formats).
    pub sanitize_html: bool,
}

/// A template's analysis and the render of it that the same sandbox child goes on with
/// ([`TemplateRunner::start_analyzed_render`]).
pub type AnalyzedRender = (TemplateAnalysis, Box<dyn RenderSession>);

/// Runs template work (parse at upload, render in the worker) away from the service: no
/// template work runs on the caller's async runtime threads, and nothing a template does can
/// crash or exhaust the calling process.
///
/// Implementations MUST bound every call in wall-clock time, CPU time and memory, MUST map
/// going over a time bound to [`RenderError::Timeout`], over a memory bound to
/// [`RenderError::MemoryLimit`] and any other death of the work to [`RenderError::Crashed`],
/// and MUST stay usable after any of those.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait TemplateRunner: Send + Sync {
    /// Parses `source` and returns what it reads ([`TemplateEngine::analyze`](super::TemplateEngine::analyze)),
    /// within the upload parse bounds.
    async fn analyze(
        &self,
        source: Arc<str>,
        limits: RenderLimits,
    ) -> Result<TemplateAnalysis, RunnerError>;
    /// Renders `job` within the render bounds; the output, sanitized when asked.
    async fn render(&self, job: RenderJob) -> Result<String, RunnerError>;
    /// Starts a render of `source` that takes its planned table as a stream
    /// ([`RenderSession`]), within the same bounds as [`render`](Self::render) (its
    /// wall-clock bound counts from the context's arrival). `Ok(None)` when this runner does
    /// not stream: the caller renders with [`render`](Self::render). The default streams
    /// nothing.
    async fn start_render(
        &self,
        source: Arc<str>,
        limits: RenderLimits,
        sanitize_html: bool,
    ) -> Result<Option<Box<dyn RenderSession>>, RunnerError> {
        let _ = (source, limits, sanitize_html);
        Ok(None)
    }
    /// Analyzes `source` as [`analyze`](Self::analyze) does (within the upload parse bounds,
    /// `analysis` the engine's) in the sandbox that then renders it within the render bounds
    /// (`limits`; the output sanitized when asked): what it reads, and a session without a
    /// plan that takes the context ([`RenderSession::send_context`]) and answers the output
    /// ([`RenderSession::finish`]). One sandbox operation where [`analyze`](Self::analyze)
    /// then [`render`](Self::render) are two (a template preview). A template whose analysis
    /// fails answers the error [`analyze`](Self::analyze) would. `Ok(None)` when this runner
    /// does not: the caller analyzes and renders apart. The default does not.
    async fn start_analyzed_render(
        &self,
        source: Arc<str>,
        analysis: RenderLimits,
        limits: RenderLimits,
        sanitize_html: bool,
    ) -> Result<Option<AnalyzedRender>, RunnerError> {
        let _ = (source, analysis, limits, sanitize_html);
        Ok(None)
    }
}
