//! Event publication to a real RabbitMQ (`RABBITMQ_URI`), end to end: real API calls and real
//! report runs emit every event key, each seen on the wire by a tail queue bound before
//! the actions, with the seed's routing key, AMQP properties, `ce-*` header table and a
//! schema-valid payload the CloudEvents SDK decodes. Unroutable events land in the alternate
//! exchange's durable queue, and the manifest does not change with publication on.
use crate::common;

use common::*;
use futures_util::StreamExt;
use poem::http::StatusCode;
use reporter_adapter_rabbitmq::tail::{Tail, TailedEvent, tail};
use reporter_contract::services::{service_url, unique_name};
use reporter_ports::TenantId;
use reporter_ports::events::{EventKey, deterministic_event_id};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;
use tokio::time::Instant;

/// The broker, or `None` (test skipped) when `RABBITMQ_URI` is unset.
fn rabbit() -> Option<String> {
    service_url("RABBITMQ_URI", "RabbitMQ")
}

/// A small, fully known data source `ledger`.
fn ledger_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("reporter-ledger-{}", uuid::Uuid::now_v7()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("entries.csv"),
        "id,account,amount,kind\n1,A,10.50,credit\n2,B,3.25,debit\n3,A,1.00,debit\n",
    )
    .unwrap();
    dir
}

/// `ledger` plus `down`, a PostgreSQL source nobody listens for.
fn env_for(dir: &std::path::Path) -> Vec<(String, String)> {
    vec![
        ("DATASOURCE_LEDGER_TYPE".into(), "file".into()),
        ("DATASOURCE_LEDGER_PATH".into(), dir.display().to_string()),
        ("DATASOURCE_DOWN_TYPE".into(), "postgresql".into()),
        ("DATASOURCE_DOWN_HOST".into(), "127.0.0.1".into()),
        ("DATASOURCE_DOWN_PORT".into(), "1".into()),
        ("DATASOURCE_DOWN_DATABASE".into(), "nothing".into()),
    ]
}

const TXT: &str = "{% for e in ledger.entries %}{{ e.id }} {{ e.account }} {{ e.amount }}\n{% endfor %}total={{ ledger.entries|sum:\"amount\" }}";

/// Reads the tail until `done` holds or `within` elapses; answers what arrived.
async fn collect(
    tail: &mut Tail,
    within: Duration,
    mut done: impl FnMut(&[TailedEvent]) -> bool,
) -> Vec<TailedEvent> {
    let end = Instant::now() + within;
    let mut got = Vec::new();
    while !done(&got) {
        match tokio::time::timeout_at(end, tail.next()).await {
            Ok(Some(Ok(e))) => got.push(e),
            Ok(Some(Err(e))) => panic!("tail failed: {e}"),
            Ok(None) => panic!("tail ended"),
            Err(_) => break,
        }
    }
    got
}

fn key_of(routing_key: &str) -> EventKey {
    *EventKey::ALL
        .iter()
        .find(|k| k.key() == routing_key)
        .unwrap_or_else(|| panic!("routing key {routing_key} is outside the manifest"))
}

/// The seed's ten headers and the `sequence` extension.
const CE_HEADERS: [&str; 11] = [
    "ce-specversion",
    "ce-id",
    "ce-source",
    "ce-type",
    "ce-time",
    "ce-subject",
    "ce-resourcetype",
    "ce-eventtype",
    "ce-schemaversion",
    "ce-tenantid",
    "ce-sequence",
];

