//! Report completion: the terminal status of a generation, its artifact and its event.
use super::App;
use super::emission::{EventIdentity, EventSubject};
use super::optimistic::Attempt;
use bytes::Bytes;
use reporter_ports::events::Event;
use reporter_ports::events::payloads::{
    ReportErrored, ReportFinished, ReportPartial, SectionFailure,
};
use reporter_ports::ports::{ObjectUpload, OutboxRecord, RenderFailure, UnitOfWork};
use reporter_ports::report::{Report, ReportErrorCode, ReportStatus, SectionOutcome};
use reporter_ports::{Revisioned, StoreError};
use std::collections::BTreeMap;
use std::time::Instant;

/// What a generation produced.
#[derive(Debug)]
pub enum Generation {
    /// An artifact from all (Finished) or some (Partial) sections.
    Artifact {
        /// Bytes.
        bytes: Bytes,
        /// Per-section outcome.
        sections: BTreeMap<String, SectionOutcome>,
    },
    /// An artifact already in object storage, written in pieces ([`App::begin_artifact`]).
    Stored {
        /// The key as stored.
        key: String,
        /// Its size in bytes.
        size: u64,
        /// Per-section outcome.
        sections: BTreeMap<String, SectionOutcome>,
    },
    /// No artifact.
    Failed {
        /// Fixed code.
        code: ReportErrorCode,
        /// Per-section outcome known so far.
        sections: BTreeMap<String, SectionOutcome>,
    },
    /// No artifact: the render failed (the report's `render_failure` says why and where).
    RenderFailed {
        /// Fixed code.
        code: ReportErrorCode,
        /// The cause and the template line, without data values.
        failure: RenderFailure,
        /// Per-section outcome known so far.
        sections: BTreeMap<String, SectionOutcome>,
    },
}

/// How recording a generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// This call recorded the report's terminal status (with its event).
    Recorded(ReportStatus),
    /// The report was terminal already (another delivery recorded it): nothing written.
    AlreadyTerminal,
}

/// The stored artifact of a generation.
struct StoredArtifact {
    key: String,
    size: u64,
    sections: BTreeMap<String, SectionOutcome>,
}

impl App {
    /// Records the outcome of generating `report` (read when the generation started; a
    /// heartbeat may have changed it since): the artifact goes to object storage, then the
    /// report becomes `Finished` (every section ok), `Partial` (some failed) or `Error`, with
    /// `report.finished|partial|errored` (deterministic id) in the same unit of work. An
    /// artifact that cannot be stored records `Error` `report_generation_failed`. MUST answer
    /// [`Completion::AlreadyTerminal`] and write nothing when the stored report is terminal;
    /// MUST answer `Unavailable` when the store is down (the job is then retried).
    pub async fn complete_report(
        &self,
        report: &Report,
        generation: Generation,
        started: Instant,
    ) -> Result<Completion, StoreError> {
        let span = crate::use_case_span!(
            "complete_report",
            tenant = %report.tenant,
            report_id = %report.id,
        );
        span.run(async move {
            let (bytes, sections) = match generation {
                Generation::Failed { code, sections } => {
                    return self
                        .record_errored(report, code, None, sections, started)
                        .await;
                }
                Generation::RenderFailed {
                    code,
                    failure,
                    sections,
                } => {
                    return self
                        .record_errored(report, code, Some(failure), sections, started)
                        .await;
                }
                Generation::Artifact { bytes, sections } => (bytes, sections),
                Generation::Stored {
                    key,
                    size,
                    sections,
                } => {
                    let artifact = StoredArtifact {
                        key,
                        size,
                        sections,
                    };
                    return self.record_artifact(report, artifact, started).await;
                }
            };
            match self.store_artifact(report, bytes, sections).await {
                Ok(artifact) => self.record_artifact(report, artifact, started).await,
                Err(sections) => {
                    let code = ReportErrorCode::ReportGenerationFailed;
                    self.record_errored(report, code, None, sections, started)
                        .await
                }
            }
        })
        .await
    }

