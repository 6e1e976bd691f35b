//! One job, end to end.
use super::Worker;
use super::artifact_upload::Written;
use bytes::Bytes;
use futures_util::StreamExt;
use reporter_ports::StoreError;
use reporter_ports::ports::{
    DataSourceError, JobDelivery, JsonSection, PdfError, RenderContext, RenderError, RenderJob,
    Row, RowSink, RunnerError, SectionJson, StreamPlan, TableJson, TableQuery,
};
use reporter_ports::report::{Report, ReportErrorCode, ReportStatus, SectionOutcome};
use reporter_ports::template::{OutputFormat, Template};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::watch;

use super::ownership::Alive;
use crate::app::{Completion, Generation};

/// The tables of one section as JSON text with what was read, or why it failed.
type SectionResult = Result<(JsonSection, SectionRead), SectionError>;

/// What one section's extraction read: the bytes of its rows, the rows of each table, and
/// whether a table was cut at the row cap.
#[derive(Debug, Clone, Default)]
pub(crate) struct SectionRead {
    pub bytes: usize,
    pub rows: BTreeMap<String, usize>,
    pub cut: bool,
}

/// What extraction gives: the sections that succeeded (their JSON text), every section's
/// outcome, the bytes of each successful section's rows (what the byte limit counts), the
/// rows of each successful section's tables, and whether any table was cut at the row cap.
pub(crate) struct Extracted {
    pub sections: Vec<(String, JsonSection)>,
    pub outcomes: BTreeMap<String, SectionOutcome>,
    pub row_bytes: BTreeMap<String, usize>,
    pub rows: BTreeMap<String, BTreeMap<String, usize>>,
    pub cut: bool,
}

/// Why a section (one data source) failed. The code is what the API and events show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SectionError {
    /// The data source is not configured any more.
    NotConfigured,
    /// Unreachable.
    Unavailable,
    /// A query exceeded its deadline.
    Timeout,
    /// A table returned more rows than allowed.
    RowLimit,
    /// The section's data exceeded the byte limit.
    TooLarge,
    /// Any other query failure.
    QueryFailed,
    /// An encrypted field (the Midaz CRM's) was read, or filtered, without its key.
    CrmKeyMissing,
    /// An encrypted value did not decrypt: a wrong key, or an altered value.
    CrmDecryptionFailed,
    /// An encrypted field held a value that is not the encrypted format.
    CrmValueMalformed,
    /// An encrypted value is in a format this version does not read (`tink:v<N>:`).
    CrmUnsupportedFormat,
}

impl SectionError {
    /// Stable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotConfigured => "data_source_not_configured",
            Self::Unavailable => "data_source_unavailable",
            Self::Timeout => "query_timeout",
            Self::RowLimit => "row_limit_exceeded",
            Self::TooLarge => "section_too_large",
            Self::QueryFailed => "query_failed",
            Self::CrmKeyMissing => "crm_key_missing",
            Self::CrmDecryptionFailed => "crm_decryption_failed",
            Self::CrmValueMalformed => "crm_value_malformed",
            Self::CrmUnsupportedFormat => "crm_unsupported_format",
        }
    }
}

/// How one delivery ended: what is settled on the queue and counted in the metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum JobOutcome {
    /// This delivery recorded the report's terminal status (acknowledged).
    Recorded(ReportStatus),
    /// The report was already terminal, or another delivery recorded it meanwhile: a broker
    /// redelivery or a job the stuck-report sweep queued again (acknowledged, nothing written).
    Duplicate,
    /// Sent back to the queue for a later attempt.
    Retry(String),
    /// Dead-lettered (the job cannot succeed).
    DeadLetter(String),
}

