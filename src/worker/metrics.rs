//! Worker metrics: jobs received and settled, job duration, reports by terminal status.
use super::pipeline::JobOutcome;
use prometheus::{HistogramOpts, HistogramVec, IntCounter, IntCounterVec, Opts, Registry};
use reporter_ports::report::ReportStatus;
use std::time::Duration;

/// Job outcome labels, in the order docs/src/operations/deployment.md lists them.
pub const OUTCOMES: [&str; 5] = [
    "succeeded",
    "failed",
    "duplicate",
    "retried",
    "dead_lettered",
];

/// The worker's counters and histogram, registered on the process's registry.
#[derive(Clone)]
pub struct WorkerMetrics {
    received: IntCounterVec,
    jobs: IntCounterVec,
    duration: HistogramVec,
    reports: IntCounterVec,
    streams: IntCounterVec,
    streamed_rows: IntCounter,
    uploads: IntCounterVec,
    held_back: IntCounter,
    abandoned_removed: IntCounterVec,
}

/// How an artifact written while rendered ended, as `reporter_artifact_uploads_total`
/// labels it.
pub const UPLOAD_OUTCOMES: [&str; 3] = ["committed", "aborted", "failed"];

/// How a streamed render ended, as `reporter_render_streams_total` labels it.
pub const STREAM_OUTCOMES: [&str; 2] = ["streamed", "rendered_again"];

