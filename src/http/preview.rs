//! `POST /v1/templates/preview`: a template rendered from a few rows, writing nothing.
use super::auth::{Auth, Scope};
use super::error::{AUTH, ApiResult, NOT_FOUND, PAYLOAD_TOO_LARGE, UNAVAILABLE};
use super::reports::{FilterConditionDto, FiltersDto, RenderErrorDto, to_domain};
use super::tags::ApiTags;
use crate::app::{App, Preview, PreviewOutput, PreviewRequest};
use base64::Engine as _;
use poem::web::Data;
use poem_openapi::payload::Json;
use poem_openapi::types::Example;
use poem_openapi::{ApiResponse, Enum, Object, OpenApi};
use reporter_ports::report::ReportStatus;
use std::collections::BTreeMap;
use std::sync::Arc;

/// `POST /v1/templates/preview`: exactly one of `template` (with `outputFormat`) and
/// `templateId`.
#[derive(Debug, Clone, Object)]
#[oai(
    rename = "TemplatePreviewInput",
    rename_all = "camelCase",
    deny_unknown_fields,
    example
)]
pub struct PreviewInput {
    /// The template's source (as an uploaded `.tpl` file's text; at most 1 MiB).
    pub template: Option<String>,
    /// A stored template of the caller's tenant, instead of `template`.
    pub template_id: Option<String>,
    /// Output format of `template`: html, pdf, csv, xml or txt (case-insensitive). Required
    /// with `template`; not accepted with `templateId` (a stored template renders in its own).
    pub output_format: Option<String>,
    /// Filters: data source → table → field → condition, as a report request's (default none).
    pub filters: Option<FiltersDto>,
    /// Most rows read per table, 1–1000 (default 50).
    pub limit: Option<i64>,
}

impl Example for PreviewInput {
    fn example() -> Self {
        let cond = FilterConditionDto {
            eq: Some(vec![serde_json::json!("credit")]),
            ..Default::default()
        };
        Self {
            template: Some(
                "account_id,amount\n{% for t in bank.transactions %}{{ t.account_id }},{{ t.amount }}\n{% endfor %}"
                    .into(),
            ),
            template_id: None,
            output_format: Some("csv".into()),
            filters: Some(BTreeMap::from([(
                "bank".to_owned(),
                BTreeMap::from([(
                    "transactions".to_owned(),
                    BTreeMap::from([("direction".to_owned(), cond)]),
                )]),
            )])),
            limit: Some(2),
        }
    }
}

/// How the preview ended: as a report of the template would.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename = "TemplatePreviewStatus")]
pub enum PreviewStatusDto {
    /// Every section was read and the template rendered.
    Finished,
    /// Some sections failed; the output is rendered from the others.
    Partial,
    /// No output: `errorCode` says why, `error` where the render failed.
    Error,
}

/// One data source's outcome in a preview.
#[derive(Debug, Clone, Object)]
#[oai(rename = "TemplatePreviewSection", rename_all = "camelCase")]
pub struct PreviewSectionDto {
    /// True when every table of the source was read.
    pub ok: bool,
    /// Rows read per table (at most the request's `limit`); empty when the section failed.
    pub rows: BTreeMap<String, u64>,
    /// Why the section failed: the codes of a report's sections (query_timeout,
    /// data_source_unavailable, …).
    #[oai(skip_serializing_if_is_none)]
    pub error_code: Option<String>,
}

/// A template preview: what a report of the template would hold, from at most `limit` rows
/// per table.
#[derive(Debug, Clone, Object)]
#[oai(rename = "TemplatePreview", rename_all = "camelCase", example)]
pub struct PreviewDto {
    /// Finished, Partial or Error.
    pub status: PreviewStatusDto,
    /// Media type of the output (the format's, as a report's download).
    pub content_type: String,
    /// The output of a text format (html sanitized as a report's is), cut at
    /// `PREVIEW_MAX_OUTPUT_BYTES`.
    #[oai(skip_serializing_if_is_none)]
    pub output: Option<String>,
    /// The PDF (pdf format), base64; absent when larger than `PREVIEW_MAX_OUTPUT_BYTES`.
    #[oai(skip_serializing_if_is_none)]
    pub output_base64: Option<String>,
    /// True when a table had more rows than `limit`, or the output was cut.
    pub truncated: bool,
    /// Data the template reads: data source → table → fields.
    pub mapped_fields: BTreeMap<String, BTreeMap<String, Vec<String>>>,
    /// Per data source.
    pub sections: BTreeMap<String, PreviewSectionDto>,
    /// With status Error: report_generation_failed or report_generation_timeout (the
    /// preview's time bound, `PREVIEW_TIMEOUT_SECONDS`, included).
    #[oai(skip_serializing_if_is_none)]
    pub error_code: Option<String>,
    /// Why the render failed and on which template line (a report's `metadata.render_error`).
    #[oai(skip_serializing_if_is_none)]
    pub error: Option<RenderErrorDto>,
}

