//! Helpers the figures share.
use chrono::Utc;
use reporter::app::{App, EventIdentity, EventSubject};
use reporter_ports::TenantId;
use reporter_ports::events::Event;
use reporter_ports::events::payloads::DeadlineDelivered;
use reporter_ports::ports::OutboxRecord;

/// A `deadline.delivered` event's payload, as the service writes it.
pub fn payload(i: usize) -> DeadlineDelivered {
    let due = chrono::DateTime::parse_from_rfc3339("2030-03-31T23:59:59Z")
        .map(|d| d.with_timezone(&Utc))
        .unwrap_or_else(|_| Utc::now());
    DeadlineDelivered {
        deadline_id: uuid::Uuid::now_v7().to_string(),
        template_id: i
            .is_multiple_of(2)
            .then(|| uuid::Uuid::now_v7().to_string()),
        due_date: due,
        delivered_at: Utc::now(),
        status: "delivered".into(),
    }
}

/// A critical outbox row (published by the dispatcher only).
pub fn critical_row(app: &App, i: usize) -> OutboxRecord {
    let tenant = TenantId::default_tenant();
    app.emitter()
        .row(
            Event::DeadlineDelivered(payload(i)),
            EventSubject::new(&tenant, &uuid::Uuid::now_v7().to_string(), 1),
            EventIdentity::Fresh,
            app.now(),
        )
        .expect("publication is on")
}

/// Commits `rows` in one unit of work, as a use case does (the dispatcher is woken).
pub async fn commit(app: &App, rows: Vec<OutboxRecord>) -> anyhow::Result<()> {
    app.commit_events_for_benchmarks(&TenantId::default_tenant(), rows)
        .await
        .map_err(|e| anyhow::anyhow!("commit: {e}"))
}

/// Runs a blocking closure off the runtime.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> anyhow::Result<T> + Send + 'static,
) -> anyhow::Result<T> {
    tokio::task::spawn_blocking(f).await?
}
