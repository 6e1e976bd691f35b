//! The CloudEvents binding, without a broker: the golden header table and round trips.
use chrono::{TimeZone, Utc};
use cloudevents::message::{Encoding, MessageDeserializer};
use cloudevents::{AttributesReader, Data, Event, EventBuilder, EventBuilderV10};
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use reporter_adapter_rabbitmq::cloudevents::{AmqpMessage, envelope_to_event, envelope_to_message};
use reporter_ports::TenantId;
use reporter_ports::events::{EventEnvelope, EventKey};
use serde_json::json;

fn fixed_envelope() -> EventEnvelope {
    EventEnvelope {
        id: "5f0c6a3e-2d7b-5a8e-9c41-7e2b1d0f9a33".into(),
        key: EventKey::ReportFinished,
        tenant: TenantId::parse("tenant-a").expect("tenant"),
        subject: "019826f4-6a9c-7b31-9d40-2f1e8c5a4b77".into(),
        time: Utc
            .with_ymd_and_hms(2026, 7, 29, 14, 22, 8)
            .single()
            .expect("time")
            + chrono::Duration::milliseconds(123),
        payload: json!({
            "report_id": "019826f4-6a9c-7b31-9d40-2f1e8c5a4b77",
            "template_id": "8f2c1a9e-4b30-4c02-9a1b-2d5e6f7a1c33",
            "output_format": "pdf",
            "status": "Finished",
            "artifact_object_key": "reports/8f2c1a9e-4b30-4c02-9a1b-2d5e6f7a1c33/019826f4-6a9c-7b31-9d40-2f1e8c5a4b77.pdf",
            "artifact_content_type": "application/pdf",
            "completed_at": "2026-07-29T14:22:08.000Z",
            "duration_ms": 8421,
            "section_count": 3
        })
        .into(),
        sequence: Some(42),
        trace: None,
    }
}

/// Every header as (name, text), asserting each is an AMQP LongString.
fn table(h: &FieldTable) -> Vec<(String, String)> {
    h.inner()
        .iter()
        .map(|(k, v)| match v {
            AMQPValue::LongString(s) => (
                k.as_str().to_owned(),
                String::from_utf8(s.as_bytes().to_vec()).expect("utf8"),
            ),
            other => panic!("header {k} is not a LongString: {other:?}"),
        })
        .collect()
}

