//! The outbox dispatcher: claims pending rows under a lease, publishes them through the
//! publisher's shared window of broker confirms, and settles each row by its own confirm.
//!
//! - Woken immediately when a unit of work commits rows, when the broker link comes back, and
//!   when a row's retry is due; polls as a fallback.
//! - Pipelined: the next batch is claimed while the confirms of the previous one are in flight
//!   (at most `ahead` batches at once), so the confirm window never drains between batches.
//! - A row is marked published only when the broker confirmed it with no return.
//! - Broker-side trouble (unreachable, blocked, timed out, nacked) says nothing about the rows:
//!   they stay claimable, and the dispatcher itself pauses, with exponential backoff capped at
//!   `transient_backoff_cap` (5 s), until the broker link reports its return — which ends the
//!   pause at once. While the publisher reports it cannot publish, nothing is claimed.
//! - A row the broker refused (returned as unroutable) is retried with its own backoff (capped
//!   at `backoff_cap`); after `max_attempts` it is parked with its reason, and never blocks
//!   other rows.
//! - Per-aggregate order: the outbox hands out the rows of one resource in commit order, and
//!   within a claim the dispatcher publishes them in waves (one row per resource per wave), so
//!   a later event of a resource is never published before an earlier one succeeded; the rows
//!   held back behind a failure are given back at once.
//! - The direct lane of important events runs alongside (same task set, same shutdown).
//! - Published rows older than the retention are purged.
use super::delivery::DirectLane;
use super::metrics::{Outcome, StreamingMetrics};
use chrono::{DateTime, Utc};
use futures_util::stream::{FuturesUnordered, StreamExt};
use reporter_ports::Backoff;
use reporter_ports::clock::Clock;
use reporter_ports::ports::{EventPublisher, Outbox, OutboxRecord, PublishError};
use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

/// Dispatcher settings.
#[derive(Debug, Clone)]
pub struct DispatcherSettings {
    /// Claim owner name (process id).
    pub owner: String,
    /// Rows per claim.
    pub batch: usize,
    /// Claimed batches in flight at once (the next claimed while one awaits its confirms).
    pub ahead: usize,
    /// Claim lease.
    pub lease: chrono::Duration,
    /// Longest one publish call may take (publish + confirm deadline).
    pub publish_deadline: Duration,
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
    /// Largest pause while the broker is unreachable, slow or nacking.
    pub transient_backoff_cap: Duration,
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
    /// Set (then `wake` notified) when the broker link comes back: ends a pause at once.
    pub broker_back: Arc<AtomicBool>,
    /// The direct lane of important events, run alongside.
    pub lane: Option<DirectLane>,
    /// Settings.
    pub settings: DispatcherSettings,
    /// The clock every lease, delay and retention is measured on.
    pub clock: Arc<dyn Clock>,
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

/// What one claimed batch came to.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct BatchReport {
    /// Rows claimed.
    pub claimed: usize,
    /// Rows confirmed by the broker.
    pub published: usize,
    /// Rows that failed for a broker-side reason.
    pub transient: usize,
    /// Earliest retry of a row the broker refused.
    pub retry_at: Option<DateTime<Utc>>,
}

/// The dispatcher's pause after broker-side failures.
#[derive(Debug, Default)]
struct Pause {
    until: Option<Instant>,
    failures: u32,
}

impl Pause {
    fn active(&self) -> bool {
        self.until.is_some_and(|u| Instant::now() < u)
    }

    fn clear(&mut self) {
        self.until = None;
        self.failures = 0;
    }

    fn after(&mut self, report: &BatchReport, s: &DispatcherSettings) {
        if report.published > 0 || report.transient == 0 {
            self.clear();
        } else {
            self.failures = self.failures.saturating_add(1);
            // The first pause is `backoff_base`: `failures` counts from 1.
            let delay = Backoff::new(s.backoff_base, s.transient_backoff_cap)
                .equal_jitter(self.failures.saturating_sub(1));
            tracing::debug!(
                pause_ms = delay.as_millis() as u64,
                "broker trouble: dispatcher pauses"
            );
            self.until = Some(Instant::now() + delay);
        }
    }
}

