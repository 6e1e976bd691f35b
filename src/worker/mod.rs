//! The report worker: consumes jobs and generates reports.
//!
//! Per job: load the report (terminal → acknowledge and ignore, so a redelivery is harmless),
//! load the template and its file, extract one section per data source with the report's
//! filters, render, convert to PDF when the format is pdf, store the artifact, then record the
//! terminal status and its event in one unit of work. Every step is bounded: a job timeout, a
//! per-query timeout, a row and byte limit per section, a render instruction budget and output
//! limit, a sandboxed render process bounded in memory, CPU and wall-clock time, and a limit on
//! concurrent jobs. html and pdf output is sanitized in the sandbox before it is stored. On shutdown in-flight jobs get a drain period, after
//! which they are recorded as canceled.
mod active_content;
mod artifact_upload;
mod metrics;
mod ownership;
mod pipeline;
mod preview;
mod storage_sweep;
mod streamed;
mod tenant_slots;

pub use crate::app::Generation;
pub use metrics::WorkerMetrics;
pub use pipeline::SectionError;
pub use preview::Previewer;
pub use storage_sweep::StorageSweepSettings;

use crate::app::App;
use reporter_ports::ports::{JobConsumer, JobDelivery, PdfRenderer, RenderLimits, TemplateRunner};
use reporter_ports::{StoreError, TenantId};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tenant_slots::TenantSlots;
use tokio::sync::watch;
use tokio::task::JoinSet;

/// Worker limits (the reference's ENGINE_* settings).
#[derive(Debug, Clone)]
pub struct WorkerSettings {
    /// Jobs processed at once.
    pub concurrency: usize,
    /// Jobs of one tenant processed at once (WORKER_MAX_JOBS_PER_TENANT): the others of
    /// that tenant wait, held back, while other tenants' jobs start.
    pub max_jobs_per_tenant: usize,
    /// Deliveries of a job (WORKER_MAX_ATTEMPTS): a transient failure of the last one records
    /// the report `Error` instead of retrying.
    pub max_attempts: u32,
    /// Sections (data sources) queried at once within a job.
    pub section_concurrency: usize,
    /// Whole-job deadline.
    pub job_timeout: Duration,
    /// Per-query deadline.
    pub query_timeout: Duration,
    /// Rows per table.
    pub max_rows: usize,
    /// Serialized bytes per section.
    pub max_section_bytes: usize,
    /// Render bounds.
    pub render: RenderLimits,
    /// How long in-flight jobs may finish after shutdown starts.
    pub drain_timeout: Duration,
    /// After how long without a change a `Processing` report counts as stuck and gets its job
    /// queued again (the reconciliation sweep); `None`: no sweep.
    pub requeue_after: Option<Duration>,
    /// The sweep of uploads abandoned by writers that died mid-write
    /// (OBJECT_STORAGE_ABANDONED_AFTER_SECONDS); `None`: no sweep.
    pub storage_sweep: Option<StorageSweepSettings>,
}

impl Default for WorkerSettings {
    fn default() -> Self {
        Self {
            concurrency: 4,
            max_jobs_per_tenant: 4,
            max_attempts: 5,
            section_concurrency: 4,
            job_timeout: Duration::from_secs(300),
            query_timeout: Duration::from_secs(30),
            max_rows: 100_000,
            max_section_bytes: 100 * 1024 * 1024,
            render: RenderLimits::default(),
            drain_timeout: Duration::from_secs(20),
            requeue_after: Some(Duration::from_secs(900)),
            storage_sweep: None,
        }
    }
}

/// The worker.
#[derive(Clone)]
pub struct Worker {
    /// Application (ports, catalog, emitter).
    pub app: Arc<App>,
    /// Job source.
    pub consumer: Arc<dyn JobConsumer>,
    /// Template rendering (in the sandbox).
    pub runner: Arc<dyn TemplateRunner>,
    /// HTML → PDF.
    pub pdf: Arc<dyn PdfRenderer>,
    /// Limits.
    pub settings: WorkerSettings,
    /// Received-job counters.
    pub metrics: WorkerMetrics,
}

/// Most jobs a worker holds back for tenants at their bound: past it the worker takes no
/// more jobs from the queue until one ends (with RabbitMQ the prefetch bounds them first).
const MAX_HELD_BACK: usize = 1024;

/// A pending `JobConsumer::next`, kept across the loop's turns (never dropped half-way).
type NextJob =
    Pin<Box<dyn Future<Output = Result<Option<Box<dyn JobDelivery>>, StoreError>> + Send>>;

/// The running jobs and the tenant of each.
#[derive(Default)]
struct Running {
    tasks: JoinSet<()>,
    tenants: HashMap<tokio::task::Id, TenantId>,
}

impl Running {
    /// The tenant of the next job that ends (`None` when none runs).
    async fn next_ended(&mut self) -> Option<TenantId> {
        let id = match self.tasks.join_next_with_id().await? {
            Ok((id, ())) => id,
            Err(e) => {
                tracing::error!(error = %e, "a job task failed");
                e.id()
            }
        };
        self.tenants.remove(&id)
    }
}

