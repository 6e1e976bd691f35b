//! Template use cases.
use super::datasources::Warning;
use super::emission::{EventIdentity, EventSubject};
use super::error::{AppError, AppResult, Code};
use super::optimistic::Attempt;
use super::{App, Caller};
use bytes::Bytes;
use chrono::{DateTime, Utc};
use reporter_ports::events::Event;
use reporter_ports::events::payloads::{DeadlineDeleted, TemplateChanged, TemplateDeleted};
use reporter_ports::page::{Page, PageRequest};
use reporter_ports::ports::{
    Change, OutboxRecord, RenderError, RenderLimits, RunnerError, StoredObject, TemplateQuery,
    UnitOfWork,
};
use reporter_ports::template::{
    MappedFields, OutputFormat, Template, TemplateFileError, validate_template_file,
};
use reporter_ports::{Revisioned, TemplateId, TenantId};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// Longest accepted description.
pub const MAX_DESCRIPTION_LEN: usize = 1000;

/// An uploaded `.tpl` file.
#[derive(Debug, Clone)]
pub struct TemplateFile {
    /// Client file name.
    pub file_name: String,
    /// Content.
    pub bytes: Bytes,
}

/// `POST /v1/templates`.
#[derive(Debug, Clone)]
pub struct CreateTemplate {
    /// The source.
    pub file: TemplateFile,
    /// Output format as sent (case-insensitive).
    pub output_format: String,
    /// Description.
    pub description: Option<String>,
    /// The request's `X-Idempotency` reservation: its answer commits with the template.
    pub idempotency: Option<super::Idempotent<TemplateWithWarnings>>,
}

/// `PATCH /v1/templates/{id}`: every part optional.
#[derive(Debug, Clone, Default)]
pub struct UpdateTemplate {
    /// New source.
    pub file: Option<TemplateFile>,
    /// New output format (requires a new file).
    pub output_format: Option<String>,
    /// New description.
    pub description: Option<String>,
}

/// A template with the warnings of its validation.
#[derive(Debug, Clone)]
pub struct TemplateWithWarnings {
    /// The stored template.
    pub template: Template,
    /// Non-fatal findings.
    pub warnings: Vec<Warning>,
}

/// What a delete did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateDeletion {
    /// The template.
    pub id: TemplateId,
    /// Soft-delete instant.
    pub deleted_at: DateTime<Utc>,
    /// Live deadlines soft-deleted with it.
    pub cascaded_deadlines: u64,
}

fn file_error(e: TemplateFileError) -> AppError {
    let code = match &e {
        TemplateFileError::Empty => Code::EmptyFile,
        TemplateFileError::NotTpl => Code::InvalidFileFormat,
        TemplateFileError::TooLarge { .. } => Code::TemplateTooLarge,
        TemplateFileError::NotUtf8 => Code::InvalidUpload,
        TemplateFileError::ContentMismatch { .. } => Code::InvalidContent,
        TemplateFileError::ScriptDetected { .. } => Code::ScriptDetected,
    };
    AppError::new(code, e.to_string()).field("template", e.to_string())
}

pub(super) fn parse_format(raw: &str) -> AppResult<OutputFormat> {
    OutputFormat::parse(raw).ok_or_else(|| {
        AppError::new(
            Code::InvalidOutputFormat,
            format!("outputFormat '{raw}' is not one of html, pdf, csv, xml, txt"),
        )
        .field(
            "outputFormat",
            "must be one of html, pdf, csv, xml, txt (case-insensitive)",
        )
    })
}

fn check_description(raw: &str) -> AppResult<String> {
    if raw.chars().count() > MAX_DESCRIPTION_LEN {
        return Err(AppError::new(
            Code::InvalidFieldValue,
            format!("description must be at most {MAX_DESCRIPTION_LEN} characters"),
        )
        .field("description", "too long"));
    }
    let d = raw.trim();
    super::human_text::check_human_text("description", raw)?;
    Ok(d.to_owned())
}

/// Source validated and scanned: text, mapped fields, digest.
pub(super) struct CheckedSource {
    pub(super) mapped: MappedFields,
    sha256: String,
    size: u64,
}

