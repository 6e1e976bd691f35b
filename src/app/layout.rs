//! Object key layout (reference C.8). Single-tenant keys have no prefix; multi-tenant keys are
//! prefixed by the tenant segment, so one bucket can hold every tenant.
use reporter_ports::template::OutputFormat;
use reporter_ports::{ReportId, TemplateId, TenantId};

/// Builds object keys for one deployment shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyLayout {
    /// Prefix keys with the tenant.
    pub tenant_prefix: bool,
}

impl KeyLayout {
    fn prefix(&self, tenant: &TenantId) -> String {
        if self.tenant_prefix {
            format!("{}/", tenant.as_str())
        } else {
            String::new()
        }
    }
    /// `[<tenant>/]templates/<templateId>.tpl`.
    pub fn template(&self, tenant: &TenantId, id: TemplateId) -> String {
        format!("{}templates/{id}.tpl", self.prefix(tenant))
    }
    /// `[<tenant>/]reports/<templateId>/<reportId>.<ext>`.
    pub fn report(
        &self,
        tenant: &TenantId,
        template: TemplateId,
        report: ReportId,
        format: OutputFormat,
    ) -> String {
        format!(
            "{}reports/{template}/{report}.{}",
            self.prefix(tenant),
            format.as_str()
        )
    }

    /// True for the key of a report artifact, `[<tenant>/]reports/<template>/<report>.<ext>`
    /// ([`KeyLayout::report`]); a template file, `[<tenant>/]templates/<id>.tpl`, is not one
    /// whatever the tenant is called. Either layout.
    pub fn is_report_artifact(key: &str) -> bool {
        let segments: Vec<&str> = key.split('/').collect();
        segments.len() >= 3
            && segments[segments.len() - 3] == "reports"
            && segments[segments.len() - 2] != "templates"
    }

    /// The tenant segment of a report artifact's key: what comes before
    /// `reports/<template>/<report>.<ext>` (`""` for a single-tenant key, which has no
    /// prefix). The owner the in-memory storage shares its budget by.
    pub fn artifact_owner(key: &str) -> &str {
        let mut tail = key.rsplitn(4, '/');
        let _ = (tail.next(), tail.next(), tail.next());
        tail.next().unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts() {
        let t = TenantId::parse("org-01abc").unwrap();
        let tpl: TemplateId = "8f2c1a9e-4b30-4c02-9a1b-2d5e6f7a1c33".parse().unwrap();
        let rep: ReportId = "019826f4-6a9c-7b31-9d40-2f1e8c5a4b77".parse().unwrap();
        assert_eq!(
            KeyLayout {
                tenant_prefix: false
            }
            .template(&t, tpl),
            "templates/8f2c1a9e-4b30-4c02-9a1b-2d5e6f7a1c33.tpl"
        );
        assert_eq!(
            KeyLayout {
                tenant_prefix: true
            }
            .report(&t, tpl, rep, OutputFormat::Pdf),
            "org-01abc/reports/8f2c1a9e-4b30-4c02-9a1b-2d5e6f7a1c33/019826f4-6a9c-7b31-9d40-2f1e8c5a4b77.pdf"
        );
    }

    #[test]
    fn an_artifact_is_owned_by_its_tenant_segment() {
        for (key, owner) in [
            ("acme/reports/0198/0199.pdf", "acme"),
            ("reports/reports/0198/0199.txt", "reports"),
            ("reports/0198/0199.csv", ""),
        ] {
            assert_eq!(KeyLayout::artifact_owner(key), owner, "{key}");
        }
    }

    #[test]
    fn only_report_artifacts_are_evictable_whatever_the_tenant_is_called() {
        for artifact in [
            "reports/0198/0199.pdf",
            "acme/reports/0198/0199.csv",
            "reports/reports/0198/0199.txt",
        ] {
            assert!(KeyLayout::is_report_artifact(artifact), "{artifact}");
        }
        for other in [
            "templates/0198.tpl",
            "reports/templates/0198.tpl",
            "acme/templates/0198.tpl",
            "reports",
        ] {
            assert!(!KeyLayout::is_report_artifact(other), "{other}");
        }
    }
}