    /// Starts writing `report`'s artifact a piece at a time, under the key
    /// [`complete_report`](Self::complete_report) would put it at; the caller completes the
    /// report with [`Generation::Stored`] once the upload is committed. `Ok(None)` when the
    /// object storage takes whole artifacts only ([`Generation::Artifact`] then).
    pub async fn begin_artifact(
        &self,
        report: &Report,
    ) -> Result<Option<Box<dyn ObjectUpload>>, StoreError> {
        let key = self.artifact_key(report);
        let content_type = report.output_format.content_type();
        self.ports.storage.begin_put(&key, content_type).await
    }

    /// Where `report`'s artifact is stored.
    fn artifact_key(&self, report: &Report) -> String {
        self.settings.layout.report(
            &report.tenant,
            report.template_id,
            report.id,
            report.output_format,
        )
    }

    /// Puts the artifact in object storage; answers the sections back when it cannot.
    async fn store_artifact(
        &self,
        report: &Report,
        bytes: Bytes,
        sections: BTreeMap<String, SectionOutcome>,
    ) -> Result<StoredArtifact, BTreeMap<String, SectionOutcome>> {
        let key = self.artifact_key(report);
        let size = bytes.len() as u64;
        let content_type = report.output_format.content_type();
        let span = crate::telemetry::context::artifact_span();
        let put = {
            use tracing::Instrument;
            self.ports
                .storage
                .put(&key, bytes, content_type)
                .instrument(span.clone())
                .await
        };
        if put.is_err() {
            span.record("otel.status_code", "ERROR");
        }
        match put {
            Ok(stored) if !stored.is_empty() => Ok(StoredArtifact {
                key: stored,
                size,
                sections,
            }),
            Ok(_) | Err(_) => {
                tracing::error!(key = %key, "artifact could not be stored");
                Err(sections)
            }
        }
    }

    /// Records `Finished` or `Partial` with the stored artifact.
    async fn record_artifact(
        &self,
        report: &Report,
        artifact: StoredArtifact,
        started: Instant,
    ) -> Result<Completion, StoreError> {
        let status = if artifact.sections.values().all(|s| s.ok) {
            ReportStatus::Finished
        } else {
            ReportStatus::Partial
        };
        let now = self.now();
        let duration_ms = elapsed_ms(started);
        let artifact = &artifact;
        let completion = self
            .write_retrying_from(
                &report.tenant,
                |e| e,
                report.clone(),
                || self.reread(report),
                |current| async move {
                    let Ok(status) = current.status.transition(status) else {
                        return Ok(Attempt::Done(already_terminal(&current)));
                    };
                    let mut next = current.next_revision(now);
                    next.status = status;
                    next.sections = artifact.sections.clone();
                    next.artifact_key = Some(artifact.key.clone());
                    next.artifact_size = Some(artifact.size);
                    next.completed_at = Some(now);
                    let row = self.artifact_event(&next, duration_ms);
                    let uow = UnitOfWork::new()
                        .change(current.update(next))
                        .with_outbox(row);
                    Ok(Attempt::commit(uow, Completion::Recorded(status)))
                },
            )
            .await?;
        if completion == Completion::Recorded(status) {
            tracing::info!(status = status.as_str(), duration_ms, "report generated");
        }
        Ok(completion)
    }

