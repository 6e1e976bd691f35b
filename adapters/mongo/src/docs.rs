//! The BSON documents the store writes, one explicit struct per record kind.
//!
//! Domain structs are never stored as they are: each record is mapped to a document with ids
//! as strings, instants as BSON `DateTime` (milliseconds, see [`crate::time`]), enums as their
//! lower-case (or API) names, a `tenant` field on every document, and the derived fields the
//! queries need (`deleted`, `next_due_date`). Reading back maps the other way and answers
//! `Unavailable` for a document this crate could not have written.
use crate::time::{floor_ms, from_bson, truncate};
use chrono::{DateTime, Utc};
use mongodb::bson::DateTime as BsonDateTime;
use reporter_ports::deadline::{Color, Deadline, DeadlineType, Frequency};
use reporter_ports::events::{EventEnvelope, EventKey, Payload};
use reporter_ports::ports::{
    Lease, OutboxRecord, OutboxStatus, ParkedEvent, RenderCause, RenderFailure,
};
use reporter_ports::report::{Report, ReportErrorCode, ReportStatus, SectionOutcome};
use reporter_ports::template::{OutputFormat, Template};
use reporter_ports::{StoreError, TenantId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::str::FromStr;

fn corrupt(what: &str) -> StoreError {
    StoreError::Unavailable(format!("mongodb: stored document has an invalid {what}"))
}

fn parse_id<T: FromStr>(raw: &str, what: &str) -> Result<T, StoreError> {
    raw.parse().map_err(|_| corrupt(what))
}

fn tenant(raw: &str) -> Result<TenantId, StoreError> {
    TenantId::parse(raw).map_err(|_| corrupt("tenant"))
}

fn to_i64(v: u64, what: &str) -> Result<i64, StoreError> {
    i64::try_from(v).map_err(|_| StoreError::Unavailable(format!("mongodb: {what} too large")))
}

fn to_u64(v: i64, what: &str) -> Result<u64, StoreError> {
    u64::try_from(v).map_err(|_| corrupt(what))
}

fn opt(t: Option<DateTime<Utc>>) -> Option<BsonDateTime> {
    t.map(floor_ms)
}

fn opt_back(t: Option<BsonDateTime>) -> Option<DateTime<Utc>> {
    t.map(from_bson)
}

fn output_format(raw: &str) -> Result<OutputFormat, StoreError> {
    OutputFormat::parse(raw).ok_or_else(|| corrupt("output format"))
}

/// The name a [`ReportErrorCode`] is stored under (its wire code).
fn error_code_back(raw: &str) -> Result<ReportErrorCode, StoreError> {
    [
        ReportErrorCode::ReportGenerationFailed,
        ReportErrorCode::ReportGenerationTimeout,
        ReportErrorCode::ReportGenerationCanceled,
    ]
    .into_iter()
    .find(|c| c.as_str() == raw)
    .ok_or_else(|| corrupt("report error code"))
}

// ---------------------------------------------------------------------------------------------
// templates

/// One `(data source, table) → fields` entry of a template's mapped fields. Stored as an array
/// of entries, not as nested keys, because table names may contain `.` or start with `$`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct MappedFieldsDoc {
    pub source: String,
    pub table: String,
    pub fields: Vec<String>,
}

/// Collection `templates`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TemplateDoc {
    #[serde(rename = "_id")]
    pub id: String,
    pub tenant: String,
    pub output_format: String,
    pub description: String,
    pub file_name: String,
    pub object_key: String,
    pub content_sha256: String,
    pub size_bytes: i64,
    pub mapped_fields: Vec<MappedFieldsDoc>,
    pub version: i64,
    pub created_at: BsonDateTime,
    pub updated_at: BsonDateTime,
    pub deleted_at: Option<BsonDateTime>,
    /// Derived: `deleted_at` is set.
    pub deleted: bool,
}