impl Worker {
    /// Consumes jobs until `shutdown` turns true, then drains in-flight jobs (canceling those
    /// still running after the drain timeout).
    ///
    /// At most `concurrency` jobs run, at most `max_jobs_per_tenant` of one tenant: a job of
    /// a tenant at its bound is held back ([`TenantSlots`]) while the worker keeps taking
    /// jobs, so another tenant's job behind it starts in a free slot without waiting for the
    /// first tenant's. Held-back jobs start, oldest first, as their tenant's jobs end; at
    /// shutdown they are given back unsettled (the queue delivers them again).
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        let sweep = self.settings.requeue_after.map(|after| {
            tokio::spawn(sweep_stale_reports(
                self.app.clone(),
                after,
                shutdown.clone(),
            ))
        });
        let storage_sweep = self.settings.storage_sweep.clone().map(|settings| {
            tokio::spawn(storage_sweep::run(
                self.app.clone(),
                settings,
                self.metrics.clone(),
                shutdown.clone(),
            ))
        });
        let concurrency = self.settings.concurrency.max(1);
        let mut slots = TenantSlots::new(self.settings.max_jobs_per_tenant);
        let (cancel_tx, cancel_rx) = watch::channel(false);
        let mut running = Running::default();
        let mut next: Option<NextJob> = None;
        loop {
            while running.tasks.len() < concurrency {
                let Some((tenant, d)) = slots.next_ready() else {
                    break;
                };
                self.start(&mut running, tenant, d, &cancel_rx);
            }
            if next.is_none() && running.tasks.len() < concurrency && slots.parked() < MAX_HELD_BACK
            {
                let consumer = self.consumer.clone();
                next = Some(Box::pin(async move { consumer.next().await }));
            }
            tokio::select! {
                delivery = poll_next(&mut next) => {
                    next = None;
                    match delivery {
                        Ok(Some(d)) => {
                            let tenant = d.job().tenant.clone();
                            match slots.admit(tenant.clone(), d) {
                                Some(d) => self.start(&mut running, tenant, d, &cancel_rx),
                                None => self.metrics.held_back(),
                            }
                        }
                        Ok(None) => break,
                        Err(e) => {
                            tracing::error!(error = %e, "job queue unavailable; retrying in 1 s");
                            tokio::time::sleep(Duration::from_secs(1)).await;
                        }
                    }
                }
                Some(tenant) = running.next_ended(), if !running.tasks.is_empty() => {
                    slots.finished(&tenant);
                }
                _ = shutdown.changed() => break,
            }
        }
        drop(next);
        let held_back = slots.take_parked();
        for s in [sweep, storage_sweep].into_iter().flatten() {
            s.abort();
        }
        tracing::info!(
            in_flight = running.tasks.len(),
            held_back = held_back.len(),
            "worker stopping; draining in-flight jobs (held-back jobs are given back unsettled)"
        );
        drop(held_back);
        let tasks = &mut running.tasks;
        let drained = tokio::time::timeout(self.settings.drain_timeout, async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::warn!("drain timeout: canceling the jobs still running");
            let _ = cancel_tx.send(true);
            while tasks.join_next().await.is_some() {}
        }
        tracing::info!("worker stopped");
    }

    /// Runs delivery `d` of `tenant` as a task of `running`.
    fn start(
        &self,
        running: &mut Running,
        tenant: TenantId,
        d: Box<dyn JobDelivery>,
        cancel: &watch::Receiver<bool>,
    ) {
        let worker = self.clone();
        let cancel = cancel.clone();
        let handle = running
            .tasks
            .spawn(async move { worker.handle(d, cancel).await });
        running.tenants.insert(handle.id(), tenant);
    }
}

/// The result of the pending `next` (never ready when there is none).
async fn poll_next(next: &mut Option<NextJob>) -> Result<Option<Box<dyn JobDelivery>>, StoreError> {
    match next {
        Some(f) => f.await,
        None => std::future::pending().await,
    }
}

/// Most stuck reports one sweep queues again.
const SWEEP_BATCH: usize = 100;

/// The reconciliation sweep: every heartbeat period (`after / 4`, 1 s ..= 60 s), queue again the jobs of
/// reports stuck in `Processing` for longer than `after` ([`App::requeue_stale_reports`]).
/// Runs until `shutdown` turns true; a failed sweep is logged and tried again next time.
async fn sweep_stale_reports(app: Arc<App>, after: Duration, mut shutdown: watch::Receiver<bool>) {
    let every = ownership::heartbeat_every(after);
    loop {
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            _ = shutdown.changed() => return,
        }
        if *shutdown.borrow() {
            return;
        }
        if let Err(e) = app.requeue_stale_reports(after, SWEEP_BATCH).await {
            tracing::warn!(error = %e, "stale report sweep failed; trying again later");
        }
    }
}

#[cfg(test)]
mod tests;
