//! `/v1/reports` operations.
use super::auth::{Auth, Scope};
use super::dto::{
    day_window, either, instant_or_day, list_paging, output_format_filter, path_uuid, same_bound,
};
use super::error::{
    AUTH, ApiResult, CONFLICT, NOT_FOUND, PAYLOAD_TOO_LARGE, UNAVAILABLE, UNPROCESSABLE,
};
use super::tags::ApiTags;
use super::templates::OutputFormatDto;
use crate::app::{App, AppError, Code, CreateReport};
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::{Attachment, AttachmentType, Json};
use poem_openapi::types::Example;
use poem_openapi::{ApiResponse, Enum, Object, OpenApi};
use reporter_ports::ports::{RenderFailure, ReportQuery};
use reporter_ports::report::{FilterCondition, Report, ReportFilters, ReportStatus};
use reporter_ports::template::OutputFormat;
use reporter_ports::{ReportId, TemplateId};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Report status. `Processing` is the only non-terminal one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename = "ReportStatus")]
pub enum ReportStatusDto {
    /// Queued or being generated.
    Processing,
    /// Every section succeeded; the artifact can be downloaded.
    Finished,
    /// Some sections failed; an artifact from the others exists but is not downloadable.
    Partial,
    /// The report ended in error (`metadata.error_code` says why).
    Error,
}

fn status_dto(s: ReportStatus) -> ReportStatusDto {
    match s {
        ReportStatus::Processing => ReportStatusDto::Processing,
        ReportStatus::Finished => ReportStatusDto::Finished,
        ReportStatus::Partial => ReportStatusDto::Partial,
        ReportStatus::Error => ReportStatusDto::Error,
    }
}

/// One filter condition: each operator takes an array of scalars (`between` exactly two).
#[derive(Debug, Clone, Default, Object)]
#[oai(rename = "FilterCondition", deny_unknown_fields)]
pub struct FilterConditionDto {
    /// Equal to any of the values.
    #[oai(skip_serializing_if_is_none)]
    pub eq: Option<Vec<serde_json::Value>>,
    /// Greater than (one value).
    #[oai(skip_serializing_if_is_none)]
    pub gt: Option<Vec<serde_json::Value>>,
    /// Greater than or equal (one value).
    #[oai(skip_serializing_if_is_none)]
    pub gte: Option<Vec<serde_json::Value>>,
    /// Less than (one value).
    #[oai(skip_serializing_if_is_none)]
    pub lt: Option<Vec<serde_json::Value>>,
    /// Less than or equal (one value).
    #[oai(skip_serializing_if_is_none)]
    pub lte: Option<Vec<serde_json::Value>>,
    /// Inclusive range `[low, high]`.
    #[oai(skip_serializing_if_is_none)]
    pub between: Option<Vec<serde_json::Value>>,
    /// One of the values.
    #[oai(rename = "in", skip_serializing_if_is_none)]
    pub in_: Option<Vec<serde_json::Value>>,
    /// None of the values.
    #[oai(skip_serializing_if_is_none)]
    pub nin: Option<Vec<serde_json::Value>>,
}

/// Filters: data source → table → field → condition.
pub type FiltersDto = BTreeMap<String, BTreeMap<String, BTreeMap<String, FilterConditionDto>>>;

pub(super) fn to_domain(f: FiltersDto) -> ReportFilters {
    f.into_iter()
        .map(|(ds, tables)| {
            (
                ds,
                tables
                    .into_iter()
                    .map(|(t, fields)| {
                        (
                            t,
                            fields
                                .into_iter()
                                .map(|(name, c)| {
                                    (
                                        name,
                                        FilterCondition {
                                            eq: c.eq.unwrap_or_default(),
                                            gt: c.gt.unwrap_or_default(),
                                            gte: c.gte.unwrap_or_default(),
                                            lt: c.lt.unwrap_or_default(),
                                            lte: c.lte.unwrap_or_default(),
                                            between: c.between.unwrap_or_default(),
                                            in_: c.in_.unwrap_or_default(),
                                            nin: c.nin.unwrap_or_default(),
                                        },
                                    )
                                })
                                .collect(),
                        )
                    })
                    .collect(),
            )
        })
        .collect()
}