/// Maps what the sandbox said about an uploaded template: a template over a bound is a 400
/// whose code names the bound; a sandbox that cannot run is a 503.
pub(super) fn analysis_error(e: RunnerError) -> AppError {
    let template = match e {
        RunnerError::Unavailable(detail) => {
            tracing::error!(%detail, "template sandbox unavailable");
            return AppError::new(
                Code::SandboxUnavailable,
                "templates cannot be checked right now; retry later",
            );
        }
        RunnerError::Template(t) => t,
    };
    let detail = template.to_string();
    let (code, message) = match template {
        RenderError::Syntax(_) | RenderError::Evaluation(_) | RenderError::Fault(_) => {
            (Code::TemplateSyntax, "the template does not parse")
        }
        RenderError::Timeout => (
            Code::TemplateParseTimeout,
            "the template took longer to parse than TEMPLATE_PARSE_TIMEOUT_MS allows",
        ),
        RenderError::MemoryLimit(_) => (
            Code::TemplateParseMemory,
            "parsing the template needed more memory than TEMPLATE_PARSE_MEMORY_MIB allows",
        ),
        RenderError::NestingTooDeep(_)
        | RenderError::FuelExhausted
        | RenderError::RecursionLimit
        | RenderError::OutputTooLarge(_)
        | RenderError::Crashed(_) => (
            Code::TemplateTooComplex,
            "the template is too complex to parse (nesting, chains or size past the parser's bounds)",
        ),
    };
    AppError::new(code, message).field("template", detail)
}

/// The file checks of an upload (name, size, UTF-8, format, script) and the file's digest, on
/// the blocking pool (linear in the file's size): its text and its SHA-256 (hex).
pub(super) async fn validate_source(
    file: &TemplateFile,
    format: OutputFormat,
) -> AppResult<(Arc<str>, String)> {
    let name = file.file_name.clone();
    let bytes = file.bytes.clone();
    tokio::task::spawn_blocking(move || {
        let text = validate_template_file(&name, &bytes, format).map_err(file_error)?;
        let text: Arc<str> = Arc::from(text);
        Ok::<_, AppError>((text, hex::encode(Sha256::digest(&bytes))))
    })
    .await
    .map_err(|e| {
        tracing::error!(error = %e, "template validation task failed");
        AppError::new(Code::Internal, "the template could not be validated")
    })?
}

impl App {
    /// Validates an uploaded file (name, size, UTF-8, format, script) and parses it in the
    /// sandbox. The file checks and the digest run on the blocking pool and are linear in the
    /// file's size; the parse runs in a sandbox child under the upload parse bounds.
    pub(super) async fn check_source(
        &self,
        file: &TemplateFile,
        format: OutputFormat,
    ) -> AppResult<(CheckedSource, Vec<Warning>)> {
        let (text, sha256) = validate_source(file, format).await?;
        let mapped = self
            .ports
            .runner
            .analyze(text, RenderLimits::default())
            .await
            .map_err(analysis_error)?
            .mapped_fields;
        let warnings = self.check_mapped_fields(&mapped).await?;
        Ok((
            CheckedSource {
                mapped,
                sha256,
                size: file.bytes.len() as u64,
            },
            warnings,
        ))
    }

    fn template_event(
        &self,
        event: fn(TemplateChanged) -> Event,
        t: &Template,
        now: DateTime<Utc>,
    ) -> Option<OutboxRecord> {
        let payload = TemplateChanged {
            template_id: t.id.to_string(),
            output_format: t.output_format.as_str().to_owned(),
            description: t.description.clone(),
            file_name: t.file_name.clone(),
            created_at: t.created_at,
            updated_at: t.updated_at,
        };
        self.emitter.row(
            event(payload),
            EventSubject::new(&t.tenant, &t.id.to_string(), t.version),
            EventIdentity::Fresh,
            now,
        )
    }

    /// Uploads a template.
    ///
    /// Order: validate everything, store the file, then commit the record with its
    /// `template.created` event. A failed commit deletes the stored file again; a crash in
    /// between can leave an unreferenced file, never a record without its file.
    pub async fn create_template(
        &self,
        caller: &Caller,
        cmd: CreateTemplate,
    ) -> AppResult<TemplateWithWarnings> {
        let span = crate::use_case_span!("create_template", tenant = %caller.tenant);
        span.run(async move {
            let format = parse_format(&cmd.output_format)?;
            let description = check_description(cmd.description.as_deref().unwrap_or_default())?;
            let (checked, warnings) = self.check_source(&cmd.file, format).await?;
            let id = TemplateId::new();
            let key = self.settings.layout.template(&caller.tenant, id);
            let stored_key = self
                .ports
                .storage
                .put(&key, cmd.file.bytes.clone(), "text/plain; charset=utf-8")
                .await
                .map_err(AppError::object_storage)?;
            let now = self.now();
            let template = Template {
                id,
                tenant: caller.tenant.clone(),
                output_format: format,
                description,
                file_name: format!("{id}.tpl"),
                object_key: stored_key.clone(),
                content_sha256: checked.sha256,
                size_bytes: checked.size,
                mapped_fields: checked.mapped,
                version: 1,
                created_at: now,
                updated_at: now,
                deleted_at: None,
            };
            let created = TemplateWithWarnings { template, warnings };
            let uow = UnitOfWork::new()
                .change(Change::Template {
                    record: created.template.clone(),
                    expected_version: None,
                })
                .with_outbox(self.template_event(Event::TemplateCreated, &created.template, now))
                .with_idempotency(cmd.idempotency.map(|i| i.completion(&created)));
            if let Err(e) = self.commit(&caller.tenant, uow).await {
                if let Err(cleanup) = self.ports.storage.delete(&stored_key).await {
                    tracing::warn!(error = %cleanup, key = %stored_key, "could not remove the file of an uncommitted template");
                }
                return Err(AppError::store(e, "Template"));
            }
            tracing::info!(template_id = %id, format = %format, "template created");
            Ok(created)
        })
        .await
    }