#[test]
fn golden_header_table_of_a_fixed_envelope() {
    let m = envelope_to_message(&fixed_envelope());
    let want: Vec<(String, String)> = [
        ("ce-eventtype", "finished"),
        ("ce-id", "5f0c6a3e-2d7b-5a8e-9c41-7e2b1d0f9a33"),
        ("ce-resourcetype", "report"),
        ("ce-schemaversion", "1.0.0"),
        ("ce-sequence", "00000000000000000042"),
        ("ce-source", "reporter"),
        ("ce-specversion", "1.0"),
        ("ce-subject", "019826f4-6a9c-7b31-9d40-2f1e8c5a4b77"),
        ("ce-tenantid", "tenant-a"),
        ("ce-time", "2026-07-29T14:22:08.123Z"),
        ("ce-type", "studio.lerian.reporter.report.finished"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    assert_eq!(table(&m.headers), want);
    assert_eq!(m.content_type.as_deref(), Some("application/json"));
    assert!(!m.headers.contains_key("ce-datacontenttype"));
    let body: serde_json::Value = serde_json::from_slice(&m.body).expect("json body");
    assert_eq!(body, fixed_envelope().payload.value());
    assert_eq!(
        m.body,
        fixed_envelope().payload.as_bytes(),
        "the payload's bytes, verbatim"
    );
}

#[test]
fn every_key_maps_to_its_type_resource_and_event() {
    for key in EventKey::ALL {
        let e = EventEnvelope {
            key,
            ..fixed_envelope()
        };
        let t: std::collections::BTreeMap<_, _> = table(&envelope_to_message(&e).headers)
            .into_iter()
            .collect();
        assert_eq!(
            t["ce-type"],
            format!("studio.lerian.reporter.{}", key.key())
        );
        assert_eq!(t["ce-resourcetype"], key.resource_type());
        assert_eq!(t["ce-eventtype"], key.event_type());
        assert_eq!(t.len(), 11, "the seed's ten headers and ce-sequence");
    }
}

/// A row written by a build before `ce-sequence` existed is published with exactly the
/// seed's ten headers.
#[test]
fn an_envelope_without_a_sequence_has_the_seeds_ten_headers() {
    let e = EventEnvelope {
        sequence: None,
        ..fixed_envelope()
    };
    let names: Vec<String> = table(&envelope_to_message(&e).headers)
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(names.len(), 10, "{names:?}");
    assert!(!names.iter().any(|n| n == "ce-sequence"));
}

/// The data of an event as JSON, whatever variant carries it (binary-mode decoding yields
/// `Data::Binary` for what was encoded from `Data::Json`).
fn data_json(e: &Event) -> serde_json::Value {
    match e.data() {
        Some(Data::Json(v)) => v.clone(),
        Some(Data::Binary(b)) => serde_json::from_slice(b).expect("json bytes"),
        Some(Data::String(s)) => serde_json::from_str(s).expect("json text"),
        None => serde_json::Value::Null,
    }
}

fn assert_same_event(a: &Event, b: &Event) {
    assert_eq!(a.specversion(), b.specversion());
    assert_eq!(a.id(), b.id());
    assert_eq!(a.source(), b.source());
    assert_eq!(a.ty(), b.ty());
    assert_eq!(a.subject(), b.subject());
    assert_eq!(a.time(), b.time());
    assert_eq!(a.datacontenttype(), b.datacontenttype());
    let mut ea: Vec<_> = a
        .iter_extensions()
        .map(|(k, v)| (k.to_owned(), v.to_string()))
        .collect();
    let mut eb: Vec<_> = b
        .iter_extensions()
        .map(|(k, v)| (k.to_owned(), v.to_string()))
        .collect();
    ea.sort();
    eb.sort();
    assert_eq!(ea, eb);
    assert_eq!(data_json(a), data_json(b));
}

#[test]
fn envelope_round_trips_through_the_sdk() {
    let env = fixed_envelope();
    let expected = envelope_to_event(&env).expect("event");
    let msg = envelope_to_message(&env);
    assert_eq!(msg.encoding(), Encoding::BINARY);
    let decoded = MessageDeserializer::into_event(msg).expect("decode");
    // The pitfall: binary decoding gives Data::Binary, so whole-event equality fails.
    assert!(matches!(decoded.data(), Some(Data::Binary(_))));
    assert_ne!(decoded, expected);
    assert_same_event(&decoded, &expected);
    assert_eq!(
        decoded
            .extension("tenantid")
            .map(|v| v.to_string())
            .as_deref(),
        Some("tenant-a")
    );
    assert_eq!(decoded.datacontenttype(), Some("application/json"));
}

#[test]
fn sdk_encoding_of_the_envelope_event_is_the_same_message() {
    let env = fixed_envelope();
    let via_sdk = AmqpMessage::from_event(envelope_to_event(&env).expect("event")).expect("encode");
    assert_eq!(via_sdk, envelope_to_message(&env));
}

fn sdk_event() -> Event {
    EventBuilderV10::new()
        .id("abc")
        .source("//lerian.reporter")
        .ty("studio.lerian.reporter.report.errored")
        .subject("r1")
        .time(
            Utc.with_ymd_and_hms(2030, 1, 1, 0, 0, 0)
                .single()
                .expect("time"),
        )
        .extension("tenantid", "t1")
        .extension("flag", true)
        .extension("count", 42i64)
        .data("application/json", json!({"a": 1}))
        .build()
        .expect("event")
}

#[test]
fn booleans_and_integers_keep_their_types_and_round_trip() {
    let msg = AmqpMessage::from_event(sdk_event()).expect("encode");
    assert_eq!(
        msg.headers.inner().get("ce-flag"),
        Some(&AMQPValue::Boolean(true))
    );
    assert_eq!(
        msg.headers.inner().get("ce-count"),
        Some(&AMQPValue::LongLongInt(42))
    );
    assert_eq!(
        msg.headers.inner().get("ce-time"),
        Some(&AMQPValue::LongString(LongString::from(
            "2030-01-01T00:00:00.000Z"
        )))
    );
    let back = MessageDeserializer::into_event(msg).expect("decode");
    assert_same_event(&back, &sdk_event());
}

fn with_prefix(prefix: &str) -> AmqpMessage {
    let src = envelope_to_message(&fixed_envelope());
    let mut headers = FieldTable::default();
    for (k, v) in src.headers.inner() {
        let name = k.as_str().trim_start_matches("ce-");
        headers.insert(ShortString::from(format!("{prefix}{name}")), v.clone());
    }
    AmqpMessage::from_parts(Some(headers), src.content_type, src.body)
}

#[test]
fn reads_the_amqp_binding_prefixes_too() {
    let expected = envelope_to_event(&fixed_envelope()).expect("event");
    for prefix in ["cloudEvents_", "cloudEvents:"] {
        let msg = with_prefix(prefix);
        assert_eq!(msg.encoding(), Encoding::BINARY, "{prefix}");
        let decoded = MessageDeserializer::into_event(msg).expect("decode");
        assert_same_event(&decoded, &expected);
    }
}

#[test]
fn content_type_property_wins_over_a_datacontenttype_header() {
    let mut msg = envelope_to_message(&fixed_envelope());
    msg.headers.insert(
        "ce-datacontenttype".into(),
        AMQPValue::LongString(LongString::from("text/plain")),
    );
    let decoded = MessageDeserializer::into_event(msg.clone()).expect("decode");
    assert_eq!(decoded.datacontenttype(), Some("application/json"));
    msg.content_type = None;
    let decoded = MessageDeserializer::into_event(msg).expect("decode");
    assert_eq!(decoded.datacontenttype(), Some("text/plain"));
}

#[test]
fn structured_mode_round_trips() {
    let msg = AmqpMessage::from_event_structured(sdk_event()).expect("encode");
    assert_eq!(
        msg.content_type.as_deref(),
        Some("application/cloudevents+json")
    );
    assert!(msg.headers.inner().is_empty());
    assert_eq!(msg.encoding(), Encoding::STRUCTURED);
    let back = MessageDeserializer::into_event(msg).expect("decode");
    assert_eq!(back, sdk_event());
}

#[test]
fn a_plain_message_is_not_a_cloudevent() {
    let msg = AmqpMessage::from_parts(None, Some("application/json".into()), b"{}".to_vec());
    assert_eq!(msg.encoding(), Encoding::UNKNOWN);
    assert!(MessageDeserializer::into_event(msg).is_err());
}

/// Trace context travels as lib-streaming sends it: plain lower-case `traceparent` /
/// `tracestate` transport headers after the `ce-*` ones (it is not a CloudEvents attribute);
/// an envelope without one gets neither.
#[test]
fn trace_context_rides_as_plain_headers_after_the_ce_ones() {
    let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let e = EventEnvelope {
        trace: reporter_ports::TraceCarrier::new(tp, Some("rojo=00f067aa0ba902b7")),
        ..fixed_envelope()
    };
    let t = table(&envelope_to_message(&e).headers);
    let names: Vec<&str> = t.iter().map(|(k, _)| k.as_str()).collect();
    let at = |n: &str| names.iter().position(|x| *x == n).expect(n);
    assert!(at("traceparent") > at("ce-tenantid") && at("tracestate") > at("ce-tenantid"));
    let map: std::collections::BTreeMap<_, _> = t.into_iter().collect();
    assert_eq!(map["traceparent"], tp);
    assert_eq!(map["tracestate"], "rojo=00f067aa0ba902b7");
    let plain = table(&envelope_to_message(&fixed_envelope()).headers);
    assert!(
        plain.iter().all(|(k, _)| !k.starts_with("trace")),
        "{plain:?}"
    );
}
