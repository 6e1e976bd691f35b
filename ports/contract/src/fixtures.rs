//! Builders of valid domain values for contract suites and other test suites.
//!
//! Every builder returns a value that satisfies the domain rules, with fresh ids. Time is
//! pinned: [`t0`] is the base instant and [`at`] offsets from it, so suites never read the
//! clock. Builders panic on impossible input (they are test code).
use chrono::{DateTime, Datelike, Duration, TimeZone, Utc};
use reporter_ports::deadline::{Color, Deadline, DeadlineType, Frequency};
use reporter_ports::events::{EventEnvelope, EventKey};
use reporter_ports::page::{PageRequest, SortOrder};
use reporter_ports::ports::{
    Change, IdempotencyScope, OutboxRecord, ReportJob, StoredResponse, TableQuery,
};
use reporter_ports::report::{Report, ReportStatus};
use reporter_ports::template::{OutputFormat, Template};
use reporter_ports::{DeadlineId, ReportId, TemplateId, TenantId};
use std::collections::BTreeMap;

/// The base instant of every suite: 2030-01-01T00:00:00Z.
pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2030, 1, 1, 0, 0, 0)
        .single()
        .expect("valid base instant")
}

/// `t0() + secs` seconds.
pub fn at(secs: i64) -> DateTime<Utc> {
    t0() + Duration::seconds(secs)
}

/// `t0() + days` days.
pub fn day(days: i64) -> DateTime<Utc> {
    t0() + Duration::days(days)
}

/// A tenant id (panics when invalid).
pub fn tenant(name: &str) -> TenantId {
    TenantId::parse(name).expect("valid tenant id")
}

/// The first tenant of the suites.
pub fn tenant_a() -> TenantId {
    tenant("tenant-a")
}

/// The second tenant of the suites.
pub fn tenant_b() -> TenantId {
    tenant("tenant-b")
}

/// A page request with a maximum limit of 100 (panics when invalid).
pub fn page(page: u32, limit: u32, sort: SortOrder) -> PageRequest {
    PageRequest::new(page, limit, sort, 100).expect("valid page request")
}

/// A live HTML template at version 1 created at `created_at`.
pub fn template(tenant: &TenantId, created_at: DateTime<Utc>) -> Template {
    let id = TemplateId::new();
    Template {
        id,
        tenant: tenant.clone(),
        output_format: OutputFormat::Html,
        description: format!("Template {id}"),
        file_name: format!("{id}.tpl"),
        object_key: format!("{tenant}/templates/{id}.tpl"),
        content_sha256: "0".repeat(64),
        size_bytes: 42,
        mapped_fields: BTreeMap::new(),
        version: 1,
        created_at,
        updated_at: created_at,
        deleted_at: None,
    }
}

/// A live, active, undelivered custom one-off deadline at version 1, due at `due_date`.
pub fn deadline(
    tenant: &TenantId,
    template_id: Option<TemplateId>,
    due_date: DateTime<Utc>,
    created_at: DateTime<Utc>,
) -> Deadline {
    Deadline {
        id: DeadlineId::new(),
        tenant: tenant.clone(),
        name: "Monthly filing".into(),
        description: None,
        kind: DeadlineType::Custom,
        template_id,
        template_name: template_id.map(|t| format!("Template {t}")),
        due_date,
        anchor_day: due_date.day(),
        frequency: Frequency::Once,
        months_of_year: Vec::new(),
        active: true,
        notify_days_before: 3,
        color: Color::parse("#112233").expect("valid colour"),
        delivered_at: None,
        version: 1,
        created_at,
        updated_at: created_at,
        deleted_at: None,
    }
}

/// A `Processing` report of `template_id` at version 1.
pub fn report(tenant: &TenantId, template_id: TemplateId, created_at: DateTime<Utc>) -> Report {
    Report {
        id: ReportId::new(),
        tenant: tenant.clone(),
        template_id,
        output_format: OutputFormat::Html,
        template_description: "Template".into(),
        filters: BTreeMap::new(),
        status: ReportStatus::Processing,
        sections: BTreeMap::new(),
        error_code: None,
        render_failure: None,
        artifact_key: None,
        artifact_size: None,
        completed_at: None,
        version: 1,
        created_at,
        updated_at: created_at,
    }
}