    /// A live template, owned (see [`Self::read_template`], whose span it runs in). MUST
    /// answer NotFound for a missing, deleted or foreign id.
    pub async fn get_template(&self, caller: &Caller, id: TemplateId) -> AppResult<Template> {
        Ok(Arc::unwrap_or_clone(self.read_template(caller, id).await?))
    }

    /// A live template shared with the store: the record as the store holds it, not copied
    /// (`GET /v1/templates/{id}` only reads it to answer). MUST answer NotFound for a
    /// missing, deleted or foreign id.
    /// Its span `get_template` (`tenant`, `template_id`) is a
    /// [`use_case_span!`](crate::use_case_span!): the hottest read of the service records it
    /// without `tracing` when no log wants it.
    pub async fn read_template(&self, caller: &Caller, id: TemplateId) -> AppResult<Arc<Template>> {
        let span =
            crate::use_case_span!("get_template", tenant = %caller.tenant, template_id = %id);
        span.run(async {
            self.ports
                .templates
                .get_shared(&caller.tenant, id, false)
                .await
                .map_err(|e| AppError::store(e, "Template"))?
                .ok_or_else(|| AppError::not_found("Template"))
        })
        .await
    }

    /// Lists live templates.
    pub async fn list_templates(
        &self,
        caller: &Caller,
        query: &TemplateQuery,
        page: PageRequest,
    ) -> AppResult<Page<Template>> {
        let span = crate::use_case_span!("list_templates", tenant = %caller.tenant);
        span.run(async move {
            self.ports
                .templates
                .list(&caller.tenant, query, page)
                .await
                .map_err(|e| AppError::store(e, "Template"))
        })
        .await
    }

    /// Updates a template's description, format and/or file.
    ///
    /// MUST refuse an output-format change without a new file (`FormatChangeWithoutFile`) and an
    /// empty update (`MissingFields`). A new file is validated against the (new) format exactly
    /// like an upload. If the commit fails the previous file content is restored.
    pub async fn update_template(
        &self,
        caller: &Caller,
        id: TemplateId,
        cmd: UpdateTemplate,
    ) -> AppResult<TemplateWithWarnings> {
        let span =
            crate::use_case_span!("update_template", tenant = %caller.tenant, template_id = %id);
        span.run(async move {
            let (new_format, description) = check_update(&cmd)?;
            let current = self.get_template(caller, id).await?;
            if new_format.is_some_and(|f| f != current.output_format) && cmd.file.is_none() {
                return Err(AppError::new(
                    Code::FormatChangeWithoutFile,
                    "changing outputFormat requires a new template file",
                )
                .field("template", "required when outputFormat changes"));
            }
            let format = new_format.unwrap_or(current.output_format);
            let (checked, warnings) = match &cmd.file {
                Some(file) => {
                    let (c, w) = self.check_source(file, format).await?;
                    (Some(c), w)
                }
                None => (None, Vec::new()),
            };
            let (previous, stored_key) = match &cmd.file {
                Some(file) => self.replace_file(caller, &current, file).await?,
                None => (None, None),
            };
            let (description, checked, stored) = (&description, &checked, &stored_key);
            let on_store = |e| AppError::store(e, "Template");
            let result = self
                .write_retrying_from(
                    &caller.tenant,
                    on_store,
                    current,
                    || self.get_template(caller, id),
                    |base| async move {
                        let now = self.now();
                        let mut next = base.next_revision(now);
                        next.output_format = format;
                        if let Some(d) = description {
                            next.description = d.clone();
                        }
                        if let (Some(c), Some(k)) = (checked, stored) {
                            next.mapped_fields = c.mapped.clone();
                            next.content_sha256 = c.sha256.clone();
                            next.size_bytes = c.size;
                            next.object_key = k.clone();
                        }
                        let row = self.template_event(Event::TemplateUpdated, &next, now);
                        let uow = UnitOfWork::new()
                            .change(base.update(next.clone()))
                            .with_outbox(row);
                        Ok(Attempt::commit(uow, next))
                    },
                )
                .await;
            match result {
                Ok(t) => {
                    tracing::info!("template updated");
                    Ok(TemplateWithWarnings {
                        template: t,
                        warnings,
                    })
                }
                Err(e) => {
                    if let (Some(key), Some(prev)) = (&stored_key, previous) {
                        self.restore_file(key, prev).await;
                    }
                    Err(e)
                }
            }
        })
        .await
    }

