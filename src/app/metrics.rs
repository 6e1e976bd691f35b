//! Dashboard counters (reference A.3.22).
use super::error::{AppError, AppResult};
use super::{App, Caller};
use chrono::Duration;
use reporter_ports::ports::ReportQuery;
use reporter_ports::report::ReportStatus;

/// Reports in status `Error` in the current and the previous period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorCounts {
    /// Reports in status `Error` created in `[now - N days, now)`.
    pub total: u64,
    /// Reports in status `Error` created in `[now - 2N days, now - N days)`.
    pub previous_period_total: u64,
}

/// The dashboard counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DashboardMetrics {
    /// Live templates.
    pub templates: u64,
    /// Reports.
    pub reports: u64,
    /// Configured data sources.
    pub data_sources: u64,
    /// Reports in status `Error`.
    pub errors: ErrorCounts,
}

impl App {
    /// Counts for the dashboard over an error window of `period_days` (1-365).
    pub async fn dashboard_metrics(
        &self,
        caller: &Caller,
        period_days: i64,
    ) -> AppResult<DashboardMetrics> {
        let span = crate::use_case_span!(
            "dashboard_metrics",
            tenant = %caller.tenant,
            period_days,
        );
        span.run(async move {
            let now = self.now();
            let start = now - Duration::days(period_days);
            let previous = start - Duration::days(period_days);
            let reports = &self.ports.reports;
            let count = |q: ReportQuery| async move {
                reports
                    .count(&caller.tenant, &q)
                    .await
                    .map_err(|e| AppError::store(e, "Report"))
            };
            let errored = |from, to| ReportQuery {
                status: Some(ReportStatus::Error),
                created_from: Some(from),
                created_to: Some(to),
                ..Default::default()
            };
            Ok(DashboardMetrics {
                templates: self.count_templates(&caller.tenant).await?,
                reports: count(ReportQuery::default()).await?,
                data_sources: self.catalog.len() as u64,
                errors: ErrorCounts {
                    total: count(errored(start, now)).await?,
                    previous_period_total: count(errored(previous, start)).await?,
                },
            })
        })
        .await
    }
}