fn opt(v: &[serde_json::Value]) -> Option<Vec<serde_json::Value>> {
    (!v.is_empty()).then(|| v.to_vec())
}

fn from_domain(f: &ReportFilters) -> FiltersDto {
    f.iter()
        .map(|(ds, tables)| {
            (
                ds.clone(),
                tables
                    .iter()
                    .map(|(t, fields)| {
                        (
                            t.clone(),
                            fields
                                .iter()
                                .map(|(name, c)| {
                                    (
                                        name.clone(),
                                        FilterConditionDto {
                                            eq: opt(&c.eq),
                                            gt: opt(&c.gt),
                                            gte: opt(&c.gte),
                                            lt: opt(&c.lt),
                                            lte: opt(&c.lte),
                                            between: opt(&c.between),
                                            in_: opt(&c.in_),
                                            nin: opt(&c.nin),
                                        },
                                    )
                                })
                                .collect(),
                        )
                    })
                    .collect(),
            )
        })
        .collect()
}

/// Request a report.
#[derive(Debug, Clone, Object)]
#[oai(
    rename = "CreateReportInput",
    rename_all = "camelCase",
    deny_unknown_fields,
    example
)]
pub struct CreateReportInput {
    /// The template to render (required).
    pub template_id: Option<super::string_field::Text>,
    /// Filters: data source → table → field → condition (required; `{}` for none).
    pub filters: Option<FiltersDto>,
}

impl Example for CreateReportInput {
    fn example() -> Self {
        let cond = FilterConditionDto {
            between: Some(vec![
                serde_json::json!("2024-01-01"),
                serde_json::json!("2024-03-31"),
            ]),
            ..Default::default()
        };
        Self {
            template_id: Some("8f2c1a9e-4b30-4c02-9a1b-2d5e6f7a1c33".into()),
            filters: Some(BTreeMap::from([(
                "bank".to_owned(),
                BTreeMap::from([(
                    "transactions".to_owned(),
                    BTreeMap::from([("booked_on".to_owned(), cond)]),
                )]),
            )])),
        }
    }
}

/// Outcome of one section (data source). Keys are snake_case, as the original's metadata.
#[derive(Debug, Clone, Object)]
#[oai(rename = "SectionOutcome", rename_all = "snake_case")]
pub struct SectionDto {
    /// True when the section's data was extracted.
    pub ok: bool,
    /// Stable failure code: data_source_not_configured, data_source_unavailable,
    /// query_timeout, row_limit_exceeded, section_too_large, query_failed, or for the Midaz
    /// CRM source crm_key_missing, crm_decryption_failed, crm_value_malformed or
    /// crm_unsupported_format.
    #[oai(skip_serializing_if_is_none)]
    pub error_code: Option<String>,
}

/// Report metadata with the original's keys (snake_case, unlike the rest of the report):
/// `error` and `error_code` when the report is `Error` or `Partial`, and one entry per
/// section (data source) under `sections`. Only fixed vocabularies, never raw error text.
#[derive(Debug, Clone, Object)]
#[oai(rename = "ReportMetadata", rename_all = "snake_case")]
pub struct MetadataDto {
    /// Fixed summary: for `Error` the summary of `error_code` (`Report generation failed`,
    /// `Report generation timed out`, `Report generation was canceled`, `The rendered report
    /// contains script`), for `Partial`
    /// `Some report data sections failed`.
    #[oai(skip_serializing_if_is_none)]
    pub error: Option<String>,
    /// `Error`: report_generation_failed, report_generation_timeout,
    /// report_generation_canceled (as `report.errored`; `render_error` names the cause); `Partial`:
    /// report_sections_failed.
    #[oai(skip_serializing_if_is_none)]
    pub error_code: Option<String>,
    /// `Error` because the render failed: the cause and the template line. Never a data
    /// value, and not in the `report.errored` event.
    #[oai(skip_serializing_if_is_none)]
    pub render_error: Option<RenderErrorDto>,
    /// By data source id.
    pub sections: BTreeMap<String, SectionDto>,
}

