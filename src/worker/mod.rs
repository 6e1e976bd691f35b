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
mod streamed;

pub use crate::app::Generation;
pub use metrics::WorkerMetrics;
pub use pipeline::SectionError;

use crate::app::App;
use reporter_ports::ports::{JobConsumer, PdfRenderer, RenderLimits, TemplateRunner};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Semaphore, watch};

/// Worker limits (the reference's ENGINE_* settings).
#[derive(Debug, Clone)]
pub struct WorkerSettings {
    /// Jobs processed at once.
    pub concurrency: usize,
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
}

impl Default for WorkerSettings {
    fn default() -> Self {
        Self {
            concurrency: 4,
            max_attempts: 5,
            section_concurrency: 4,
            job_timeout: Duration::from_secs(300),
            query_timeout: Duration::from_secs(30),
            max_rows: 100_000,
            max_section_bytes: 100 * 1024 * 1024,
            render: RenderLimits::default(),
            drain_timeout: Duration::from_secs(20),
            requeue_after: Some(Duration::from_secs(900)),
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

impl Worker {
    /// Consumes jobs until `shutdown` turns true, then drains in-flight jobs (canceling those
    /// still running after the drain timeout).
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        let sweep = self.settings.requeue_after.map(|after| {
            tokio::spawn(sweep_stale_reports(
                self.app.clone(),
                after,
                shutdown.clone(),
            ))
        });
        let permits = Arc::new(Semaphore::new(self.settings.concurrency.max(1)));
        let (cancel_tx, cancel_rx) = watch::channel(false);
        let mut tasks = tokio::task::JoinSet::new();
        loop {
            let permit = tokio::select! {
                p = permits.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
                _ = shutdown.changed() => break,
            };
            let delivery = tokio::select! {
                d = self.consumer.next() => d,
                _ = shutdown.changed() => break,
            };
            match delivery {
                Ok(Some(d)) => {
                    let worker = self.clone();
                    let cancel = cancel_rx.clone();
                    tasks.spawn(async move {
                        worker.handle(d, cancel).await;
                        drop(permit);
                    });
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::error!(error = %e, "job queue unavailable; retrying in 1 s");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
            while tasks.try_join_next().is_some() {}
        }
        if let Some(s) = sweep {
            s.abort();
        }
        tracing::info!(
            in_flight = tasks.len(),
            "worker stopping; draining in-flight jobs"
        );
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
