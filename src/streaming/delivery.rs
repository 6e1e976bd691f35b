//! The direct publish path of important events, and the wake-up of the dispatcher.
//!
//! The path is bounded: at most `capacity` rows are reserved for it at once. A row gets a
//! direct lease only when, just before its commit, the breaker lets publishes through and a
//! slot is free; otherwise it is left to the dispatcher from the start. No task is spawned per
//! commit: committed rows go to one lane task that publishes them through the publisher's
//! shared confirm window, several calls at once, and settles each row by its own confirm. A
//! row that found the window full until its deadline was never sent: it goes back to the
//! dispatcher at once and says nothing to the breaker (the broker may be healthy).
use super::breaker::{BreakerState, CircuitBreaker};
use super::metrics::{Outcome, StreamingMetrics};
use crate::app::DeliveryHook;
use chrono::{DateTime, Utc};
use futures_util::stream::{FuturesUnordered, StreamExt};
use reporter_ports::clock::Clock;
use reporter_ports::events::{DeliveryProfile, EventKey};
use reporter_ports::ports::{EventPublisher, Lease, Outbox, OutboxRecord, PublishError};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::{Notify, mpsc};

/// Rows one publish call of the lane carries at most.
const LANE_CALL: usize = 64;

const DIRECT_OWNER: &str = "direct";

/// The commit side of the direct path (the [`DeliveryHook`]): reserves slots and leases rows
/// before a commit, hands committed rows to the [`DirectLane`].
pub struct Delivery {
    breaker: Arc<CircuitBreaker>,
    metrics: StreamingMetrics,
    wake: Arc<Notify>,
    lease: chrono::Duration,
    slots: Arc<Slots>,
    lane: mpsc::UnboundedSender<OutboxRecord>,
}

/// The lane task's side of the direct path: publishes committed rows with a direct lease.
pub struct DirectLane {
    publisher: Arc<dyn EventPublisher>,
    outbox: Arc<dyn Outbox>,
    breaker: Arc<CircuitBreaker>,
    metrics: StreamingMetrics,
    wake: Arc<Notify>,
    slots: Arc<Slots>,
    rows: mpsc::UnboundedReceiver<OutboxRecord>,
    clock: Arc<dyn Clock>,
}

/// Reserved rows of the direct path, never more than `capacity`.
struct Slots {
    used: AtomicUsize,
    capacity: usize,
}

impl Slots {
    fn try_take(&self) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                (u < self.capacity).then_some(u + 1)
            })
            .is_ok()
    }

    fn free(&self, n: usize) {
        let _ = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                Some(u.saturating_sub(n))
            });
    }
}

/// What the direct path needs.
pub struct DeliverySetup {
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
    /// Publish + confirm deadline (the direct lease lasts 2 s longer).
    pub publish_timeout: Duration,
    /// Most rows reserved for the direct path at once.
    pub capacity: usize,
    /// The clock rows are settled on.
    pub clock: Arc<dyn Clock>,
}

impl Delivery {
    /// The hook and its lane (run the lane with [`DirectLane::run`]).
    pub fn new(setup: DeliverySetup) -> (Self, DirectLane) {
        let slots = Arc::new(Slots {
            used: AtomicUsize::new(0),
            capacity: setup.capacity.max(1),
        });
        let (tx, rx) = mpsc::unbounded_channel();
        let lease_ms =
            i64::try_from(setup.publish_timeout.as_millis()).unwrap_or(i64::MAX / 4) + 2_000;
        (
            Self {
                breaker: setup.breaker.clone(),
                metrics: setup.metrics.clone(),
                wake: setup.wake.clone(),
                lease: chrono::Duration::milliseconds(lease_ms),
                slots: slots.clone(),
                lane: tx,
            },
            DirectLane {
                publisher: setup.publisher,
                outbox: setup.outbox,
                breaker: setup.breaker,
                metrics: setup.metrics,
                wake: setup.wake,
                slots,
                rows: rx,
                clock: setup.clock,
            },
        )
    }