/// Why a report's render failed (`metadata.render_error`), without data values.
#[derive(Debug, Clone, Object)]
#[oai(rename = "ReportRenderError", rename_all = "snake_case")]
pub struct RenderErrorDto {
    /// Stable code of the cause: division_by_zero, filter_failed, calc_failed,
    /// aggregation_failed, invalid_access, invalid_call, evaluation_failed, template_syntax,
    /// instruction_budget_exceeded, recursion_limit, output_too_large, memory_limit,
    /// nesting_too_deep, timeout, engine_crashed or script_detected (an xml report's output
    /// holds script; nothing was stored).
    pub cause: String,
    /// The fixed sentence of the cause.
    pub message: String,
    /// 1-based line of the template's tag or `{{ }}` that failed (the line a multi-line tag
    /// starts on), when known.
    #[oai(skip_serializing_if_is_none)]
    pub line: Option<u32>,
}

impl From<&RenderFailure> for RenderErrorDto {
    fn from(f: &RenderFailure) -> Self {
        Self {
            cause: f.cause.as_str().to_owned(),
            message: f.cause.message().to_owned(),
            line: f.line,
        }
    }
}

/// A report.
#[derive(Debug, Clone, Object)]
#[oai(rename = "Report", rename_all = "camelCase")]
pub struct ReportDto {
    /// Report id.
    pub id: uuid::Uuid,
    /// Template id.
    pub template_id: uuid::Uuid,
    /// The template's output format when the report was requested.
    pub template_output_format: OutputFormatDto,
    /// The template's description when the report was requested.
    pub template_description: String,
    /// The filters requested.
    pub filters: FiltersDto,
    /// Status.
    pub status: ReportStatusDto,
    /// Per-section outcome and error code.
    pub metadata: MetadataDto,
    /// Artifact size in bytes, once stored.
    #[oai(skip_serializing_if_is_none)]
    pub artifact_size_bytes: Option<u64>,
    /// When the report reached a terminal status.
    pub completed_at: Option<DateTime<Utc>>,
    /// Creation instant.
    pub created_at: DateTime<Utc>,
    /// Last change instant.
    pub updated_at: DateTime<Utc>,
}

