//! Report use cases: request, read, download.
use super::emission::{EventIdentity, EventSubject};
use super::error::{AppError, AppResult, Code};
use super::{App, Caller};
use reporter_ports::events::Event;
use reporter_ports::events::payloads::ReportRequested;
use reporter_ports::page::{Page, PageRequest};
use reporter_ports::ports::{Change, ReportJob, ReportQuery, StoredObject, UnitOfWork};
use reporter_ports::report::{Report, ReportErrorCode, ReportFilters, ReportStatus};
use reporter_ports::{ReportId, Revisioned, StoreError, TemplateId};
use std::collections::BTreeMap;

/// `POST /v1/reports`.
#[derive(Debug, Clone, Default)]
pub struct CreateReport {
    /// Template id as sent.
    pub template_id: Option<String>,
    /// Filters: data source → table → field → condition.
    pub filters: Option<ReportFilters>,
    /// Request correlation id, carried to the job.
    pub request_id: Option<String>,
    /// The request's `X-Idempotency` reservation: its answer commits with the report.
    pub idempotency: Option<super::Idempotent<Report>>,
}

/// A downloadable artifact.
#[derive(Debug, Clone)]
pub struct Artifact {
    /// The report.
    pub report: Report,
    /// The stored object.
    pub object: StoredObject,
}

impl App {
    /// Requests a report: stores it as `Processing` with `report.requested`, then queues the job.
    ///
    /// If the job cannot be queued the report is recorded `Error`
    /// (`report_generation_failed`, with `report.errored`) and the call answers 503.
    pub async fn create_report(&self, caller: &Caller, cmd: CreateReport) -> AppResult<Report> {
        let span = crate::use_case_span!("create_report", tenant = %caller.tenant);
        span.run(async move {
            let raw_id = cmd.template_id.ok_or_else(|| {
                AppError::new(Code::MissingFields, "templateId is required")
                    .field("templateId", "required")
            })?;
            let filters = cmd.filters.ok_or_else(|| {
                AppError::new(
                    Code::MissingFields,
                    "filters is required (send {} for none)",
                )
                .field("filters", "required")
            })?;
            let template_id: TemplateId = raw_id.trim().parse().map_err(|_| {
                AppError::new(
                    Code::InvalidTemplateId,
                    format!("templateId '{raw_id}' is not a UUID"),
                )
                .field("templateId", "must be a UUID")
            })?;
            let template = self.get_template(caller, template_id).await.map_err(|e| {
                if e.code == Code::NotFound {
                    AppError::not_found("Template").field("templateId", "no such template")
                } else {
                    e
                }
            })?;
            let filters = self.check_filters(filters, &template).await?;
            let now = self.now();
            let report = Report {
                id: ReportId::new(),
                tenant: caller.tenant.clone(),
                template_id,
                output_format: template.output_format,
                template_description: template.description.clone(),
                filters,
                status: ReportStatus::Processing,
                sections: BTreeMap::new(),
                error_code: None,
                render_failure: None,
                artifact_key: None,
                artifact_size: None,
                completed_at: None,
                version: 1,
                created_at: now,
                updated_at: now,
            };
            let payload = ReportRequested {
                report_id: report.id.to_string(),
                template_id: template_id.to_string(),
                output_format: report.output_format.as_str().to_owned(),
                status: ReportStatus::Processing.as_str().to_owned(),
                created_at: now,
            };
            let uow = UnitOfWork::new()
                .change(Change::Report {
                    record: report.clone(),
                    expected_version: None,
                })
                .with_outbox(self.emitter.row(
                    Event::ReportRequested(payload),
                    EventSubject::new(&caller.tenant, &report.id.to_string(), report.version),
                    EventIdentity::Fresh,
                    now,
                ))
                .with_idempotency(cmd.idempotency.map(|i| i.completion(&report)));
            self.commit(&caller.tenant, uow)
                .await
                .map_err(|e| AppError::store(e, "Report"))?;
            // Every job carries a correlation id: the request's, else a fresh one.
            self.queue_job(&report, cmd.request_id.unwrap_or_else(new_request_id))
                .await?;
            tracing::info!(report_id = %report.id, "report requested");
            Ok(report)
        })
        .await
    }

    /// Queues the job of the just-committed `report`. MUST record the report `Error` and
    /// answer `ServiceUnavailable` when the queue refuses it (no report stays `Processing`
    /// without a job).
    async fn queue_job(&self, report: &Report, request_id: String) -> AppResult<()> {
        let span = crate::telemetry::context::job_publish_span(report.id);
        let job = ReportJob {
            tenant: report.tenant.clone(),
            report_id: report.id,
            request_id: Some(request_id),
            trace: crate::telemetry::context::carrier_of_span(&span),
        };
        let enqueued = {
            use tracing::Instrument;
            self.ports.jobs.enqueue(&job).instrument(span).await
        };
        let Err(e) = enqueued else {
            return Ok(());
        };
        tracing::error!(error = %e, report_id = %report.id, "could not queue the report job; recording it as errored");
        let started = std::time::Instant::now();
        let code = ReportErrorCode::ReportGenerationFailed;
        let sections = report.sections.clone();
        if let Err(e2) = self
            .record_errored(report, code, None, sections, started)
            .await
        {
            tracing::error!(error = %e2, report_id = %report.id, "could not record the errored report either");
        }
        Err(AppError::new(
            Code::ServiceUnavailable,
            "the report could not be queued; it was recorded as errored, retry later",
        ))
    }

