//! The template preview (`POST /v1/templates/preview`): a template, sent or stored, parsed,
//! its fields mapped, its data extracted with at most `limit` rows per table and rendered in
//! the report sandbox, within a time bound, writing nothing (no report, no artifact, no event,
//! no outbox row). What a report of the same template would show, cut short. A sent template
//! is parsed and mapped by the sandbox child that then renders it (one sandbox operation, the
//! parse within the upload's parse bounds) when the engine can ([`PreviewEngine::start`]).
use super::error::{AppError, AppResult, Code};
use super::templates::TemplateFile;
use super::{App, Caller, Generation};
use async_trait::async_trait;
use bytes::Bytes;
use reporter_ports::ports::{RenderCause, RenderFailure, RenderLimits, RenderSession, RunnerError};
use reporter_ports::report::{ReportErrorCode, ReportFilters, ReportStatus, SectionOutcome};
use reporter_ports::template::{MappedFields, OutputFormat, Template};
use reporter_ports::{TemplateId, TenantId};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Rows per table when the request names no `limit`.
pub const PREVIEW_DEFAULT_LIMIT: u32 = 50;
/// Most rows per table a preview may ask for.
pub const PREVIEW_MAX_LIMIT: u32 = 1000;

/// `POST /v1/templates/preview`, as sent: exactly one of `template` (with `output_format`)
/// and `template_id`.
#[derive(Debug, Clone, Default)]
pub struct PreviewRequest {
    /// The source.
    pub template: Option<String>,
    /// A stored template of the caller's tenant.
    pub template_id: Option<String>,
    /// The output format of `template` (case-insensitive).
    pub output_format: Option<String>,
    /// Filters: data source → table → field → condition.
    pub filters: Option<ReportFilters>,
    /// Rows per table (1–1000; default 50).
    pub limit: Option<i64>,
}

/// What the engine renders: a checked source, its mapped fields and checked filters.
#[derive(Debug)]
pub struct PreviewJob {
    /// The source.
    pub source: Arc<str>,
    /// Output format.
    pub format: OutputFormat,
    /// What it reads.
    pub mapped: MappedFields,
    /// Checked filters, keyed by the template's table names.
    pub filters: ReportFilters,
    /// Rows per table.
    pub limit: usize,
    /// The render the engine started with the source's analysis ([`PreviewEngine::start`]),
    /// which takes the context; `None`: the engine renders the source itself.
    pub started: Option<Box<dyn RenderSession>>,
}

/// A preview started in the sandbox ([`PreviewEngine::start`]): what the template reads, and
/// the render (in the child that parsed it) that takes the context.
#[derive(Debug)]
pub struct StartedPreview {
    /// What it reads.
    pub mapped: MappedFields,
    /// The render under way.
    pub render: Box<dyn RenderSession>,
}

/// What the engine gave: the generation (never stored), the rows read per table of the
/// sections that succeeded, and whether any table had more than `limit` rows.
#[derive(Debug)]
pub struct PreviewRun {
    /// The output or why there is none.
    pub generation: Generation,
    /// Data source → table → rows.
    pub rows: BTreeMap<String, BTreeMap<String, usize>>,
    /// A table was cut at the limit.
    pub rows_cut: bool,
}

/// Extraction and render without persistence (the worker's pipeline; see
/// `worker::Previewer`).
#[async_trait]
pub trait PreviewEngine: Send + Sync {
    /// Parses `source` and maps its fields in the sandbox child that will render it (in
    /// `format`): one sandbox operation where an upload's parse and a render are two. The
    /// parse MUST run within the upload's parse bounds (`analysis` the engine's) and fail as
    /// an upload's parse does ([`TemplateRunner::analyze`](reporter_ports::ports::TemplateRunner::analyze)).
    /// `Ok(None)` when the engine cannot (the caller parses the source as an upload does).
    /// MUST write nothing. The default cannot.
    async fn start(
        &self,
        source: Arc<str>,
        format: OutputFormat,
        analysis: RenderLimits,
    ) -> Result<Option<StartedPreview>, RunnerError> {
        let _ = (source, format, analysis);
        Ok(None)
    }

    /// Extracts and renders `job` (in `job.started` when given). MUST write nothing. `Err`
    /// when the sandbox cannot run (its text is for logs).
    async fn run(&self, job: PreviewJob) -> Result<PreviewRun, String>;
}

/// The preview's bounds (`PREVIEW_TIMEOUT_SECONDS`, `PREVIEW_MAX_OUTPUT_BYTES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreviewSettings {
    /// Longest a preview's extraction and render may take.
    pub timeout: Duration,
    /// Most bytes of output answered (text is cut at a character boundary; a larger PDF is
    /// not answered).
    pub max_output_bytes: usize,
}

