//! The outbox dispatcher: claims pending rows under a lease, publishes them with a bounded
//! window of broker confirms, and settles each row by its own confirm.
//!
//! - Woken immediately when a unit of work commits rows; polls as a fallback.
//! - A row is marked published only when the broker confirmed it with no return.
//! - A failed row is retried with exponential backoff and jitter; after `max_attempts` it is
//!   parked with its reason, and never blocks other rows.
//! - Per-aggregate order: the outbox hands out the rows of one resource in commit order, and
//!   within a claim the dispatcher publishes them in waves (one row per resource per wave), so
//!   a later event of a resource is never published before an earlier one succeeded.
//! - Published rows older than the retention are purged.
use super::metrics::{Outcome, StreamingMetrics};
use chrono::{DateTime, Utc};
use rand::Rng;
use reporter_ports::ports::{EventPublisher, Outbox, OutboxRecord, PublishError};
use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{Notify, watch};

/// Dispatcher settings.
#[derive(Debug, Clone)]
pub struct DispatcherSettings {
    /// Claim owner name (process id).
    pub owner: String,
    /// Rows per claim (and in flight at once).
    pub batch: usize,
    /// Claim lease.
    pub lease: chrono::Duration,
    /// Fallback poll interval.
    pub poll: Duration,
    /// Attempts before a row is parked.
    pub max_attempts: u32,
    /// Retention of published rows.
    pub retention: chrono::Duration,
    /// First retry delay.
    pub backoff_base: Duration,
    /// Largest retry delay of a row the broker refused (unroutable).
    pub backoff_cap: Duration,
    /// Largest retry delay while the broker is unreachable, slow or nacking.
    pub transient_backoff_cap: Duration,
}

/// Retry delay after `attempts` failures: exponential from the base, capped, with jitter in
/// `[delay/2, delay]`.
pub fn backoff(attempts: u32, base: Duration, cap: Duration) -> Duration {
    let exp = base.saturating_mul(2u32.saturating_pow(attempts.saturating_sub(1).min(30)));
    let delay = exp.min(cap);
    let half = delay / 2;
    let jitter_ms = u64::try_from(half.as_millis()).unwrap_or(0);
    half + Duration::from_millis(if jitter_ms == 0 {
        0
    } else {
        rand::rng().random_range(0..=jitter_ms)
    })
}

/// The dispatcher.
pub struct Dispatcher {
    /// Outbox.
    pub outbox: Arc<dyn Outbox>,
    /// Broker.
    pub publisher: Arc<dyn EventPublisher>,
    /// Metrics.
    pub metrics: StreamingMetrics,
    /// Wake-up signal.
    pub wake: Arc<Notify>,
    /// Settings.
    pub settings: DispatcherSettings,
}

/// Splits claimed rows into waves holding at most one row per aggregate, keeping order.
fn waves(rows: Vec<OutboxRecord>) -> Vec<Vec<OutboxRecord>> {
    let mut queue: VecDeque<OutboxRecord> = rows.into();
    let mut out = Vec::new();
    while !queue.is_empty() {
        let mut seen = HashSet::new();
        let mut wave = Vec::new();
        let mut rest = VecDeque::new();
        while let Some(r) = queue.pop_front() {
            if seen.insert(r.aggregate.clone()) {
                wave.push(r);
            } else {
                rest.push_back(r);
            }
        }
        out.push(wave);
        queue = rest;
    }
    out
}