impl Worker {
    /// Processes one delivery and settles it.
    pub(super) async fn handle(
        &self,
        delivery: Box<dyn JobDelivery>,
        cancel: watch::Receiver<bool>,
    ) {
        use tracing::Instrument;
        let job = delivery.job().clone();
        self.metrics.received(delivery.redelivered());
        // Jobs queued by an older version may carry no correlation id: give them one.
        let request_id = job
            .request_id
            .clone()
            .unwrap_or_else(crate::app::new_request_id);
        let span = crate::telemetry::context::job_process_span(&job, delivery.attempt(), &request_id)
            .unwrap_or_else(|| tracing::info_span!("report_job", tenant = %job.tenant, report_id = %job.report_id, attempt = delivery.attempt(), request_id = %request_id));
        let started = Instant::now();
        let (redelivered, attempt) = (delivery.redelivered(), delivery.attempt());
        let outcome = async {
            if redelivered {
                tracing::info!("job redelivered (the consumer that held it did not settle it)");
            }
            self.process(&job, attempt, cancel).await
        }
        .instrument(span)
        .await;
        self.metrics.settled(&outcome, started.elapsed());
        let result = match outcome {
            JobOutcome::Recorded(_) | JobOutcome::Duplicate => delivery.ack().await,
            JobOutcome::Retry(reason) => delivery.retry(&reason).await,
            JobOutcome::DeadLetter(reason) => delivery.dead_letter(&reason).await,
        };
        if let Err(e) = result {
            tracing::error!(error = %e, report_id = %job.report_id, "could not settle the job; it will be redelivered");
        }
        if started.elapsed() >= crate::heap::TRIM_AFTER {
            crate::heap::release_freed().await;
        }
    }

    async fn process(
        &self,
        job: &reporter_ports::ports::ReportJob,
        attempt: u32,
        mut cancel: watch::Receiver<bool>,
    ) -> JobOutcome {
        let app = &self.app;
        let report = match app.ports().reports.get(&job.tenant, job.report_id).await {
            Ok(Some(r)) => r,
            Ok(None) => return JobOutcome::DeadLetter("report not found".into()),
            Err(e) => {
                tracing::warn!(error = %e, "report store unavailable");
                return JobOutcome::Retry("report store unavailable".into());
            }
        };
        if report.status.is_terminal() {
            tracing::info!(
                status = report.status.as_str(),
                "duplicate job ignored: the report is already terminal (a redelivery, or a job the stuck-report sweep queued again)"
            );
            return JobOutcome::Duplicate;
        }
        let started = Instant::now();
        let generating = async {
            tokio::select! {
                g = tokio::time::timeout(self.settings.job_timeout, self.generate(&report)) => match g {
                    Ok(Ok(g)) => Ok(g),
                    Ok(Err(retry_reason)) => {
                        if attempt + 1 < self.settings.max_attempts {
                            return Err(retry_reason);
                        }
                        Ok(Generation::Failed { code: ReportErrorCode::ReportGenerationFailed, sections: BTreeMap::new() }.into())
                    }
                    Err(_) => {
                        tracing::warn!(timeout_s = self.settings.job_timeout.as_secs(), "report generation timed out");
                        Ok(Generation::Failed { code: ReportErrorCode::ReportGenerationTimeout, sections: BTreeMap::new() }.into())
                    }
                },
                _ = cancel.wait_for(|c| *c) => Ok(Generation::Failed { code: ReportErrorCode::ReportGenerationCanceled, sections: BTreeMap::new() }.into()),
            }
        };
        let (generated, current) = match self.while_alive(&report, generating).await {
            Alive::Done {
                output: Ok(g),
                current,
            } => (g, *current),
            Alive::Done {
                output: Err(retry_reason),
                ..
            } => return JobOutcome::Retry(retry_reason),
            Alive::FinishedElsewhere => return JobOutcome::Duplicate,
        };
        let generation = generated.commit().await;
        match self.finish(&current, generation, started).await {
            Ok(outcome) => outcome,
            Err(StoreError::Unavailable(e)) => {
                tracing::warn!(error = %e, "could not record the terminal status; retrying the job");
                JobOutcome::Retry("terminal status not recorded".into())
            }
            Err(e) => {
                tracing::warn!(error = %e, "terminal status not recorded; the report keeps its stored state");
                JobOutcome::Duplicate
            }
        }
    }