    /// Rows reserved for the direct path right now (tests).
    pub fn reserved(&self) -> usize {
        self.slots.used.load(Ordering::Acquire)
    }
}

fn is_direct(r: &OutboxRecord) -> bool {
    r.lease.as_ref().is_some_and(|l| l.owner == DIRECT_OWNER)
}

impl DeliveryHook for Delivery {
    fn prepare(&self, rows: &mut [OutboxRecord], now: DateTime<Utc>) {
        for r in rows.iter_mut() {
            if r.event.key.profile() != DeliveryProfile::Important
                || self.breaker.state() == BreakerState::Open
                || !self.slots.try_take()
            {
                continue;
            }
            r.lease = Some(Lease {
                token: uuid::Uuid::now_v7(),
                owner: DIRECT_OWNER.to_owned(),
                until: now + self.lease,
            });
        }
    }

    fn committed(&self, rows: Vec<OutboxRecord>) {
        self.metrics.pending_added(rows.len());
        let mut queued = false;
        for r in rows {
            if is_direct(&r) {
                if let Err(e) = self.lane.send(r) {
                    // The lane is gone (shutting down): the lease expires and the
                    // dispatcher publishes the row.
                    self.slots.free(1);
                    self.metrics.count(&e.0.event.key.key(), Outcome::Outboxed);
                    queued = true;
                }
            } else {
                self.metrics.count(&r.event.key.key(), Outcome::Outboxed);
                queued = true;
            }
        }
        if queued {
            self.wake.notify_one();
        }
    }

    fn aborted(&self, rows: &[OutboxRecord]) {
        self.slots
            .free(rows.iter().filter(|r| is_direct(r)).count());
    }

    fn lost(&self, key: EventKey) {
        self.metrics.count(&key.key(), Outcome::Lost);
    }
}

impl DirectLane {
    /// Publishes committed rows until `shutdown` turns true (or every [`Delivery`] is
    /// dropped), then finishes the calls in flight. Rows still queued then keep their direct
    /// lease, which expires: the dispatcher (this process's or the next one's) publishes them.
    pub async fn run(mut self, mut shutdown: tokio::sync::watch::Receiver<bool>) {
        let mut calls = FuturesUnordered::new();
        let mut open = !*shutdown.borrow();
        loop {
            if !open && calls.is_empty() {
                break;
            }
            tokio::select! {
                changed = shutdown.changed(), if open => {
                    if changed.is_err() || *shutdown.borrow() {
                        open = false;
                    }
                }
                got = async {
                    let mut batch = Vec::with_capacity(LANE_CALL);
                    let n = self.rows.recv_many(&mut batch, LANE_CALL).await;
                    (n, batch)
                }, if open => {
                    let (n, batch) = got;
                    if n == 0 {
                        open = false;
                        continue;
                    }
                    let go = self.gate(batch).await;
                    if !go.is_empty() {
                        calls.push(self.publish(go));
                    }
                }
                Some(()) = calls.next(), if !calls.is_empty() => {}
            }
        }
        tracing::debug!("direct publish lane stopped");
    }

    /// Keeps the rows the breaker lets through; gives the others back to the dispatcher at
    /// once (no attempt counted).
    async fn gate(&self, batch: Vec<OutboxRecord>) -> Vec<OutboxRecord> {
        let mut go = Vec::with_capacity(batch.len());
        let mut back = 0usize;
        let now = self.clock.now();
        for r in batch {
            if self.breaker.try_acquire() {
                go.push(r);
                continue;
            }
            back += 1;
            self.metrics.count(&r.event.key.key(), Outcome::Outboxed);
            if let Some(token) = r.lease.as_ref().map(|l| l.token)
                && let Err(e) = self.outbox.release(r.id, token, now).await
            {
                tracing::warn!(error = %e, "could not give a row back to the dispatcher; its lease will expire");
            }
        }
        if back > 0 {
            self.slots.free(back);
            self.metrics.breaker_state.set(self.breaker.state().gauge());
            self.wake.notify_one();
        }
        go
    }