impl Dispatcher {
    /// Runs until `shutdown` turns true.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        let mut last_housekeeping = Instant::now() - Duration::from_secs(3600);
        loop {
            if *shutdown.borrow() {
                break;
            }
            if last_housekeeping.elapsed() >= Duration::from_secs(1) {
                self.housekeeping().await;
                last_housekeeping = Instant::now();
            }
            let worked = match self.round().await {
                Ok(n) => n > 0,
                Err(e) => {
                    tracing::error!(error = %e, "outbox claim failed; retrying");
                    false
                }
            };
            if !worked {
                tokio::select! {
                    () = self.wake.notified() => {}
                    () = tokio::time::sleep(self.settings.poll) => {}
                    changed = shutdown.changed() => {
                        // A dropped sender means the owner is gone: stop too.
                        if changed.is_err() {
                            break;
                        }
                    }
                }
            }
        }
        tracing::info!("outbox dispatcher stopped");
    }

    async fn housekeeping(&self) {
        let now = Utc::now();
        match self.outbox.stats(now).await {
            Ok(s) => {
                self.metrics
                    .outbox_depth
                    .set(i64::try_from(s.pending).unwrap_or(i64::MAX));
                self.metrics
                    .parked
                    .set(i64::try_from(s.parked).unwrap_or(i64::MAX));
                self.metrics
                    .oldest_pending_age
                    .set(s.oldest_pending_age_secs.unwrap_or(0));
            }
            Err(e) => tracing::warn!(error = %e, "outbox stats unavailable"),
        }
        if let Err(e) = self
            .outbox
            .purge_published(now - self.settings.retention)
            .await
        {
            tracing::warn!(error = %e, "outbox purge failed");
        }
    }

    /// One claim-publish-settle round; answers how many rows it claimed.
    pub async fn round(&self) -> Result<usize, reporter_ports::StoreError> {
        let now = Utc::now();
        let rows = self
            .outbox
            .claim(
                &self.settings.owner,
                now,
                now + self.settings.lease,
                self.settings.batch,
            )
            .await?;
        let claimed = rows.len();
        let mut failed_aggregates: HashSet<String> = HashSet::new();
        for wave in waves(rows) {
            // Rows whose resource already failed in an earlier wave are held back unsettled:
            // their lease expires and the outbox hands them out after the earlier row.
            let wave: Vec<OutboxRecord> = wave
                .into_iter()
                .filter(|r| !failed_aggregates.contains(&r.aggregate))
                .collect();
            if wave.is_empty() {
                continue;
            }
            let envelopes: Vec<_> = wave.iter().map(|r| r.event.clone()).collect();
            let start = Instant::now();
            let results = self.publisher.publish(&envelopes).await;
            self.metrics
                .publish_latency
                .observe(start.elapsed().as_secs_f64());
            let now = Utc::now();
            for (row, result) in wave.iter().zip(results) {
                let Some(token) = row.lease.as_ref().map(|l| l.token) else {
                    continue;
                };
                let key = row.event.key.key();
                match result {
                    Ok(()) => {
                        self.metrics.count(&key, Outcome::Dispatched);
                        if let Err(e) = self.outbox.mark_published(row.id, token, now).await {
                            tracing::warn!(error = %e, ce_id = %row.event.id, "published but could not settle; it may be published again with the same ce-id");
                        }
                    }
                    Err(e) => {
                        failed_aggregates.insert(row.aggregate.clone());
                        self.fail(row, token, &e, now).await;
                    }
                }
            }
        }
        Ok(claimed)
    }

    /// Settles a failed publish. Broker-side trouble (unreachable, timed out, nacked) says
    /// nothing about the row: it is retried until delivered, with a short capped backoff so
    /// delivery resumes within seconds of the broker's return. Only a failure of the row itself
    /// (the broker returned it as unroutable) counts toward parking.
    async fn fail(
        &self,
        row: &OutboxRecord,
        token: uuid::Uuid,
        error: &PublishError,
        now: DateTime<Utc>,
    ) {
        let attempts = row.attempts + 1;
        let key = row.event.key.key();
        let reason: String = error.to_string().chars().take(500).collect();
        let row_specific = matches!(error, PublishError::Unroutable(_));
        if row_specific && attempts >= self.settings.max_attempts {
            tracing::error!(event = %key, ce_id = %row.event.id, attempts, reason = %reason, "event parked after too many attempts; redrive it with `reporter outbox redrive`");
            self.metrics.count(&key, Outcome::Parked);
            if let Err(e) = self.outbox.park(row.id, token, &reason).await {
                tracing::warn!(error = %e, "could not park an outbox row");
            }
        } else {
            let delay = backoff(
                attempts,
                self.settings.backoff_base,
                self.settings.backoff_cap,
            );
            tracing::warn!(event = %key, ce_id = %row.event.id, attempts, retry_in_ms = delay.as_millis() as u64, reason = %reason, "event publish failed; will retry");
            let retry_at = now
                + chrono::Duration::from_std(delay)
                    .unwrap_or_else(|_| chrono::Duration::seconds(1));
            if let Err(e) = self
                .outbox
                .mark_failed(row.id, token, &reason, retry_at)
                .await
            {
                tracing::warn!(error = %e, "could not record a failed publish; the lease will expire");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped_with_jitter() {
        let base = Duration::from_millis(100);
        let cap = Duration::from_secs(5);
        for attempt in 1..20 {
            let d = backoff(attempt, base, cap);
            let full = base
                .saturating_mul(2u32.saturating_pow(attempt - 1))
                .min(cap);
            assert!(
                d >= full / 2 && d <= full,
                "attempt {attempt}: {d:?} vs {full:?}"
            );
        }
        assert!(backoff(100, base, cap) <= cap);
    }
}