impl TemplateDoc {
    pub(crate) fn from_record(t: &Template) -> Result<Self, StoreError> {
        let mut mapped = Vec::new();
        for (source, tables) in &t.mapped_fields {
            for (table, fields) in tables {
                mapped.push(MappedFieldsDoc {
                    source: source.clone(),
                    table: table.clone(),
                    fields: fields.iter().cloned().collect(),
                });
            }
        }
        Ok(Self {
            id: t.id.to_string(),
            tenant: t.tenant.to_string(),
            output_format: t.output_format.as_str().to_owned(),
            description: t.description.clone(),
            file_name: t.file_name.clone(),
            object_key: t.object_key.clone(),
            content_sha256: t.content_sha256.clone(),
            size_bytes: to_i64(t.size_bytes, "size_bytes")?,
            mapped_fields: mapped,
            version: to_i64(t.version, "version")?,
            created_at: floor_ms(t.created_at),
            updated_at: floor_ms(t.updated_at),
            deleted_at: opt(t.deleted_at),
            deleted: t.deleted_at.is_some(),
        })
    }

    pub(crate) fn into_record(self) -> Result<Template, StoreError> {
        let mut mapped: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
        for m in self.mapped_fields {
            mapped
                .entry(m.source)
                .or_default()
                .entry(m.table)
                .or_default()
                .extend(m.fields);
        }
        Ok(Template {
            id: parse_id(&self.id, "template id")?,
            tenant: tenant(&self.tenant)?,
            output_format: output_format(&self.output_format)?,
            description: self.description,
            file_name: self.file_name,
            object_key: self.object_key,
            content_sha256: self.content_sha256,
            size_bytes: to_u64(self.size_bytes, "size_bytes")?,
            mapped_fields: mapped,
            version: to_u64(self.version, "version")?,
            created_at: from_bson(self.created_at),
            updated_at: from_bson(self.updated_at),
            deleted_at: opt_back(self.deleted_at),
        })
    }
}

// ---------------------------------------------------------------------------------------------
// deadlines

/// Collection `deadlines`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct DeadlineDoc {
    #[serde(rename = "_id")]
    pub id: String,
    pub tenant: String,
    pub name: String,
    pub description: Option<String>,
    /// `regulatory` / `custom`.
    pub kind: String,
    /// `null` when the deadline has no template (the uniqueness index skips those).
    pub template_id: Option<String>,
    pub template_name: Option<String>,
    pub due_date: BsonDateTime,
    /// Derived: [`Deadline::next_due_date`] of the stored (millisecond) record.
    pub next_due_date: Option<BsonDateTime>,
    pub anchor_day: i64,
    pub frequency: String,
    pub months_of_year: Vec<i64>,
    pub active: bool,
    pub notify_days_before: i64,
    pub color: String,
    pub delivered_at: Option<BsonDateTime>,
    pub version: i64,
    pub created_at: BsonDateTime,
    pub updated_at: BsonDateTime,
    pub deleted_at: Option<BsonDateTime>,
    /// Derived: `deleted_at` is set.
    pub deleted: bool,
}

impl DeadlineDoc {
    pub(crate) fn from_record(d: &Deadline) -> Result<Self, StoreError> {
        // Derive from the record as it will read back (milliseconds), so the stored
        // `next_due_date` is exactly what `view` computes on the read-back record.
        let mut stored = d.clone();
        stored.due_date = truncate(d.due_date);
        Ok(Self {
            id: d.id.to_string(),
            tenant: d.tenant.to_string(),
            name: d.name.clone(),
            description: d.description.clone(),
            kind: d.kind.as_str().to_owned(),
            template_id: d.template_id.map(|t| t.to_string()),
            template_name: d.template_name.clone(),
            due_date: floor_ms(d.due_date),
            next_due_date: opt(stored.next_due_date()),
            anchor_day: i64::from(d.anchor_day),
            frequency: d.frequency.as_str().to_owned(),
            months_of_year: d.months_of_year.iter().map(|m| i64::from(*m)).collect(),
            active: d.active,
            notify_days_before: i64::from(d.notify_days_before),
            color: d.color.as_str().to_owned(),
            delivered_at: opt(d.delivered_at),
            version: to_i64(d.version, "version")?,
            created_at: floor_ms(d.created_at),
            updated_at: floor_ms(d.updated_at),
            deleted_at: opt(d.deleted_at),
            deleted: d.deleted_at.is_some(),
        })
    }

