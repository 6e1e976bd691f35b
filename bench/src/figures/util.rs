//! Helpers the figures share.
use chrono::Utc;
use reporter::app::{App, EventIdentity, EventSubject};
use reporter_ports::TenantId;
use reporter_ports::events::EventKey;
use reporter_ports::ports::OutboxRecord;

/// A realistic payload (the shape of a `deadline.delivered` event, ~400 bytes).
pub fn payload(i: usize) -> serde_json::Value {
    serde_json::json!({
        "deadline_id": uuid::Uuid::now_v7().to_string(),
        "name": format!("Liquidity report {i}"),
        "type": "regulatory",
        "due_date": "2030-03-31T23:59:59.000Z",
        "frequency": "semiannual",
        "delivered_at": Utc::now().to_rfc3339(),
        "status": "delivered",
        "template_id": null,
        "description": "Semiannual liquidity coverage report to the central bank",
        "notify_days_before": 10,
    })
}

/// A critical outbox row (published by the dispatcher only).
pub fn critical_row(app: &App, i: usize) -> OutboxRecord {
    let tenant = TenantId::default_tenant();
    app.emitter()
        .row(
            EventKey::DeadlineDelivered,
            EventSubject::new(&tenant, &uuid::Uuid::now_v7().to_string(), 1),
            EventIdentity::Fresh,
            &payload(i),
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