/// Every check the seed makes on one message; answers its payload.
fn check_wire(e: &TailedEvent) -> Value {
    let key = key_of(&e.routing_key);
    let k = key.key();
    let ctx = format!("{k} (headers {:?})", e.headers);
    assert_eq!(e.content_type.as_deref(), Some("application/json"), "{ctx}");
    assert_eq!(e.delivery_mode, Some(2), "persistent: {ctx}");
    let names: BTreeSet<&str> = e.headers.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        CE_HEADERS.into_iter().collect::<BTreeSet<_>>(),
        "exactly the seed's header table and ce-sequence: {ctx}"
    );
    let h = &e.headers;
    let (resource, event_type) = k.split_once('.').unwrap();
    assert_eq!(h["ce-specversion"], "1.0", "{ctx}");
    assert!(!h["ce-id"].is_empty(), "{ctx}");
    assert_eq!(h["ce-source"], "reporter", "{ctx}");
    assert_eq!(h["ce-type"], format!("studio.lerian.reporter.{k}"), "{ctx}");
    assert!(
        chrono::DateTime::parse_from_rfc3339(&h["ce-time"]).is_ok(),
        "RFC 3339 ce-time: {ctx}"
    );
    assert!(!h["ce-subject"].is_empty(), "{ctx}");
    assert_eq!(h["ce-resourcetype"], resource, "{ctx}");
    assert_eq!(h["ce-eventtype"], event_type, "{ctx}");
    assert_eq!(h["ce-schemaversion"], "1.0.0", "{ctx}");
    assert_eq!(h["ce-tenantid"], "default", "{ctx}");
    assert!(
        h["ce-sequence"].len() == 20 && h["ce-sequence"].bytes().all(|b| b.is_ascii_digit()),
        "20-digit ce-sequence: {ctx}"
    );
    let payload: Value = serde_json::from_slice(&e.payload)
        .unwrap_or_else(|err| panic!("{ctx}: payload is not JSON: {err}"));
    let schema = key.payload_schema();
    let validator = jsonschema::validator_for(&schema).expect("valid schema");
    let errors: Vec<String> = validator
        .iter_errors(&payload)
        .map(|x| x.to_string())
        .collect();
    assert!(
        errors.is_empty(),
        "{k} payload {payload} violates its schema: {errors:?}"
    );
    // The CloudEvents SDK decodes the message to the same event.
    let event = e
        .event
        .as_ref()
        .unwrap_or_else(|err| panic!("{ctx}: the CloudEvents SDK rejects it: {err}"));
    let sdk = serde_json::to_value(event).expect("event as JSON");
    assert_eq!(sdk["specversion"], "1.0", "{sdk}");
    assert_eq!(sdk["id"], h["ce-id"].as_str(), "{sdk}");
    assert_eq!(sdk["source"], "reporter", "{sdk}");
    assert_eq!(sdk["type"], h["ce-type"].as_str(), "{sdk}");
    assert_eq!(sdk["subject"], h["ce-subject"].as_str(), "{sdk}");
    assert_eq!(sdk["datacontenttype"], "application/json", "{sdk}");
    assert_eq!(sdk["tenantid"], "default", "{sdk}");
    // The SDK keeps binary-mode data as bytes (`data_base64` in its JSON form).
    let data = match (&sdk["data"], sdk["data_base64"].as_str()) {
        (Value::Null, Some(b64)) => {
            use base64::Engine as _;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .expect("base64 data");
            serde_json::from_slice(&bytes).expect("JSON data")
        }
        (data, _) => data.clone(),
    };
    assert_eq!(data, payload, "{sdk}");
    payload
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_key_reaches_rabbitmq_with_the_seed_envelope() {
    let Some(uri) = rabbit() else { return };
    let started = std::time::Instant::now();
    let exchange = unique_name("reporter_e2e_events");
    let alternate = format!("{exchange}.unroutable");
    let _topology = RabbitTopology {
        queues: vec![alternate.clone()],
        exchanges: vec![exchange.clone(), alternate.clone()],
    };
    let dir = ledger_dir();
    let t = start_raw(rabbit_raw(&uri, &exchange, &alternate), env_for(&dir)).await;
    // The publisher declared the exchange at startup; bind the tail before any action.
    let mut tail = tail(&uri, &exchange, "#").await.expect("tail");
    let tok = token();

    let mut expected: Vec<(String, String)> = Vec::new();
    let mut exp = |k: &str, subject: &str| expected.push((k.to_owned(), subject.to_owned()));
    let tpl = t.upload_template("txt", TXT).await;
    exp("template.created", &tpl);
    let form = Form::new().text("description", "v2");
    let ct = form.content_type();
    t.client
        .patch(format!("/v1/templates/{tpl}"))
        .header("authorization", bearer(&tok))
        .content_type(ct)
        .body(form.into_body())
        .send()
        .await
        .assert_status_is_ok();
    exp("template.updated", &tpl);
    let finished = t.request_report(&tpl, json!({})).await;
    exp("report.requested", &finished);
    assert_eq!(t.wait_report(&finished, 1200).await["status"], "Finished");
    exp("report.finished", &finished);
    let partial_tpl = t
        .upload_template("txt", "{{ ledger.entries.0.id }}{{ down.t.0.f }}")
        .await;
    exp("template.created", &partial_tpl);
    let partial = t.request_report(&partial_tpl, json!({})).await;
    exp("report.requested", &partial);
    assert_eq!(t.wait_report(&partial, 1200).await["status"], "Partial");
    exp("report.partial", &partial);
    let errored_tpl = t.upload_template("txt", "{{ down.t.0.f }}").await;
    exp("template.created", &errored_tpl);
    let errored = t.request_report(&errored_tpl, json!({})).await;
    exp("report.requested", &errored);
    assert_eq!(t.wait_report(&errored, 1200).await["status"], "Error");
    exp("report.errored", &errored);
    let d = t.create_deadline(&tok, deadline_body(4)).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    exp("deadline.created", &d);
    t.patch_json(&tok, &format!("/v1/deadlines/{d}"), json!({"name": "x"}))
        .await
        .assert_status_is_ok();
    exp("deadline.updated", &d);
    for (delivered, key) in [
        (true, "deadline.delivered"),
        (false, "deadline.delivery_reverted"),
    ] {
        t.patch_json(
            &tok,
            &format!("/v1/deadlines/{d}/deliver"),
            json!({"delivered": delivered}),
        )
        .await
        .assert_status_is_ok();
        exp(key, &d);
    }
    t.delete(&tok, &format!("/v1/deadlines/{d}"))
        .await
        .assert_status(StatusCode::NO_CONTENT);
    exp("deadline.deleted", &d);
    t.delete(&tok, &format!("/v1/templates/{tpl}"))
        .await
        .assert_status_is_ok();
    exp("template.deleted", &tpl);
    let actions_done = started.elapsed();

    let n = expected.len();
    let got = collect(&mut tail, Duration::from_secs(60), |g| {
        g.iter()
            .map(|e| e.headers.get("ce-id").cloned().unwrap_or_default())
            .collect::<BTreeSet<_>>()
            .len()
            >= n
    })
    .await;
    // Anything else still on its way (an event outside the expectation) arrives meanwhile.
    let mut got = got;
    got.extend(collect(&mut tail, Duration::from_millis(750), |_| false).await);
    let keys: BTreeSet<String> = got.iter().map(|e| e.routing_key.clone()).collect();
    let manifest: BTreeSet<String> = EventKey::ALL.iter().map(|k| k.key()).collect();
    assert_eq!(keys, manifest, "every manifest key arrived, and no other");

    let tenant = TenantId::default_tenant();
    let mut by_id: BTreeMap<String, &TailedEvent> = BTreeMap::new();
    let mut duplicates = 0;
    for e in &got {
        let payload = check_wire(e);
        let key = key_of(&e.routing_key);
        let id = e.headers["ce-id"].clone();
        let subject = &e.headers["ce-subject"];
        match key {
            EventKey::ReportFinished | EventKey::ReportPartial | EventKey::ReportErrored => {
                assert_eq!(
                    id,
                    deterministic_event_id(key, &tenant, subject, ""),
                    "terminal report facts carry deterministic ids"
                );
            }
            _ => {}
        }
        if key == EventKey::ReportFinished {
            assert_eq!(
                payload["artifact_object_key"],
                format!("reports/{tpl}/{finished}.txt")
            );
            assert_eq!(payload["status"], "Finished");
        }
        if key == EventKey::ReportPartial {
            assert_eq!(payload["status"], "Partial");
            assert!(payload["failed_section_count"].as_u64().unwrap_or(0) >= 1);
        }
        if key == EventKey::ReportErrored {
            // The seed: every field of report.finished but the artifact ones, plus the code
            // and its summary; the status as the original spells it.
            let fields: BTreeSet<&str> = payload
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(
                fields,
                BTreeSet::from([
                    "report_id",
                    "template_id",
                    "output_format",
                    "status",
                    "completed_at",
                    "duration_ms",
                    "section_count",
                    "error_code",
                    "error_summary"
                ]),
                "{payload}"
            );
            assert_eq!(payload["status"], "Error", "{payload}");
            assert!(payload["error_code"].is_string(), "{payload}");
        }
        if let Some(prev) = by_id.insert(id, e) {
            duplicates += 1;
            assert_eq!(
                prev.routing_key, e.routing_key,
                "a duplicate shares its event"
            );
            assert_eq!(prev.payload, e.payload, "a duplicate shares its event");
        }
    }
    let mut seen: Vec<(String, String)> = by_id
        .values()
        .map(|e| (e.routing_key.clone(), e.headers["ce-subject"].clone()))
        .collect();
    seen.sort();
    expected.sort();
    assert_eq!(seen, expected, "one event per action, on the right subject");
    // Everything was routed to the tail: the alternate exchange's queue stays empty.
    assert_eq!(rabbit_queue_depth(&alternate), Some(0));
    reporter_contract::figure!(
        "every key over RabbitMQ: {} messages ({} distinct, {duplicates} duplicates); actions {:?}, total {:?}",
        got.len(),
        by_id.len(),
        actions_done,
        started.elapsed()
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unroutable_events_are_kept_in_the_alternate_exchange_queue() {
    let Some(uri) = rabbit() else { return };
    let exchange = unique_name("reporter_e2e_unroutable");
    let alternate = unique_name("reporter_e2e_ae");
    let _topology = RabbitTopology {
        queues: vec![alternate.clone()],
        exchanges: vec![exchange.clone(), alternate.clone()],
    };
    let t = start_raw(rabbit_raw(&uri, &exchange, &alternate), Vec::new()).await;
    // The publisher declared the alternate exchange and its durable queue; nothing is bound to
    // the events exchange. A tail on the (fanout) alternate exchange sees the copies.
    assert_eq!(
        rabbit_queue_depth(&alternate),
        Some(0),
        "the publisher declared the AE queue"
    );
    let mut ae_tail = tail(&uri, &alternate, "#").await.expect("tail on the AE");
    let tok = token();
    let tpl = t.create_template(&tok, "nobody listens").await;
    let d = t.create_deadline(&tok, deadline_body(3)).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    t.patch_json(
        &tok,
        &format!("/v1/deadlines/{d}/deliver"),
        json!({"delivered": true}),
    )
    .await
    .assert_status_is_ok();
    let mut expected = vec![
        ("deadline.created".to_owned(), d.clone()),
        ("deadline.delivered".to_owned(), d.clone()),
        ("template.created".to_owned(), tpl.clone()),
    ];
    expected.sort();
    let got = collect(&mut ae_tail, Duration::from_secs(30), |g| g.len() >= 3).await;
    let mut seen: Vec<(String, String)> = got
        .iter()
        .map(|e| {
            check_wire(e);
            (e.routing_key.clone(), e.headers["ce-subject"].clone())
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen, expected,
        "unroutable events keep their routing key and envelope"
    );
    // The durable AE queue holds one message per event.
    let mut depth = None;
    for _ in 0..20 {
        depth = rabbit_queue_depth(&alternate);
        if depth == Some(3) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(depth, Some(3), "the alternate exchange's queue keeps them");
    // The broker counted them as routed: the direct publish succeeded, nothing is pending.
    let metrics = t.metrics().await;
    assert!(
        metrics.contains(
            r#"reporter_events_emitted_total{event="template.created",outcome="published"} 1"#
        ),
        "{metrics}"
    );
    let stats = t
        .app
        .ports()
        .outbox
        .stats(chrono::Utc::now())
        .await
        .unwrap();
    assert_eq!(stats.pending, 0);
    assert_eq!(stats.parked, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_manifest_answers_identically_with_publication_to_rabbitmq() {
    let Some(uri) = rabbit() else { return };
    let exchange = unique_name("reporter_e2e_manifest");
    let alternate = format!("{exchange}.unroutable");
    let _topology = RabbitTopology {
        queues: vec![alternate.clone()],
        exchanges: vec![exchange.clone(), alternate.clone()],
    };
    let on = start_raw(rabbit_raw(&uri, &exchange, &alternate), Vec::new()).await;
    let off = start().await;
    let memory = start_with(Options {
        streaming: true,
        ..Default::default()
    })
    .await;
    let mut bodies = Vec::new();
    for t in [&on, &off, &memory] {
        let resp = t.get(&token(), "/v1/streaming/events").await;
        resp.assert_status_is_ok();
        resp.assert_header("cache-control", "no-store");
        bodies.push(json(resp).await);
    }
    assert_eq!(bodies[0], bodies[1], "publication on vs off");
    assert_eq!(bodies[0], bodies[2], "RabbitMQ vs in-memory broker");
    assert_eq!(
        bodies[0]["events"].as_array().unwrap().len(),
        EventKey::COUNT
    );
    assert!(bodies[0].get("routes").is_none(), "no broker topology");
    assert!(
        !bodies[0].to_string().contains(&exchange),
        "the exchange name is not disclosed"
    );
    expect_error(
        on.client.get("/v1/streaming/events").send().await,
        401,
        "TPL-0401",
    )
    .await;
}
