//! The preview engine: the report pipeline's extraction (each table cut at the preview's
//! `limit`), render in the sandbox and output checks (script scan, PDF conversion), with
//! nothing stored, recorded or published. A sent template's parse and render run in one
//! sandbox child ([`Previewer::start`]).
use super::WorkerSettings;
use super::pipeline::{Core, ExtractedRows, Phases, Rendered, all_failed, finish_text, rendered};
use crate::app::{DataSourceCatalog, PreviewEngine, PreviewJob, PreviewRun, StartedPreview};
use async_trait::async_trait;
use reporter_ports::ports::{
    PdfRenderer, RenderContext, RenderLimits, RenderSession, RunnerError, TemplateRunner,
};
use reporter_ports::report::ReportFilters;
use reporter_ports::template::{MappedFields, OutputFormat};
use std::sync::Arc;
use std::time::Instant;

/// What a preview renders with: the report worker's data sources, sandbox, PDF renderer and
/// limits.
pub struct Previewer {
    /// The data sources.
    pub catalog: DataSourceCatalog,
    /// The template sandbox.
    pub runner: Arc<dyn TemplateRunner>,
    /// HTML → PDF.
    pub pdf: Arc<dyn PdfRenderer>,
    /// Query, section and render limits (the reports').
    pub settings: WorkerSettings,
}

/// html and pdf outputs are sanitized in the sandbox, as a report's.
fn sanitized(format: OutputFormat) -> bool {
    matches!(format, OutputFormat::Html | OutputFormat::Pdf)
}

impl Previewer {
    /// Extracts every table of `mapped` (each cut at `limit` rows) and renders the context in
    /// `render`, the child that parsed the source.
    async fn extract_and_render_in(
        &self,
        filters: &ReportFilters,
        mapped: &MappedFields,
        limit: usize,
        mut render: Box<dyn RenderSession>,
    ) -> Result<(Rendered, ExtractedRows), String> {
        let core = Core {
            catalog: &self.catalog,
            runner: self.runner.as_ref(),
            settings: &self.settings,
        };
        let phase = Instant::now();
        let e = core.extract(filters, mapped, None, Some(limit)).await;
        let extract_ms = phase.elapsed().as_millis() as u64;
        let rows = ExtractedRows {
            rows: e.rows,
            cut: e.cut,
        };
        // Dropping the render kills its child.
        if let Some(failed) = all_failed(&e.outcomes) {
            return Ok((Rendered::Failed(failed), rows));
        }
        let data = RenderContext::from_sections(e.sections);
        let context_bytes = data.len();
        let phase = Instant::now();
        let span = crate::telemetry::context::render_span();
        span.record("reporter.render.context_bytes", context_bytes);
        let result = {
            use tracing::Instrument;
            async {
                render.send_context(&data).await?;
                drop(data);
                render.finish().await
            }
            .instrument(span.clone())
            .await
        };
        let phases = Phases::of_render(&span, phase, result.is_err(), extract_ms, context_bytes);
        Ok((rendered(result, e.outcomes, phases)?, rows))
    }
}

#[async_trait]
impl PreviewEngine for Previewer {
    async fn start(
        &self,
        source: Arc<str>,
        format: OutputFormat,
        analysis: RenderLimits,
    ) -> Result<Option<StartedPreview>, RunnerError> {
        let started = self
            .runner
            .start_analyzed_render(source, analysis, self.settings.render, sanitized(format))
            .await?;
        Ok(started.map(|(analysis, render)| StartedPreview {
            mapped: analysis.mapped_fields,
            render,
        }))
    }

    async fn run(&self, mut job: PreviewJob) -> Result<PreviewRun, String> {
        let (rendered, rows) = match job.started.take() {
            Some(render) => {
                self.extract_and_render_in(&job.filters, &job.mapped, job.limit, render)
                    .await?
            }
            None => {
                let core = Core {
                    catalog: &self.catalog,
                    runner: self.runner.as_ref(),
                    settings: &self.settings,
                };
                core.extract_and_render(
                    &job.filters,
                    &job.mapped,
                    &job.source,
                    sanitized(job.format),
                    Some(job.limit),
                )
                .await?
            }
        };
        let generation = match rendered {
            Rendered::Text(text, sections, phases) => {
                finish_text(self.pdf.as_ref(), job.format, text, sections, phases).await
            }
            Rendered::Failed(generation) => generation,
            // A whole-context render answers text; nothing is written in pieces.
            Rendered::Written(_, sections, _) => {
                return Err(format!(
                    "a preview render was written to storage ({} sections)",
                    sections.len()
                ));
            }
        };
        Ok(PreviewRun {
            generation,
            rows: rows.rows,
            rows_cut: rows.cut,
        })
    }
}