impl Default for PreviewSettings {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(10),
            max_output_bytes: 1024 * 1024,
        }
    }
}

/// The engine and its bounds, as the application holds them.
#[derive(Clone)]
pub(super) struct PreviewSetup {
    pub engine: Arc<dyn PreviewEngine>,
    pub settings: PreviewSettings,
}

/// The preview's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreviewOutput {
    /// No output (the render failed, or a PDF over the output bound).
    None,
    /// Text formats.
    Text(String),
    /// pdf.
    Binary(Bytes),
}

/// One section's outcome with the rows read from each of its tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviewSection {
    /// True when every table was read.
    pub ok: bool,
    /// Table → rows read (empty when the section failed).
    pub rows: BTreeMap<String, usize>,
    /// Why it failed.
    pub error_code: Option<String>,
}

/// A preview: what a report of the template would hold, cut at the limits.
#[derive(Debug, Clone)]
pub struct Preview {
    /// `Finished`, `Partial` or `Error`, as a report would end.
    pub status: ReportStatus,
    /// The output's media type.
    pub content_type: &'static str,
    /// The output.
    pub output: PreviewOutput,
    /// Rows or output were cut.
    pub truncated: bool,
    /// What the template reads.
    pub mapped_fields: MappedFields,
    /// Per data source.
    pub sections: BTreeMap<String, PreviewSection>,
    /// The report's error code when `status` is `Error`.
    pub error_code: Option<ReportErrorCode>,
    /// The render's failure (cause and template line) when it failed.
    pub render_failure: Option<RenderFailure>,
}

/// The source, format and mapped fields to preview, the template its filters are checked
/// against, and its render when the sandbox started it with the parse.
struct Subject {
    source: Arc<str>,
    template: Template,
    render: Start,
}

/// How a subject's render starts.
enum Start {
    /// In [`PreviewEngine::run`].
    Later,
    /// Started with the parse.
    Started(Box<dyn RenderSession>),
    /// The start (a render slot, a child, the parse) passed the preview's time bound.
    TimedOut,
}

fn limit_of(raw: Option<i64>) -> AppResult<usize> {
    let limit = raw.unwrap_or(i64::from(PREVIEW_DEFAULT_LIMIT));
    if !(1..=i64::from(PREVIEW_MAX_LIMIT)).contains(&limit) {
        return Err(AppError::new(
            Code::InvalidFieldValue,
            format!("limit {limit} is out of range: rows per table are 1 to {PREVIEW_MAX_LIMIT}"),
        )
        .field(
            "limit",
            format!("must be between 1 and {PREVIEW_MAX_LIMIT}"),
        ));
    }
    Ok(limit as usize)
}

/// A template that exists only for the preview (never stored): what the filter checks read.
fn transient_template(tenant: &TenantId, format: OutputFormat, mapped: MappedFields) -> Template {
    let id = TemplateId::new();
    let now = chrono::Utc::now();
    Template {
        id,
        tenant: tenant.clone(),
        output_format: format,
        description: String::new(),
        file_name: format!("{id}.tpl"),
        object_key: String::new(),
        content_sha256: String::new(),
        size_bytes: 0,
        mapped_fields: mapped,
        version: 0,
        created_at: now,
        updated_at: now,
        deleted_at: None,
    }
}

/// The run of a preview that passed its time bound.
fn timed_out(timeout: Duration) -> PreviewRun {
    tracing::warn!(?timeout, "preview passed its time bound");
    PreviewRun {
        generation: Generation::RenderFailed {
            code: ReportErrorCode::ReportGenerationTimeout,
            failure: RenderFailure {
                cause: RenderCause::Timeout,
                line: None,
            },
            sections: BTreeMap::new(),
        },
        rows: BTreeMap::new(),
        rows_cut: false,
    }
}

/// `text` cut to at most `max` bytes at a character boundary; true when cut.
fn cut_text(mut text: String, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text, false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    (text, true)
}

/// The status a report with these sections would end with when it has an output.
fn status_of(sections: &BTreeMap<String, SectionOutcome>) -> ReportStatus {
    if sections.values().all(|s| s.ok) {
        ReportStatus::Finished
    } else {
        ReportStatus::Partial
    }
}

impl App {
    /// Attaches the preview engine and its bounds (without them a preview answers 503).
    pub fn with_preview(
        mut self,
        engine: Arc<dyn PreviewEngine>,
        settings: PreviewSettings,
    ) -> Self {
        self.preview = Some(PreviewSetup { engine, settings });
        self
    }

