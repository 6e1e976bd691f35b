//! [`MemoryPublisher`].
use async_trait::async_trait;
use reporter_ports::TenantId;
use reporter_ports::events::EventEnvelope;
use reporter_ports::ports::{DeliveryLog, EventPublisher, PublishError};
use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// How many deliveries [`MemoryPublisher::new`] keeps.
pub const DEFAULT_DELIVERY_CAPACITY: usize = 1000;

#[derive(Default)]
struct State {
    deliveries: VecDeque<EventEnvelope>,
    capacity: usize,
    failure: Option<PublishError>,
    unroutable: HashSet<String>,
    attempts: u64,
}

/// An [`EventPublisher`] for tests and the zero-install mode: it "delivers" by recording.
///
/// For each event, in input order:
/// 1. when a failure is set ([`Self::set_failure`]), the event answers that error;
/// 2. else when its routing key (the definition key, e.g. `report.finished`) is marked
///    unroutable ([`Self::set_unroutable`]), it answers `PublishError::Unroutable(routing key)`,
///    as a broker return would;
/// 3. else it is appended to the deliveries and answers `Ok`.
///
/// Only successful deliveries are recorded; the oldest are dropped beyond the capacity. Clones
/// share the state, so a test keeps one clone and hands the other to the code under test.
#[derive(Clone)]
pub struct MemoryPublisher {
    inner: Arc<Mutex<State>>,
}

impl fmt::Debug for MemoryPublisher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryPublisher").finish_non_exhaustive()
    }
}

impl Default for MemoryPublisher {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryPublisher {
    /// A publisher keeping the last [`DEFAULT_DELIVERY_CAPACITY`] deliveries.
    pub fn new() -> Self {
        Self::with_capacity(DEFAULT_DELIVERY_CAPACITY)
    }

    /// A publisher keeping the last `capacity` deliveries (at least 1).
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            inner: Arc::new(Mutex::new(State {
                capacity: capacity.max(1),
                ..State::default()
            })),
        }
    }

    // The state is only plain data updated without intermediate invariants, so a poisoned lock
    // (a panic in a test while holding it) leaves it usable.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The recorded deliveries, oldest first.
    pub fn deliveries(&self) -> Vec<EventEnvelope> {
        self.lock().deliveries.iter().cloned().collect()
    }

    /// Forgets the recorded deliveries.
    pub fn clear(&self) {
        self.lock().deliveries.clear();
    }

    /// Makes every following publish fail with `failure` (`None`: succeed again).
    pub fn set_failure(&self, failure: Option<PublishError>) {
        self.lock().failure = failure;
    }

    /// Makes events with this routing key come back as returned (unroutable) when `returned`,
    /// or routes them again when not.
    pub fn set_unroutable(&self, routing_key: &str, returned: bool) {
        let mut state = self.lock();
        if returned {
            state.unroutable.insert(routing_key.to_owned());
        } else {
            state.unroutable.remove(routing_key);
        }
    }

    /// How many events were offered to `publish` so far, successful or not.
    pub fn attempts(&self) -> u64 {
        self.lock().attempts
    }
}

impl DeliveryLog for MemoryPublisher {
    fn recent(&self, tenant: &TenantId, limit: usize) -> Vec<EventEnvelope> {
        let state = self.lock();
        let mut own: Vec<EventEnvelope> = state
            .deliveries
            .iter()
            .rev()
            .filter(|e| e.tenant == *tenant)
            .take(limit)
            .cloned()
            .collect();
        own.reverse();
        own
    }
}

#[async_trait]
impl EventPublisher for MemoryPublisher {
    async fn publish(&self, events: &[EventEnvelope]) -> Vec<Result<(), PublishError>> {
        let mut state = self.lock();
        let mut out = Vec::with_capacity(events.len());
        for event in events {
            state.attempts = state.attempts.saturating_add(1);
            if let Some(failure) = &state.failure {
                out.push(Err(failure.clone()));
                continue;
            }
            let routing_key = event.key.key();
            if state.unroutable.contains(&routing_key) {
                out.push(Err(PublishError::Unroutable(routing_key)));
                continue;
            }
            if state.deliveries.len() >= state.capacity {
                state.deliveries.pop_front();
            }
            state.deliveries.push_back(event.clone());
            out.push(Ok(()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use reporter_ports::events::EventKey;

    fn ev(key: EventKey, n: u32) -> EventEnvelope {
        of_tenant("t", key, n)
    }

    fn of_tenant(tenant: &str, key: EventKey, n: u32) -> EventEnvelope {
        EventEnvelope {
            id: format!("e{n}"),
            key,
            tenant: TenantId::parse(tenant).unwrap(),
            subject: "s".into(),
            time: Utc::now(),
            payload: serde_json::json!({ "n": n }).into(),
            sequence: None,
            trace: None,
        }
    }

    #[tokio::test]
    async fn records_in_order_and_bounds_the_ring() {
        let p = MemoryPublisher::with_capacity(2);
        let evs: Vec<_> = (0..3).map(|n| ev(EventKey::ReportFinished, n)).collect();
        assert!(p.publish(&evs).await.iter().all(Result::is_ok));
        let ids: Vec<_> = p.deliveries().into_iter().map(|e| e.id).collect();
        assert_eq!(ids, ["e1", "e2"]);
        assert_eq!(p.attempts(), 3);
        p.clear();
        assert!(p.deliveries().is_empty());
    }

    #[tokio::test]
    async fn failure_and_unroutable_switches() {
        let p = MemoryPublisher::new();
        p.set_failure(Some(PublishError::Nacked));
        assert_eq!(
            p.publish(&[ev(EventKey::ReportFinished, 0)]).await,
            vec![Err(PublishError::Nacked)]
        );
        p.set_failure(None);
        p.set_unroutable("report.finished", true);
        let res = p
            .publish(&[
                ev(EventKey::ReportFinished, 1),
                ev(EventKey::ReportErrored, 2),
            ])
            .await;
        assert_eq!(
            res,
            vec![
                Err(PublishError::Unroutable("report.finished".into())),
                Ok(())
            ]
        );
        assert_eq!(p.deliveries().len(), 1);
        p.set_unroutable("report.finished", false);
        assert_eq!(
            p.publish(&[ev(EventKey::ReportFinished, 3)]).await,
            vec![Ok(())]
        );
    }

    #[tokio::test]
    async fn recent_filters_by_tenant_before_it_takes_the_last_ones() {
        let p = MemoryPublisher::new();
        let mut evs: Vec<_> = (0..3)
            .map(|n| of_tenant("a", EventKey::ReportFinished, n))
            .collect();
        // Later deliveries of another tenant MUST NOT push tenant a's out of its view.
        evs.extend((3..10).map(|n| of_tenant("b", EventKey::ReportFinished, n)));
        assert!(p.publish(&evs).await.iter().all(Result::is_ok));
        let a = TenantId::parse("a").unwrap();
        let ids = |v: Vec<EventEnvelope>| v.into_iter().map(|e| e.id).collect::<Vec<_>>();
        assert_eq!(ids(p.recent(&a, 2)), ["e1", "e2"]);
        assert_eq!(ids(p.recent(&a, 100)), ["e0", "e1", "e2"]);
        let c = TenantId::parse("c").unwrap();
        assert!(p.recent(&c, 5).is_empty());
    }
}