impl Dispatcher {
    /// Runs the dispatcher (and the direct lane) until `shutdown` turns true; the batches in
    /// flight are finished first.
    pub async fn run(mut self, shutdown: watch::Receiver<bool>) {
        let lane = self.lane.take();
        let lane_shutdown = shutdown.clone();
        let lane_run = async move {
            if let Some(lane) = lane {
                lane.run(lane_shutdown).await;
            }
        };
        let this = Arc::new(self);
        tokio::join!(this.dispatch(shutdown), lane_run);
        tracing::info!("outbox dispatcher stopped");
    }

    async fn dispatch(self: &Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        // Each claimed batch runs as its own task, so it publishes while the next is claimed.
        let mut inflight: FuturesUnordered<tokio::task::JoinHandle<BatchReport>> =
            FuturesUnordered::new();
        let mut last_housekeeping: Option<Instant> = None;
        let mut pause = Pause::default();
        let mut next_due: Option<DateTime<Utc>> = None;
        let mut stopping = *shutdown.borrow();
        let ahead = self.settings.ahead.max(1);
        loop {
            if stopping && inflight.is_empty() {
                break;
            }
            if last_housekeeping.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
                self.housekeeping().await;
                last_housekeeping = Some(Instant::now());
            }
            if self.broker_back.swap(false, Ordering::AcqRel) {
                pause.clear();
            }
            if !stopping && !pause.active() && inflight.len() < ahead && self.publisher.ready() {
                match self.claim().await {
                    Ok(rows) if !rows.is_empty() => {
                        let this = self.clone();
                        inflight.push(tokio::spawn(async move { this.deliver(rows).await }));
                        continue;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::error!(error = %e, "outbox claim failed; retrying");
                        pause.until = Some(Instant::now() + self.settings.backoff_base);
                    }
                }
            }
            let mut wait = Instant::now() + self.settings.poll;
            if let Some(until) = pause.until.filter(|_| pause.active()) {
                wait = wait.min(until);
            }
            if let Some(due) = next_due {
                let ms = (due - self.clock.now()).num_milliseconds().max(0);
                wait = wait.min(Instant::now() + Duration::from_millis(ms.unsigned_abs()));
            }
            tokio::select! {
                Some(done) = inflight.next(), if !inflight.is_empty() => {
                    let report = done.unwrap_or_else(|e| {
                        tracing::error!(error = %e, "a dispatch batch failed; its leases will expire");
                        BatchReport::default()
                    });
                    pause.after(&report, &self.settings);
                    if let Some(r) = report.retry_at {
                        next_due = Some(next_due.map_or(r, |d| d.min(r)));
                    }
                }
                () = self.wake.notified(), if !stopping => {}
                () = tokio::time::sleep_until(wait) => {
                    if next_due.is_some_and(|d| d <= self.clock.now()) {
                        next_due = None;
                    }
                }
                changed = shutdown.changed(), if !stopping => {
                    // A dropped sender means the owner is gone: stop too.
                    if changed.is_err() || *shutdown.borrow() {
                        stopping = true;
                    }
                }
            }
        }
    }

    async fn housekeeping(&self) {
        let now = self.clock.now();
        self.refresh_backlog(now).await;
        if let Err(e) = self
            .outbox
            .purge_published(now - self.settings.retention)
            .await
        {
            tracing::warn!(error = %e, "outbox purge failed");
        }
    }

    async fn refresh_backlog(&self, now: DateTime<Utc>) {
        match self.outbox.stats(now).await {
            Ok(s) => self.metrics.backlog(&s),
            Err(e) => tracing::warn!(error = %e, "outbox stats unavailable"),
        }
    }

    async fn claim(&self) -> Result<Vec<OutboxRecord>, reporter_ports::StoreError> {
        let now = self.clock.now();
        let rows = self
            .outbox
            .claim(
                &self.settings.owner,
                now,
                now + self.settings.lease,
                self.settings.batch,
            )
            .await?;
        if !rows.is_empty() {
            self.refresh_backlog(now).await;
        }
        Ok(rows)
    }

    /// One claim-publish-settle round (no pipelining); answers what it did.
    pub async fn round(&self) -> Result<BatchReport, reporter_ports::StoreError> {
        let rows = self.claim().await?;
        Ok(self.deliver(rows).await)
    }

    /// Lease a wave must still have before it is published: one publish deadline and a
    /// quarter of the lease to settle its rows, at most half the lease (so that a fresh claim
    /// always qualifies).
    fn lease_needed(&self) -> chrono::Duration {
        let publish = chrono::Duration::from_std(self.settings.publish_deadline)
            .unwrap_or(chrono::Duration::MAX);
        (publish + self.settings.lease / 4).min(self.settings.lease / 2)
    }

    /// Publishes claimed rows in per-aggregate waves and settles each row. A wave whose lease
    /// runs out before it could be published and settled (earlier waves were slow) is given
    /// back with every later wave, unpublished: publishing it would race the claimer that
    /// takes it once the lease ends, and publish it twice.
    async fn deliver(&self, rows: Vec<OutboxRecord>) -> BatchReport {
        let mut report = BatchReport {
            claimed: rows.len(),
            ..BatchReport::default()
        };
        let mut failed_aggregates: HashSet<String> = HashSet::new();
        let mut waves = waves(rows).into_iter();
        while let Some(wave) = waves.next() {
            let ends = wave
                .iter()
                .filter_map(|r| r.lease.as_ref().map(|l| l.until))
                .min();
            if ends.is_some_and(|end| end - self.clock.now() < self.lease_needed()) {
                let late: Vec<OutboxRecord> = wave.into_iter().chain(waves.flatten()).collect();
                tracing::info!(
                    rows = late.len(),
                    "the claim's lease is running out: giving the rest of the batch back unpublished"
                );
                self.give_back(&late).await;
                break;
            }
            // Rows whose resource already failed in an earlier wave are given back: the outbox
            // hands them out again after the earlier row.
            let (wave, held): (Vec<_>, Vec<_>) = wave
                .into_iter()
                .partition(|r| !failed_aggregates.contains(&r.aggregate));
            self.give_back(&held).await;
            if wave.is_empty() {
                continue;
            }
            let mut envelopes: Vec<_> = wave.iter().map(|r| r.event.clone()).collect();
            let spans = super::spans::open(&mut envelopes, super::spans::Path::Outbox);
            let start = std::time::Instant::now();
            let results = self.publisher.publish(&envelopes).await;
            super::spans::finish(spans, &results);
            self.metrics
                .publish_latency
                .observe(start.elapsed().as_secs_f64());
            let now = self.clock.now();
            let mut settled = 0;
            for (row, result) in wave.iter().zip(results) {
                let Some(token) = row.lease.as_ref().map(|l| l.token) else {
                    continue;
                };
                let key = row.event.key.key();
                match result {
                    Ok(()) => {
                        report.published += 1;
                        self.metrics.count(&key, Outcome::Dispatched);
                        match self.outbox.mark_published(row.id, token, now).await {
                            Ok(()) => settled += 1,
                            Err(e) => {
                                tracing::warn!(error = %e, ce_id = %row.event.id, "published but could not settle; it may be published again with the same ce-id");
                            }
                        }
                    }
                    Err(e) => {
                        failed_aggregates.insert(row.aggregate.clone());
                        if let Some(retry_at) = self.fail(row, token, &e, now).await {
                            report.retry_at =
                                Some(report.retry_at.map_or(retry_at, |r| r.min(retry_at)));
                        }
                        if !matches!(e, PublishError::Unroutable(_)) {
                            report.transient += 1;
                        } else if row.attempts + 1 >= self.settings.max_attempts {
                            settled += 1;
                        }
                    }
                }
            }
            self.metrics.pending_settled(settled);
        }
        report
    }

    async fn give_back(&self, rows: &[OutboxRecord]) {
        let now = self.clock.now();
        for row in rows {
            if let Some(token) = row.lease.as_ref().map(|l| l.token)
                && let Err(e) = self.outbox.release(row.id, token, now).await
            {
                tracing::warn!(error = %e, "could not give a held-back row back; its lease will expire");
            }
        }
    }

    /// Settles a failed publish; answers when the row may be retried if it is delayed.
    /// Broker-side trouble (unreachable, timed out, nacked) says nothing about the row: it is
    /// claimable again at once (the dispatcher pauses instead). Only a failure of the row
    /// itself (the broker returned it as unroutable) delays it and counts toward parking.
    async fn fail(
        &self,
        row: &OutboxRecord,
        token: uuid::Uuid,
        error: &PublishError,
        now: DateTime<Utc>,
    ) -> Option<DateTime<Utc>> {
        let attempts = row.attempts + 1;
        let key = row.event.key.key();
        let reason: String = error.to_string().chars().take(500).collect();
        let row_specific = matches!(error, PublishError::Unroutable(_));
        if row_specific && attempts >= self.settings.max_attempts {
            tracing::error!(event = %key, ce_id = %row.event.id, attempts, reason = %reason, "event parked after too many attempts; redrive it with `reporter outbox redrive`");
            self.metrics.count(&key, Outcome::Parked);
            if let Err(e) = self.outbox.park(row.id, token, &reason, now).await {
                tracing::warn!(error = %e, "could not park an outbox row");
            }
            return None;
        }
        let retry_at = if row_specific {
            let delay = Backoff::new(self.settings.backoff_base, self.settings.backoff_cap)
                .equal_jitter(attempts.saturating_sub(1));
            tracing::warn!(event = %key, ce_id = %row.event.id, attempts, retry_in_ms = delay.as_millis() as u64, reason = %reason, "event refused by the broker; will retry");
            now + chrono::Duration::from_std(delay).unwrap_or_else(|_| chrono::Duration::seconds(1))
        } else {
            tracing::debug!(event = %key, ce_id = %row.event.id, attempts, reason = %reason, "event publish failed (broker-side); will retry");
            now
        };
        if let Err(e) = self
            .outbox
            .mark_failed(row.id, token, &reason, retry_at)
            .await
        {
            tracing::warn!(error = %e, "could not record a failed publish; the lease will expire");
        }
        row_specific.then_some(retry_at)
    }
}

