//! Outbox redrive: parked events go back to pending.
use super::error::{AppError, AppResult};
use super::{App, Caller};
use chrono::{DateTime, Utc};
use reporter_ports::ports::Outbox;
use reporter_ports::{StoreError, TenantId};

impl App {
    /// Returns the caller's tenant's parked outbox rows (events that failed too many times)
    /// to pending, so the dispatcher publishes them again with their original `ce-id`.
    /// Answers how many. MUST NOT touch another tenant's rows.
    pub async fn redrive_outbox(&self, caller: &Caller) -> AppResult<u64> {
        let span = crate::use_case_span!("redrive_outbox", tenant = %caller.tenant);
        span.run(async move {
            redrive_parked(&*self.ports.outbox, Some(caller.tenant.clone()), self.now())
                .await
                .map_err(|e| AppError::store(e, "Outbox"))
        })
        .await
    }
}

/// The one redrive, run by the API (for the caller's tenant) and by `reporter outbox redrive`
/// (an operator's, for one tenant or all, on a deployment's durable outbox): `tenant`'s
/// parked rows (every tenant's when `None`) back to pending at `now`, with their original
/// `ce-id`. Answers how many.
pub async fn redrive_parked(
    outbox: &dyn Outbox,
    tenant: Option<TenantId>,
    now: DateTime<Utc>,
) -> Result<u64, StoreError> {
    let span = crate::use_case_span!(
        "redrive_parked",
        tenant = tenant.as_ref().map(TenantId::as_str)
    );
    span.run(async move {
        let n = outbox.redrive(tenant, now).await?;
        tracing::info!(redriven = n, "outbox redrive");
        Ok(n)
    })
    .await
}
