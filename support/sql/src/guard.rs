//! [`Guard`]: a SQL source's circuit breaker around each call.
use reporter_ports::datasource::DataSourceId;
use reporter_ports::ports::DataSourceError;
use reporter_ports::source_breaker::{BreakerConfig, BreakerState, CircuitBreaker};
use std::time::Instant;

/// Whether an error means the server could not be used (counts against the breaker):
/// `Unavailable` and `Timeout`. Refusals (`UnknownField`, `InvalidFilter`, `RowLimit`,
/// `TooLarge`, …) are answers: the server worked.
pub fn is_outage(error: &DataSourceError) -> bool {
    matches!(
        error,
        DataSourceError::Unavailable(_) | DataSourceError::Timeout
    )
}

/// One source's breaker: while open, calls MUST fail fast with `Unavailable` without running;
/// otherwise each call's outcome is recorded (an outage as a failure) and logged.
#[derive(Debug)]
pub struct Guard {
    source: DataSourceId,
    breaker: CircuitBreaker,
}

impl Guard {
    pub fn new(source: DataSourceId, config: BreakerConfig) -> Self {
        Self {
            source,
            breaker: CircuitBreaker::new(config),
        }
    }

    /// The breaker's current state (for readiness and metrics).
    pub fn state(&self) -> BreakerState {
        self.breaker.state(Instant::now())
    }

    /// Runs `op` under the breaker, outages ([`is_outage`]) counting against the source.
    pub async fn run<T>(
        &self,
        op: impl Future<Output = Result<T, DataSourceError>>,
    ) -> Result<T, DataSourceError> {
        self.run_by(op, is_outage).await
    }

    /// [`Guard::run`], with `outage` deciding which errors count against the source.
    pub async fn run_by<T>(
        &self,
        op: impl Future<Output = Result<T, DataSourceError>>,
        outage: impl FnOnce(&DataSourceError) -> bool,
    ) -> Result<T, DataSourceError> {
        let Some(permit) = self.breaker.acquire(Instant::now()) else {
            return Err(DataSourceError::Unavailable(format!(
                "{}: circuit breaker open",
                self.source
            )));
        };
        let result = op.await;
        let failed = result.as_ref().err().is_some_and(outage);
        permit.record(failed, Instant::now());
        if let Err(error) = &result {
            if failed {
                tracing::warn!(data_source = %self.source, %error, "SQL data source failed");
            } else {
                tracing::debug!(data_source = %self.source, %error, "SQL query refused");
            }
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;
    use std::time::Duration;

    #[test]
    fn outages_open_the_breaker_refusals_do_not() {
        let guard = Guard::new(
            DataSourceId::parse("sql").expect("id"),
            BreakerConfig {
                failure_threshold: 2,
                open_for: Duration::from_secs(60),
            },
        );
        let call = |e: DataSourceError| {
            guard
                .run(async move { Err::<(), _>(e) })
                .now_or_never()
                .expect("ready")
        };
        for _ in 0..3 {
            let _ = call(DataSourceError::InvalidFilter("x".into()));
        }
        assert_eq!(guard.state(), BreakerState::Closed);
        let _ = call(DataSourceError::Timeout);
        let _ = call(DataSourceError::Unavailable("down".into()));
        assert_eq!(guard.state(), BreakerState::Open);
        let fast = call(DataSourceError::RowLimit(1));
        assert!(matches!(fast, Err(DataSourceError::Unavailable(m)) if m.contains("breaker open")));
        assert!(!is_outage(&DataSourceError::TooLarge(1)));
    }
}
