use super::catalog::EventKey;
use crate::tenant::TenantId;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// One event as Reporter stores it in the outbox and hands it to a publisher: everything needed
/// to build the CloudEvent (`ce-*` headers) and its JSON body, so a replay is byte-identical.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventEnvelope {
    /// `ce-id`.
    pub id: String,
    /// The definition.
    pub key: EventKey,
    /// `ce-tenantid`.
    pub tenant: TenantId,
    /// `ce-subject`: the id of the report, template or deadline.
    pub subject: String,
    /// `ce-time`.
    pub time: DateTime<Utc>,
    /// The JSON payload (snake_case keys), serialized once.
    pub payload: super::Payload,
    /// `ce-sequence` (the CloudEvents `sequence` extension): the resource's version after the
    /// change, so it grows with every event of one resource (with gaps: some changes emit no
    /// event). `None` only on rows written by builds before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence: Option<u64>,
    /// Trace context of the change that emitted the event (telemetry on): published as the
    /// plain `traceparent` / `tracestate` transport headers after the `ce-*` ones, and kept
    /// with an outbox row so a replay continues the trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<crate::TraceCarrier>,
}

impl EventEnvelope {
    /// The CloudEvents context attributes as binary-mode `ce-` headers, in the seed's table
    /// order. The data content type (`application/json`) travels as the message content type,
    /// not as a header.
    pub fn ce_headers(&self) -> Vec<(&'static str, String)> {
        vec![
            ("ce-specversion", super::CE_SPECVERSION.to_owned()),
            ("ce-id", self.id.clone()),
            ("ce-source", super::CE_SOURCE.to_owned()),
            ("ce-type", self.key.ce_type()),
            (
                "ce-time",
                self.time
                    .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            ),
            ("ce-subject", self.subject.clone()),
            ("ce-resourcetype", self.key.resource_type().to_owned()),
            ("ce-eventtype", self.key.event_type().to_owned()),
            ("ce-schemaversion", super::SCHEMA_VERSION.to_owned()),
            ("ce-tenantid", self.tenant.as_str().to_owned()),
        ]
        .into_iter()
        .chain(self.sequence.map(|s| ("ce-sequence", sequence_text(s))))
        .collect()
    }
}

/// A `ce-sequence` value: the number in decimal, zero-padded to 20 digits, so that ordering
/// the strings (what the CloudEvents `sequence` extension specifies) orders the numbers.
pub fn sequence_text(sequence: u64) -> String {
    format!("{sequence:020}")
}

/// Namespace of deterministic event ids: UUIDv5(URL namespace, `urn:studio.lerian.reporter:ce-id`).
pub fn event_id_namespace() -> Uuid {
    Uuid::new_v5(&Uuid::NAMESPACE_URL, b"urn:studio.lerian.reporter:ce-id")
}

/// Deterministic `ce-id` of a logical transition:
/// `UUIDv5(event_id_namespace(), "<definition key>|<tenant>|<subject>|<discriminator>")`.
///
/// The discriminator is empty for terminal report facts (a report has exactly one terminal
/// fact) and, for `deadline.delivered` / `deadline.delivery_reverted`, the payload's
/// `due_date` and `delivered_at` / `reverted_at` (RFC 3339, milliseconds, `Z`) joined by `|`.
pub fn deterministic_event_id(
    key: EventKey,
    tenant: &TenantId,
    subject: &str,
    discriminator: &str,
) -> String {
    let name = format!(
        "{}|{}|{}|{}",
        key.key(),
        tenant.as_str(),
        subject,
        discriminator
    );
    Uuid::new_v5(&event_id_namespace(), name.as_bytes())
        .hyphenated()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_ids_are_stable_and_distinct() {
        let t = TenantId::parse("default").unwrap();
        let a = deterministic_event_id(EventKey::ReportFinished, &t, "r1", "");
        assert_eq!(
            a,
            deterministic_event_id(EventKey::ReportFinished, &t, "r1", "")
        );
        assert_ne!(
            a,
            deterministic_event_id(EventKey::ReportErrored, &t, "r1", "")
        );
        assert_ne!(
            a,
            deterministic_event_id(
                EventKey::ReportFinished,
                &TenantId::parse("other").unwrap(),
                "r1",
                ""
            )
        );
        assert_eq!(Uuid::parse_str(&a).unwrap().get_version_num(), 5);
    }
}
