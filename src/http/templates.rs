//! `/v1/templates` operations.
use super::auth::{Auth, Scope};
use super::dto::{WarningDto, day_window, either, list_paging, output_format_filter, path_uuid};
use super::error::{
    AUTH, ApiError, ApiResult, CONFLICT, NOT_FOUND, PAYLOAD_TOO_LARGE, UNAVAILABLE,
};
use super::idempotency::{IdempotencyReservation, json_answer};
use super::json_body::{JsonBody, as_openapi};
use super::tags::ApiTags;
use super::template_json::TemplateJson;
use crate::app::{
    App, AppError, Code, CreateTemplate, TemplateFile, TemplateWithWarnings, UpdateTemplate,
};
use bytes::Bytes;
use chrono::{DateTime, Utc};
use poem::http::StatusCode;
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::types::Example;
use poem_openapi::types::multipart::Upload;
use poem_openapi::{ApiResponse, Enum, Multipart, Object, OpenApi};
use reporter_ports::TemplateId;
use reporter_ports::ports::TemplateQuery;
use reporter_ports::template::{MAX_TEMPLATE_BYTES, OutputFormat, Template};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Output format of a template and its reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum, serde::Serialize)]
#[oai(rename = "OutputFormat", rename_all = "lowercase")]
#[serde(rename_all = "lowercase")]
pub enum OutputFormatDto {
    /// HTML.
    Html,
    /// PDF rendered from the template's HTML.
    Pdf,
    /// CSV.
    Csv,
    /// XML.
    Xml,
    /// Plain text.
    Txt,
}

impl From<OutputFormat> for OutputFormatDto {
    fn from(f: OutputFormat) -> Self {
        match f {
            OutputFormat::Html => Self::Html,
            OutputFormat::Pdf => Self::Pdf,
            OutputFormat::Csv => Self::Csv,
            OutputFormat::Xml => Self::Xml,
            OutputFormat::Txt => Self::Txt,
        }
    }
}

/// A report template.
#[derive(Debug, Clone, Object, serde::Serialize)]
#[oai(rename = "Template", rename_all = "camelCase", example)]
#[serde(rename_all = "camelCase")]
pub struct TemplateDto {
    /// Template id (UUIDv7).
    pub id: uuid::Uuid,
    /// Output format of reports rendered from it.
    pub output_format: OutputFormatDto,
    /// Description (also the template's name on deadlines).
    pub description: String,
    /// `<id>.tpl`.
    pub file_name: String,
    /// Data the template reads: data source → table → fields.
    pub mapped_fields: BTreeMap<String, BTreeMap<String, Vec<String>>>,
    /// Size of the template file in bytes.
    pub size_bytes: u64,
    /// SHA-256 of the template file (hex).
    pub sha256: String,
    /// Creation instant.
    #[serde(serialize_with = "as_openapi::instant")]
    pub created_at: DateTime<Utc>,
    /// Last change instant.
    #[serde(serialize_with = "as_openapi::instant")]
    pub updated_at: DateTime<Utc>,
    /// Non-fatal findings of the upload (e.g. a data source that could not be checked);
    /// absent when there are none, as in the original.
    #[oai(skip_serializing_if_is_empty)]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<WarningDto>,
}

impl Example for TemplateDto {
    fn example() -> Self {
        Self {
            id: uuid::Uuid::parse_str("8f2c1a9e-4b30-4c02-9a1b-2d5e6f7a1c33").unwrap_or_default(),
            output_format: OutputFormatDto::Html,
            description: "Monthly account statement".into(),
            file_name: "8f2c1a9e-4b30-4c02-9a1b-2d5e6f7a1c33.tpl".into(),
            mapped_fields: BTreeMap::from([(
                "bank".to_owned(),
                BTreeMap::from([(
                    "accounts".to_owned(),
                    vec!["account_id".to_owned(), "holder_name".to_owned()],
                )]),
            )]),
            size_bytes: 812,
            sha256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08".into(),
            created_at: DateTime::parse_from_rfc3339("2026-07-29T14:22:08Z")
                .map(|d| d.with_timezone(&Utc))
                .unwrap_or_default(),
            updated_at: DateTime::parse_from_rfc3339("2026-07-29T14:22:08Z")
                .map(|d| d.with_timezone(&Utc))
                .unwrap_or_default(),
            warnings: Vec::new(),
        }
    }
}