    /// Extracts, renders (in the sandbox; html and pdf sanitized there) and converts. `Err`
    /// means a transient infrastructure problem worth a retry (the template file could not be
    /// read, the sandbox could not start a process). A render over its time bound is
    /// `report_generation_timeout`; over its memory bound, crashed or failed,
    /// `report_generation_failed`.
    ///
    /// When the runner streams, the render starts first and names the table it takes as a
    /// stream (`StreamPlan`): every other table is extracted into the context, then that
    /// table's rows go to the render as they arrive (see [`super::streamed`]).
    async fn generate(&self, report: &Report) -> Result<Generated, String> {
        let (template, source) = match self.template_source(report).await? {
            Ok(found) => found,
            Err(failed) => return Ok(failed.into()),
        };
        let source: Arc<str> = Arc::from(source);
        let sanitize = matches!(report.output_format, OutputFormat::Html | OutputFormat::Pdf);
        let started = self
            .runner
            .start_render(source.clone(), self.settings.render, sanitize)
            .await;
        let rendered = match started {
            Ok(Some(session)) => {
                // A streamed render runs while its table's rows arrive: its span holds the
                // queries it consumes, and the sandbox's time is the whole of it.
                let span = crate::telemetry::context::render_span();
                let phase = Instant::now();
                let rendered = {
                    use tracing::Instrument;
                    self.render_streamed(report, &template, &source, sanitize, session)
                        .instrument(span.clone())
                        .await
                };
                span.record(
                    "reporter.render.sandbox_ms",
                    phase.elapsed().as_millis() as u64,
                );
                rendered
            }
            Ok(None) => {
                self.extract_and_render_whole(report, &template, &source, sanitize)
                    .await
            }
            Err(RunnerError::Template(e)) => {
                // The template fails before any render: the report still says which sections
                // its data would have come from.
                let outcomes = self
                    .extract(report, &template.mapped_fields, None)
                    .await
                    .outcomes;
                render_failure(RunnerError::Template(e), outcomes)
            }
            Err(e) => render_failure(e, BTreeMap::new()),
        };
        match rendered? {
            Rendered::Text(text, sections, phases) => Ok(finish_text(
                self.pdf.as_ref(),
                report.output_format,
                text,
                sections,
                phases,
            )
            .await
            .into()),
            Rendered::Written(written, sections, phases) => {
                phases.log_generated(0, written.size);
                Ok(Generated::Written(written, sections))
            }
            Rendered::Failed(generation) => Ok(generation.into()),
        }
    }

    /// Extracts every table into the context, then renders it in one request.
    pub(super) async fn extract_and_render_whole(
        &self,
        report: &Report,
        template: &Template,
        source: &Arc<str>,
        sanitize_html: bool,
    ) -> Result<Rendered, String> {
        let (rendered, _) = self
            .core()
            .extract_and_render(
                &report.filters,
                &template.mapped_fields,
                source,
                sanitize_html,
                None,
            )
            .await?;
        Ok(rendered)
    }

    /// Renders the extracted sections in one request (the context holds every table).
    pub(super) async fn render_whole(
        &self,
        source: &Arc<str>,
        extracted: Vec<(String, JsonSection)>,
        sections: BTreeMap<String, SectionOutcome>,
        sanitize_html: bool,
        extract_ms: u64,
    ) -> Result<Rendered, String> {
        self.core()
            .render_sections(source, extracted, sections, sanitize_html, extract_ms)
            .await
    }

    /// The generation core over this worker's data sources, sandbox and limits.
    pub(super) fn core(&self) -> Core<'_> {
        Core {
            catalog: self.app.catalog(),
            runner: self.runner.as_ref(),
            settings: &self.settings,
        }
    }

    /// The report's template and its file's text. The outer `Err` is transient (a store is
    /// unavailable: retry); the inner one a generation that cannot succeed (the template or
    /// its file is gone, or the file is not UTF-8).
    async fn template_source(
        &self,
        report: &Report,
    ) -> Result<Result<(Template, String), Generation>, String> {
        let ports = self.app.ports();
        let failed = || Generation::Failed {
            code: ReportErrorCode::ReportGenerationFailed,
            sections: BTreeMap::new(),
        };
        let template = match ports
            .templates
            .get(&report.tenant, report.template_id, true)
            .await
        {
            Ok(Some(t)) => t,
            Ok(None) => {
                tracing::error!("the report's template does not exist");
                return Ok(Err(failed()));
            }
            Err(e) => return Err(format!("template store unavailable: {e}")),
        };
        let file = match ports.storage.get(&template.object_key).await {
            Ok(Some(o)) => o,
            Ok(None) => {
                tracing::error!(key = %template.object_key, "the template file is missing");
                return Ok(Err(failed()));
            }
            Err(e) => return Err(format!("object storage unavailable: {e}")),
        };
        match String::from_utf8(file.bytes.to_vec()) {
            Ok(source) => Ok(Ok((template, source))),
            Err(_) => Ok(Err(failed())),
        }
    }

    /// One section per data source (see [`Core::extract`]), with the report's filters and no
    /// row cap.
    pub(super) async fn extract(
        &self,
        report: &Report,
        mapped: &reporter_ports::template::MappedFields,
        streamed: Option<&StreamPlan>,
    ) -> Extracted {
        self.core()
            .extract(&report.filters, mapped, streamed, None)
            .await
    }

    /// Records the generation through the application (artifact, terminal status, event).
    async fn finish(
        &self,
        report: &Report,
        generation: Generation,
        started: Instant,
    ) -> Result<JobOutcome, StoreError> {
        Ok(
            match self
                .app
                .complete_report(report, generation, started)
                .await?
            {
                Completion::Recorded(status) => JobOutcome::Recorded(status),
                Completion::AlreadyTerminal => JobOutcome::Duplicate,
            },
        )
    }
}