#[cfg(test)]
mod flow {
    use super::*;
    use reporter_adapter_memory::{MemoryPublisher, MemoryStore};
    use reporter_ports::TenantId;
    use reporter_ports::events::{EventEnvelope, EventKey};
    use reporter_ports::ports::{UnitOfWork, UnitOfWorkPort};

    struct Rig {
        store: MemoryStore,
        publisher: MemoryPublisher,
        wake: Arc<Notify>,
        back: Arc<AtomicBool>,
        stop: watch::Sender<bool>,
    }

    /// `n` pending `deadline.delivered` rows of deadlines `<prefix>0..`, one aggregate each.
    fn delivered_rows(prefix: &str, n: usize) -> Vec<OutboxRecord> {
        let now = Utc::now();
        (0..n)
            .map(|i| {
                OutboxRecord::pending(
                    EventEnvelope {
                        id: uuid::Uuid::now_v7().to_string(),
                        key: EventKey::DeadlineDelivered,
                        tenant: TenantId::default_tenant(),
                        subject: format!("{prefix}{i}"),
                        time: now,
                        payload: serde_json::json!({}).into(),
                        sequence: Some(2),
                        trace: None,
                    },
                    format!("deadline:{prefix}{i}"),
                    now,
                    None,
                )
            })
            .collect()
    }