impl Example for PreviewDto {
    fn example() -> Self {
        Self {
            status: PreviewStatusDto::Finished,
            content_type: "text/csv; charset=utf-8".into(),
            output: Some("account_id,amount\nACC-1007,14820.00\nACC-1003,2400.00\n".into()),
            output_base64: None,
            truncated: true,
            mapped_fields: BTreeMap::from([(
                "bank".to_owned(),
                BTreeMap::from([(
                    "transactions".to_owned(),
                    vec!["account_id".to_owned(), "amount".to_owned()],
                )]),
            )]),
            sections: BTreeMap::from([(
                "bank".to_owned(),
                PreviewSectionDto {
                    ok: true,
                    rows: BTreeMap::from([("transactions".to_owned(), 2)]),
                    error_code: None,
                },
            )]),
            error_code: None,
            error: None,
        }
    }
}

impl From<Preview> for PreviewDto {
    fn from(p: Preview) -> Self {
        let (output, output_base64) = match p.output {
            PreviewOutput::None => (None, None),
            PreviewOutput::Text(text) => (Some(text), None),
            PreviewOutput::Binary(bytes) => (
                None,
                Some(base64::engine::general_purpose::STANDARD.encode(&bytes)),
            ),
        };
        Self {
            status: match p.status {
                ReportStatus::Finished => PreviewStatusDto::Finished,
                ReportStatus::Partial => PreviewStatusDto::Partial,
                ReportStatus::Error | ReportStatus::Processing => PreviewStatusDto::Error,
            },
            content_type: p.content_type.to_owned(),
            output,
            output_base64,
            truncated: p.truncated,
            mapped_fields: p
                .mapped_fields
                .into_iter()
                .map(|(ds, tables)| {
                    let tables = tables
                        .into_iter()
                        .map(|(t, fields)| (t, fields.into_iter().collect()))
                        .collect();
                    (ds, tables)
                })
                .collect(),
            sections: p
                .sections
                .into_iter()
                .map(|(ds, s)| {
                    let section = PreviewSectionDto {
                        ok: s.ok,
                        rows: s.rows.into_iter().map(|(t, n)| (t, n as u64)).collect(),
                        error_code: s.error_code,
                    };
                    (ds, section)
                })
                .collect(),
            error_code: p.error_code.map(|c| c.as_str().to_owned()),
            error: p.render_failure.as_ref().map(RenderErrorDto::from),
        }
    }
}

/// 200 with the preview (a render that failed included: `status` Error).
#[derive(Debug, ApiResponse)]
pub enum PreviewAnswer {
    /// The preview.
    #[oai(status = 200)]
    Ok(Json<PreviewDto>),
}

/// The template preview.
#[derive(Default)]
pub struct PreviewApi;

#[OpenApi(tag = "ApiTags::Templates")]
impl PreviewApi {
    /// Preview a template
    ///
    /// Body `{template, outputFormat, filters, limit}` or `{templateId, filters, limit}`. The
    /// template is checked as an upload is (a source that does not parse is 400 TPL-0008 with
    /// the parser's words and line in `fields.template`), its fields mapped, at most `limit`
    /// rows (1–1000, default 50; outside is 400 TPL-0064) read from each table with the
    /// filters of a report request, and rendered in the report sandbox with the same
    /// sanitizing and output checks, within `PREVIEW_TIMEOUT_SECONDS`. Nothing is written: no
    /// template, report, artifact or event. A render that fails (or passes the time bound) is a
    /// 200 with `status` Error, `errorCode` and `error` (cause and template line). A
    /// `templateId` of another tenant is 404 TPL-0011. Scope `templates:write`.
    #[oai(
        path = "/v1/templates/preview",
        method = "post",
        operation_id = "previewTemplate"
    )]
    async fn preview(
        &self,
        app: Data<&Arc<App>>,
        #[oai(scope = "Scope::TemplatesWrite")] auth: Auth,
        body: Json<PreviewInput>,
        // 404: a templateId of no template of the tenant; 413: a source over 1 MiB (TPL-0063);
        // 503: the sandbox, a data source schema or the object storage unavailable.
    ) -> ApiResult<PreviewAnswer, { AUTH | NOT_FOUND | PAYLOAD_TOO_LARGE | UNAVAILABLE }> {
        let caller = auth.caller();
        let b = body.0;
        let preview = app
            .preview_template(
                &caller,
                PreviewRequest {
                    template: b.template,
                    template_id: b.template_id,
                    output_format: b.output_format,
                    filters: b.filters.map(to_domain),
                    limit: b.limit,
                },
            )
            .await?;
        Ok(PreviewAnswer::Ok(Json(PreviewDto::from(preview))))
    }
}
