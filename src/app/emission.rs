//! Event emission policy: turns domain events into outbox rows committed with the state
//! change (one unit of work), so an event can never be lost between the two.
use chrono::{DateTime, Utc};
use reporter_ports::TenantId;
use reporter_ports::events::{EventEnvelope, EventKey, deterministic_event_id};
use reporter_ports::ports::OutboxRecord;
use serde::Serialize;
use std::sync::Arc;
use tokio::sync::Notify;

/// Builds outbox rows when publication is enabled, and wakes the dispatcher after commits.
#[derive(Debug, Clone)]
pub struct Emitter {
    enabled: bool,
    wake: Arc<Notify>,
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
    /// `enabled` is `STREAMING_ENABLED`; when off no row is written (the no-op emitter).
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled,
            wake: Arc::new(Notify::new()),
        }
    }

    /// True when events are recorded.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The dispatcher's wake-up signal.
    pub fn wake_signal(&self) -> Arc<Notify> {
        self.wake.clone()
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
        if !self.enabled {
            return None;
        }
        let payload = match serde_json::to_value(payload) {
            Ok(v) => v,
            Err(e) => {
                // Payload types are plain structs; this cannot fail, but never panic on it.
                tracing::error!(error = %e, event = %key.key(), "event payload did not serialize; event lost");
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
        Some(OutboxRecord::pending(envelope, aggregate, now, None))
    }

    /// Call after a unit of work carrying rows committed.
    pub fn committed(&self, rows: usize) {
        if rows > 0 {
            self.wake.notify_one();
        }
    }
}
