use crate::error::StoreError;
use crate::ids::ReportId;
use crate::tenant::TenantId;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// A report generation job (manager → worker).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportJob {
    /// Tenant of the report.
    pub tenant: TenantId,
    /// The report to generate.
    pub report_id: ReportId,
}

/// Producer side of the job queue.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait JobQueue: Send + Sync {
    /// Durably enqueues a job. `Unavailable` when the queue cannot take it.
    async fn enqueue(&self, job: &ReportJob) -> Result<(), StoreError>;
}
