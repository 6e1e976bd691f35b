//! Reading a stored template's file back (the Console's editor and source view, and any
//! client that wants to edit a template it did not keep).
use super::{App, AppError, AppResult, Caller, Code};
use bytes::Bytes;
use reporter_ports::TemplateId;
use reporter_ports::template::Template;

impl App {
    /// The text of live template `id`'s file, exactly as uploaded. MUST answer NotFound for a
    /// missing, deleted or foreign id (as [`App::get_template`]); a file missing from object
    /// storage under a live template is an internal error (the two are written together).
    pub async fn template_source(&self, caller: &Caller, id: TemplateId) -> AppResult<String> {
        let span =
            crate::use_case_span!("template_source", tenant = %caller.tenant, template_id = %id);
        span.run(async move {
            let template = self.get_template(caller, id).await?;
            let bytes = self.template_file(&template).await?;
            // Uploads are checked to be UTF-8; a lossy read only guards against a storage fault.
            Ok(String::from_utf8_lossy(&bytes).into_owned())
        })
        .await
    }

    /// The stored file of live `template`. A file missing from object storage under a live
    /// template is an internal error (the two are written together).
    pub(super) async fn template_file(&self, template: &Template) -> AppResult<Bytes> {
        let object = self
            .ports
            .storage
            .get(&template.object_key)
            .await
            .map_err(AppError::object_storage)?
            .ok_or_else(|| {
                tracing::error!(key = %template.object_key, "the template file is missing");
                AppError::new(
                    Code::Internal,
                    "the template's file is missing from object storage",
                )
            })?;
        Ok(object.bytes)
    }
}