impl TemplateDto {
    /// Moves the template's text into the DTO (nothing is copied).
    fn from_parts(t: Template, warnings: &[crate::app::Warning]) -> Self {
        Self {
            id: t.id.uuid(),
            output_format: t.output_format.into(),
            description: t.description,
            file_name: t.file_name,
            mapped_fields: t
                .mapped_fields
                .into_iter()
                .map(|(ds, tables)| {
                    (
                        ds,
                        tables
                            .into_iter()
                            .map(|(tb, f)| (tb, f.into_iter().collect()))
                            .collect(),
                    )
                })
                .collect(),
            size_bytes: t.size_bytes,
            sha256: t.content_sha256,
            created_at: t.created_at,
            updated_at: t.updated_at,
            warnings: warnings.iter().map(WarningDto::from).collect(),
        }
    }
}

impl From<Template> for TemplateDto {
    fn from(t: Template) -> Self {
        Self::from_parts(t, &[])
    }
}

impl From<TemplateWithWarnings> for TemplateDto {
    fn from(t: TemplateWithWarnings) -> Self {
        Self::from_parts(t.template, &t.warnings)
    }
}

/// A page of templates.
#[derive(Debug, Clone, Object)]
#[oai(rename = "TemplatePage")]
pub struct TemplatePage {
    /// Templates of this page.
    pub items: Vec<TemplateDto>,
    /// Page number (1-based).
    pub page: u32,
    /// Page size.
    pub limit: u32,
    /// Templates matching the filters across all pages.
    pub total: u64,
}

/// Upload form.
#[derive(Debug, Multipart)]
#[oai(deny_unknown_fields)]
pub struct CreateTemplateForm {
    /// The template file; its name must end in `.tpl`, at most 1 MiB of UTF-8 text.
    pub template: Upload,
    /// html, pdf, csv, xml or txt (case-insensitive).
    #[oai(rename = "outputFormat")]
    pub output_format: String,
    /// Description, at most 1000 characters.
    pub description: Option<String>,
}

/// Update form: every part optional; a format change needs a new file.
#[derive(Debug, Multipart)]
#[oai(deny_unknown_fields)]
pub struct UpdateTemplateForm {
    /// New template file.
    pub template: Option<Upload>,
    /// New output format.
    #[oai(rename = "outputFormat")]
    pub output_format: Option<String>,
    /// New description.
    pub description: Option<String>,
}

/// What a template delete did.
#[derive(Debug, Clone, Object)]
#[oai(rename = "TemplateDeletion", rename_all = "camelCase")]
pub struct TemplateDeletionDto {
    /// The deleted template.
    pub id: uuid::Uuid,
    /// Soft-delete instant.
    pub deleted_at: DateTime<Utc>,
    /// How many live deadlines of the template were soft-deleted with it.
    pub cascaded_deadline_count: u64,
}

/// 201 with the created template.
#[derive(Debug, ApiResponse)]
pub enum CreatedTemplate {
    /// The template was stored. A replayed idempotent request answers the same body with
    /// `X-Idempotency-Replayed: true`.
    #[oai(status = 201)]
    Created(Json<TemplateDto>),
}

async fn read_upload(upload: Upload) -> Result<TemplateFile, ApiError> {
    let file_name = upload.file_name().unwrap_or_default().to_owned();
    if upload.size() > MAX_TEMPLATE_BYTES {
        return Err(AppError::new(
            Code::TemplateTooLarge,
            format!("the template file exceeds {MAX_TEMPLATE_BYTES} bytes"),
        )
        .into());
    }
    let bytes = upload.into_vec().await.map_err(|_| {
        ApiError::from(AppError::new(
            Code::InvalidUpload,
            "the uploaded file could not be read",
        ))
    })?;
    Ok(TemplateFile {
        file_name,
        bytes: Bytes::from(bytes),
    })
}

/// Template operations.
#[derive(Default)]
pub struct TemplatesApi;