/// The generation core shared by report jobs and previews: extraction into sections and a
/// render of the whole context in the sandbox. It writes nothing: what is stored, recorded
/// or published is the caller's.
pub(crate) struct Core<'a> {
    /// The data sources.
    pub catalog: &'a crate::app::DataSourceCatalog,
    /// The sandbox.
    pub runner: &'a dyn reporter_ports::ports::TemplateRunner,
    /// Query, section and render limits.
    pub settings: &'a super::WorkerSettings,
}

impl Core<'_> {
    /// One section per data source; a section fails as a whole if any of its tables fails.
    /// The sections that succeeded, by name, as JSON text written once; the `streamed` table
    /// is not queried but written empty (its rows go to the render as a stream). With a row
    /// `cap`, each table keeps its first `cap` rows and the rest is not read (`cut` says a
    /// table had more); the report's own row limit still applies to what is read.
    pub(crate) async fn extract(
        &self,
        filters: &reporter_ports::report::ReportFilters,
        mapped: &reporter_ports::template::MappedFields,
        streamed: Option<&StreamPlan>,
        cap: Option<usize>,
    ) -> Extracted {
        let mut tasks = Vec::new();
        for (ds, tables) in mapped {
            let ds = ds.clone();
            let tables = tables.clone();
            let source = self.catalog.get(&ds);
            let filters = filters.get(&ds).cloned().unwrap_or_default();
            let settings = self.settings.clone();
            let skip = streamed
                .filter(|p| p.data_source == ds)
                .map(|p| p.table.clone());
            tasks.push(async move {
                use tracing::Instrument;
                let span = crate::telemetry::context::datasource_span(&ds);
                let section = SectionSpec {
                    ds: &ds,
                    tables,
                    filters,
                    streamed: skip.as_deref(),
                    cap,
                };
                let result = extract_section(section, source, &settings)
                    .instrument(span.clone())
                    .await;
                if result.is_err() {
                    span.record("otel.status_code", "ERROR");
                }
                (ds, result)
            });
        }
        let mut results: Vec<(String, SectionResult)> = futures_util::stream::iter(tasks)
            .buffer_unordered(self.settings.section_concurrency.max(1))
            .collect()
            .await;
        results.sort_by(|a, b| a.0.cmp(&b.0));
        let mut extracted = Extracted {
            sections: Vec::new(),
            outcomes: BTreeMap::new(),
            row_bytes: BTreeMap::new(),
            rows: BTreeMap::new(),
            cut: false,
        };
        for (ds, r) in results {
            let outcome = SectionOutcome {
                ok: r.is_ok(),
                error_code: r.as_ref().err().map(|e| e.code().to_owned()),
            };
            extracted.outcomes.insert(ds.clone(), outcome);
            if let Ok((json, read)) = r {
                extracted.row_bytes.insert(ds.clone(), read.bytes);
                extracted.rows.insert(ds.clone(), read.rows);
                extracted.cut |= read.cut;
                extracted.sections.push((ds, json));
            }
        }
        extracted
    }

    /// Extracts every table into the context (each cut at `cap` rows when given), then
    /// renders it in one request. The rows of each table and whether any was cut come back
    /// with the render.
    pub(crate) async fn extract_and_render(
        &self,
        filters: &reporter_ports::report::ReportFilters,
        mapped: &reporter_ports::template::MappedFields,
        source: &Arc<str>,
        sanitize_html: bool,
        cap: Option<usize>,
    ) -> Result<(Rendered, ExtractedRows), String> {
        let phase = Instant::now();
        let e = self.extract(filters, mapped, None, cap).await;
        let extract_ms = phase.elapsed().as_millis() as u64;
        let rows = ExtractedRows {
            rows: e.rows,
            cut: e.cut,
        };
        let rendered = self
            .render_sections(source, e.sections, e.outcomes, sanitize_html, extract_ms)
            .await?;
        Ok((rendered, rows))
    }

    /// Renders the extracted sections in one request (the context holds every table).
    pub(super) async fn render_sections(
        &self,
        source: &Arc<str>,
        extracted: Vec<(String, JsonSection)>,
        sections: BTreeMap<String, SectionOutcome>,
        sanitize_html: bool,
        extract_ms: u64,
    ) -> Result<Rendered, String> {
        if let Some(failed) = all_failed(&sections) {
            return Ok(Rendered::Failed(failed));
        }
        let data = RenderContext::from_sections(extracted);
        let context_bytes = data.len();
        let job = RenderJob {
            source: source.clone(),
            data,
            limits: self.settings.render,
            sanitize_html,
        };
        let phase = Instant::now();
        let span = crate::telemetry::context::render_span();
        span.record("reporter.render.context_bytes", context_bytes);
        let result = {
            use tracing::Instrument;
            self.runner.render(job).instrument(span.clone()).await
        };
        let phases = Phases::of_render(&span, phase, result.is_err(), extract_ms, context_bytes);
        rendered(result, sections, phases)
    }
}

