use crate::error::StoreError;
use crate::ids::ReportId;
use crate::tenant::TenantId;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// A report generation job (manager → worker). The message body on a queue is this JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportJob {
    /// Tenant of the report.
    pub tenant: TenantId,
    /// The report to generate.
    pub report_id: ReportId,
    /// Correlation id of the request that queued the job, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// Trace context of the work that queued the job (telemetry on). Not part of the JSON
    /// body: a queue carries it as its `Traceparent` / `Tracestate` headers.
    #[serde(skip)]
    pub trace: Option<crate::TraceCarrier>,
}

/// Producer side of the job queue.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait JobQueue: Send + Sync {
    /// Durably enqueues a job. `Unavailable` when the queue cannot take it (the caller decides
    /// what the report becomes).
    async fn enqueue(&self, job: &ReportJob) -> Result<(), StoreError>;
}

/// One received job. Exactly one of `ack`, `retry` or `dead_letter` settles it; dropping it
/// unsettled makes the queue redeliver it (at-least-once).
#[async_trait]
pub trait JobDelivery: Send {
    /// The job.
    fn job(&self) -> &ReportJob;
    /// 0 for the first delivery, +1 for every retry.
    fn attempt(&self) -> u32;
    /// True when the queue handed this very message out before and it was never settled (the
    /// consumer holding it died or lost its connection), so the job may have been started
    /// already. Default `false` (a queue that cannot tell).
    fn redelivered(&self) -> bool {
        false
    }
    /// Done (success, or a final outcome recorded elsewhere).
    async fn ack(self: Box<Self>) -> Result<(), StoreError>;
    /// Transient failure: deliver again after the adapter's backoff (exponential with
    /// jitter); after the adapter's maximum attempts the job goes to the dead-letter queue.
    async fn retry(self: Box<Self>, reason: &str) -> Result<(), StoreError>;
    /// Permanent failure: move to the dead-letter queue with the (sanitised) reason.
    async fn dead_letter(self: Box<Self>, reason: &str) -> Result<(), StoreError>;
}

/// Consumer side of the job queue.
#[async_trait]
pub trait JobConsumer: Send + Sync {
    /// Waits for the next job. `Ok(None)` when the consumer was closed (shutdown).
    async fn next(&self) -> Result<Option<Box<dyn JobDelivery>>, StoreError>;
}
