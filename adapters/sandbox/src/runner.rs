//! [`ProcessTemplateRunner`]: the `TemplateRunner` port on two process pools.
use crate::pool::ProcessPool;
use crate::protocol::{Op, RequestHeader};
use async_trait::async_trait;
use reporter_ports::ports::{
    RenderError, RenderJob, RenderLimits, RunnerError, TemplateAnalysis, TemplateRunner,
};
use reporter_ports::template::MappedFields;
use std::sync::Arc;

/// Parses at upload in one pool and renders in another, so a burst of slow renders never
/// holds up an upload (and the reverse). The render context arrives as JSON text and is sent
/// in its pieces as it is; the output's UTF-8 check runs on the blocking thread pool, never on
/// the caller's async threads.
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
        };
        let bytes = self.parse.run(&header, source.as_bytes(), None).await?;
        let mapped_fields: MappedFields = blocking(move || {
            serde_json::from_slice(&bytes).map_err(|e| {
                RunnerError::Template(RenderError::Crashed(format!("unreadable analysis: {e}")))
            })
        })
        .await?;
        Ok(TemplateAnalysis { mapped_fields })
    }

    async fn render(&self, job: RenderJob) -> Result<String, RunnerError> {
        let header = RequestHeader {
            op: Op::Render,
            limits: job.limits.into(),
            sanitize_html: job.sanitize_html,
        };
        let bytes = self
            .render
            .run(&header, job.source.as_bytes(), Some(&job.data))
            .await?;
        drop(job);
        blocking(move || {
            String::from_utf8(bytes).map_err(|_| {
                RunnerError::Template(RenderError::Evaluation("output is not UTF-8".into()))
            })
        })
        .await
    }
}
