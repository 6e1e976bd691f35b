//! Spec tags.
use poem_openapi::Tags;

/// Operation groups.
#[derive(Tags)]
pub enum ApiTags {
    /// Upload and manage report templates (`.tpl` files rendered into html, pdf, csv, xml or txt).
    Templates,
    /// Build templates from blocks: the block and filter catalogues, code generation and
    /// validation.
    TemplateBuilder,
    /// Request reports, follow their status and download their artifacts.
    Reports,
    /// Filing deadlines: recurrence, delivery and notifications.
    Deadlines,
    /// The configured data sources templates read from.
    DataSources,
    /// Dashboard counters.
    Metrics,
    /// The event stream: manifest, in-memory deliveries, outbox operations.
    Streaming,
    /// Liveness, readiness and build information.
    Ops,
}