    pub(crate) fn into_record(self) -> Result<Deadline, StoreError> {
        let small = |v: i64, what: &str| u32::try_from(v).map_err(|_| corrupt(what));
        Ok(Deadline {
            id: parse_id(&self.id, "deadline id")?,
            tenant: tenant(&self.tenant)?,
            name: self.name,
            description: self.description,
            kind: DeadlineType::parse(&self.kind).ok_or_else(|| corrupt("deadline type"))?,
            template_id: self
                .template_id
                .map(|t| parse_id(&t, "template id"))
                .transpose()?,
            template_name: self.template_name,
            due_date: from_bson(self.due_date),
            anchor_day: small(self.anchor_day, "anchor day")?,
            frequency: Frequency::parse(&self.frequency).ok_or_else(|| corrupt("frequency"))?,
            months_of_year: self
                .months_of_year
                .into_iter()
                .map(|m| small(m, "month"))
                .collect::<Result<_, _>>()?,
            active: self.active,
            notify_days_before: small(self.notify_days_before, "notify days")?,
            color: Color::parse(&self.color).ok_or_else(|| corrupt("colour"))?,
            delivered_at: opt_back(self.delivered_at),
            version: to_u64(self.version, "version")?,
            created_at: from_bson(self.created_at),
            updated_at: from_bson(self.updated_at),
            deleted_at: opt_back(self.deleted_at),
        })
    }
}

// ---------------------------------------------------------------------------------------------
// reports

/// One section outcome of a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SectionDoc {
    pub source: String,
    pub ok: bool,
    pub error_code: Option<String>,
}

/// Why a report's render failed (`Report::render_failure`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RenderFailureDoc {
    pub cause: String,
    pub line: Option<i64>,
}

impl RenderFailureDoc {
    fn from_record(f: &RenderFailure) -> Self {
        Self {
            cause: f.cause.as_str().to_owned(),
            line: f.line.map(i64::from),
        }
    }

    /// The record; `None` for a cause this build does not know (written by a later one).
    fn into_record(self) -> Option<RenderFailure> {
        Some(RenderFailure {
            cause: RenderCause::parse(&self.cause)?,
            line: self.line.and_then(|l| u32::try_from(l).ok()),
        })
    }
}

/// Collection `reports`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ReportDoc {
    #[serde(rename = "_id")]
    pub id: String,
    pub tenant: String,
    pub template_id: String,
    pub output_format: String,
    pub template_description: String,
    /// The requested filters as JSON text: never queried, and JSON text keeps arbitrary field
    /// names (dots, `$`) and number representations exactly.
    pub filters_json: String,
    /// `Processing` / `Finished` / `Partial` / `Error` (earlier builds wrote `Errored`; it is
    /// still read, and every filter on `Error` matches both spellings).
    pub status: String,
    pub sections: Vec<SectionDoc>,
    pub error_code: Option<String>,
    /// Absent in documents written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render_failure: Option<RenderFailureDoc>,
    pub artifact_key: Option<String>,
    pub artifact_size: Option<i64>,
    pub completed_at: Option<BsonDateTime>,
    pub version: i64,
    pub created_at: BsonDateTime,
    pub updated_at: BsonDateTime,
}