    /// `report.finished` or `report.partial` of `next` (its terminal revision).
    fn artifact_event(&self, next: &Report, duration_ms: u64) -> Option<OutboxRecord> {
        let now = next.updated_at;
        let failures: Vec<SectionFailure> = next
            .sections
            .iter()
            .filter(|(_, s)| !s.ok)
            .map(|(name, s)| SectionFailure {
                section: name.clone(),
                error_code: s.error_code.clone().unwrap_or_default(),
            })
            .collect();
        let subject_id = next.id.to_string();
        let subject = EventSubject::new(&next.tenant, &subject_id, next.version);
        let identity = EventIdentity::Deterministic(String::new());
        let finished = ReportFinished {
            report_id: subject_id.clone(),
            template_id: next.template_id.to_string(),
            output_format: next.output_format.as_str().to_owned(),
            status: next.status.as_str().to_owned(),
            artifact_object_key: next.artifact_key.clone().unwrap_or_default(),
            artifact_content_type: next.output_format.content_type().to_owned(),
            completed_at: now,
            duration_ms,
            section_count: next.sections.len() as u64,
        };
        if next.status == ReportStatus::Finished {
            return self
                .emitter
                .row(Event::ReportFinished(finished), subject, identity, now);
        }
        let partial = ReportPartial {
            report_id: finished.report_id,
            template_id: finished.template_id,
            output_format: finished.output_format,
            status: finished.status,
            artifact_object_key: finished.artifact_object_key,
            artifact_content_type: finished.artifact_content_type,
            completed_at: now,
            duration_ms,
            section_count: finished.section_count,
            failed_section_count: failures.len() as u64,
            section_failures: failures,
        };
        self.emitter
            .row(Event::ReportPartial(partial), subject, identity, now)
    }

    /// Records `report` as `Error` with `code`, why its render failed (when it did) and the
    /// outcome of the sections attempted, with `report.errored` (deterministic id; the render
    /// failure is not in it). MUST write nothing and answer [`Completion::AlreadyTerminal`]
    /// when the stored report is terminal.
    pub(super) async fn record_errored(
        &self,
        report: &Report,
        code: ReportErrorCode,
        render_failure: Option<RenderFailure>,
        sections: BTreeMap<String, SectionOutcome>,
        started: Instant,
    ) -> Result<Completion, StoreError> {
        let duration_ms = elapsed_ms(started);
        let sections = &sections;
        let completion = self
            .write_retrying_from(
                &report.tenant,
                |e| e,
                report.clone(),
                || self.reread(report),
                |current| async move {
                    if current.status.is_terminal() {
                        return Ok(Attempt::Done(already_terminal(&current)));
                    }
                    let now = self.now();
                    let mut next = current.next_revision(now);
                    next.status = ReportStatus::Error;
                    next.sections = sections.clone();
                    next.error_code = Some(code);
                    next.render_failure = render_failure;
                    next.completed_at = Some(now);
                    let row = self.errored_event(&next, code, duration_ms);
                    let uow = UnitOfWork::new()
                        .change(current.update(next))
                        .with_outbox(row);
                    Ok(Attempt::commit(
                        uow,
                        Completion::Recorded(ReportStatus::Error),
                    ))
                },
            )
            .await?;
        if completion == Completion::Recorded(ReportStatus::Error) {
            tracing::info!(code = code.as_str(), "report errored");
        }
        Ok(completion)
    }

    /// `report.errored` of `next` (its `Error` revision), with a deterministic id.
    fn errored_event(
        &self,
        next: &Report,
        code: ReportErrorCode,
        duration_ms: u64,
    ) -> Option<OutboxRecord> {
        let now = next.updated_at;
        let payload = ReportErrored {
            report_id: next.id.to_string(),
            template_id: next.template_id.to_string(),
            output_format: next.output_format.as_str().to_owned(),
            status: ReportStatus::Error.as_str().to_owned(),
            completed_at: now,
            duration_ms,
            section_count: next.sections.len() as u64,
            error_code: code.as_str().to_owned(),
            error_summary: code.summary().to_owned(),
        };
        let id = next.id.to_string();
        self.emitter.row(
            Event::ReportErrored(payload),
            EventSubject::new(&next.tenant, &id, next.version),
            EventIdentity::Deterministic(String::new()),
            now,
        )
    }

    /// The stored `report` (read again after a conflict).
    async fn reread(&self, report: &Report) -> Result<Report, StoreError> {
        self.ports
            .reports
            .get(&report.tenant, report.id)
            .await?
            .ok_or(StoreError::NotFound)
    }
}

/// Logs that `current` is terminal already (another delivery's result stands).
fn already_terminal(current: &Report) -> Completion {
    tracing::info!(
        status = current.status.as_str(),
        "duplicate job: another delivery recorded the report's terminal status first; this one's outcome is not recorded"
    );
    Completion::AlreadyTerminal
}

/// Milliseconds since `started`.
fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}
