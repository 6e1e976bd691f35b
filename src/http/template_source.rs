//! `GET /v1/templates/{id}/source`: a stored template's file, as text.
use super::auth::{Auth, Scope};
use super::dto::path_uuid;
use super::error::{AUTH, ApiResult, NOT_FOUND, UNAVAILABLE};
use super::tags::ApiTags;
use crate::app::App;
use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::PlainText;
use poem_openapi::{ApiResponse, OpenApi};
use reporter_ports::TemplateId;
use std::sync::Arc;

/// The template's file.
#[derive(Debug, ApiResponse)]
pub enum SourceResponse {
    /// The file exactly as uploaded (UTF-8 text, `text/plain`), never cached.
    #[oai(status = 200)]
    Ok(PlainText<String>, #[oai(header = "Cache-Control")] String),
}

/// The template source operation.
#[derive(Default)]
pub struct TemplateSourceApi;

#[OpenApi(tag = "ApiTags::Templates")]
impl TemplateSourceApi {
    /// Get a template's file
    ///
    /// The text of a live template's `.tpl` file, exactly as uploaded (or last replaced), as
    /// `text/plain; charset=utf-8` with `Cache-Control: no-store`: what an editor needs to
    /// change a template it did not keep. A deleted, missing or other tenant's id answers
    /// 404. Scope `templates:read`.
    #[oai(
        path = "/v1/templates/:id/source",
        method = "get",
        operation_id = "getTemplateSource"
    )]
    async fn source(
        &self,
        app: Data<&Arc<App>>,
        #[oai(scope = "Scope::TemplatesRead")] auth: Auth,
        /// Template id.
        id: Path<String>,
    ) -> ApiResult<SourceResponse, { AUTH | NOT_FOUND | UNAVAILABLE }> {
        let caller = auth.caller();
        let id: TemplateId = path_uuid(&id.0, "id")?;
        let text = app.template_source(&caller, id).await?;
        Ok(SourceResponse::Ok(PlainText(text), "no-store".into()))
    }
}
