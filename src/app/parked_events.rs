//! Parked events, as an operator with `streaming:admin` reads them before a redrive.
use super::deliveries::streaming_limit;
use super::error::{AppError, AppResult};
use super::{App, Caller};
use reporter_ports::ports::ParkedEvent;

impl App {
    /// The caller's tenant's parked outbox rows (events the broker refused too many times),
    /// newest parked first, at most `limit` (default 100): ids, event key, `ce-id`, subject,
    /// aggregate, attempts, reason and instants, never the payload. MUST answer
    /// `PaginationLimit` when `limit` is outside 1..=1000 and MUST NOT answer another tenant's
    /// rows.
    pub async fn parked_events(
        &self,
        caller: &Caller,
        limit: Option<i64>,
    ) -> AppResult<Vec<ParkedEvent>> {
        let span = crate::use_case_span!("parked_events", tenant = %caller.tenant);
        span.run(async move {
            let limit = streaming_limit(limit)?;
            let rows = self
                .ports
                .outbox
                .list_parked(Some(caller.tenant.clone()), limit)
                .await
                .map_err(|e| AppError::store(e, "Outbox"))?;
            tracing::debug!(parked = rows.len(), "parked events listed");
            Ok(rows)
        })
        .await
    }
}