impl From<&Report> for ReportDto {
    fn from(r: &Report) -> Self {
        Self {
            id: r.id.uuid(),
            template_id: r.template_id.uuid(),
            template_output_format: r.output_format.into(),
            template_description: r.template_description.clone(),
            filters: from_domain(&r.filters),
            status: status_dto(r.status),
            metadata: MetadataDto {
                error: r.failure().map(|(summary, _)| summary.to_owned()),
                error_code: r.failure().map(|(_, code)| code.to_owned()),
                render_error: r
                    .render_failure
                    .as_ref()
                    .filter(|_| r.status == ReportStatus::Error)
                    .map(RenderErrorDto::from),
                sections: r
                    .sections
                    .iter()
                    .map(|(k, s)| {
                        (
                            k.clone(),
                            SectionDto {
                                ok: s.ok,
                                error_code: s.error_code.clone(),
                            },
                        )
                    })
                    .collect(),
            },
            artifact_size_bytes: r.artifact_size,
            completed_at: r.completed_at,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

/// A page of reports.
#[derive(Debug, Clone, Object)]
#[oai(rename = "ReportPage")]
pub struct ReportPage {
    /// Reports of this page.
    pub items: Vec<ReportDto>,
    /// Page number.
    pub page: u32,
    /// Page size.
    pub limit: u32,
    /// Matches across all pages.
    pub total: u64,
}

/// 201 with the report in status Processing.
#[derive(Debug, ApiResponse)]
pub enum CreatedReport {
    /// Accepted and queued.
    #[oai(status = 201)]
    Created(Json<ReportDto>),
}

/// The artifact.
#[derive(Debug, ApiResponse)]
pub enum Download {
    /// The artifact bytes with the format's Content-Type and `Content-Disposition: attachment`.
    /// Every format but pdf also carries a `Content-Security-Policy` that allows no script,
    /// no network and no framing (defence in depth: html output is already sanitized).
    #[oai(status = 200)]
    Ok(
        Attachment<Vec<u8>>,
        #[oai(header = "Content-Type")] String,
        #[oai(header = "Content-Security-Policy")] Option<String>,
    ),
}

/// The policy of downloaded artifacts opened in a browser: no script, no plugin, no network,
/// no framing, no form; inline styles and `data:` images and fonts (what report layouts use)
/// still work; `sandbox` gives the document an opaque origin with scripts off.
pub const ARTIFACT_CSP: &str = "default-src 'none'; script-src 'none'; object-src 'none'; \
style-src 'unsafe-inline'; img-src data:; font-src data:; base-uri 'none'; form-action 'none'; \
frame-ancestors 'none'; sandbox";

/// Report operations.
#[derive(Default)]
pub struct ReportsApi;

#[OpenApi(tag = "ApiTags::Reports")]
impl ReportsApi {
    /// Request a report
    ///
    /// Body `{templateId, filters}`; filters are data source → table → field → condition with
    /// operators `eq, gt, gte, lt, lte, between, in, nin` (arrays of scalars; `between` exactly
    /// two; the comparisons exactly one). Every data source, table and field must exist and
    /// the template must read the table. Answers 201 with the report in status `Processing`
    /// and queues its generation. Honours `X-Idempotency`. Scope `reports:write`.
    #[oai(path = "/v1/reports", method = "post", operation_id = "createReport")]
    async fn create(
        &self,
        app: Data<&Arc<App>>,
        #[oai(scope = "Scope::ReportsWrite")] auth: Auth,
        /// Client idempotency key: a replay within the TTL returns the stored response.
        #[oai(name = "X-Idempotency")]
        _idempotency: poem_openapi::param::Header<Option<String>>,
        /// Correlation id (1-128 visible ASCII), carried to the worker and echoed; another
        /// value is replaced by a generated id.
        #[oai(name = "X-Request-Id")]
        _request_id: poem_openapi::param::Header<Option<String>>,
        req: &poem::Request,
        body: Json<CreateReportInput>,
    ) -> ApiResult<CreatedReport, { AUTH | NOT_FOUND | CONFLICT | PAYLOAD_TOO_LARGE | UNAVAILABLE }>
    {
        let request_id = req
            .extensions()
            .get::<super::middleware::RequestId>()
            .map(|id| id.0.clone());
        let caller = auth.caller();
        let b = body.0;
        let idempotency = super::idempotency::IdempotencyReservation::of(req).map(|r| {
            r.for_use_case(|report: &reporter_ports::report::Report| {
                super::idempotency::json_answer(
                    poem::http::StatusCode::CREATED,
                    &ReportDto::from(report),
                )
            })
        });
        let r = app
            .create_report(
                &caller,
                CreateReport {
                    template_id: b.template_id.map(super::string_field::Text::into_inner),
                    filters: b.filters.map(to_domain),
                    request_id,
                    idempotency,
                },
            )
            .await?;
        Ok(CreatedReport::Created(Json(ReportDto::from(&r))))
    }

    /// List reports
    ///
    /// Newest first by default. Filters: `status` (Processing, Finished, Partial, Error),
    /// `template_id`, `output_format` and `description` (of the template, as copied to the
    /// report at creation: `templateOutputFormat`, and a case-insensitive plain-text substring
    /// of `templateDescription`), `created_at` (a `YYYY-MM-DD` day) or the creation window
    /// `start_date` / `end_date` (RFC 3339 or `YYYY-MM-DD`, inclusive; `createdFrom` /
    /// `createdTo` are older names of the same window). Each snake_case name also has its
    /// camelCase alias (`templateId`, `outputFormat`, `createdAt`, `startDate`, `endDate`,
    /// `sortOrder`). `active` and `type`, which the original accepts on this list without
    /// effect (its list parameters are shared with other lists), are accepted and ignored. An
    /// unknown query parameter answers 400 TPL-0019; an empty one counts as absent. Scope
    /// `reports:read`.
    //
    // Over 80 lines only by its signature: poem-openapi takes each query parameter (and each
    // alias) as its own argument, with the doc line the spec publishes.
    #[oai(path = "/v1/reports", method = "get", operation_id = "listReports")]
    #[allow(clippy::too_many_arguments)]
    async fn list(
        &self,
        app: Data<&Arc<App>>,
        #[oai(scope = "Scope::ReportsRead")] auth: Auth,
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
        /// Processing, Finished, Partial or Error.
        status: Query<Option<String>>,
        /// Template id.
        template_id: Query<Option<String>>,
        /// Alias of `template_id`.
        #[oai(name = "templateId")]
        template_id_alias: Query<Option<String>>,
        /// The template's output format (`templateOutputFormat`): html, pdf, csv, xml or txt
        /// (any case).
        output_format: Query<Option<String>>,
        /// Alias of `output_format`.
        #[oai(name = "outputFormat")]
        output_format_alias: Query<Option<String>>,
        /// Substring of the template's description (`templateDescription`), any case.
        description: Query<Option<String>>,
        /// Accepted for the original's clients and ignored: reports have no active flag (the
        /// original accepts it here without effect).
        active: Query<Option<String>>,
        /// Accepted for the original's clients and ignored: reports have no type (the original
        /// accepts it here without effect).
        #[oai(name = "type")]
        kind: Query<Option<String>>,
        /// Creation day, `YYYY-MM-DD`.
        created_at: Query<Option<String>>,
        /// Alias of `created_at`.
        #[oai(name = "createdAt")]
        created_at_alias: Query<Option<String>>,
        /// Created at or after (RFC 3339, or `YYYY-MM-DD` from the start of that day).
        start_date: Query<Option<String>>,
        /// Alias of `start_date`.
        #[oai(name = "startDate")]
        start_date_alias: Query<Option<String>>,
        /// Created at or before (RFC 3339, or `YYYY-MM-DD` to the end of that day).
        end_date: Query<Option<String>>,
        /// Alias of `end_date`.
        #[oai(name = "endDate")]
        end_date_alias: Query<Option<String>>,
        /// Same as `start_date` (earlier name).
        #[oai(name = "createdFrom")]
        created_from: Query<Option<String>>,
        /// Same as `end_date` (earlier name).
        #[oai(name = "createdTo")]
        created_to: Query<Option<String>>,
    ) -> ApiResult<Json<ReportPage>, { AUTH | UNAVAILABLE }> {
        let caller = auth.caller();
        let req = list_paging(
            page.0,
            limit.0,
            (sort_order.0, sort_order_alias.0),
            cursor.0.as_deref(),
            app.settings().max_page_limit,
        )?;
        let _ignored = (active.0, kind.0);
        let template = either(
            template_id.0,
            template_id_alias.0,
            "template_id",
            "templateId",
        )?;
        let mut q = ReportQuery {
            status: status_filter(status.0.as_deref())?,
            template_id: template_filter(template)?,
            output_format: output_format_filter(output_format.0, output_format_alias.0)?,
            description_contains: description
                .0
                .filter(|d| !d.trim().is_empty())
                .map(|d| d.trim().to_owned()),
            ..Default::default()
        };
        let day = either(created_at.0, created_at_alias.0, "created_at", "createdAt")?;
        let from = either(start_date.0, start_date_alias.0, "start_date", "startDate")?;
        let to = either(end_date.0, end_date_alias.0, "end_date", "endDate")?;
        (q.created_from, q.created_to) = creation_window(
            day,
            same_bound(from, created_from.0, "createdFrom")?,
            same_bound(to, created_to.0, "createdTo")?,
        )?;
        let page = app.list_reports(&caller, &q, req).await?;
        Ok(Json(ReportPage {
            items: page.items.iter().map(ReportDto::from).collect(),
            page: page.page,
            limit: page.limit,
            total: page.total,
        }))
    }

    /// Get a report
    ///
    /// Status, per-section metadata (codes only, never raw error text) and completion time.
    /// Scope `reports:read`.
    #[oai(path = "/v1/reports/:id", method = "get", operation_id = "getReport")]
    async fn get(
        &self,
        app: Data<&Arc<App>>,
        #[oai(scope = "Scope::ReportsRead")] auth: Auth,
        /// Report id.
        id: Path<String>,
    ) -> ApiResult<Json<ReportDto>, { AUTH | NOT_FOUND | UNAVAILABLE }> {
        let caller = auth.caller();
        let id: ReportId = path_uuid(&id.0, "id")?;
        Ok(Json(ReportDto::from(&app.get_report(&caller, id).await?)))
    }

    /// Download a report
    ///
    /// The artifact of a `Finished` report with its format's Content-Type and
    /// `Content-Disposition: attachment; filename="<reportId>.<ext>"`. Any other status
    /// answers 422 (TPL-0029). Deleting the template afterwards does not break the download.
    /// Scope `reports:read`.
    #[oai(
        path = "/v1/reports/:id/download",
        method = "get",
        operation_id = "downloadReport"
    )]
    async fn download(
        &self,
        app: Data<&Arc<App>>,
        #[oai(scope = "Scope::ReportsRead")] auth: Auth,
        /// Report id.
        id: Path<String>,
    ) -> ApiResult<Download, { AUTH | NOT_FOUND | UNPROCESSABLE | UNAVAILABLE }> {
        let caller = auth.caller();
        let id: ReportId = path_uuid(&id.0, "id")?;
        let a = app.download_report(&caller, id).await?;
        let format = a.report.output_format;
        let file = format!("{}.{}", a.report.id, format.as_str());
        Ok(Download::Ok(
            Attachment::new(a.object.bytes.to_vec())
                .attachment_type(AttachmentType::Attachment)
                .filename(file),
            format.content_type().to_owned(),
            (format != OutputFormat::Pdf).then(|| ARTIFACT_CSP.to_owned()),
        ))
    }
}

/// The `status` filter of the reports list.
///
/// MUST answer `InvalidQueryParameter` for anything but Processing, Finished, Partial or Error.
fn status_filter(raw: Option<&str>) -> Result<Option<ReportStatus>, AppError> {
    raw.map(|s| {
        ReportStatus::parse(s).ok_or_else(|| {
            AppError::new(
                Code::InvalidQueryParameter,
                format!("status '{s}' is not Processing, Finished, Partial or Error"),
            )
            .field("status", "Processing|Finished|Partial|Error")
        })
    })
    .transpose()
}

/// The `template_id` filter (under the name the caller used) of the reports list.
///
/// MUST answer `InvalidTemplateId` for anything but a UUID.
fn template_filter(raw: Option<(String, &str)>) -> Result<Option<TemplateId>, AppError> {
    raw.map(|(t, name)| {
        t.trim().parse::<TemplateId>().map_err(|_| {
            AppError::new(
                Code::InvalidTemplateId,
                format!("{name} '{t}' is not a UUID"),
            )
            .field(name, "must be a UUID")
        })
    })
    .transpose()
}

/// The creation window of the reports list: the `created_at` day, narrowed by the inclusive
/// `from` and `to` bounds; the end is exclusive in the result.
///
/// MUST answer `InvalidDateRange` when the window is empty, and the parsing errors of
/// `day_window` / `instant_or_day` for a bad value.
#[allow(clippy::type_complexity)]
fn creation_window(
    day: Option<(String, &str)>,
    from: Option<(String, &str)>,
    to: Option<(String, &str)>,
) -> Result<(Option<DateTime<Utc>>, Option<DateTime<Utc>>), AppError> {
    let (mut start, mut end) = match day {
        Some((day, name)) => {
            let (from, to) = day_window(&day, name)?;
            (Some(from), Some(to))
        }
        None => (None, None),
    };
    // Both bounds narrow the window `created_at` may have set.
    if let Some((f, name)) = from {
        let f = instant_or_day(&f, name, false)?;
        start = Some(start.map_or(f, |c| c.max(f)));
    }
    if let Some((t, name)) = to {
        let t = instant_or_day(&t, name, true)? + chrono::Duration::milliseconds(1);
        end = Some(end.map_or(t, |c| c.min(t)));
    }
    if let (Some(a), Some(b)) = (start, end)
        && a >= b
    {
        return Err(AppError::new(
            Code::InvalidDateRange,
            "the creation window is empty (start after end)",
        ));
    }
    Ok((start, end))
}
