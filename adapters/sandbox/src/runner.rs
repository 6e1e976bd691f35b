//! [`ProcessTemplateRunner`]: the `TemplateRunner` port on two process pools.
use crate::pool::ProcessPool;
use crate::pool::Session;
use crate::protocol::{AnalysisBounds, Op, RequestHeader};
use async_trait::async_trait;
use reporter_ports::ports::{
    AnalyzedRender, OutputPieces, RenderContext, RenderError, RenderJob, RenderLimits,
    RenderSession, RunnerError, StreamPlan, TemplateAnalysis, TemplateRunner,
};
use reporter_ports::template::MappedFields;
use std::sync::Arc;

/// Parses at upload in one pool and renders in another, so a burst of slow renders never
/// holds up an upload (and the reverse). The render context arrives as JSON text and is sent
/// in its pieces as it is; the UTF-8 check of a whole output and the reading of an analysis
/// run on the blocking thread pool, never on the caller's async threads, past 64 KiB (the
/// output's pieces of a streamed render, at most about 256 KiB each, are checked as they
/// arrive).
#[derive(Debug, Clone)]
pub struct ProcessTemplateRunner {
    parse: ProcessPool,
    render: ProcessPool,
}

impl ProcessTemplateRunner {
    /// A runner on a parse pool and a render pool.
    pub fn new(parse: ProcessPool, render: ProcessPool) -> Self {
        Self { parse, render }
    }

    /// The upload parse pool.
    pub fn parse_pool(&self) -> &ProcessPool {
        &self.parse
    }

    /// The render pool.
    pub fn render_pool(&self) -> &ProcessPool {
        &self.render
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, RunnerError> + Send + 'static,
) -> Result<T, RunnerError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| RunnerError::Unavailable(format!("blocking task failed: {e}")))?
}

#[async_trait]
impl TemplateRunner for ProcessTemplateRunner {
    async fn analyze(
        &self,
        source: Arc<str>,
        limits: RenderLimits,
    ) -> Result<TemplateAnalysis, RunnerError> {
        let header = RequestHeader {
            op: Op::Analyze,
            limits: limits.into(),
            sanitize_html: false,
            stream: false,
            analysis: None,
        };
        let bytes = self.parse.run(&header, source.as_bytes(), None).await?;
        let mapped_fields = mapped_fields(bytes).await?;
        Ok(TemplateAnalysis { mapped_fields })
    }

    async fn render(&self, job: RenderJob) -> Result<String, RunnerError> {
        let header = RequestHeader {
            op: Op::Render,
            limits: job.limits.into(),
            sanitize_html: job.sanitize_html,
            stream: false,
            analysis: None,
        };
        let bytes = self
            .render
            .run(&header, job.source.as_bytes(), Some(&job.data))
            .await?;
        drop(job);
        utf8(bytes).await
    }

    /// A streamed render in a child of the render pool ([`StreamedRender`]).
    async fn start_render(
        &self,
        source: Arc<str>,
        limits: RenderLimits,
        sanitize_html: bool,
    ) -> Result<Option<Box<dyn RenderSession>>, RunnerError> {
        let header = RequestHeader {
            op: Op::Render,
            limits: limits.into(),
            sanitize_html,
            stream: true,
            analysis: None,
        };
        let session = self.render.start(&header, source.as_bytes()).await?;
        Ok(Some(Box::new(StreamedRender(session))))
    }

    /// The analysis and the render in one child of the render pool: the analysis within the
    /// parse pool's bounds (its heap bound, its time bound; a memory failure reads
    /// as the parse's), the render within the render pool's.
    async fn start_analyzed_render(
        &self,
        source: Arc<str>,
        analysis: RenderLimits,
        limits: RenderLimits,
        sanitize_html: bool,
    ) -> Result<Option<AnalyzedRender>, RunnerError> {
        let parse = self.parse.config();
        let header = RequestHeader {
            op: Op::Render,
            limits: limits.into(),
            sanitize_html,
            stream: false,
            analysis: Some(AnalysisBounds {
                limits: analysis.into(),
                memory_bytes: parse.memory_bytes,
            }),
        };
        let mut session = self
            .render
            .start_analyzed(&header, source.as_bytes(), parse.time_bound)
            .await
            .map_err(|e| match e {
                RunnerError::Template(RenderError::MemoryLimit(_)) => {
                    let bytes = usize::try_from(parse.memory_bytes).unwrap_or(usize::MAX);
                    RunnerError::Template(RenderError::MemoryLimit(bytes))
                }
                other => other,
            })?;
        let bytes = session.take_analysis().unwrap_or_default();
        let mapped_fields = mapped_fields(bytes).await?;
        let analysis = TemplateAnalysis { mapped_fields };
        Ok(Some((analysis, Box::new(StreamedRender(session)))))
    }
}

/// Answers up to this size are read on the caller's thread: reading them takes microseconds,
/// less than handing them to the blocking thread pool and back.
const INLINE_BYTES: usize = 64 * 1024;

/// `f(bytes)` on the blocking thread pool, or on the caller's thread for at most
/// [`INLINE_BYTES`].
async fn read_answer<T: Send + 'static>(
    bytes: Vec<u8>,
    f: fn(Vec<u8>) -> Result<T, RunnerError>,
) -> Result<T, RunnerError> {
    if bytes.len() <= INLINE_BYTES {
        return f(bytes);
    }
    blocking(move || f(bytes)).await
}

/// An analysis' mapped fields.
async fn mapped_fields(bytes: Vec<u8>) -> Result<MappedFields, RunnerError> {
    read_answer(bytes, |bytes| {
        serde_json::from_slice(&bytes).map_err(|e| {
            RunnerError::Template(RenderError::Crashed(format!("unreadable analysis: {e}")))
        })
    })
    .await
}

/// The output's UTF-8 check.
async fn utf8(bytes: Vec<u8>) -> Result<String, RunnerError> {
    read_answer(bytes, |bytes| {
        String::from_utf8(bytes).map_err(|_| {
            RunnerError::Template(RenderError::Evaluation("output is not UTF-8".into()))
        })
    })
    .await
}

/// [`RenderSession`] on a sandbox [`Session`] (a streamed render, or a render that answered
/// its analysis first).
#[derive(Debug)]
struct StreamedRender(Session);

#[async_trait]
impl RenderSession for StreamedRender {
    fn plan(&self) -> Option<&StreamPlan> {
        self.0.plan()
    }

    async fn send_context(&mut self, context: &RenderContext) -> Result<(), RunnerError> {
        self.0.send_context(context).await
    }

    async fn send_rows(&mut self, chunk: &[u8]) -> Result<bool, RunnerError> {
        self.0.send_rows(chunk).await
    }

    async fn finish(self: Box<Self>) -> Result<String, RunnerError> {
        utf8(self.0.finish().await?).await
    }

    fn take_output(&mut self) -> Option<Box<dyn OutputPieces>> {
        let pieces = self.0.take_output()?;
        Some(Box::new(Pieces(pieces)))
    }
}

/// [`OutputPieces`] from a [`Session`]'s queue.
struct Pieces(tokio::sync::mpsc::Receiver<bytes::Bytes>);

#[async_trait]
impl OutputPieces for Pieces {
    async fn next(&mut self) -> Option<bytes::Bytes> {
        self.0.recv().await
    }
}
