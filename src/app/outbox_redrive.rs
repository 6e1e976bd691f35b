//! Outbox redrive: parked events go back to pending.
use super::error::{AppError, AppResult};
use super::{App, Caller};

impl App {
    /// Returns the caller's tenant's parked outbox rows (events that failed too many times)
    /// to pending, so the dispatcher publishes them again with their original `ce-id`.
    /// Answers how many. MUST NOT touch another tenant's rows.
    #[tracing::instrument(skip_all, fields(tenant = %caller.tenant))]
    pub async fn redrive_outbox(&self, caller: &Caller) -> AppResult<u64> {
        let n = self
            .ports
            .outbox
            .redrive(Some(caller.tenant.clone()), self.now())
            .await
            .map_err(|e| AppError::store(e, "Outbox"))?;
        tracing::info!(redriven = n, "outbox redrive");
        Ok(n)
    }
}