impl WorkerMetrics {
    /// Registers `reporter_jobs_received_total{redelivered}`, `reporter_jobs_total{outcome}`,
    /// `reporter_job_duration_seconds{outcome}`, `reporter_reports_generated_total{status}`,
    /// `reporter_render_streams_total{outcome}`, `reporter_render_streamed_rows_total` and
    /// `reporter_jobs_held_back_total` and `reporter_storage_abandoned_removed_total{backend}`.
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let received = IntCounterVec::new(
            Opts::new(
                "reporter_jobs_received_total",
                "Jobs received, by whether the queue redelivered them (a consumer that held \
                 the job died or lost its connection before settling it)",
            ),
            &["redelivered"],
        )?;
        let jobs = IntCounterVec::new(
            Opts::new(
                "reporter_jobs_total",
                "Jobs settled, by outcome: succeeded (Finished or Partial recorded), failed \
                 (Error recorded), duplicate (the report was terminal already), retried, \
                 dead_lettered",
            ),
            &["outcome"],
        )?;
        let duration = HistogramVec::new(
            HistogramOpts::new(
                "reporter_job_duration_seconds",
                "Time from a job's receipt to its settlement, by outcome",
            )
            .buckets(vec![
                0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
            ]),
            &["outcome"],
        )?;
        let reports = IntCounterVec::new(
            Opts::new(
                "reporter_reports_generated_total",
                "Terminal statuses this worker recorded: Finished, Partial, Error",
            ),
            &["status"],
        )?;
        let streams = IntCounterVec::new(
            Opts::new(
                "reporter_render_streams_total",
                "Renders that took a table as a stream, by outcome: streamed (its rows reached \
                 the render as they arrived), rendered_again (its query failed part-way, and the \
                 report was rendered again without that section; or it passed its deadline \
                 while the render held it back, and the report was rendered again from a whole \
                 context)",
            ),
            &["outcome"],
        )?;
        let streamed_rows = IntCounter::new(
            "reporter_render_streamed_rows_total",
            "Rows that reached a render as a stream (never held whole in the context)",
        )?;
        registry.register(Box::new(streamed_rows.clone()))?;
        let held_back = IntCounter::new(
            "reporter_jobs_held_back_total",
            "Jobs held back because their tenant ran WORKER_MAX_JOBS_PER_TENANT jobs already \
             (they start as that tenant's jobs end; other tenants' jobs pass them)",
        )?;
        registry.register(Box::new(held_back.clone()))?;
        for outcome in STREAM_OUTCOMES {
            streams.with_label_values(&[outcome]);
        }
        let uploads = IntCounterVec::new(
            Opts::new(
                "reporter_artifact_uploads_total",
                "Artifacts written to object storage while rendered, in pieces, by outcome: \
                 committed (stored whole), aborted (the render failed or was taken back; \
                 nothing stored), failed (a storage write failed; the report is Error)",
            ),
            &["outcome"],
        )?;
        for outcome in UPLOAD_OUTCOMES {
            uploads.with_label_values(&[outcome]);
        }
        let abandoned_removed = IntCounterVec::new(
            Opts::new(
                "reporter_storage_abandoned_removed_total",
                "Uploads abandoned by a writer that died mid-write (hidden temporary files, \
                 incomplete multipart uploads, GridFS chunks without a file) that the sweep \
                 removed, by object storage backend",
            ),
            &["backend"],
        )?;
        for c in [
            &received,
            &jobs,
            &reports,
            &streams,
            &uploads,
            &abandoned_removed,
        ] {
            registry.register(Box::new(c.clone()))?;
        }
        registry.register(Box::new(duration.clone()))?;
        // Every series exists from the start, so a rate over an idle worker reads 0.
        for flag in ["true", "false"] {
            received.with_label_values(&[flag]);
        }
        for outcome in OUTCOMES {
            jobs.with_label_values(&[outcome]);
            duration.with_label_values(&[outcome]);
        }
        for status in [
            ReportStatus::Finished,
            ReportStatus::Partial,
            ReportStatus::Error,
        ] {
            reports.with_label_values(&[status.as_str()]);
        }
        Ok(Self {
            received,
            jobs,
            duration,
            reports,
            streams,
            streamed_rows,
            uploads,
            held_back,
            abandoned_removed,
        })
    }

    /// Counts `removed` abandoned uploads the sweep removed from `backend`.
    pub(super) fn abandoned_removed(&self, backend: &str, removed: u64) {
        self.abandoned_removed
            .with_label_values(&[backend])
            .inc_by(removed);
    }

    /// Counts a job held back for its tenant's bound.
    pub(super) fn held_back(&self) {
        self.held_back.inc();
    }

    /// Counts an artifact upload that ended with `outcome` (one of [`UPLOAD_OUTCOMES`]).
    pub(super) fn upload_ended(&self, outcome: &'static str) {
        self.uploads.with_label_values(&[outcome]).inc();
    }

    /// Counts a streamed render that took `rows` rows (all of its table's, unless it
    /// answered before the last).
    pub(super) fn streamed(&self, rows: u64) {
        self.streams.with_label_values(&["streamed"]).inc();
        self.streamed_rows.inc_by(rows);
    }

    /// Counts a streamed render abandoned for a render of the report again (its table's query
    /// failed part-way, or passed its deadline).
    pub(super) fn rendered_again(&self) {
        self.streams.with_label_values(&["rendered_again"]).inc();
    }

    /// Counts one received job.
    pub fn received(&self, redelivered: bool) {
        self.received
            .with_label_values(&[if redelivered { "true" } else { "false" }])
            .inc();
    }

    /// Counts one settled job, its duration, and the terminal status it recorded.
    pub(super) fn settled(&self, outcome: &JobOutcome, took: Duration) {
        let label = match outcome {
            JobOutcome::Recorded(ReportStatus::Error) => "failed",
            JobOutcome::Recorded(_) => "succeeded",
            JobOutcome::Duplicate => "duplicate",
            JobOutcome::Retry(_) => "retried",
            JobOutcome::DeadLetter(_) => "dead_lettered",
        };
        if let JobOutcome::Recorded(status) = outcome {
            self.reports.with_label_values(&[status.as_str()]).inc();
        }
        self.jobs.with_label_values(&[label]).inc();
        self.duration
            .with_label_values(&[label])
            .observe(took.as_secs_f64());
    }

    /// Jobs received with this flag so far (tests).
    pub fn get(&self, redelivered: bool) -> u64 {
        self.received
            .with_label_values(&[if redelivered { "true" } else { "false" }])
            .get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(registry: &Registry, name: &str, label: &str) -> f64 {
        registry
            .gather()
            .iter()
            .filter(|f| f.name() == name)
            .flat_map(|f| f.get_metric().to_vec())
            .find(|m| m.get_label().iter().any(|l| l.value() == label))
            .map(|m| {
                if m.get_histogram().get_sample_count() > 0 {
                    m.get_histogram().get_sample_count() as f64
                } else {
                    m.get_counter().get_value()
                }
            })
            .unwrap_or(-1.0)
    }

    #[test]
    fn abandoned_uploads_count_by_backend() {
        let registry = Registry::new();
        let m = WorkerMetrics::register(&registry).expect("register");
        m.abandoned_removed("fs", 2);
        m.abandoned_removed("fs", 1);
        m.abandoned_removed("s3", 0);
        let removed = |l| value(&registry, "reporter_storage_abandoned_removed_total", l);
        assert_eq!((removed("fs"), removed("s3")), (3.0, 0.0));
    }

    #[test]
    fn counts_by_the_redelivered_flag_and_shows_in_the_registry() {
        let registry = Registry::new();
        let m = WorkerMetrics::register(&registry).expect("register");
        m.received(false);
        m.received(true);
        m.received(true);
        assert_eq!((m.get(false), m.get(true)), (1, 2));
        assert_eq!(
            value(&registry, "reporter_jobs_received_total", "true"),
            2.0
        );
    }

    #[test]
    fn each_outcome_has_its_label_and_recorded_statuses_count_as_reports() {
        let registry = Registry::new();
        let m = WorkerMetrics::register(&registry).expect("register");
        // Present before anything happened.
        assert_eq!(
            value(&registry, "reporter_jobs_total", "dead_lettered"),
            0.0
        );
        let took = Duration::from_millis(5);
        m.settled(&JobOutcome::Recorded(ReportStatus::Finished), took);
        m.settled(&JobOutcome::Recorded(ReportStatus::Partial), took);
        m.settled(&JobOutcome::Recorded(ReportStatus::Error), took);
        m.settled(&JobOutcome::Duplicate, took);
        m.settled(&JobOutcome::Retry("x".into()), took);
        m.settled(&JobOutcome::DeadLetter("y".into()), took);
        let jobs = |l| value(&registry, "reporter_jobs_total", l);
        assert_eq!(
            OUTCOMES.map(jobs),
            [2.0, 1.0, 1.0, 1.0, 1.0],
            "succeeded, failed, duplicate, retried, dead_lettered"
        );
        let reports = |l| value(&registry, "reporter_reports_generated_total", l);
        assert_eq!(
            ["Finished", "Partial", "Error"].map(reports),
            [1.0, 1.0, 1.0]
        );
        assert_eq!(
            value(&registry, "reporter_job_duration_seconds", "succeeded"),
            2.0,
            "two observations"
        );
    }
}