    /// Writes the new file of `template`, keeping the previous content to restore it if the
    /// record cannot be committed. Answers that content and the key as stored.
    async fn replace_file(
        &self,
        caller: &Caller,
        template: &Template,
        file: &TemplateFile,
    ) -> AppResult<(Option<StoredObject>, Option<String>)> {
        let storage = &self.ports.storage;
        let previous = storage
            .get(&template.object_key)
            .await
            .map_err(AppError::object_storage)?;
        let key = self.settings.layout.template(&caller.tenant, template.id);
        let stored = storage
            .put(&key, file.bytes.clone(), "text/plain; charset=utf-8")
            .await
            .map_err(AppError::object_storage)?;
        Ok((previous, Some(stored)))
    }

    /// Puts `previous` back at `key` (an update whose record did not commit); logs when it
    /// cannot.
    async fn restore_file(&self, key: &str, previous: StoredObject) {
        let put = self
            .ports
            .storage
            .put(key, previous.bytes, &previous.content_type);
        if let Err(e) = put.await {
            tracing::error!(error = %e, key = %key, "could not restore the previous template file");
        }
    }

    /// Soft-deletes a template and, in the same unit of work, every live deadline linked to it,
    /// with `template.deleted` (carrying the cascade count) and one `deadline.deleted` per
    /// cascaded deadline. The file is kept so existing reports stay downloadable.
    pub async fn delete_template(
        &self,
        caller: &Caller,
        id: TemplateId,
    ) -> AppResult<TemplateDeletion> {
        let span =
            crate::use_case_span!("delete_template", tenant = %caller.tenant, template_id = %id);
        span.run(async move {
            let on_store = |e| AppError::store(e, "Template");
            let deletion = self
                .write_retrying(&caller.tenant, on_store, || async move {
                    let template = self.get_template(caller, id).await?;
                    let deadlines = self
                        .ports
                        .deadlines
                        .list_by_template(&caller.tenant, id)
                        .await
                        .map_err(|e| AppError::store(e, "Deadline"))?;
                    let now = self.now();
                    let mut uow = UnitOfWork::new();
                    for d in &deadlines {
                        let mut next = d.next_revision(now);
                        next.deleted_at = Some(now);
                        let payload = DeadlineDeleted {
                            deadline_id: d.id.to_string(),
                            template_id: Some(id.to_string()),
                            deleted_at: now,
                            cascaded: true,
                        };
                        let row = self.emitter.row(
                            Event::DeadlineDeleted(payload),
                            EventSubject::new(&caller.tenant, &d.id.to_string(), next.version),
                            EventIdentity::Fresh,
                            now,
                        );
                        uow = uow.change(d.update(next)).with_outbox(row);
                    }
                    let mut deleted = template.next_revision(now);
                    deleted.deleted_at = Some(now);
                    let version = deleted.version;
                    let cascaded = deadlines.len() as u64;
                    let payload = TemplateDeleted {
                        template_id: id.to_string(),
                        output_format: template.output_format.as_str().to_owned(),
                        deleted_at: now,
                        cascaded_deadline_count: cascaded,
                    };
                    let row = self.emitter.row(
                        Event::TemplateDeleted(payload),
                        EventSubject::new(&caller.tenant, &id.to_string(), version),
                        EventIdentity::Fresh,
                        now,
                    );
                    uow = uow.change(template.update(deleted)).with_outbox(row);
                    let deletion = TemplateDeletion {
                        id,
                        deleted_at: now,
                        cascaded_deadlines: cascaded,
                    };
                    Ok(Attempt::commit(uow, deletion))
                })
                .await?;
            tracing::info!(cascaded = deletion.cascaded_deadlines, "template deleted");
            Ok(deletion)
        })
        .await
    }

    /// Counts live templates of a tenant.
    pub(crate) async fn count_templates(&self, tenant: &TenantId) -> AppResult<u64> {
        self.ports
            .templates
            .count(tenant)
            .await
            .map_err(|e| AppError::store(e, "Template"))
    }
}

/// The new output format and description of an update, checked.
///
/// MUST answer `MissingFields` for an empty update, and the format's and description's own
/// errors for bad values.
fn check_update(cmd: &UpdateTemplate) -> AppResult<(Option<OutputFormat>, Option<String>)> {
    if cmd.file.is_none() && cmd.output_format.is_none() && cmd.description.is_none() {
        return Err(AppError::new(
            Code::MissingFields,
            "send at least one of template, outputFormat, description",
        ));
    }
    let format = cmd.output_format.as_deref().map(parse_format).transpose()?;
    let description = cmd
        .description
        .as_deref()
        .map(check_description)
        .transpose()?;
    Ok((format, description))
}