    fn publish(&self, rows: Vec<OutboxRecord>) -> impl Future<Output = ()> + Send + 'static {
        let publisher = self.publisher.clone();
        let outbox = self.outbox.clone();
        let breaker = self.breaker.clone();
        let metrics = self.metrics.clone();
        let wake = self.wake.clone();
        let slots = self.slots.clone();
        let clock = self.clock.clone();
        async move {
            let mut envelopes: Vec<_> = rows.iter().map(|r| r.event.clone()).collect();
            let spans = super::spans::open(&mut envelopes, super::spans::Path::Direct);
            let start = Instant::now();
            let results = publisher.publish(&envelopes).await;
            super::spans::finish(spans, &results);
            metrics
                .publish_latency
                .observe(start.elapsed().as_secs_f64());
            let now = clock.now();
            let mut published = 0;
            let mut left = false;
            for (row, result) in rows.iter().zip(results) {
                match settle(&*outbox, &breaker, &metrics, row, result, now).await {
                    Settled::Published => published += 1,
                    Settled::Left => left = true,
                    Settled::Unsettled => {}
                }
            }
            slots.free(rows.len());
            metrics.pending_settled(published);
            metrics.breaker_state.set(breaker.state().gauge());
            if left {
                wake.notify_one();
            }
        }
    }
}

/// What became of one directly published row.
enum Settled {
    /// Confirmed and marked published.
    Published,
    /// Left in the outbox for the dispatcher.
    Left,
    /// Confirmed, but its row could not be marked (the dispatcher may publish it again).
    Unsettled,
}