/// The rows of each table of the sections that succeeded, and whether any table was cut at
/// the row cap.
#[derive(Debug, Clone, Default)]
pub(crate) struct ExtractedRows {
    pub rows: BTreeMap<String, BTreeMap<String, usize>>,
    pub cut: bool,
}

/// A whole rendered output as a report keeps it: refused when it holds script (a format a
/// browser runs as a document), converted to PDF for the pdf format.
pub(crate) async fn finish_text(
    pdf: &dyn reporter_ports::ports::PdfRenderer,
    format: OutputFormat,
    text: String,
    sections: BTreeMap<String, SectionOutcome>,
    phases: Phases,
) -> Generation {
    if let Some(found) = super::active_content::found_in_text(format, &text) {
        return super::active_content::script_detected(&found, sections);
    }
    let phase = Instant::now();
    let bytes = if format == OutputFormat::Pdf {
        match pdf.render(&text).await {
            Ok(b) => Bytes::from(b),
            Err(e) => {
                tracing::warn!(error = %e, "pdf conversion failed");
                return Generation::Failed {
                    code: pdf_failure_code(&e),
                    sections,
                };
            }
        }
    } else {
        Bytes::from(text.into_bytes())
    };
    phases.log_generated(phase.elapsed().as_millis() as u64, bytes.len() as u64);
    Generation::Artifact { bytes, sections }
}

/// One section to extract: its data source, its tables and their fields, the filters on them,
/// the table the render takes as a stream (written empty), the row cap of each table.
struct SectionSpec<'a> {
    ds: &'a str,
    tables: BTreeMap<String, std::collections::BTreeSet<String>>,
    filters: BTreeMap<String, BTreeMap<String, reporter_ports::report::FilterCondition>>,
    streamed: Option<&'a str>,
    cap: Option<usize>,
}

/// Extracts one section: every table of one data source, within the limits, each row written
/// into the section's JSON text as it arrives (at most `cap` rows of each table).
async fn extract_section(
    spec: SectionSpec<'_>,
    source: Option<std::sync::Arc<dyn reporter_ports::ports::DataSource>>,
    settings: &super::WorkerSettings,
) -> SectionResult {
    let SectionSpec {
        ds,
        tables,
        filters,
        streamed,
        cap,
    } = spec;
    let source = source.ok_or(SectionError::NotConfigured)?;
    let mut section = SectionJson::new();
    let mut read = SectionRead::default();
    for (table, fields) in tables {
        if streamed == Some(table.as_str()) {
            section.table(&table);
            continue;
        }
        let q = table_query(table, fields, &filters, settings);
        let mut sink = SectionRows {
            rows: section.table(&q.table),
            bytes: &mut read.bytes,
            max: settings.max_section_bytes,
            count: 0,
            cap,
            cut: false,
        };
        let done =
            tokio::time::timeout(settings.query_timeout, source.query_into(&q, &mut sink)).await;
        let (count, cut) = (sink.count, sink.cut);
        let done = match done.unwrap_or(Err(DataSourceError::Timeout)) {
            // The sink stopped the query at the cap: the rows before it are the table's.
            Err(DataSourceError::Stopped) if cut => Ok(()),
            other => other,
        };
        section_error(ds, done)?;
        read.rows.insert(q.table, count);
        read.cut |= cut;
    }
    Ok((section.finish(), read))
}