impl ReportDoc {
    pub(crate) fn from_record(r: &Report) -> Result<Self, StoreError> {
        let filters_json = serde_json::to_string(&r.filters)
            .map_err(|e| StoreError::Unavailable(format!("report filters: {e}")))?;
        Ok(Self {
            id: r.id.to_string(),
            tenant: r.tenant.to_string(),
            template_id: r.template_id.to_string(),
            output_format: r.output_format.as_str().to_owned(),
            template_description: r.template_description.clone(),
            filters_json,
            status: r.status.as_str().to_owned(),
            sections: r
                .sections
                .iter()
                .map(|(source, s)| SectionDoc {
                    source: source.clone(),
                    ok: s.ok,
                    error_code: s.error_code.clone(),
                })
                .collect(),
            error_code: r.error_code.map(|c| c.as_str().to_owned()),
            render_failure: r.render_failure.as_ref().map(RenderFailureDoc::from_record),
            artifact_key: r.artifact_key.clone(),
            artifact_size: r
                .artifact_size
                .map(|s| to_i64(s, "artifact_size"))
                .transpose()?,
            completed_at: opt(r.completed_at),
            version: to_i64(r.version, "version")?,
            created_at: floor_ms(r.created_at),
            updated_at: floor_ms(r.updated_at),
        })
    }

    pub(crate) fn into_record(self) -> Result<Report, StoreError> {
        Ok(Report {
            id: parse_id(&self.id, "report id")?,
            tenant: tenant(&self.tenant)?,
            template_id: parse_id(&self.template_id, "template id")?,
            output_format: output_format(&self.output_format)?,
            template_description: self.template_description,
            filters: serde_json::from_str(&self.filters_json)
                .map_err(|_| corrupt("report filters"))?,
            status: ReportStatus::parse_stored(&self.status)
                .ok_or_else(|| corrupt("report status"))?,
            sections: self
                .sections
                .into_iter()
                .map(|s| {
                    (
                        s.source,
                        SectionOutcome {
                            ok: s.ok,
                            error_code: s.error_code,
                        },
                    )
                })
                .collect(),
            error_code: self
                .error_code
                .as_deref()
                .map(error_code_back)
                .transpose()?,
            render_failure: self.render_failure.and_then(RenderFailureDoc::into_record),
            artifact_key: self.artifact_key,
            artifact_size: self
                .artifact_size
                .map(|s| to_u64(s, "artifact_size"))
                .transpose()?,
            completed_at: opt_back(self.completed_at),
            version: to_u64(self.version, "version")?,
            created_at: from_bson(self.created_at),
            updated_at: from_bson(self.updated_at),
        })
    }
}

// ---------------------------------------------------------------------------------------------
// outbox

/// Stored name of an outbox status.
pub(crate) fn status_name(s: OutboxStatus) -> &'static str {
    match s {
        OutboxStatus::Pending => "pending",
        OutboxStatus::Published => "published",
        OutboxStatus::Parked => "parked",
    }
}

fn status_back(raw: &str) -> Result<OutboxStatus, StoreError> {
    match raw {
        "pending" => Ok(OutboxStatus::Pending),
        "published" => Ok(OutboxStatus::Published),
        "parked" => Ok(OutboxStatus::Parked),
        _ => Err(corrupt("outbox status")),
    }
}

/// The event of an outbox row, complete, so a replay publishes exactly what was committed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct EventDoc {
    /// `ce-id`.
    pub id: String,
    /// Definition key, e.g. `report.finished`.
    pub key: String,
    pub tenant: String,
    pub subject: String,
    /// `ce-time` as RFC 3339 with every fractional digit: the event time is replayed
    /// byte-identical, so it is not rounded to milliseconds like the other instants.
    pub time: String,
    /// The payload as JSON text (exact key order and number representation).
    pub payload_json: String,
    /// `ce-sequence` (absent on rows of builds before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence: Option<i64>,
    /// W3C `traceparent` of the change that emitted the event (≤ 512 bytes, validated on the
    /// way back; absent when telemetry was off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// W3C `tracestate` (≤ 512 bytes), with `traceparent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracestate: Option<String>,
}