#[OpenApi(tag = "ApiTags::Templates")]
impl TemplatesApi {
    /// Upload a template
    ///
    /// Multipart form with the `.tpl` file (`template`), its `outputFormat` and an optional
    /// `description`. The file is validated (non-empty, `.tpl`, UTF-8, at most 1 MiB, content
    /// sane for the format, no `<script>` or inline event handlers) and every
    /// `datasource.table.field` it reads must exist in the configured data sources; those
    /// fields are returned as `mappedFields`. Honours `X-Idempotency`. Scope `templates:write`.
    #[oai(
        path = "/v1/templates",
        method = "post",
        operation_id = "createTemplate"
    )]
    async fn create(
        &self,
        app: Data<&Arc<App>>,
        #[oai(scope = "Scope::TemplatesWrite")] auth: Auth,
        /// Client idempotency key: a replay within the TTL returns the stored response.
        #[oai(name = "X-Idempotency")]
        _idempotency: poem_openapi::param::Header<Option<String>>,
        req: &poem::Request,
        form: CreateTemplateForm,
    ) -> ApiResult<CreatedTemplate, { AUTH | CONFLICT | PAYLOAD_TOO_LARGE | UNAVAILABLE }> {
        let caller = auth.caller();
        let file = read_upload(form.template).await?;
        let idempotency = IdempotencyReservation::of(req).map(|r| {
            r.for_use_case(|t: &TemplateWithWarnings| {
                json_answer(StatusCode::CREATED, &TemplateDto::from(t.clone()))
            })
        });
        let created = app
            .create_template(
                &caller,
                CreateTemplate {
                    file,
                    output_format: form.output_format,
                    description: form.description,
                    idempotency,
                },
            )
            .await?;
        Ok(CreatedTemplate::Created(Json(created.into())))
    }

    /// List templates
    ///
    /// Live templates, newest first by default. Filters: `output_format`, `description`
    /// (case-insensitive substring, plain text), `created_at` (a `YYYY-MM-DD` day, UTC); each
    /// snake_case name also has its camelCase alias (`outputFormat`, `createdAt`,
    /// `sortOrder`). `total` is the number of matches across all pages. An unknown query
    /// parameter answers 400 TPL-0019; an empty one counts as absent. Scope `templates:read`.
    #[oai(path = "/v1/templates", method = "get", operation_id = "listTemplates")]
    #[allow(clippy::too_many_arguments)]
    async fn list(
        &self,
        app: Data<&Arc<App>>,
        #[oai(scope = "Scope::TemplatesRead")] auth: Auth,
        /// Page number, from 1.
        page: Query<Option<i64>>,
        /// Page size, 1 to MAX_PAGINATION_LIMIT (default 10).
        limit: Query<Option<i64>>,
        /// `asc` or `desc` (default) by creation time.
        sort_order: Query<Option<String>>,
        /// Alias of `sort_order`.
        #[oai(name = "sortOrder")]
        sort_order_alias: Query<Option<String>>,
        /// The original's pagination cursor (base64 of `{"id", "points_next"}`): validated,
        /// not used for paging (use `page`).
        cursor: Query<Option<String>>,
        /// html, pdf, csv, xml or txt (any case).
        output_format: Query<Option<String>>,
        /// Alias of `output_format`.
        #[oai(name = "outputFormat")]
        output_format_alias: Query<Option<String>>,
        /// Substring of the description.
        description: Query<Option<String>>,
        /// Creation day, `YYYY-MM-DD`.
        created_at: Query<Option<String>>,
        /// Alias of `created_at`.
        #[oai(name = "createdAt")]
        created_at_alias: Query<Option<String>>,
    ) -> ApiResult<Json<TemplatePage>, { AUTH | UNAVAILABLE }> {
        let caller = auth.caller();
        let req = list_paging(
            page.0,
            limit.0,
            (sort_order.0, sort_order_alias.0),
            cursor.0.as_deref(),
            app.settings().max_page_limit,
        )?;
        let mut query = TemplateQuery {
            output_format: output_format_filter(output_format.0, output_format_alias.0)?,
            description_contains: description
                .0
                .filter(|d| !d.trim().is_empty())
                .map(|d| d.trim().to_owned()),
            ..TemplateQuery::default()
        };
        let created = either(created_at.0, created_at_alias.0, "created_at", "createdAt")?;
        if let Some((day, name)) = created {
            let (from, to) = day_window(&day, name)?;
            query.created_from = Some(from);
            query.created_to = Some(to);
        }
        let page = app.list_templates(&caller, &query, req).await?;
        Ok(Json(TemplatePage {
            items: page.items.into_iter().map(TemplateDto::from).collect(),
            page: page.page,
            limit: page.limit,
            total: page.total,
        }))
    }

    /// Get a template
    ///
    /// A live template. A deleted, missing or other tenant's id answers 404. Scope `templates:read`.
    #[oai(
        path = "/v1/templates/:id",
        method = "get",
        operation_id = "getTemplate"
    )]
    async fn get(
        &self,
        app: Data<&Arc<App>>,
        #[oai(scope = "Scope::TemplatesRead")] auth: Auth,
        /// Template id.
        id: Path<String>,
    ) -> ApiResult<JsonBody<TemplateJson>, { AUTH | NOT_FOUND | UNAVAILABLE }> {
        let caller = auth.caller();
        let id: TemplateId = path_uuid(&id.0, "id")?;
        Ok(JsonBody(TemplateJson(
            app.read_template(&caller, id).await?,
        )))
    }

    /// Update a template
    ///
    /// Multipart form, every part optional: `template` (new file), `outputFormat`,
    /// `description`. Changing `outputFormat` requires a new file (TPL-0010). A new file is
    /// validated exactly like an upload. Scope `templates:write`.
    #[oai(
        path = "/v1/templates/:id",
        method = "patch",
        operation_id = "updateTemplate"
    )]
    async fn update(
        &self,
        app: Data<&Arc<App>>,
        #[oai(scope = "Scope::TemplatesWrite")] auth: Auth,
        /// Template id.
        id: Path<String>,
        form: UpdateTemplateForm,
    ) -> ApiResult<
        Json<TemplateDto>,
        { AUTH | NOT_FOUND | CONFLICT | PAYLOAD_TOO_LARGE | UNAVAILABLE },
    > {
        let caller = auth.caller();
        let id: TemplateId = path_uuid(&id.0, "id")?;
        let file = match form.template {
            Some(u) => Some(read_upload(u).await?),
            None => None,
        };
        let updated = app
            .update_template(
                &caller,
                id,
                UpdateTemplate {
                    file,
                    output_format: form.output_format,
                    description: form.description,
                },
            )
            .await?;
        Ok(Json(updated.into()))
    }

    /// Delete a template
    ///
    /// Soft delete. The template's live deadlines are soft-deleted in the same transaction
    /// and counted in the answer (and in the `template.deleted` event). Reports already
    /// generated stay downloadable. Scope `templates:write`.
    #[oai(
        path = "/v1/templates/:id",
        method = "delete",
        operation_id = "deleteTemplate"
    )]
    async fn delete(
        &self,
        app: Data<&Arc<App>>,
        #[oai(scope = "Scope::TemplatesWrite")] auth: Auth,
        /// Template id.
        id: Path<String>,
    ) -> ApiResult<Json<TemplateDeletionDto>, { AUTH | NOT_FOUND | CONFLICT | UNAVAILABLE }> {
        let caller = auth.caller();
        let id: TemplateId = path_uuid(&id.0, "id")?;
        let d = app.delete_template(&caller, id).await?;
        Ok(Json(TemplateDeletionDto {
            id: d.id.uuid(),
            deleted_at: d.deleted_at,
            cascaded_deadline_count: d.cascaded_deadlines,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::json_body::same_json;

    #[test]
    fn a_template_is_written_as_its_openapi_form() {
        let mut t = TemplateDto::example();
        same_json(&t);
        t.warnings = vec![WarningDto {
            code: "DATA_SOURCE_UNAVAILABLE".into(),
            field: "bank".into(),
            message: "the data source \"bank\" could not be checked: ünïcode ✓".into(),
        }];
        t.mapped_fields.clear();
        t.output_format = OutputFormatDto::Pdf;
        t.created_at = chrono::DateTime::from_timestamp_nanos(1_796_379_722_107_654_321);
        same_json(&t);
        for f in [
            OutputFormatDto::Html,
            OutputFormatDto::Csv,
            OutputFormatDto::Xml,
            OutputFormatDto::Txt,
        ] {
            t.output_format = f;
            same_json(&t);
        }
    }

    /// `http/template_json.rs` writes a format's JSON value as its domain name.
    #[test]
    fn a_formats_json_value_is_its_domain_name() {
        use reporter_ports::template::OutputFormat;
        for f in [
            OutputFormat::Html,
            OutputFormat::Pdf,
            OutputFormat::Csv,
            OutputFormat::Xml,
            OutputFormat::Txt,
        ] {
            assert_eq!(
                serde_json::to_value(OutputFormatDto::from(f)).unwrap(),
                f.as_str()
            );
        }
    }
}