/// The query of one table of a section: its mapped fields, the report's filters on it.
pub(super) fn table_query(
    table: String,
    fields: std::collections::BTreeSet<String>,
    filters: &std::collections::BTreeMap<
        String,
        std::collections::BTreeMap<String, reporter_ports::report::FilterCondition>,
    >,
    settings: &super::WorkerSettings,
) -> TableQuery {
    TableQuery {
        fields: fields.into_iter().collect(),
        filters: filters.get(&table).cloned().unwrap_or_default(),
        max_rows: settings.max_rows,
        table,
    }
}

/// The section error of a failed query (a query over its deadline answers `Timeout`).
pub(super) fn section_error(
    ds: &str,
    done: Result<(), DataSourceError>,
) -> Result<(), SectionError> {
    match done {
        Ok(()) => Ok(()),
        Err(DataSourceError::Timeout) => Err(SectionError::Timeout),
        Err(DataSourceError::Unavailable(e)) => {
            tracing::warn!(data_source = %ds, error = %e, "section source unavailable");
            Err(SectionError::Unavailable)
        }
        Err(DataSourceError::RowLimit(_)) => Err(SectionError::RowLimit),
        Err(DataSourceError::TooLarge(_)) => Err(SectionError::TooLarge),
        Err(DataSourceError::Decryption { field, error }) => {
            use reporter_ports::ports::DecryptionError as D;
            // The field's name only: never a value, never a key.
            tracing::warn!(data_source = %ds, field = %field, error = %error, "section field did not decrypt");
            Err(match error {
                D::KeyMissing => SectionError::CrmKeyMissing,
                D::Failed => SectionError::CrmDecryptionFailed,
                D::Malformed => SectionError::CrmValueMalformed,
                D::UnsupportedFormat => SectionError::CrmUnsupportedFormat,
            })
        }
        Err(e) => {
            tracing::warn!(data_source = %ds, error = %e, "section query failed");
            Err(SectionError::QueryFailed)
        }
    }
}

/// A render's outcome before conversion.
pub(super) enum Rendered {
    /// The output, the sections' outcomes and the timings.
    Text(String, BTreeMap<String, SectionOutcome>, Phases),
    /// The output, written in pieces to object storage while rendered, not yet committed.
    Written(Written, BTreeMap<String, SectionOutcome>, Phases),
    /// No output: the generation failed.
    Failed(Generation),
}

/// What generating a report gave: a [`Generation`], or an artifact written while rendered
/// that the job commits after its generation deadline (as it would put a whole artifact).
pub(super) enum Generated {
    Done(Generation),
    Written(Written, BTreeMap<String, SectionOutcome>),
}

impl From<Generation> for Generated {
    fn from(g: Generation) -> Self {
        Self::Done(g)
    }
}

impl Generated {
    /// The generation to record: a written artifact committed (`Failed` when the commit
    /// fails, as a whole artifact that cannot be stored fails).
    async fn commit(self) -> Generation {
        let (written, sections) = match self {
            Self::Done(g) => return g,
            Self::Written(written, sections) => (written, sections),
        };
        let span = crate::telemetry::context::artifact_span();
        let committed = {
            use tracing::Instrument;
            written.commit().instrument(span.clone()).await
        };
        if committed.is_err() {
            span.record("otel.status_code", "ERROR");
        }
        match committed {
            Ok(stored) => Generation::Stored {
                key: stored.key,
                size: stored.size,
                sections,
            },
            Err(e) => storage_failed(&e, sections),
        }
    }
}

/// The generation of an artifact written while rendered that could not be stored: `Failed`,
/// as a whole artifact that cannot be stored fails.
pub(super) fn storage_failed(
    e: &StoreError,
    sections: BTreeMap<String, SectionOutcome>,
) -> Generation {
    tracing::error!(error = %e, "artifact could not be stored");
    Generation::Failed {
        code: ReportErrorCode::ReportGenerationFailed,
        sections,
    }
}

/// How long the phases of a generation took (the `report generated` log line).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Phases {
    pub extract_ms: u64,
    pub context_bytes: usize,
    pub render_ms: u64,
    /// Rows of the table the render took as a stream.
    pub streamed_rows: Option<u64>,
}