/// Settles one row of a direct publish call and records its outcome in the breaker: a
/// confirm is a success, a broker-side failure a failure; a row that was never sent because
/// the confirm window stayed full ([`PublishError::WindowFull`]) records nothing (the broker
/// may be perfectly healthy, e.g. while the dispatcher catches up) and is given back to the
/// dispatcher without counting an attempt.
async fn settle(
    outbox: &dyn Outbox,
    breaker: &CircuitBreaker,
    metrics: &StreamingMetrics,
    row: &OutboxRecord,
    result: Result<(), PublishError>,
    now: DateTime<Utc>,
) -> Settled {
    let key = row.event.key.key();
    let Some(token) = row.lease.as_ref().map(|l| l.token) else {
        return Settled::Unsettled;
    };
    match result {
        Ok(()) => {
            breaker.record(true);
            metrics.count(&key, Outcome::Published);
            match outbox.mark_published(row.id, token, now).await {
                Ok(()) => Settled::Published,
                Err(e) => {
                    tracing::warn!(error = %e, event = %key, ce_id = %row.event.id, "published directly but could not settle the outbox row; the dispatcher may publish it again (same ce-id)");
                    Settled::Unsettled
                }
            }
        }
        Err(PublishError::WindowFull) => {
            breaker.abandon();
            metrics.count(&key, Outcome::Outboxed);
            if let Err(e) = outbox.release(row.id, token, now).await {
                tracing::warn!(error = %e, "could not give an unsent row back to the dispatcher; its lease will expire");
            }
            Settled::Left
        }
        Err(e) => {
            breaker.record(false);
            metrics.count(&key, Outcome::Failed);
            tracing::debug!(error = %e, event = %key, ce_id = %row.event.id, "direct publish failed; the event stays in the outbox");
            if let Err(e) = outbox.mark_failed(row.id, token, &e.to_string(), now).await {
                tracing::warn!(error = %e, "could not release a failed direct publish; its lease will expire");
            }
            Settled::Left
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::streaming::BreakerSettings;
    use reporter_adapter_memory::{MemoryPublisher, MemoryStore};
    use reporter_ports::TenantId;
    use reporter_ports::events::EventEnvelope;

    fn row(key: EventKey) -> OutboxRecord {
        let now = Utc::now();
        OutboxRecord::pending(
            EventEnvelope {
                id: uuid::Uuid::now_v7().to_string(),
                key,
                tenant: TenantId::default_tenant(),
                subject: uuid::Uuid::now_v7().to_string(),
                time: now,
                payload: serde_json::json!({}).into(),
                sequence: None,
                trace: None,
            },
            "deadline:x".into(),
            now,
            None,
        )
    }

    fn delivery(capacity: usize) -> (Delivery, DirectLane, Arc<CircuitBreaker>) {
        let rig = rig(
            Arc::new(MemoryPublisher::new()),
            MemoryStore::new(),
            Duration::from_secs(1),
            capacity,
        );
        (rig.delivery, rig.lane, rig.breaker)
    }

    struct Rig {
        delivery: Delivery,
        lane: DirectLane,
        breaker: Arc<CircuitBreaker>,
        metrics: StreamingMetrics,
    }

    fn rig(
        publisher: Arc<dyn EventPublisher>,
        outbox: MemoryStore,
        publish_timeout: Duration,
        capacity: usize,
    ) -> Rig {
        let breaker = Arc::new(CircuitBreaker::new(BreakerSettings {
            failure_ratio: 0.5,
            min_requests: 2,
            open_for: Duration::from_secs(60),
        }));
        let metrics = StreamingMetrics::register(&prometheus::Registry::new()).expect("metrics");
        let (delivery, lane) = Delivery::new(DeliverySetup {
            publisher,
            outbox: Arc::new(outbox),
            breaker: breaker.clone(),
            metrics: metrics.clone(),
            wake: Arc::new(Notify::new()),
            publish_timeout,
            capacity,
            clock: Arc::new(reporter_ports::clock::SystemClock),
        });
        Rig {
            delivery,
            lane,
            breaker,
            metrics,
        }
    }

    /// Leases `rows` for the direct path, commits them to `store` and hands them to the lane.
    async fn commit(
        d: &Delivery,
        store: &MemoryStore,
        mut rows: Vec<OutboxRecord>,
    ) -> Vec<OutboxRecord> {
        use reporter_ports::ports::{UnitOfWork, UnitOfWorkPort};
        d.prepare(&mut rows, Utc::now());
        assert_eq!(leased(&rows), rows.len(), "every row goes direct");
        store
            .commit(
                &TenantId::default_tenant(),
                UnitOfWork::new().with_outbox(rows.clone()),
            )
            .await
            .expect("commit");
        d.committed(rows.clone());
        rows
    }

    async fn until(what: &str, f: impl Fn() -> bool) {
        let started = Instant::now();
        while !f() {
            assert!(started.elapsed() < Duration::from_secs(10), "{what}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// A broker whose publishes answer a fixed error, or succeed (recording the ce-id) after
    /// the first call was let go by [`Scripted::release`].
    #[derive(Default)]
    struct Scripted {
        error: Option<PublishError>,
        hold_first: bool,
        calls: AtomicUsize,
        gate: Notify,
        delivered: std::sync::Mutex<Vec<String>>,
    }

    impl Scripted {
        fn delivered(&self) -> Vec<String> {
            self.delivered.lock().expect("delivered").clone()
        }
    }

    #[async_trait::async_trait]
    impl EventPublisher for Scripted {
        async fn publish(
            &self,
            events: &[reporter_ports::events::EventEnvelope],
        ) -> Vec<Result<(), PublishError>> {
            let call = self.calls.fetch_add(1, Ordering::AcqRel);
            if let Some(e) = &self.error {
                return vec![Err(e.clone()); events.len()];
            }
            if self.hold_first && call == 0 {
                self.gate.notified().await;
            }
            let mut delivered = self.delivered.lock().expect("delivered");
            delivered.extend(events.iter().map(|e| e.id.clone()));
            vec![Ok(()); events.len()]
        }
    }

    /// What `n` single-row commits through a broker answering `error` left.
    struct Ran {
        breaker: Arc<CircuitBreaker>,
        metrics: StreamingMetrics,
        store: MemoryStore,
        rows: Vec<OutboxRecord>,
    }

    async fn publish_each(error: PublishError, n: usize) -> Ran {
        let store = MemoryStore::new();
        let broker = Arc::new(Scripted {
            error: Some(error),
            ..Scripted::default()
        });
        let Rig {
            delivery,
            lane,
            breaker,
            metrics,
        } = rig(broker, store.clone(), Duration::from_secs(1), 64);
        let (_stop, rx) = tokio::sync::watch::channel(false);
        let lane = tokio::spawn(lane.run(rx));
        let mut rows = Vec::new();
        // One commit at a time: each outcome reaches the breaker in a call of its own.
        for _ in 0..n {
            rows.extend(commit(&delivery, &store, vec![row(EventKey::DeadlineCreated)]).await);
            until("the direct publish was settled", || {
                delivery.reserved() == 0
            })
            .await;
        }
        lane.abort();
        Ran {
            breaker,
            metrics,
            store,
            rows,
        }
    }

    #[tokio::test]
    async fn a_full_confirm_window_leaves_rows_to_the_dispatcher_and_never_opens_the_breaker() {
        let ran = publish_each(PublishError::WindowFull, 6).await;
        assert_eq!(
            ran.breaker.state(),
            BreakerState::Closed,
            "a full window is not a broker failure"
        );
        assert_eq!(ran.metrics.get("deadline.created", Outcome::Failed), 0);
        assert_eq!(ran.metrics.get("deadline.created", Outcome::Outboxed), 6);
        for row in &ran.rows {
            let got = ran.store.get(row.id).await.expect("get").expect("row");
            assert_eq!(got.status, reporter_ports::ports::OutboxStatus::Pending);
            assert!(got.lease.is_none(), "given back to the dispatcher at once");
            assert_eq!(got.attempts, 0, "never tried: no attempt counted");
        }
        // A broker that times out instead: two failures open the breaker (min_requests 2).
        let ran = publish_each(PublishError::Timeout, 2).await;
        assert_eq!(
            ran.breaker.state(),
            BreakerState::Open,
            "a broker failure counts"
        );
        assert_eq!(ran.metrics.get("deadline.created", Outcome::Failed), 2);
    }

    #[tokio::test]
    async fn a_direct_publish_can_overtake_an_older_pending_event_of_the_same_resource() {
        let store = MemoryStore::new();
        let broker = MemoryPublisher::new();
        let Rig { delivery, lane, .. } = rig(
            Arc::new(broker.clone()),
            store.clone(),
            Duration::from_secs(1),
            8,
        );
        let (_stop, rx) = tokio::sync::watch::channel(false);
        let lane = tokio::spawn(lane.run(rx));
        // The older event's direct publish fails: it waits in the outbox for the dispatcher.
        broker.set_failure(Some(PublishError::Unavailable("down".into())));
        let older = commit(&delivery, &store, vec![row(EventKey::DeadlineCreated)]).await;
        until("the failed publish was settled", || {
            delivery.reserved() == 0
        })
        .await;
        // A later event of the same resource goes direct as soon as the broker answers.
        broker.set_failure(None);
        let mut newer = row(EventKey::DeadlineUpdated);
        newer.aggregate = older[0].aggregate.clone();
        let newer = commit(&delivery, &store, vec![newer]).await;
        until("the newer event was published", || {
            broker.deliveries().len() == 1
        })
        .await;
        assert_eq!(broker.deliveries()[0].id, newer[0].event.id);
        let waiting = store.get(older[0].id).await.expect("get").expect("row");
        assert_eq!(
            waiting.status,
            reporter_ports::ports::OutboxStatus::Pending,
            "the older event is still waiting: the newer one overtook it"
        );
        lane.abort();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_direct_lease_that_expires_during_a_slow_publish_is_published_again_with_the_same_ce_id()
     {
        use crate::streaming::{Dispatcher, DispatcherSettings};
        let store = MemoryStore::new();
        let broker = Arc::new(Scripted {
            hold_first: true,
            ..Scripted::default()
        });
        // A 1 ms publish deadline: the direct lease lasts 2.001 s.
        let r = rig(broker.clone(), store.clone(), Duration::from_millis(1), 8);
        let rows = commit(&r.delivery, &store, vec![row(EventKey::DeadlineCreated)]).await;
        let lease_until = rows[0].lease.as_ref().expect("direct lease").until;
        let (stop, rx) = tokio::sync::watch::channel(false);
        let lane = tokio::spawn(r.lane.run(rx));
        until("the direct publish started", || {
            broker.calls.load(Ordering::Acquire) == 1
        })
        .await;
        let dispatcher = Dispatcher {
            outbox: Arc::new(store.clone()),
            publisher: broker.clone(),
            metrics: r.metrics.clone(),
            wake: Arc::new(Notify::new()),
            broker_back: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            lane: None,
            clock: Arc::new(reporter_ports::clock::SystemClock),
            settings: DispatcherSettings {
                owner: "dispatcher".into(),
                batch: 16,
                ahead: 1,
                lease: chrono::Duration::seconds(30),
                publish_deadline: Duration::from_secs(1),
                poll: Duration::from_secs(60),
                max_attempts: 10,
                retention: chrono::Duration::hours(1),
                backoff_base: Duration::from_millis(100),
                backoff_cap: Duration::from_secs(300),
                transient_backoff_cap: Duration::from_secs(5),
            },
        };
        let early = dispatcher.round().await.expect("claim");
        assert_eq!(early.claimed, 0, "the direct lease holds the row");
        let wait = (lease_until - Utc::now()).to_std().unwrap_or_default();
        tokio::time::sleep(wait + Duration::from_millis(50)).await;
        let report = dispatcher.round().await.expect("claim");
        assert_eq!(
            (report.claimed, report.published),
            (1, 1),
            "the expired lease let the dispatcher publish the row"
        );
        // The slow direct publish is confirmed only now; its stale lease cannot settle the row.
        broker.gate.notify_one();
        until("the direct publish returned", || {
            broker.delivered().len() == 2
        })
        .await;
        until("the direct path settled", || r.delivery.reserved() == 0).await;
        let _ = stop.send(true);
        lane.await.expect("lane");
        assert_eq!(
            broker.delivered(),
            [rows[0].event.id.clone(), rows[0].event.id.clone()],
            "published twice, both times with the row's ce-id"
        );
        let got = store.get(rows[0].id).await.expect("get").expect("row");
        assert_eq!(got.status, reporter_ports::ports::OutboxStatus::Published);
        assert_eq!(r.metrics.get("deadline.created", Outcome::Published), 1);
        assert_eq!(r.metrics.get("deadline.created", Outcome::Dispatched), 1);
    }

    fn leased(rows: &[OutboxRecord]) -> usize {
        rows.iter().filter(|r| is_direct(r)).count()
    }

    #[test]
    fn a_full_direct_path_leaves_rows_to_the_dispatcher() {
        let (d, _lane, _) = delivery(2);
        let mut rows: Vec<_> = (0..5).map(|_| row(EventKey::DeadlineCreated)).collect();
        d.prepare(&mut rows, Utc::now());
        assert_eq!(leased(&rows), 2, "only as many as the path holds");
        assert_eq!(d.reserved(), 2);
        let mut more = vec![row(EventKey::DeadlineCreated)];
        d.prepare(&mut more, Utc::now());
        assert_eq!(leased(&more), 0, "full: the row goes to the dispatcher");
        // A commit that failed gives its slots back.
        d.aborted(&rows);
        assert_eq!(d.reserved(), 0);
        d.prepare(&mut more, Utc::now());
        assert_eq!(leased(&more), 1);
    }

    #[test]
    fn an_open_breaker_leases_nothing() {
        let (d, _lane, breaker) = delivery(16);
        let mut critical = vec![row(EventKey::DeadlineDelivered)];
        d.prepare(&mut critical, Utc::now());
        assert_eq!(leased(&critical), 0, "critical events never go direct");
        for _ in 0..2 {
            assert!(breaker.try_acquire());
            breaker.record(false);
        }
        assert_eq!(breaker.state(), BreakerState::Open);
        let mut rows = vec![row(EventKey::DeadlineCreated)];
        d.prepare(&mut rows, Utc::now());
        assert_eq!(leased(&rows), 0, "checked before any work is queued");
        assert_eq!(d.reserved(), 0);
    }
}