    /// The dispatcher of a rig's parts (not running).
    fn build(
        store: &MemoryStore,
        publisher: &MemoryPublisher,
        wake: &Arc<Notify>,
        back: &Arc<AtomicBool>,
        base: Duration,
        poll: Duration,
    ) -> Dispatcher {
        Dispatcher {
            outbox: Arc::new(store.clone()),
            publisher: Arc::new(publisher.clone()),
            metrics: StreamingMetrics::register(&prometheus::Registry::new()).expect("metrics"),
            wake: wake.clone(),
            broker_back: back.clone(),
            lane: None,
            clock: Arc::new(reporter_ports::clock::SystemClock),
            settings: DispatcherSettings {
                owner: "test".into(),
                batch: 16,
                ahead: 2,
                lease: chrono::Duration::seconds(30),
                publish_deadline: Duration::from_secs(5),
                poll,
                max_attempts: 10,
                retention: chrono::Duration::hours(1),
                backoff_base: base,
                backoff_cap: Duration::from_secs(300),
                transient_backoff_cap: Duration::from_secs(5),
            },
        }
    }

    /// Another dispatcher on `r`'s store and publisher (not running).
    fn dispatcher(r: &Rig) -> Dispatcher {
        build(
            &r.store,
            &r.publisher,
            &r.wake,
            &r.back,
            Duration::from_millis(100),
            Duration::from_secs(60),
        )
    }