impl Phases {
    /// The phases of a whole-context render that began at `phase` (no streamed table),
    /// recording its sandbox time, and an error status when it `failed`, on its `span`.
    pub(super) fn of_render(
        span: &tracing::Span,
        phase: Instant,
        failed: bool,
        extract_ms: u64,
        context_bytes: usize,
    ) -> Self {
        let render_ms = phase.elapsed().as_millis() as u64;
        span.record("reporter.render.sandbox_ms", render_ms);
        if failed {
            span.record("otel.status_code", "ERROR");
        }
        Self {
            extract_ms,
            context_bytes,
            render_ms,
            streamed_rows: None,
        }
    }

    /// The `report generated` log line.
    pub(super) fn log_generated(&self, convert_ms: u64, artifact_bytes: u64) {
        tracing::info!(
            extract_ms = self.extract_ms,
            context_bytes = self.context_bytes,
            render_ms = self.render_ms,
            streamed_rows = self.streamed_rows,
            convert_ms,
            artifact_bytes,
            "report generated"
        );
    }
}

/// `Failed` when every section failed (no artifact is rendered then).
pub(super) fn all_failed(sections: &BTreeMap<String, SectionOutcome>) -> Option<Generation> {
    if sections.is_empty() || sections.values().any(|s| s.ok) {
        return None;
    }
    tracing::warn!("every section failed; no artifact");
    Some(Generation::Failed {
        code: ReportErrorCode::ReportGenerationFailed,
        sections: sections.clone(),
    })
}

/// A render's result with the sections' outcomes and its timings.
pub(super) fn rendered(
    result: Result<String, RunnerError>,
    sections: BTreeMap<String, SectionOutcome>,
    phases: Phases,
) -> Result<Rendered, String> {
    match result {
        Ok(text) => Ok(Rendered::Text(text, sections, phases)),
        Err(e) => render_failure(e, sections),
    }
}

/// What a failed render means: the sandbox unavailable is transient (`Err`: retry); a
/// template error fails the generation (over its time bound: `report_generation_timeout`),
/// recording its cause and template line ([`RenderError::failure`]: no data values; the
/// engine's own words, which may quote data, stay in the log).
pub(super) fn render_failure(
    e: RunnerError,
    sections: BTreeMap<String, SectionOutcome>,
) -> Result<Rendered, String> {
    match e {
        RunnerError::Unavailable(e) => Err(format!("template sandbox unavailable: {e}")),
        RunnerError::Template(e) => {
            tracing::warn!(error = %e, "render failed");
            let code = if e == RenderError::Timeout {
                ReportErrorCode::ReportGenerationTimeout
            } else {
                ReportErrorCode::ReportGenerationFailed
            };
            Ok(Rendered::Failed(Generation::RenderFailed {
                code,
                failure: e.failure(),
                sections,
            }))
        }
    }
}

/// The report's code for a failed PDF conversion: over its deadline (`PDF_TIMEOUT_SECONDS`,
/// wall clock or CPU) `report_generation_timeout`; over its memory bound (`PDF_MEMORY_MIB`),
/// failed, crashed or unavailable `report_generation_failed`.
pub(super) fn pdf_failure_code(e: &PdfError) -> ReportErrorCode {
    match e {
        PdfError::Timeout(_) => ReportErrorCode::ReportGenerationTimeout,
        PdfError::MemoryLimit(_) | PdfError::Failed(_) | PdfError::Unavailable(_) => {
            ReportErrorCode::ReportGenerationFailed
        }
    }
}

/// Writes a table's rows into its section as they arrive. MUST stop the query with
/// `TooLarge` at the first row that takes the section's rows past `max` bytes of JSON, and
/// with `Stopped` (setting `cut`) at the first row past `cap` rows, that row not written.
struct SectionRows<'a> {
    rows: TableJson<'a>,
    /// Bytes of the section's rows so far (every table of the section).
    bytes: &'a mut usize,
    max: usize,
    /// Rows of this table written so far.
    count: usize,
    /// Most rows of this table kept (a preview's `limit`); `None`: every row.
    cap: Option<usize>,
    /// True once a row past the cap arrived.
    cut: bool,
}

impl SectionRows<'_> {
    /// Stops the query at the first row past the cap (before it is written).
    fn admit(&mut self) -> Result<(), DataSourceError> {
        if self.cap.is_some_and(|cap| self.count >= cap) {
            self.cut = true;
            return Err(DataSourceError::Stopped);
        }
        self.count += 1;
        Ok(())
    }

    /// Counts a written row's bytes; MUST stop the query past the section's limit.
    fn count(&mut self, bytes: usize) -> Result<(), DataSourceError> {
        charge_section_bytes(self.bytes, self.max, bytes)
    }
}

