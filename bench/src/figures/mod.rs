//! Every benchmark figure. Adding one: a module here implementing
//! [`crate::harness::Figure`], and one line in [`all`].
mod catch_up;
mod client_reports;
mod commit_latency;
mod crm_decrypt;
mod keepalive;
mod pg_reports;
pub(crate) mod preview_time;
mod publish_cost;
pub(crate) mod publish_cpu;
mod rate_limit;
pub(crate) mod report_client;
pub(crate) mod report_cores;
pub(crate) mod report_rows;
mod report_rss;
mod report_time;
mod serve;
pub(crate) mod telemetry_cost;
mod template_read;
pub(crate) mod util;

use crate::harness::Figure;

/// The figures `just bench` measures, in order.
pub fn all() -> Vec<Box<dyn Figure>> {
    vec![
        Box::new(catch_up::CatchUp::default()),
        Box::new(publish_cost::PublishCost),
        Box::new(publish_cpu::PublishCpu::default()),
        Box::new(commit_latency::CommitLatency::default()),
        Box::new(template_read::TemplateRead),
        Box::new(telemetry_cost::TelemetryCost),
        Box::new(report_time::ReportTime::default()),
        Box::new(report_rss::ReportRss::default()),
        Box::new(report_client::ReportClient::default()),
        Box::new(report_rows::ReportRows::default()),
        Box::new(report_cores::ReportCores::default()),
        Box::new(crm_decrypt::CrmDecrypt::default()),
        Box::new(preview_time::PreviewTime),
        Box::new(rate_limit::RateLimit),
    ]
}