/// Collection `outbox`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct OutboxDoc {
    #[serde(rename = "_id")]
    pub id: String,
    pub tenant: String,
    pub event: EventDoc,
    /// Ordering key.
    pub aggregate: String,
    /// Position of the row in its aggregate's commit order (from `outbox_sequences`).
    pub agg_seq: i64,
    /// Position of the row in its unit of work (orders rows with equal `created_at`).
    pub pos: i64,
    /// `pending` / `published` / `parked`.
    pub status: String,
    pub attempts: i64,
    pub last_error: Option<String>,
    pub available_at: BsonDateTime,
    pub lease_token: Option<String>,
    pub lease_owner: Option<String>,
    pub lease_until: Option<BsonDateTime>,
    pub created_at: BsonDateTime,
    /// Set when published; the TTL index deletes the row `retention` after it.
    pub published_at: Option<BsonDateTime>,
    /// Revision: 0 on insert, + 1 on every update (claims compare-and-set on it).
    #[serde(default)]
    pub rev: i64,
    /// Set when parked, cleared by a redrive (absent on rows of builds before it existed).
    #[serde(default)]
    pub parked_at: Option<BsonDateTime>,
}

/// The event of a parked row as listed: [`EventDoc`] without its payload (never read).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ParkedEventDoc {
    pub id: String,
    pub key: String,
    pub subject: String,
}

/// A parked row as [`list_parked`](reporter_ports::ports::Outbox::list_parked) reads it:
/// the projection [`ParkedDoc::PROJECTION`] of an [`OutboxDoc`], payload left out.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ParkedDoc {
    #[serde(rename = "_id")]
    pub id: String,
    pub tenant: String,
    pub event: ParkedEventDoc,
    pub aggregate: String,
    pub attempts: i64,
    pub last_error: Option<String>,
    pub created_at: BsonDateTime,
    #[serde(default)]
    pub parked_at: Option<BsonDateTime>,
}

impl ParkedDoc {
    /// The fields read (the payload, the trace and the lease are not).
    pub(crate) fn projection() -> mongodb::bson::Document {
        mongodb::bson::doc! {
            "_id": 1, "tenant": 1, "event.id": 1, "event.key": 1, "event.subject": 1,
            "aggregate": 1, "attempts": 1, "last_error": 1, "created_at": 1, "parked_at": 1,
        }
    }

    pub(crate) fn into_parked(self) -> Result<ParkedEvent, StoreError> {
        Ok(ParkedEvent {
            id: parse_id(&self.id, "outbox id")?,
            tenant: tenant(&self.tenant)?,
            key: EventKey::parse(&self.event.key).ok_or_else(|| corrupt("event key"))?,
            event_id: self.event.id,
            subject: self.event.subject,
            aggregate: self.aggregate,
            attempts: u32::try_from(self.attempts).map_err(|_| corrupt("attempts"))?,
            reason: self.last_error,
            parked_at: opt_back(self.parked_at),
            created_at: from_bson(self.created_at),
        })
    }
}

