//! The preview engine: the report pipeline's extraction (each table cut at the preview's
//! `limit`), render in the sandbox and output checks (script scan, PDF conversion), with
//! nothing stored, recorded or published.
use super::WorkerSettings;
use super::pipeline::{Core, Rendered, finish_text};
use crate::app::{DataSourceCatalog, PreviewEngine, PreviewJob, PreviewRun};
use async_trait::async_trait;
use reporter_ports::ports::{PdfRenderer, TemplateRunner};
use reporter_ports::template::OutputFormat;
use std::sync::Arc;

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

#[async_trait]
impl PreviewEngine for Previewer {
    async fn run(&self, job: PreviewJob) -> Result<PreviewRun, String> {
        let core = Core {
            catalog: &self.catalog,
            runner: self.runner.as_ref(),
            settings: &self.settings,
        };
        let sanitize = matches!(job.format, OutputFormat::Html | OutputFormat::Pdf);
        let (rendered, rows) = core
            .extract_and_render(
                &job.filters,
                &job.mapped,
                &job.source,
                sanitize,
                Some(job.limit),
            )
            .await?;
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