/// Adds a row's `bytes` to its section's `total`; `TooLarge` once the total passes `max`
/// (the byte limit of a section, whether its rows go to the context or to a render).
pub(super) fn charge_section_bytes(
    total: &mut usize,
    max: usize,
    bytes: usize,
) -> Result<(), DataSourceError> {
    *total += bytes;
    if *total > max {
        return Err(DataSourceError::TooLarge(max));
    }
    Ok(())
}

impl RowSink for SectionRows<'_> {
    fn push(&mut self, row: Row) -> Result<(), DataSourceError> {
        self.admit()?;
        let bytes = self.rows.push(&row);
        self.count(bytes)
    }

    fn push_json(&mut self, json: &[u8]) -> Result<(), DataSourceError> {
        self.admit()?;
        let bytes = self.rows.push_json(json);
        self.count(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pdf_over_its_deadline_times_out_and_any_other_pdf_failure_fails() {
        use std::time::Duration;
        assert_eq!(
            pdf_failure_code(&PdfError::Timeout(Duration::from_secs(1))),
            ReportErrorCode::ReportGenerationTimeout
        );
        for e in [
            PdfError::MemoryLimit(1),
            PdfError::Failed("x".into()),
            PdfError::Unavailable("x".into()),
        ] {
            assert_eq!(
                pdf_failure_code(&e),
                ReportErrorCode::ReportGenerationFailed,
                "{e}"
            );
        }
    }

    #[test]
    fn each_decryption_failure_has_its_section_code() {
        use reporter_ports::ports::DecryptionError as D;
        for (error, code) in [
            (D::KeyMissing, "crm_key_missing"),
            (D::Failed, "crm_decryption_failed"),
            (D::Malformed, "crm_value_malformed"),
            (D::UnsupportedFormat, "crm_unsupported_format"),
        ] {
            let failed = section_error(
                "plugin_crm",
                Err(DataSourceError::Decryption {
                    field: "document".into(),
                    error,
                }),
            );
            assert_eq!(failed.map_err(|e| e.code()), Err(code));
        }
    }

    #[test]
    fn section_rows_stop_at_the_cap_without_writing_the_row_past_it() {
        let row = serde_json::json!({ "a": 1 }).as_object().cloned().unwrap();
        let mut section = SectionJson::new();
        let mut bytes = 0;
        let mut sink = SectionRows {
            rows: section.table("t"),
            bytes: &mut bytes,
            max: 1000,
            count: 0,
            cap: Some(2),
            cut: false,
        };
        assert_eq!(sink.push(row.clone()), Ok(()));
        assert_eq!(sink.push_json(br#"{"a":1}"#), Ok(()));
        assert!(!sink.cut);
        assert_eq!(sink.push(row), Err(DataSourceError::Stopped));
        assert!(sink.cut);
        assert_eq!(sink.count, 2);
        assert_eq!(bytes, 14, "the row past the cap is not written");
    }

    #[test]
    fn section_rows_stop_at_the_first_row_past_the_limit() {
        let row = serde_json::json!({ "a": 1 }).as_object().cloned().unwrap();
        let mut section = SectionJson::new();
        let mut bytes = 0;
        let mut sink = SectionRows {
            rows: section.table("t"),
            bytes: &mut bytes,
            max: 14,
            count: 0,
            cap: None,
            cut: false,
        };
        assert_eq!(sink.push(row.clone()), Ok(()));
        assert_eq!(sink.push(row.clone()), Ok(()));
        assert_eq!(sink.push(row), Err(DataSourceError::TooLarge(14)));
        assert_eq!(bytes, 21, "three rows of seven bytes were counted");
        let mut bytes = 0;
        let mut sink = SectionRows {
            rows: section.table("u"),
            bytes: &mut bytes,
            max: 14,
            count: 0,
            cap: None,
            cut: false,
        };
        assert_eq!(sink.push_json(br#"{"a":1}"#), Ok(()));
        assert_eq!(sink.push_json(br#"{"a":1}"#), Ok(()));
        assert_eq!(
            sink.push_json(br#"{"a":1}"#),
            Err(DataSourceError::TooLarge(14)),
            "rows given as JSON count the same"
        );
    }
}
