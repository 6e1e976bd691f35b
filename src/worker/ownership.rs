//! Ownership of a report while a worker generates it.
//!
//! The stuck-report sweep queues again the job of a report left `Processing` for longer than
//! `REPORT_REQUEUE_AFTER_SEC`. A worker generating a report proves it is alive by touching the
//! report (a heartbeat, [`App::touch_report`]) every quarter of that period, so the sweep only
//! ever requeues reports whose worker died or lost the store for the whole period. A touch
//! that conflicts means someone else changed the report: another delivery finished it (this
//! one stops and drops its work), or the sweep requeued it after a long store outage (this one
//! goes on with the reloaded version; the requeued job is recognised as a duplicate).
use super::Worker;
use reporter_ports::StoreError;
use reporter_ports::report::Report;
use std::future::Future;
use std::time::Duration;

/// What became of a report while some work on it ran.
pub(super) enum Alive<T> {
    /// The work finished; `current` is the report as last stored (the version to commit on).
    Done {
        /// The work's output.
        output: T,
        /// The report as last stored.
        current: Box<Report>,
    },
    /// Another delivery recorded a terminal status meanwhile (or the report is gone).
    FinishedElsewhere,
}

/// Heartbeat period for a stale period `after`: a quarter of it, within 1 s ..= 60 s (the
/// sweep's own period, so a live report is touched at least once per sweep).
pub(super) fn heartbeat_every(after: Duration) -> Duration {
    (after / 4).clamp(Duration::from_secs(1), Duration::from_secs(60))
}

impl Worker {
    /// Runs `work` while touching `report` every heartbeat period (no heartbeat without a
    /// sweep). MUST stop `work` and answer [`Alive::FinishedElsewhere`] as soon as a touch finds
    /// the report terminal or gone.
    pub(super) async fn while_alive<F: Future>(
        &self,
        report: &Report,
        work: F,
    ) -> Alive<F::Output> {
        let mut current = report.clone();
        let Some(after) = self.settings.requeue_after else {
            return Alive::Done {
                output: work.await,
                current: Box::new(current),
            };
        };
        let every = heartbeat_every(after);
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        tokio::pin!(work);
        loop {
            tokio::select! {
                output = &mut work => return Alive::Done { output, current: Box::new(current) },
                _ = ticks.tick() => match self.app.touch_report(&current).await {
                    Ok(touched) => current = touched,
                    Err(StoreError::VersionConflict | StoreError::NotFound) => {
                        match self.app.ports().reports.get(&current.tenant, current.id).await {
                            Ok(Some(r)) if !r.status.is_terminal() => {
                                tracing::warn!(
                                    "the stuck-report sweep queued this report again while it was being generated \
                                     (no heartbeat reached the store for REPORT_REQUEUE_AFTER_SEC); \
                                     going on, the queued job will be ignored as a duplicate once this one records the result"
                                );
                                current = r;
                            }
                            Ok(_) => {
                                tracing::info!("another delivery finished this report while this one generated it; dropping this one's work");
                                return Alive::FinishedElsewhere;
                            }
                            Err(e) => tracing::warn!(error = %e, "the report heartbeat conflicted and the report could not be reloaded; trying again at the next one"),
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "report heartbeat failed; trying again at the next one"),
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heartbeat_beats_four_times_per_stale_period_within_bounds() {
        assert_eq!(
            heartbeat_every(Duration::from_secs(120)),
            Duration::from_secs(30)
        );
        assert_eq!(
            heartbeat_every(Duration::from_secs(900)),
            Duration::from_secs(60)
        );
        assert_eq!(
            heartbeat_every(Duration::from_secs(2)),
            Duration::from_secs(1)
        );
    }
}
