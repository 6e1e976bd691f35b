//! Event emission policy: turns domain events into outbox rows committed with the state
//! change (one unit of work), so an event can never be lost between the two. What happens
//! after the commit (a direct publish of important events, waking the dispatcher) belongs to
//! a [`DeliveryHook`].
use chrono::{DateTime, Utc};
use reporter_ports::TenantId;
use reporter_ports::events::{Event, EventEnvelope, EventKey, Payload, deterministic_event_id};
use reporter_ports::ports::OutboxRecord;
use std::sync::Arc;

/// What the delivery side does around a commit.
pub trait DeliveryHook: Send + Sync {
    /// Called just before a unit of work carrying `rows` commits: leases the rows that will be
    /// published directly right after the commit (important events, while the breaker lets
    /// publishes through and the direct path has room), reserving their room. Rows left
    /// without a lease go to the dispatcher. MUST NOT block.
    fn prepare(&self, rows: &mut [OutboxRecord], now: DateTime<Utc>);
    /// Called once a unit of work carrying `rows` (as prepared) committed. MUST NOT fail or
    /// block the caller.
    fn committed(&self, rows: Vec<OutboxRecord>);
    /// Called when a unit of work carrying `rows` (as prepared) did not commit: frees what
    /// `prepare` reserved.
    fn aborted(&self, rows: &[OutboxRecord]);
    /// Called when an event could not even be turned into a row (it is lost).
    fn lost(&self, key: EventKey);
}

/// Builds outbox rows when publication is enabled.
#[derive(Clone, Default)]
pub struct Emitter {
    hook: Option<Arc<dyn DeliveryHook>>,
}

/// The resource an event is about: `ce-tenantid`, `ce-subject`, and its version after the
/// change (`ce-sequence`).
#[derive(Debug, Clone, Copy)]
pub struct EventSubject<'a> {
    /// The owning tenant.
    pub tenant: &'a TenantId,
    /// The report, template or deadline id.
    pub id: &'a str,
    /// The resource's version once the change commits.
    pub version: u64,
}

impl<'a> EventSubject<'a> {
    /// The resource `id` of `tenant` at `version`.
    pub fn new(tenant: &'a TenantId, id: &'a str, version: u64) -> Self {
        Self {
            tenant,
            id,
            version,
        }
    }
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

    /// An outbox row for `event` (its key and the payload the key fixes), or `None` when
    /// publication is off.
    pub fn row(
        &self,
        event: Event,
        subject: EventSubject<'_>,
        identity: EventIdentity,
        now: DateTime<Utc>,
    ) -> Option<OutboxRecord> {
        self.hook.as_ref()?;
        self.row_of(event.key(), event.payload(), subject, identity, now)
    }

    /// The row of an event whose payload serialized to `payload` (the hook reports it lost
    /// when it did not).
    fn row_of(
        &self,
        key: EventKey,
        payload: Result<Payload, serde_json::Error>,
        subject: EventSubject<'_>,
        identity: EventIdentity,
        now: DateTime<Utc>,
    ) -> Option<OutboxRecord> {
        let hook = self.hook.as_ref()?;
        let payload = match payload {
            Ok(v) => v,
            Err(e) => {
                tracing::error!(error = %e, event = %key.key(), "event payload did not serialize; event lost");
                hook.lost(key);
                return None;
            }
        };
        let id = match identity {
            EventIdentity::Fresh => uuid::Uuid::now_v7().hyphenated().to_string(),
            EventIdentity::Deterministic(d) => {
                deterministic_event_id(key, subject.tenant, subject.id, &d)
            }
        };
        let envelope = EventEnvelope {
            id,
            key,
            tenant: subject.tenant.clone(),
            subject: subject.id.to_owned(),
            time: now,
            payload,
            sequence: Some(subject.version),
            trace: crate::telemetry::context::current(),
        };
        let aggregate = format!("{}:{}", key.resource_type(), subject.id);
        Some(OutboxRecord::pending(envelope, aggregate, now, None))
    }

    /// Call just before a unit of work carrying `rows` commits (see [`DeliveryHook::prepare`]).
    pub fn prepare(&self, rows: &mut [OutboxRecord], now: DateTime<Utc>) {
        if let (Some(hook), false) = (&self.hook, rows.is_empty()) {
            hook.prepare(rows, now);
        }
    }

    /// Call after a unit of work carrying `rows` committed.
    pub fn committed(&self, rows: Vec<OutboxRecord>) {
        if let (Some(hook), false) = (&self.hook, rows.is_empty()) {
            hook.committed(rows);
        }
    }

    /// Call when a unit of work carrying `rows` failed to commit.
    pub fn aborted(&self, rows: &[OutboxRecord]) {
        if let (Some(hook), false) = (&self.hook, rows.is_empty()) {
            hook.aborted(rows);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reporter_ports::events::payloads::DeadlineDeleted;
    use std::sync::Mutex;

    /// Records what the emitter reports.
    #[derive(Default)]
    struct Recorder {
        lost: Mutex<Vec<EventKey>>,
    }

    impl DeliveryHook for Recorder {
        fn prepare(&self, _rows: &mut [OutboxRecord], _now: DateTime<Utc>) {}
        fn committed(&self, _rows: Vec<OutboxRecord>) {}
        fn aborted(&self, _rows: &[OutboxRecord]) {}
        fn lost(&self, key: EventKey) {
            self.lost.lock().expect("lost").push(key);
        }
    }

    #[test]
    fn a_payload_that_does_not_serialize_is_reported_lost_and_yields_no_row() {
        let hook = Arc::new(Recorder::default());
        let emitter = Emitter::enabled_with(hook.clone());
        let tenant = TenantId::default_tenant();
        // JSON object keys must be strings: this map cannot become a payload.
        let bad: std::collections::BTreeMap<(u8, u8), u8> = [((1, 2), 3)].into();
        let row = emitter.row_of(
            EventKey::DeadlineCreated,
            Payload::of(&bad),
            EventSubject::new(&tenant, "d1", 1),
            EventIdentity::Fresh,
            Utc::now(),
        );
        assert!(row.is_none());
        assert_eq!(
            *hook.lost.lock().expect("lost"),
            [EventKey::DeadlineCreated]
        );
        let good = emitter.row(
            Event::DeadlineDeleted(DeadlineDeleted {
                deadline_id: "d1".into(),
                template_id: None,
                deleted_at: Utc::now(),
                cascaded: false,
            }),
            EventSubject::new(&tenant, "d1", 1),
            EventIdentity::Fresh,
            Utc::now(),
        );
        assert!(good.is_some(), "a serializable payload gets its row");
        assert_eq!(hook.lost.lock().expect("lost").len(), 1);
        let good = good.expect("a row");
        assert_eq!(
            good.event.key,
            EventKey::DeadlineDeleted,
            "the variant is the key"
        );
        assert_eq!(good.event.payload.value()["deadline_id"], "d1");
    }
}