    /// The reconciliation sweep: reports of every tenant still `Processing` whose last
    /// change is older than `stale_after` get their job queued again (at most `limit` per
    /// call). Covers a process that died between committing the request and queueing its job,
    /// and jobs dead-lettered while the store was down. Answers how many were queued.
    ///
    /// Each report is first touched (`updated_at`, version + 1) with an optimistic write, so
    /// among several sweeping processes one queues it, and it is not queued again before
    /// another `stale_after`. A duplicate job is harmless: the worker ignores a job whose
    /// report is already terminal. A report that finished meanwhile is left alone (the touch
    /// conflicts). MUST NOT touch a terminal report.
    pub async fn requeue_stale_reports(
        &self,
        stale_after: std::time::Duration,
        limit: usize,
    ) -> Result<usize, StoreError> {
        let span = crate::use_case_span!("requeue_stale_reports");
        span.run(async move {
            let now = self.now();
            let before = now
                - chrono::Duration::from_std(stale_after)
                    .map_err(|e| StoreError::Unavailable(format!("stale_after: {e}")))?;
            let stale = self
                .ports
                .reports
                .list_stale_processing(before, limit)
                .await?;
            let mut queued = 0;
            for report in stale {
                match self.touch_report(&report).await {
                    Ok(_) => {}
                    // Finished, or touched by another sweeping process or its worker's heartbeat,
                    // since it was listed.
                    Err(StoreError::VersionConflict | StoreError::NotFound) => continue,
                    Err(e) => return Err(e),
                }
                let request_id = new_request_id();
                let job = ReportJob {
                    tenant: report.tenant.clone(),
                    report_id: report.id,
                    request_id: Some(request_id.clone()),
                    trace: crate::telemetry::context::current(),
                };
                match self.ports.jobs.enqueue(&job).await {
                    Ok(()) => {
                        queued += 1;
                        tracing::warn!(
                            tenant = %report.tenant,
                            report_id = %report.id,
                            request_id = %request_id,
                            unchanged_since = %report.updated_at,
                            "report stuck in processing: its job was queued again"
                        );
                    }
                    Err(e) => tracing::error!(
                        error = %e,
                        report_id = %report.id,
                        "could not queue the job of a stuck report; the next sweep after the stale period tries again"
                    ),
                }
            }
            Ok(queued)
        })
        .await
    }

    /// Marks a `Processing` report as alive: `updated_at` now and version + 1, no event. The
    /// worker generating a report calls it every quarter of `REPORT_REQUEUE_AFTER_SEC` (a
    /// heartbeat), so the stuck-report sweep never queues again a report that is being
    /// generated; the sweep calls it before queueing a job, so among several sweeping
    /// processes exactly one queues it. Returns the stored report. MUST answer
    /// VersionConflict when the report changed since `report` was read or is terminal, and
    /// NotFound when it is gone.
    pub(crate) async fn touch_report(&self, report: &Report) -> Result<Report, StoreError> {
        let span =
            crate::use_case_span!("touch_report", tenant = %report.tenant, report_id = %report.id);
        span.run(async move {
            if report.status.is_terminal() {
                return Err(StoreError::VersionConflict);
            }
            let touched = report.next_revision(self.now());
            let uow = UnitOfWork::new().change(report.update(touched.clone()));
            self.commit(&report.tenant, uow).await?;
            Ok(touched)
        })
        .await
    }

    /// A report. MUST answer NotFound for a missing or foreign id.
    pub async fn get_report(&self, caller: &Caller, id: ReportId) -> AppResult<Report> {
        let span = crate::use_case_span!("get_report", tenant = %caller.tenant, report_id = %id);
        span.run(async move {
            self.ports
                .reports
                .get(&caller.tenant, id)
                .await
                .map_err(|e| AppError::store(e, "Report"))?
                .ok_or_else(|| AppError::not_found("Report"))
        })
        .await
    }

    /// Lists reports.
    pub async fn list_reports(
        &self,
        caller: &Caller,
        query: &ReportQuery,
        page: PageRequest,
    ) -> AppResult<Page<Report>> {
        let span = crate::use_case_span!("list_reports", tenant = %caller.tenant);
        span.run(async move {
            self.ports
                .reports
                .list(&caller.tenant, query, page)
                .await
                .map_err(|e| AppError::store(e, "Report"))
        })
        .await
    }

    /// The artifact of a `Finished` report.
    ///
    /// MUST answer `ReportNotFinished` (422) for any other status, and `ArtifactGone` (404)
    /// when the artifact is no longer stored (the in-memory storage evicted it, or it was
    /// removed). Reads the artifact by the key recorded on the report, so deleting the
    /// template later does not break downloads.
    pub async fn download_report(&self, caller: &Caller, id: ReportId) -> AppResult<Artifact> {
        let span =
            crate::use_case_span!("download_report", tenant = %caller.tenant, report_id = %id);
        span.run(async move {
            let report = self.get_report(caller, id).await?;
            if report.status != ReportStatus::Finished {
                return Err(AppError::new(
                    Code::ReportNotFinished,
                    format!(
                        "only Finished reports can be downloaded; this report is {}",
                        report.status.as_str()
                    ),
                )
                .entity("Report"));
            }
            let key = report.artifact_key.clone().ok_or_else(|| {
                AppError::new(Code::Internal, "a finished report has no artifact key")
        })?;
        let object = self
            .ports
            .storage
            .get(&key)
            .await
            .map_err(AppError::object_storage)?
            .ok_or_else(|| {
                AppError::new(
                    Code::ArtifactGone,
                    "the report's artifact is no longer in object storage (evicted by the in-memory \
                     storage's bound, or removed); request the report again",
                )
                .entity("Report")
            })?;
        Ok(Artifact { report, object })
        })
        .await
    }
}

/// A fresh correlation id (UUIDv7, as the HTTP edge generates) for a job no request carried.
pub(crate) fn new_request_id() -> String {
    uuid::Uuid::now_v7().to_string()
}
