//! The in-memory broker's deliveries, as a tester reads them.
use super::error::{AppError, AppResult, Code};
use super::{App, Caller};
use reporter_ports::events::EventEnvelope;

/// The largest page of deliveries.
pub const MAX_DELIVERIES: usize = 1000;
/// The page of deliveries when the caller names none.
pub const DEFAULT_DELIVERIES: usize = 100;

impl App {
    /// The caller's tenant's last `limit` deliveries (default 100), oldest first, as the
    /// in-memory broker recorded them. MUST answer `RouteNotFound` when the broker records
    /// nothing (a real broker, or publication off) and `PaginationLimit` when `limit` is
    /// outside 1..=1000; MUST count only the caller's tenant's deliveries, so another
    /// tenant's traffic never shortens the page.
    pub fn recent_deliveries(
        &self,
        caller: &Caller,
        limit: Option<i64>,
    ) -> AppResult<Vec<EventEnvelope>> {
        let span = crate::use_case_span!("recent_deliveries", tenant = %caller.tenant);
        span.in_scope(|| {
            let Some(log) = &self.ports.deliveries else {
                return Err(AppError::new(
                    Code::RouteNotFound,
                    "deliveries are only recorded by the in-memory broker (STREAMING_BROKERS=memory://)",
                ));
            };
            Ok(log.recent(&caller.tenant, streaming_limit(limit)?))
        })
    }
}

/// The `limit` of a streaming listing (deliveries, parked events): 100 when absent, else
/// 1..=1000. MUST answer `PaginationLimit` (with the field) for anything else.
pub(super) fn streaming_limit(limit: Option<i64>) -> AppResult<usize> {
    match limit.map(usize::try_from) {
        None => Ok(DEFAULT_DELIVERIES),
        Some(Ok(n)) if (1..=MAX_DELIVERIES).contains(&n) => Ok(n),
        Some(_) => Err(
            AppError::new(Code::PaginationLimit, "limit must be between 1 and 1000")
                .field("limit", "1..=1000"),
        ),
    }
}
