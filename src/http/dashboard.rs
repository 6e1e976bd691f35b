//! `/v1/metrics`: dashboard counters.
use super::auth::{Auth, Scope};
use super::error::{AUTH, ApiResult, UNAVAILABLE};
use super::tags::ApiTags;
use crate::app::{App, AppError, Code};
use poem::web::Data;
use poem_openapi::param::Query;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi};
use std::sync::Arc;

/// Reports in status `Error` per period.
#[derive(Debug, Clone, Object)]
#[oai(rename = "ErrorCounts", rename_all = "camelCase")]
pub struct ErrorCountsDto {
    /// Reports in status `Error` created in the last `errorPeriodDays` days.
    pub total: u64,
    /// Reports in status `Error` created in the period before that.
    pub previous_period_total: u64,
}

/// Dashboard counters.
#[derive(Debug, Clone, Object)]
#[oai(rename = "DashboardMetrics", rename_all = "camelCase")]
pub struct DashboardDto {
    /// Live templates.
    pub templates: u64,
    /// Reports.
    pub reports: u64,
    /// Configured data sources.
    pub data_sources: u64,
    /// Reports in status `Error`.
    pub errors: ErrorCountsDto,
}

/// Dashboard operations.
#[derive(Default)]
pub struct DashboardApi;

#[OpenApi(tag = "ApiTags::Metrics")]
impl DashboardApi {
    /// Dashboard metrics
    ///
    /// Counts of live templates, reports and data sources, and errored reports in the last
    /// `errorPeriodDays` (1-365, default 7) against the period before. Scope `metrics:read`.
    #[oai(
        path = "/v1/metrics",
        method = "get",
        operation_id = "getDashboardMetrics"
    )]
    async fn metrics(
        &self,
        app: Data<&Arc<App>>,
        #[oai(scope = "Scope::MetricsRead")] auth: Auth,
        /// 1-365, default 7.
        #[oai(name = "errorPeriodDays")]
        period: Query<Option<i64>>,
    ) -> ApiResult<Json<DashboardDto>, { AUTH | UNAVAILABLE }> {
        let caller = auth.caller();
        let days = period.0.unwrap_or(7);
        if !(1..=365).contains(&days) {
            return Err(AppError::new(
                Code::InvalidQueryParameter,
                "errorPeriodDays must be between 1 and 365",
            )
            .field("errorPeriodDays", "1..=365")
            .into());
        }
        let m = app.dashboard_metrics(&caller, days).await?;
        Ok(Json(DashboardDto {
            templates: m.templates,
            reports: m.reports,
            data_sources: m.data_sources,
            errors: ErrorCountsDto {
                total: m.errors.total,
                previous_period_total: m.errors.previous_period_total,
            },
        }))
    }
}