    async fn rig(
        base: Duration,
        poll: Duration,
        rows: usize,
        before: impl FnOnce(&MemoryPublisher),
    ) -> (Rig, Vec<OutboxRecord>) {
        let store = MemoryStore::new();
        let publisher = MemoryPublisher::new();
        before(&publisher);
        let wake = Arc::new(Notify::new());
        let back = Arc::new(AtomicBool::new(false));
        let rows = delivered_rows("d", rows);
        store
            .commit(
                &TenantId::default_tenant(),
                UnitOfWork::new().with_outbox(rows.clone()),
            )
            .await
            .expect("commit");
        let d = build(&store, &publisher, &wake, &back, base, poll);
        let (stop, rx) = watch::channel(false);
        tokio::spawn(d.run(rx));
        (
            Rig {
                store,
                publisher,
                wake,
                back,
                stop,
            },
            rows,
        )
    }

    async fn until(what: &str, limit: Duration, f: impl Fn() -> bool) -> Duration {
        let started = std::time::Instant::now();
        while !f() {
            assert!(started.elapsed() < limit, "{what} within {limit:?}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        started.elapsed()
    }

    #[tokio::test]
    async fn broker_trouble_pauses_the_dispatcher_not_the_rows() {
        let (base, poll) = (Duration::from_secs(2), Duration::from_millis(20));
        let (r, rows) = rig(base, poll, 3, |p| {
            p.set_failure(Some(PublishError::Unavailable("down".into())))
        })
        .await;
        until("a first attempt", Duration::from_secs(2), || {
            r.publisher.attempts() >= 3
        })
        .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            r.publisher.attempts(),
            3,
            "paused: no new claim although the poll is 20 ms"
        );
        for row in &rows {
            let got = r.store.get(row.id).await.unwrap().unwrap();
            assert_eq!(got.attempts, 1);
            assert!(
                got.available_at <= Utc::now(),
                "the row itself is not delayed"
            );
            assert!(got.lease.is_none());
        }
        let _ = r.stop.send(true);
    }

    #[tokio::test]
    async fn the_brokers_return_ends_the_pause_at_once() {
        let (r, _rows) = rig(Duration::from_secs(4), Duration::from_secs(60), 3, |p| {
            p.set_failure(Some(PublishError::Unavailable("down".into())))
        })
        .await;
        until("a first attempt", Duration::from_secs(2), || {
            r.publisher.attempts() >= 3
        })
        .await;
        r.publisher.set_failure(None);
        r.back.store(true, Ordering::Release);
        r.wake.notify_one();
        let took = until("delivered after the return", Duration::from_secs(1), || {
            r.publisher.deliveries().len() == 3
        })
        .await;
        assert!(
            took < Duration::from_millis(900),
            "{took:?} (the pause was ≥ 2 s)"
        );
        let _ = r.stop.send(true);
    }

    #[tokio::test]
    async fn a_commit_wakes_the_dispatcher_without_waiting_for_the_poll() {
        use crate::app::DeliveryHook;
        use crate::streaming::{BreakerSettings, CircuitBreaker, Delivery, DeliverySetup};
        // A 60 s poll: only the wake-up of the commit can explain a prompt publish.
        let (r, _rows) = rig(
            Duration::from_millis(100),
            Duration::from_secs(60),
            0,
            |_| {},
        )
        .await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (hook, _lane) = Delivery::new(DeliverySetup {
            publisher: Arc::new(r.publisher.clone()),
            outbox: Arc::new(r.store.clone()),
            breaker: Arc::new(CircuitBreaker::new(BreakerSettings {
                failure_ratio: 0.5,
                min_requests: 10,
                open_for: Duration::from_secs(30),
            })),
            metrics: StreamingMetrics::register(&prometheus::Registry::new()).expect("metrics"),
            wake: r.wake.clone(),
            publish_timeout: Duration::from_secs(1),
            capacity: 16,
            clock: Arc::new(reporter_ports::clock::SystemClock),
        });
        let now = Utc::now();
        // A critical event: never direct, the dispatcher's alone.
        let mut rows = vec![OutboxRecord::pending(
            EventEnvelope {
                id: uuid::Uuid::now_v7().to_string(),
                key: EventKey::ReportFinished,
                tenant: TenantId::default_tenant(),
                subject: "r1".into(),
                time: now,
                payload: serde_json::json!({}).into(),
                sequence: None,
                trace: None,
            },
            "report:r1".into(),
            now,
            None,
        )];
        hook.prepare(&mut rows, now);
        r.store
            .commit(
                &TenantId::default_tenant(),
                UnitOfWork::new().with_outbox(rows.clone()),
            )
            .await
            .expect("commit");
        hook.committed(rows);
        let took = until("published after the commit", Duration::from_secs(2), || {
            r.publisher.deliveries().len() == 1
        })
        .await;
        assert!(took < Duration::from_millis(500), "{took:?}");
        let _ = r.stop.send(true);
    }

    /// A claim whose lease is about to end (earlier waves were slow) is given back
    /// unpublished, so the claimer that takes it after the lease cannot publish it a second
    /// time; the rows are claimable again at once.
    #[tokio::test]
    async fn rows_whose_lease_runs_out_are_given_back_unpublished() {
        let (r, rows) = rig(
            Duration::from_millis(100),
            Duration::from_secs(60),
            0,
            |_| {},
        )
        .await;
        let _ = r.stop.send(true);
        assert!(rows.is_empty());
        let rows = delivered_rows("late", 3);
        let now = Utc::now();
        r.store
            .commit(
                &TenantId::default_tenant(),
                UnitOfWork::new().with_outbox(rows),
            )
            .await
            .expect("commit");
        // Claimed by hand with 2 s left: less than one publish deadline (5 s) to go.
        let claimed = r
            .store
            .claim("test", now, now + chrono::Duration::seconds(2), 16)
            .await
            .expect("claim");
        assert_eq!(claimed.len(), 3);
        let d = dispatcher(&r);
        let report = d.deliver(claimed).await;
        assert_eq!(report.published, 0);
        assert!(r.publisher.deliveries().is_empty(), "nothing published");
        let again = r
            .store
            .claim(
                "other",
                Utc::now(),
                Utc::now() + chrono::Duration::seconds(30),
                16,
            )
            .await
            .expect("claim");
        assert_eq!(again.len(), 3, "given back, claimable at once");
        // With a fresh lease the same rows are published.
        let report = d.deliver(again).await;
        assert_eq!(report.published, 3);
    }

    #[tokio::test]
    async fn a_due_retry_does_not_wait_for_the_poll() {
        let (r, _rows) = rig(
            Duration::from_millis(100),
            Duration::from_secs(60),
            1,
            |p| p.set_unroutable("deadline.delivered", true),
        )
        .await;
        until("a refused attempt", Duration::from_secs(2), || {
            r.publisher.attempts() >= 1
        })
        .await;
        r.publisher.set_unroutable("deadline.delivered", false);
        until("the retry", Duration::from_secs(2), || {
            r.publisher.deliveries().len() == 1
        })
        .await;
        let _ = r.stop.send(true);
    }
}