impl OutboxDoc {
    pub(crate) fn from_record(
        r: &OutboxRecord,
        agg_seq: i64,
        pos: i64,
    ) -> Result<Self, StoreError> {
        let payload_json = r.event.payload.as_str().to_owned();
        Ok(Self {
            id: r.id.to_string(),
            tenant: r.tenant.to_string(),
            event: EventDoc {
                id: r.event.id.clone(),
                key: r.event.key.key(),
                tenant: r.event.tenant.to_string(),
                subject: r.event.subject.clone(),
                time: r
                    .event
                    .time
                    .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
                payload_json,
                sequence: r
                    .event
                    .sequence
                    .map(|s| i64::try_from(s).unwrap_or(i64::MAX)),
                traceparent: r.event.trace.as_ref().map(|t| t.traceparent().to_owned()),
                tracestate: r
                    .event
                    .trace
                    .as_ref()
                    .and_then(|t| t.tracestate().map(str::to_owned)),
            },
            aggregate: r.aggregate.clone(),
            agg_seq,
            pos,
            status: status_name(r.status).to_owned(),
            attempts: i64::from(r.attempts),
            last_error: r.last_error.clone(),
            available_at: floor_ms(r.available_at),
            lease_token: r.lease.as_ref().map(|l| l.token.to_string()),
            lease_owner: r.lease.as_ref().map(|l| l.owner.clone()),
            lease_until: r.lease.as_ref().map(|l| floor_ms(l.until)),
            created_at: floor_ms(r.created_at),
            published_at: opt(r.published_at),
            rev: 0,
            parked_at: opt(r.parked_at),
        })
    }

    pub(crate) fn into_record(self) -> Result<OutboxRecord, StoreError> {
        let lease = match (self.lease_token, self.lease_owner, self.lease_until) {
            (Some(token), Some(owner), Some(until)) => Some(Lease {
                token: parse_id(&token, "lease token")?,
                owner,
                until: from_bson(until),
            }),
            _ => None,
        };
        let event = EventEnvelope {
            id: self.event.id,
            key: EventKey::parse(&self.event.key).ok_or_else(|| corrupt("event key"))?,
            tenant: tenant(&self.event.tenant)?,
            subject: self.event.subject,
            time: DateTime::parse_from_rfc3339(&self.event.time)
                .map_err(|_| corrupt("event time"))?
                .with_timezone(&Utc),
            payload: Payload::from_json_text(self.event.payload_json)
                .map_err(|_| corrupt("event payload"))?,
            sequence: self
                .event
                .sequence
                .map(|s| u64::try_from(s).map_err(|_| corrupt("event sequence")))
                .transpose()?,
            // An unreadable carrier only loses the trace link, never the event.
            trace: self.event.traceparent.as_deref().and_then(|tp| {
                reporter_ports::TraceCarrier::new(tp, self.event.tracestate.as_deref())
            }),
        };
        Ok(OutboxRecord {
            id: parse_id(&self.id, "outbox id")?,
            tenant: tenant(&self.tenant)?,
            event,
            aggregate: self.aggregate,
            status: status_back(&self.status)?,
            attempts: u32::try_from(self.attempts).map_err(|_| corrupt("attempts"))?,
            last_error: self.last_error,
            available_at: from_bson(self.available_at),
            lease,
            created_at: from_bson(self.created_at),
            published_at: opt_back(self.published_at),
            parked_at: opt_back(self.parked_at),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reporter_contract::fixtures::{day, report, tenant_a};
    use reporter_ports::TemplateId;

    #[test]
    fn a_report_s_render_failure_is_stored_and_read_back() {
        let mut r = report(&tenant_a(), TemplateId::new(), day(0));
        r.status = ReportStatus::Error;
        r.error_code = Some(ReportErrorCode::ReportGenerationFailed);
        r.render_failure = Some(RenderFailure {
            cause: RenderCause::FilterFailed,
            line: Some(3),
        });
        let doc = ReportDoc::from_record(&r).unwrap();
        assert_eq!(doc.clone().into_record().unwrap(), r);
        // A cause a later build wrote reads as no render failure; documents written before
        // the field existed read as none.
        let mut later = doc.clone();
        later.render_failure = Some(RenderFailureDoc {
            cause: "from_the_future".into(),
            line: Some(1),
        });
        assert_eq!(later.into_record().unwrap().render_failure, None);
        let mut json = serde_json::to_value(&doc).unwrap();
        json.as_object_mut().unwrap().remove("render_failure");
        let old: ReportDoc = serde_json::from_value(json).unwrap();
        assert_eq!(old.render_failure, None);
    }
}