    /// Previews a template (see the module docs).
    ///
    /// MUST refuse: neither or both of `template` / `templateId` (TPL-0001 / TPL-0064), a
    /// `limit` outside 1–1000 (TPL-0064), a source that an upload would refuse with the
    /// upload's code (TPL-0008 with the parser's words for one that does not parse), a
    /// template of another tenant (TPL-0011), bad filters as a report request does. A render
    /// that fails, or passes the time bound, is a 200 with `status` `Error`. MUST write
    /// nothing.
    pub async fn preview_template(
        &self,
        caller: &Caller,
        req: PreviewRequest,
    ) -> AppResult<Preview> {
        let span = crate::use_case_span!("preview_template", tenant = %caller.tenant);
        span.run(async move {
            let limit = limit_of(req.limit)?;
            let subject = self.preview_subject(caller, &req).await?;
            let Some(setup) = self.preview.clone() else {
                return Err(AppError::new(
                    Code::ServiceUnavailable,
                    "previews are not available in this process",
                ));
            };
            let format = subject.template.output_format;
            let started = match subject.render {
                Start::Later => None,
                Start::Started(render) => Some(render),
                // Nothing was parsed: there is nothing to check the filters against.
                Start::TimedOut => {
                    let run = timed_out(setup.settings.timeout);
                    let max = setup.settings.max_output_bytes;
                    return Ok(preview_of(run, format, MappedFields::new(), max));
                }
            };
            let filters = self
                .check_filters(req.filters.unwrap_or_default(), &subject.template)
                .await?;
            let job = PreviewJob {
                source: subject.source,
                format,
                mapped: subject.template.mapped_fields.clone(),
                filters,
                limit,
                started,
            };
            let run = tokio::time::timeout(setup.settings.timeout, setup.engine.run(job)).await;
            let run = match run {
                Ok(Ok(run)) => run,
                Ok(Err(detail)) => {
                    tracing::error!(%detail, "template sandbox unavailable for a preview");
                    return Err(AppError::new(
                        Code::SandboxUnavailable,
                        "templates cannot be previewed right now; retry later",
                    ));
                }
                Err(_) => timed_out(setup.settings.timeout),
            };
            let preview = preview_of(
                run,
                format,
                subject.template.mapped_fields,
                setup.settings.max_output_bytes,
            );
            tracing::info!(
                status = preview.status.as_str(),
                truncated = preview.truncated,
                "template previewed"
            );
            Ok(preview)
        })
        .await
    }

    /// The source and template of a request: the sent source checked as an upload is, or the
    /// caller's stored template and its file.
    async fn preview_subject(&self, caller: &Caller, req: &PreviewRequest) -> AppResult<Subject> {
        match (&req.template, &req.template_id) {
            (None, None) => Err(AppError::new(
                Code::MissingFields,
                "send the template's source (template) or a stored template's id (templateId)",
            )
            .field("template", "template or templateId is required")),
            (Some(_), Some(_)) => Err(AppError::new(
                Code::InvalidFieldValue,
                "send template or templateId, not both",
            )
            .field("templateId", "not with template")),
            (Some(source), None) => self.sent_subject(caller, source, req).await,
            (None, Some(raw_id)) => {
                if req.output_format.is_some() {
                    return Err(AppError::new(
                        Code::InvalidFieldValue,
                        "a stored template renders in its own output format; leave outputFormat out with templateId",
                    )
                    .field("outputFormat", "not with templateId"));
                }
                self.stored_subject(caller, raw_id).await
            }
        }
    }

    async fn sent_subject(
        &self,
        caller: &Caller,
        source: &str,
        req: &PreviewRequest,
    ) -> AppResult<Subject> {
        let raw = req.output_format.as_deref().ok_or_else(|| {
            AppError::new(
                Code::MissingFields,
                "outputFormat is required with template",
            )
            .field("outputFormat", "required")
        })?;
        let format = super::templates::parse_format(raw)?;
        let file = TemplateFile {
            file_name: "preview.tpl".into(),
            bytes: Bytes::from(source.to_owned()),
        };
        let Some(setup) = self.preview.as_ref() else {
            let (checked, _warnings) = self.check_source(&file, format).await?;
            return Ok(Subject {
                source: Arc::from(source),
                template: transient_template(&caller.tenant, format, checked.mapped),
                render: Start::Later,
            });
        };
        // The upload's checks, then its parse in the child that renders (the parse within the
        // upload's parse bounds, the start within the preview's time bound).
        let (text, _sha256) = super::templates::validate_source(&file, format).await?;
        let start = setup
            .engine
            .start(text.clone(), format, RenderLimits::default());
        let (mapped, render) = match tokio::time::timeout(setup.settings.timeout, start).await {
            Ok(Ok(Some(started))) => (started.mapped, Start::Started(started.render)),
            Ok(Ok(None)) => {
                let (checked, _warnings) = self.check_source(&file, format).await?;
                (checked.mapped, Start::Later)
            }
            Ok(Err(e)) => return Err(super::templates::analysis_error(e)),
            Err(_) => (MappedFields::new(), Start::TimedOut),
        };
        if !matches!(render, Start::TimedOut) {
            // A refusal drops the started render: its child is killed.
            self.check_mapped_fields(&mapped).await?;
        }
        Ok(Subject {
            source: text,
            template: transient_template(&caller.tenant, format, mapped),
            render,
        })
    }

