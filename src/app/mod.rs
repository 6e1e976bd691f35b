//! Use cases. Each public method of [`App`] is one use case: it validates input, reads
//! through the repository ports, and writes through one unit of work carrying the events the
//! change produces.
pub mod builder;
mod context;
mod datasources;
mod deadlines;
mod deliveries;
mod emission;
mod error;
mod human_text;
mod idempotent;
mod layout;
mod metrics;
mod optimistic;
mod outbox_redrive;
mod parked_events;
mod preview;
mod report_completion;
mod report_filters;
mod reports;
mod storage_sweep;
mod template_source;
mod templates;

pub use context::Caller;
pub use datasources::{DataSourceCatalog, DataSourceDetails, Warning};
pub use deadlines::{
    CreateDeadline, DeadlineNotification, Notifications, Severity, UpdateDeadline,
};
pub use emission::{DeliveryHook, Emitter, EventIdentity, EventSubject};
pub use error::{AppError, AppResult, Code, ErrorKind};
pub use idempotent::{Idempotent, Render};
pub use layout::KeyLayout;
pub use metrics::{DashboardMetrics, ErrorCounts};
pub use outbox_redrive::redrive_parked;
pub use preview::{
    PREVIEW_DEFAULT_LIMIT, PREVIEW_MAX_LIMIT, Preview, PreviewEngine, PreviewJob, PreviewOutput,
    PreviewRequest, PreviewRun, PreviewSection, PreviewSettings, StartedPreview,
};
pub use report_completion::{Completion, Generation};
pub(crate) use reports::new_request_id;
pub use reports::{Artifact, CreateReport};
pub use storage_sweep::StorageSweep;
pub use templates::{
    CreateTemplate, MAX_DESCRIPTION_LEN as TEMPLATE_DESCRIPTION_MAX, TemplateDeletion,
    TemplateFile, TemplateWithWarnings, UpdateTemplate,
};

use reporter_ports::ports::{
    DeadlineRepository, DeliveryLog, IdempotencyStore, JobQueue, ObjectStorage, Outbox,
    ReportRepository, TemplateRepository, TemplateRunner, UnitOfWork, UnitOfWorkPort,
};
use reporter_ports::{Clock, StoreError, TenantId};
use std::sync::Arc;

/// The ports the use cases drive.
#[derive(Clone)]
pub struct Ports {
    /// Template reads.
    pub templates: Arc<dyn TemplateRepository>,
    /// Deadline reads.
    pub deadlines: Arc<dyn DeadlineRepository>,
    /// Report reads.
    pub reports: Arc<dyn ReportRepository>,
    /// The write path.
    pub uow: Arc<dyn UnitOfWorkPort>,
    /// Event outbox.
    pub outbox: Arc<dyn Outbox>,
    /// Template files and artifacts.
    pub storage: Arc<dyn ObjectStorage>,
    /// Idempotency records.
    pub idempotency: Arc<dyn IdempotencyStore>,
    /// Report jobs (manager → worker).
    pub jobs: Arc<dyn JobQueue>,
    /// Template work in the sandbox (parse at upload; the worker renders with it).
    pub runner: Arc<dyn TemplateRunner>,
    /// Time.
    pub clock: Arc<dyn Clock>,
    /// What the in-memory broker recorded (`None` with a real broker, or publication off).
    pub deliveries: Option<Arc<dyn DeliveryLog>>,
}

/// Settings the use cases need.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Largest page size.
    pub max_page_limit: u32,
    /// Object key layout.
    pub layout: KeyLayout,
}

/// The application: ports, data sources, emission policy and settings. Its fields are
/// private: every state change is one of its methods.
pub struct App {
    ports: Ports,
    catalog: DataSourceCatalog,
    emitter: Emitter,
    settings: Settings,
    /// The preview engine ([`App::with_preview`]); `None`: previews answer 503.
    preview: Option<preview::PreviewSetup>,
}

/// How many times a use case re-reads and retries after a concurrent modification.
const CONFLICT_RETRIES: usize = 4;

impl App {
    /// Assembles the application.
    pub fn new(
        ports: Ports,
        catalog: DataSourceCatalog,
        emitter: Emitter,
        settings: Settings,
    ) -> Self {
        Self {
            ports,
            catalog,
            emitter,
            settings,
            preview: None,
        }
    }

    /// The ports, for reads (the worker's, the REST edge's, tests'). Writes MUST go through
    /// an `App` method, never through these handles: that is where events and retries are.
    pub fn ports(&self) -> &Ports {
        &self.ports
    }

    /// The configured data sources.
    pub fn catalog(&self) -> &DataSourceCatalog {
        &self.catalog
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The event emission policy (builds outbox rows).
    pub fn emitter(&self) -> &Emitter {
        &self.emitter
    }

    /// Commits event rows with no state change, exactly as a use case's unit of work does
    /// (prepared, committed, the dispatcher woken). For the benchmarks' load generators
    /// only: a real event comes with the state change it describes.
    #[doc(hidden)]
    pub async fn commit_events_for_benchmarks(
        &self,
        tenant: &TenantId,
        rows: Vec<reporter_ports::ports::OutboxRecord>,
    ) -> Result<(), StoreError> {
        self.commit(tenant, UnitOfWork::new().with_outbox(rows))
            .await
    }

    /// Commits a unit of work and wakes the dispatcher if it carried events.
    async fn commit(&self, tenant: &TenantId, mut uow: UnitOfWork) -> Result<(), StoreError> {
        self.emitter.prepare(&mut uow.outbox, self.now());
        let rows = uow.outbox.clone();
        match self.ports.uow.commit(tenant, uow).await {
            Ok(()) => {
                self.emitter.committed(rows);
                Ok(())
            }
            Err(e) => {
                self.emitter.aborted(&rows);
                Err(e)
            }
        }
    }

    /// Now, truncated to milliseconds: every stored and published timestamp has the precision
    /// every adapter (MongoDB included) keeps, so a value reads back exactly as written.
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        use chrono::SubsecRound;
        self.ports.clock.now().trunc_subsecs(3)
    }
}

#[cfg(test)]
mod tests;
