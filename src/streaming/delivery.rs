//! The direct publish path of important events, and the wake-up of the dispatcher.
use super::breaker::{BreakerState, CircuitBreaker};
use super::metrics::{Outcome, StreamingMetrics};
use crate::app::DeliveryHook;
use chrono::{DateTime, Utc};
use reporter_ports::events::{DeliveryProfile, EventKey};
use reporter_ports::ports::{EventPublisher, Lease, Outbox, OutboxRecord};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Delivers committed rows: important rows leased for a direct publish are published right
/// away through the circuit breaker; everything else (critical rows, and important rows while
/// the breaker is open or after a failed direct publish) is left to the dispatcher, which is
/// woken at once.
pub struct Delivery {
    /// Broker.
    pub publisher: Arc<dyn EventPublisher>,
    /// Outbox (to settle directly published rows).
    pub outbox: Arc<dyn Outbox>,
    /// Breaker of the direct path.
    pub breaker: Arc<CircuitBreaker>,
    /// Metrics.
    pub metrics: StreamingMetrics,
    /// Dispatcher wake-up.
    pub wake: Arc<Notify>,
    /// Publish + confirm deadline (the direct lease lasts a little longer).
    pub publish_timeout: Duration,
}

const DIRECT_OWNER: &str = "direct";

impl DeliveryHook for Delivery {
    fn direct_lease(&self, key: EventKey, now: DateTime<Utc>) -> Option<Lease> {
        if key.profile() != DeliveryProfile::Important || self.breaker.state() == BreakerState::Open
        {
            return None;
        }
        let lease_ms =
            i64::try_from(self.publish_timeout.as_millis()).unwrap_or(i64::MAX / 2) + 2_000;
        Some(Lease {
            token: uuid::Uuid::now_v7(),
            owner: DIRECT_OWNER.to_owned(),
            until: now + chrono::Duration::milliseconds(lease_ms),
        })
    }

    fn committed(&self, rows: Vec<OutboxRecord>) {
        let (direct, queued): (Vec<_>, Vec<_>) = rows
            .into_iter()
            .partition(|r| r.lease.as_ref().is_some_and(|l| l.owner == DIRECT_OWNER));
        for r in &queued {
            self.metrics.count(&r.event.key.key(), Outcome::Outboxed);
        }
        if !queued.is_empty() {
            self.wake.notify_one();
        }
        if direct.is_empty() {
            return;
        }
        let publisher = self.publisher.clone();
        let outbox = self.outbox.clone();
        let breaker = self.breaker.clone();
        let metrics = self.metrics.clone();
        let wake = self.wake.clone();
        tokio::spawn(async move {
            if !breaker.try_acquire() {
                // The breaker opened meanwhile: the rows stay in the outbox; their short lease
                // expires and the dispatcher publishes them.
                for r in &direct {
                    metrics.count(&r.event.key.key(), Outcome::Outboxed);
                }
                metrics.breaker_state.set(breaker.state().gauge());
                return;
            }
            let envelopes: Vec<_> = direct.iter().map(|r| r.event.clone()).collect();
            let start = Instant::now();
            let results = publisher.publish(&envelopes).await;
            metrics
                .publish_latency
                .observe(start.elapsed().as_secs_f64());
            let now = Utc::now();
            let mut failed = false;
            for (row, result) in direct.iter().zip(results) {
                let key = row.event.key.key();
                let Some(token) = row.lease.as_ref().map(|l| l.token) else {
                    continue;
                };
                match result {
                    Ok(()) => {
                        breaker.record(true);
                        metrics.count(&key, Outcome::Published);
                        if let Err(e) = outbox.mark_published(row.id, token, now).await {
                            tracing::warn!(error = %e, event = %key, ce_id = %row.event.id, "published directly but could not settle the outbox row; the dispatcher may publish it again (same ce-id)");
                        }
                    }
                    Err(e) => {
                        failed = true;
                        breaker.record(false);
                        metrics.count(&key, Outcome::Failed);
                        tracing::warn!(error = %e, event = %key, ce_id = %row.event.id, "direct publish failed; the event stays in the outbox");
                        if let Err(e) = outbox.mark_failed(row.id, token, &e.to_string(), now).await
                        {
                            tracing::warn!(error = %e, "could not release a failed direct publish; its lease will expire");
                        }
                    }
                }
            }
            metrics.breaker_state.set(breaker.state().gauge());
            if failed {
                wake.notify_one();
            }
        });
    }

    fn lost(&self, key: EventKey) {
        self.metrics.count(&key.key(), Outcome::Lost);
    }
}