/// An event envelope with a fresh id and a small payload.
pub fn event(
    tenant: &TenantId,
    key: EventKey,
    subject: &str,
    time: DateTime<Utc>,
) -> EventEnvelope {
    EventEnvelope {
        id: uuid::Uuid::now_v7().hyphenated().to_string(),
        key,
        tenant: tenant.clone(),
        subject: subject.to_owned(),
        time,
        payload: serde_json::json!({ "subject": subject }).into(),
        // Kept through every outbox adapter (the contract compares rows whole).
        sequence: Some(7),
        // Likewise the bounded trace carrier (a replay continues the request's trace).
        trace: reporter_ports::TraceCarrier::new(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            Some("rojo=00f067aa0ba902b7"),
        ),
    }
}

/// A pending, unleased outbox row of `aggregate` (a `report.finished` event whose subject is
/// the aggregate), created and claimable at `now`.
pub fn outbox_row(tenant: &TenantId, aggregate: &str, now: DateTime<Utc>) -> OutboxRecord {
    OutboxRecord::pending(
        event(tenant, EventKey::ReportFinished, aggregate, now),
        aggregate.to_owned(),
        now,
        None,
    )
}

/// An idempotency scope.
pub fn scope(tenant: &TenantId, operation: &str, key: &str) -> IdempotencyScope {
    IdempotencyScope {
        tenant: tenant.clone(),
        operation: operation.to_owned(),
        key: key.to_owned(),
    }
}

/// A stored JSON response.
pub fn response(status: u16, body: &str) -> StoredResponse {
    StoredResponse {
        status,
        content_type: "application/json".into(),
        body: body.as_bytes().to_vec(),
    }
}

/// A job for a fresh report id.
pub fn job(tenant: &TenantId) -> ReportJob {
    ReportJob {
        tenant: tenant.clone(),
        report_id: ReportId::new(),
        request_id: None,
        trace: None,
    }
}

/// What the suites do with the three record kinds, generically.
pub trait Record: Clone + Send + Sync + 'static {
    /// The change inserting this record.
    fn insert(&self) -> Change;
    /// The change replacing the stored record of version `expected_version` with this one.
    fn update(&self, expected_version: u64) -> Change;
    /// This record's next version as an update at `now` would write it (version + 1,
    /// `updated_at = now`).
    fn next(&self, now: DateTime<Utc>) -> Self;
    /// The record's version.
    fn version(&self) -> u64;
}

impl Record for Template {
    fn insert(&self) -> Change {
        Change::Template {
            record: self.clone(),
            expected_version: None,
        }
    }
    fn update(&self, expected_version: u64) -> Change {
        Change::Template {
            record: self.clone(),
            expected_version: Some(expected_version),
        }
    }
    fn next(&self, now: DateTime<Utc>) -> Self {
        Self {
            version: self.version + 1,
            updated_at: now,
            ..self.clone()
        }
    }
    fn version(&self) -> u64 {
        self.version
    }
}

impl Record for Deadline {
    fn insert(&self) -> Change {
        Change::Deadline {
            record: self.clone(),
            expected_version: None,
        }
    }
    fn update(&self, expected_version: u64) -> Change {
        Change::Deadline {
            record: self.clone(),
            expected_version: Some(expected_version),
        }
    }
    fn next(&self, now: DateTime<Utc>) -> Self {
        Self {
            version: self.version + 1,
            updated_at: now,
            ..self.clone()
        }
    }
    fn version(&self) -> u64 {
        self.version
    }
}

impl Record for Report {
    fn insert(&self) -> Change {
        Change::Report {
            record: self.clone(),
            expected_version: None,
        }
    }
    fn update(&self, expected_version: u64) -> Change {
        Change::Report {
            record: self.clone(),
            expected_version: Some(expected_version),
        }
    }
    fn next(&self, now: DateTime<Utc>) -> Self {
        Self {
            version: self.version + 1,
            updated_at: now,
            ..self.clone()
        }
    }
    fn version(&self) -> u64 {
        self.version
    }
}

/// The update change that writes `record.next(now)` over `record`, and the new state.
pub fn bump<R: Record>(record: &R, now: DateTime<Utc>) -> (Change, R) {
    let next = record.next(now);
    (next.update(record.version()), next)
}

/// A query of `fields` of `table` with `filters` written as JSON (`{"field": {"eq": [1]}}`),
/// at most `max_rows` rows: how suites write a [`TableQuery`].
///
/// # Panics
/// When `filters` is not a map of field to condition (a mistake in the suite).
pub fn table_query(
    table: &str,
    fields: &[&str],
    filters: serde_json::Value,
    max_rows: usize,
) -> TableQuery {
    TableQuery {
        table: table.to_owned(),
        fields: fields.iter().map(|f| (*f).to_owned()).collect(),
        filters: serde_json::from_value(filters)
            .unwrap_or_else(|e| panic!("bad filters in the suite: {e}")),
        max_rows,
    }
}