    async fn stored_subject(&self, caller: &Caller, raw_id: &str) -> AppResult<Subject> {
        let id: TemplateId = raw_id.trim().parse().map_err(|_| {
            AppError::new(
                Code::InvalidTemplateId,
                format!("templateId '{raw_id}' is not a UUID"),
            )
            .field("templateId", "must be a UUID")
        })?;
        let template = self.get_template(caller, id).await?;
        let bytes = self.template_file(&template).await?;
        let source = String::from_utf8(bytes.to_vec()).map_err(|_| {
            AppError::new(Code::Internal, "the template's stored file is not UTF-8")
        })?;
        Ok(Subject {
            source: Arc::from(source),
            template,
            render: Start::Later,
        })
    }
}

/// The preview of a run: its status and output (cut at `max_output` bytes), its sections.
fn preview_of(
    run: PreviewRun,
    format: OutputFormat,
    mapped: MappedFields,
    max_output: usize,
) -> Preview {
    let (status, output, outcomes, error_code, render_failure) = match run.generation {
        Generation::Artifact { bytes, sections } => {
            let output = if format == OutputFormat::Pdf {
                PreviewOutput::Binary(bytes)
            } else {
                PreviewOutput::Text(String::from_utf8_lossy(&bytes).into_owned())
            };
            (status_of(&sections), output, sections, None, None)
        }
        // Previews never write in pieces; recorded as a report would be, without the key.
        Generation::Stored { sections, .. } => (
            status_of(&sections),
            PreviewOutput::None,
            sections,
            None,
            None,
        ),
        Generation::Failed { code, sections } => (
            ReportStatus::Error,
            PreviewOutput::None,
            sections,
            Some(code),
            None,
        ),
        Generation::RenderFailed {
            code,
            failure,
            sections,
        } => (
            ReportStatus::Error,
            PreviewOutput::None,
            sections,
            Some(code),
            Some(failure),
        ),
    };
    let (output, output_cut) = match output {
        PreviewOutput::Text(text) => {
            let (text, cut) = cut_text(text, max_output);
            (PreviewOutput::Text(text), cut)
        }
        PreviewOutput::Binary(b) if b.len() > max_output => (PreviewOutput::None, true),
        other => (other, false),
    };
    let mut rows = run.rows;
    let sections = outcomes
        .into_iter()
        .map(|(ds, o)| {
            let section = PreviewSection {
                ok: o.ok,
                rows: rows.remove(&ds).unwrap_or_default(),
                error_code: o.error_code,
            };
            (ds, section)
        })
        .collect();
    Preview {
        status,
        content_type: format.content_type(),
        output,
        truncated: run.rows_cut || output_cut,
        mapped_fields: mapped,
        sections,
        error_code,
        render_failure,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_outside_one_to_a_thousand_are_refused() {
        assert_eq!(limit_of(None).ok(), Some(50));
        assert_eq!(limit_of(Some(1)).ok(), Some(1));
        assert_eq!(limit_of(Some(1000)).ok(), Some(1000));
        for bad in [0, -1, 1001, i64::MAX] {
            assert_eq!(
                limit_of(Some(bad)).map_err(|e| e.code),
                Err(Code::InvalidFieldValue)
            );
        }
    }

    #[test]
    fn text_is_cut_at_a_character_boundary() {
        assert_eq!(cut_text("abc".into(), 3), ("abc".into(), false));
        assert_eq!(cut_text("abcd".into(), 3), ("abc".into(), true));
        // "é" is two bytes: a cut in its middle keeps the character out.
        assert_eq!(cut_text("aé".into(), 2), ("a".into(), true));
    }

    #[test]
    fn a_pdf_over_the_output_bound_is_not_answered_and_counts_as_cut() {
        let run = |bytes: &'static [u8]| PreviewRun {
            generation: Generation::Artifact {
                bytes: Bytes::from_static(bytes),
                sections: BTreeMap::new(),
            },
            rows: BTreeMap::new(),
            rows_cut: false,
        };
        let p = preview_of(run(b"%PDF-1.7"), OutputFormat::Pdf, MappedFields::new(), 4);
        assert_eq!((p.output, p.truncated), (PreviewOutput::None, true));
        let p = preview_of(run(b"%PDF"), OutputFormat::Pdf, MappedFields::new(), 4);
        assert!(!p.truncated);
        assert_eq!(p.status, ReportStatus::Finished);
    }
}
