//! Event emission policy: turns domain events into outbox rows committed with the state
//! change (one unit of work), so an event can never be lost between the two. What happens
//! after the commit (a direct publish of important events, waking the dispatcher) belongs to
//! a [`DeliveryHook`].
use chrono::{DateTime, Utc};
use reporter_ports::TenantId;
use reporter_ports::events::{EventEnvelope, EventKey, deterministic_event_id};
use reporter_ports::ports::{Lease, OutboxRecord};
use serde::Serialize;
use std::sync::Arc;

/// What the delivery side does around a commit.
pub trait DeliveryHook: Send + Sync {
    /// A lease for a new row when the row should be published directly right after the commit
    /// (important events while the breaker lets publishes through); `None` leaves the row to
    /// the dispatcher.
    fn direct_lease(&self, key: EventKey, now: DateTime<Utc>) -> Option<Lease>;
    /// Called once a unit of work carrying `rows` committed. MUST NOT fail the caller.
    fn committed(&self, rows: Vec<OutboxRecord>);
    /// Called when an event could not even be turned into a row (it is lost).
    fn lost(&self, key: EventKey);
}

/// Builds outbox rows when publication is enabled.
#[derive(Clone, Default)]
pub struct Emitter {
    hook: Option<Arc<dyn DeliveryHook>>,
}

/// How the `ce-id` of an event is chosen.
#[derive(Debug, Clone)]
pub enum EventIdentity {
    /// A fresh UUIDv7.
    Fresh,
    /// The documented deterministic derivation with this discriminator.
    Deterministic(String),
}

impl Emitter {
    /// Publication off: no row is ever written (the no-op emitter of `STREAMING_ENABLED=false`).
    pub fn disabled() -> Self {
        Self { hook: None }
    }

    /// Publication on, delivered by `hook`.
    pub fn enabled_with(hook: Arc<dyn DeliveryHook>) -> Self {
        Self { hook: Some(hook) }
    }

    /// True when events are recorded.
    pub fn enabled(&self) -> bool {
        self.hook.is_some()
    }

    /// An outbox row for one event, or `None` when publication is off.
    pub fn row<P: Serialize>(
        &self,
        key: EventKey,
        tenant: &TenantId,
        subject: &str,
        identity: EventIdentity,
        payload: &P,
        now: DateTime<Utc>,
    ) -> Option<OutboxRecord> {
        let hook = self.hook.as_ref()?;
        let payload = match serde_json::to_value(payload) {
            Ok(v) => v,
            Err(e) => {
                tracing::error!(error = %e, event = %key.key(), "event payload did not serialize; event lost");
                hook.lost(key);
                return None;
            }
        };
        let id = match identity {
            EventIdentity::Fresh => uuid::Uuid::now_v7().hyphenated().to_string(),
            EventIdentity::Deterministic(d) => deterministic_event_id(key, tenant, subject, &d),
        };
        let envelope = EventEnvelope {
            id,
            key,
            tenant: tenant.clone(),
            subject: subject.to_owned(),
            time: now,
            payload,
        };
        let aggregate = format!("{}:{}", key.resource_type(), subject);
        Some(OutboxRecord::pending(
            envelope,
            aggregate,
            now,
            hook.direct_lease(key, now),
        ))
    }

    /// Call after a unit of work carrying `rows` committed.
    pub fn committed(&self, rows: Vec<OutboxRecord>) {
        if let (Some(hook), false) = (&self.hook, rows.is_empty()) {
            hook.committed(rows);
        }
    }
}
