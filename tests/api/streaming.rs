//! Event streaming over HTTP with the in-memory broker: the manifest, the exact CloudEvents
//! header table, deterministic ids, schema-valid payloads, the breaker falling back to the
//! outbox, poison parking and redrive, and the atomicity of state + outbox.
use crate::common;

use common::*;
use reporter_ports::TenantId;
use reporter_ports::events::{EventEnvelope, EventKey, deterministic_event_id};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

async fn streaming() -> TestApp {
    start_with(Options {
        streaming: true,
        ..Default::default()
    })
    .await
}

/// Waits until the broker has recorded at least `n` deliveries.
async fn wait_for(t: &TestApp, n: usize) -> Vec<EventEnvelope> {
    let broker = t.broker.as_ref().expect("memory broker");
    for _ in 0..500 {
        let d = broker.deliveries();
        if d.len() >= n {
            return d;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!(
        "expected {n} deliveries, got {}: {:?}",
        broker.deliveries().len(),
        broker
            .deliveries()
            .iter()
            .map(|e| e.key.key())
            .collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn manifest_lists_every_definition_with_no_store() {
    for t in [start().await, streaming().await] {
        let resp = t.get(&token(), "/v1/streaming/events").await;
        resp.assert_status_is_ok();
        resp.assert_header("cache-control", "no-store");
        let m = json(resp).await;
        assert_eq!(m["version"], "1.0.0");
        assert_eq!(
            m["publisher"],
            json!({"serviceName": "reporter", "source": "reporter", "routePath": "/v1/streaming/events", "outboxSupported": true,
                   "appVersion": env!("CARGO_PKG_VERSION"), "libVersion": format!("reporter-streaming/{}", env!("CARGO_PKG_VERSION"))})
        );
        assert!(m.get("routes").is_none());
        let keys: Vec<&str> = m["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["key"].as_str().unwrap())
            .collect();
        assert_eq!(
            keys,
            EventKey::ALL
                .iter()
                .map(|k| k.key())
                .collect::<Vec<_>>()
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
        );
        let finished = &m["events"][4];
        assert_eq!(finished["eventKey"], "report.finished");
        assert_eq!(finished["resourceType"], "report");
        assert_eq!(finished["eventType"], "finished");
        assert_eq!(finished["class"], "fact");
        assert_eq!(finished["schemaVersion"], "1.0.0");
        assert_eq!(finished["deliveryProfile"], "Critical");
        // The seed's delivery table in lib-streaming's vocabulary: dead-letter handling of
        // routable failures is requested for every event (no route configures a DLQ).
        for e in m["events"].as_array().unwrap() {
            let expected = match e["deliveryProfile"].as_str().unwrap() {
                "Important" => {
                    json!({"enabled": true, "direct": "direct", "outbox": "fallback_on_circuit_open", "dlq": "on_routable_failure"})
                }
                "Critical" => {
                    json!({"enabled": true, "direct": "skip", "outbox": "always", "dlq": "on_routable_failure"})
                }
                other => panic!("unknown profile {other}"),
            };
            assert_eq!(e["defaultPolicy"], expected, "{}", e["key"]);
        }
        assert_eq!(
            finished["defaultPolicy"],
            json!({"enabled": true, "direct": "skip", "outbox": "always", "dlq": "on_routable_failure"})
        );
        assert_eq!(
            m["events"][0]["defaultPolicy"],
            json!({"enabled": true, "direct": "direct", "outbox": "fallback_on_circuit_open", "dlq": "on_routable_failure"})
        );
        assert!(finished["payloadSchema"]["properties"]["artifact_object_key"].is_object());
    }
    let t = start().await;
    expect_error(
        t.client.get("/v1/streaming/events").send().await,
        401,
        "TPL-0401",
    )
    .await;
    expect_error(
        t.get(
            &token_for(Some("default"), &["templates:read"]),
            "/v1/streaming/events",
        )
        .await,
        403,
        "TPL-0403",
    )
    .await;
}

#[tokio::test]
async fn the_header_table_is_exactly_the_seeds() {
    let t = streaming().await;
    let id = t.create_template(&token(), "headers").await;
    let d = wait_for(&t, 1).await;
    let e = &d[0];
    assert_eq!(e.key, EventKey::TemplateCreated);
    let headers: Vec<(&str, String)> = e.ce_headers();
    let names: Vec<&str> = headers.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names,
        [
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
            "ce-sequence"
        ],
        "the seed's table, then the sequence extension"
    );
    let h: BTreeMap<&str, String> = headers.into_iter().collect();
    assert_eq!(h["ce-specversion"], "1.0");
    assert_eq!(h["ce-source"], "reporter");
    assert_eq!(h["ce-type"], "studio.lerian.reporter.template.created");
    assert_eq!(h["ce-subject"], id);
    assert_eq!(h["ce-resourcetype"], "template");
    assert_eq!(h["ce-eventtype"], "created");
    assert_eq!(h["ce-schemaversion"], "1.0.0");
    assert_eq!(
        h["ce-tenantid"], "default",
        "single-tenant deployments stamp the tenant too"
    );
    assert!(chrono::DateTime::parse_from_rfc3339(&h["ce-time"]).is_ok());
    assert_eq!(
        h["ce-sequence"], "00000000000000000001",
        "a new template's version"
    );
    assert_eq!(
        uuid::Uuid::parse_str(&h["ce-id"])
            .unwrap()
            .get_version_num(),
        7,
        "template events get a fresh UUIDv7"
    );
    // The deliveries endpoint shows the same, with routing key and AMQP properties.
    let view = json(t.get(&token(), "/v1/streaming/deliveries").await).await;
    let item = &view["items"][0];
    assert_eq!(item["routingKey"], "template.created");
    assert_eq!(item["exchange"], "reporter.events");
    assert_eq!(item["contentType"], "application/json");
    assert_eq!(item["deliveryMode"], 2);
    assert_eq!(
        item["headers"]["ce-type"],
        "studio.lerian.reporter.template.created"
    );
    assert_eq!(item["payload"]["template_id"], id);
    // Not present without the in-memory broker.
    expect_error(
        start()
            .await
            .get(&token(), "/v1/streaming/deliveries")
            .await,
        404,
        "TPL-0404",
    )
    .await;
}

/// A tenant's page of deliveries counts only its own: another tenant's later traffic does not
/// shorten it, and the limit is checked.
#[tokio::test]
async fn deliveries_page_counts_only_the_callers_tenant() {
    let t = start_with(Options {
        streaming: true,
        multi_tenant: true,
        ..Default::default()
    })
    .await;
    let scopes = all_scopes();
    let a = token_for(Some("tenant-a"), &scopes);
    let b = token_for(Some("tenant-b"), &scopes);
    t.create_template(&a, "a-one").await;
    t.create_template(&a, "a-two").await;
    for n in 0..4 {
        t.create_template(&b, &format!("b-{n}")).await;
    }
    wait_for(&t, 6).await;
    let page = json(t.get(&a, "/v1/streaming/deliveries?limit=2").await).await;
    let tenants: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["headers"]["ce-tenantid"].as_str().unwrap())
        .collect();
    assert_eq!(tenants, ["tenant-a", "tenant-a"], "{page}");
    let page = json(t.get(&b, "/v1/streaming/deliveries?limit=3").await).await;
    assert_eq!(page["items"].as_array().unwrap().len(), 3, "{page}");
    for bad in ["0", "1001", "-1"] {
        expect_error(
            t.get(&a, &format!("/v1/streaming/deliveries?limit={bad}"))
                .await,
            400,
            "TPL-0024",
        )
        .await;
    }
}

fn validate(e: &EventEnvelope) {
    let schema = e.key.payload_schema();
    let validator = jsonschema::validator_for(&schema).expect("valid schema");
    let errors: Vec<String> = validator
        .iter_errors(&e.payload.value())
        .map(|er| er.to_string())
        .collect();
    assert!(
        errors.is_empty(),
        "{} payload {} violates its schema: {errors:?}",
        e.key.key(),
        e.payload
    );
}

/// Every event of one resource carries `ce-sequence`, the resource's version after the
/// change: ordering a resource's events by it gives their commit order, whichever path
/// (direct or dispatcher) published each and whatever order they arrived in. Here a critical
/// `deadline.delivered` (always through the outbox) is followed by an important rename
/// (published directly), which may arrive first.
#[tokio::test]
async fn ce_sequence_orders_the_events_of_one_resource_by_commit() {
    let t = streaming().await;
    let tok = token();
    let d = t.create_deadline(&tok, deadline_body(5)).await;
    let id = d["id"].as_str().unwrap().to_owned();
    let deliver = |on: bool| json!({ "delivered": on });
    for (path, body) in [
        (format!("/v1/deadlines/{id}/deliver"), deliver(true)),
        (format!("/v1/deadlines/{id}"), json!({"name": "renamed"})),
        (format!("/v1/deadlines/{id}/deliver"), deliver(false)),
    ] {
        t.patch_json(&tok, &path, body).await.assert_status_is_ok();
    }
    t.delete(&tok, &format!("/v1/deadlines/{id}"))
        .await
        .assert_status(poem::http::StatusCode::NO_CONTENT);
    let all = wait_for(&t, 5).await;
    let mut mine: Vec<(String, EventKey)> = all
        .iter()
        .filter(|e| e.subject == id)
        .map(|e| {
            let h: BTreeMap<&str, String> = e.ce_headers().into_iter().collect();
            (h["ce-sequence"].clone(), e.key)
        })
        .collect();
    assert_eq!(mine.len(), 5, "{mine:?}");
    mine.sort();
    assert_eq!(
        mine.iter().map(|(_, k)| *k).collect::<Vec<_>>(),
        [
            EventKey::DeadlineCreated,
            EventKey::DeadlineDelivered,
            EventKey::DeadlineUpdated,
            EventKey::DeadlineDeliveryReverted,
            EventKey::DeadlineDeleted
        ],
        "by ce-sequence: the commit order ({mine:?})"
    );
    let numbers: Vec<u64> = mine.iter().map(|(s, _)| s.parse().unwrap()).collect();
    assert_eq!(numbers, [1, 2, 3, 4, 5], "the deadline's versions");
}

#[tokio::test]
async fn api_events_are_schema_valid_and_deliveries_have_deterministic_ids() {
    let t = streaming().await;
    let tok = token();
    let tpl = t.create_template(&tok, "for events").await;
    let form = Form::new().text("description", "renamed");
    let ct = form.content_type();
    t.client
        .patch(format!("/v1/templates/{tpl}"))
        .header("authorization", bearer(&tok))
        .content_type(ct)
        .body(form.into_body())
        .send()
        .await
        .assert_status_is_ok();
    let mut body = deadline_body(5);
    body["templateId"] = json!(tpl);
    let d = t.create_deadline(&tok, body).await;
    let did = d["id"].as_str().unwrap().to_owned();
    t.patch_json(
        &tok,
        &format!("/v1/deadlines/{did}"),
        json!({"name": "renamed"}),
    )
    .await
    .assert_status_is_ok();
    let delivered = json(
        t.patch_json(
            &tok,
            &format!("/v1/deadlines/{did}/deliver"),
            json!({"delivered": true}),
        )
        .await,
    )
    .await;
    t.patch_json(
        &tok,
        &format!("/v1/deadlines/{did}/deliver"),
        json!({"delivered": false}),
    )
    .await
    .assert_status_is_ok();
    let other = t.create_deadline(&tok, deadline_body(9)).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    t.delete(&tok, &format!("/v1/deadlines/{other}"))
        .await
        .assert_status(poem::http::StatusCode::NO_CONTENT);
    t.delete(&tok, &format!("/v1/templates/{tpl}"))
        .await
        .assert_status_is_ok();

    let all = wait_for(&t, 10).await;
    let keys: Vec<String> = all.iter().map(|e| e.key.key()).collect();
    for expected in [
        "template.created",
        "template.updated",
        "deadline.created",
        "deadline.updated",
        "deadline.delivered",
        "deadline.delivery_reverted",
        "deadline.deleted",
        "template.deleted",
    ] {
        assert!(
            keys.iter().any(|k| k == expected),
            "{expected} missing from {keys:?}"
        );
    }
    for e in &all {
        validate(e);
    }
    // template.deleted carries the cascade count; the cascaded deadline got deadline.deleted.
    let deleted = all
        .iter()
        .find(|e| e.key == EventKey::TemplateDeleted)
        .unwrap();
    assert_eq!(deleted.payload.value()["cascaded_deadline_count"], 1);
    assert!(all.iter().any(|e| e.key == EventKey::DeadlineDeleted
        && e.subject == did
        && e.payload.value()["cascaded"] == true));
    // Consumers can recompute the deterministic ids from the message.
    let tenant = TenantId::default_tenant();
    let del = all
        .iter()
        .find(|e| e.key == EventKey::DeadlineDelivered)
        .unwrap();
    let disc = format!(
        "{}|{}",
        del.payload.value()["due_date"].as_str().unwrap(),
        del.payload.value()["delivered_at"].as_str().unwrap()
    );
    assert_eq!(
        del.id,
        deterministic_event_id(EventKey::DeadlineDelivered, &tenant, &did, &disc)
    );
    assert_eq!(
        del.payload.value()["delivered_at"],
        delivered["deliveredAt"]
            .as_str()
            .map(|s| {
                chrono::DateTime::parse_from_rfc3339(s)
                    .unwrap()
                    .with_timezone(&chrono::Utc)
                    .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
            })
            .unwrap()
    );
    let rev = all
        .iter()
        .find(|e| e.key == EventKey::DeadlineDeliveryReverted)
        .unwrap();
    let disc = format!(
        "{}|{}",
        rev.payload.value()["due_date"].as_str().unwrap(),
        rev.payload.value()["reverted_at"].as_str().unwrap()
    );
    assert_eq!(
        rev.id,
        deterministic_event_id(EventKey::DeadlineDeliveryReverted, &tenant, &did, &disc)
    );
    // Every id is distinct.
    assert_eq!(
        all.iter()
            .map(|e| e.id.clone())
            .collect::<BTreeSet<_>>()
            .len(),
        all.len()
    );
}

#[tokio::test]
async fn streaming_off_writes_no_outbox_rows() {
    let t = start().await;
    t.create_template(&token(), "quiet").await;
    let stats = t
        .app
        .ports()
        .outbox
        .stats(chrono::Utc::now())
        .await
        .unwrap();
    assert_eq!(stats.pending, 0);
    assert!(t.broker.is_none());
}

#[tokio::test]
async fn an_open_breaker_sends_important_events_to_the_outbox_and_nothing_is_lost() {
    let t = streaming().await;
    let broker = t.broker.clone().unwrap();
    let tok = token();
    broker.set_failure(Some(reporter_ports::ports::PublishError::Unavailable(
        "broker down".into(),
    )));
    let mut ids = BTreeSet::new();
    for i in 0..12 {
        ids.insert(t.create_template(&tok, &format!("outage {i}")).await);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // API calls kept succeeding; nothing was delivered; the rows wait in the outbox.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(broker.deliveries().is_empty());
    let stats = t
        .app
        .ports()
        .outbox
        .stats(chrono::Utc::now())
        .await
        .unwrap();
    assert_eq!(stats.pending, 12);
    let metrics = t.metrics().await;
    assert!(
        metrics.contains("reporter_events_breaker_state 2"),
        "the breaker opened:\n{metrics}"
    );
    assert!(
        metrics.contains(
            r#"reporter_events_emitted_total{event="template.created",outcome="outboxed"}"#
        ),
        "{metrics}"
    );
    // Broker back: the dispatcher delivers every event.
    broker.set_failure(None);
    let delivered = wait_for(&t, 12).await;
    let subjects: BTreeSet<String> = delivered.iter().map(|e| e.subject.clone()).collect();
    assert_eq!(subjects, ids);
    let distinct: BTreeSet<String> = delivered.iter().map(|e| e.id.clone()).collect();
    assert_eq!(distinct.len(), 12, "duplicates, if any, share their ce-id");
}

#[tokio::test]
async fn a_poison_event_is_parked_without_blocking_others_and_can_be_redriven() {
    let t = start_with(Options {
        streaming: true,
        tweak: Some(|r| r.streaming_outbox_max_attempts = "2".into()),
        ..Default::default()
    })
    .await;
    let broker = t.broker.clone().unwrap();
    let tok = token();
    broker.set_unroutable("deadline.created", true);
    let poison = t.create_deadline(&tok, deadline_body(3)).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for i in 0..5 {
        t.create_template(&tok, &format!("healthy {i}")).await;
    }
    let delivered = wait_for(&t, 5).await;
    assert!(delivered.iter().all(|e| e.key == EventKey::TemplateCreated));
    // The poison row is parked after its attempts (backoff 0.5-1 s between the two).
    let mut parked = 0;
    for _ in 0..150 {
        parked = t
            .app
            .ports()
            .outbox
            .stats(chrono::Utc::now())
            .await
            .unwrap()
            .parked;
        if parked == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(parked, 1, "the unroutable event is parked");
    broker.set_unroutable("deadline.created", false);
    let r = json(
        t.client
            .post("/v1/streaming/outbox/redrive")
            .header("authorization", bearer(&tok))
            .send()
            .await,
    )
    .await;
    assert_eq!(r["redriven"], 1);
    let all = wait_for(&t, 6).await;
    assert!(
        all.iter()
            .any(|e| e.key == EventKey::DeadlineCreated && e.subject == poison)
    );
    expect_error(
        t.client
            .post("/v1/streaming/outbox/redrive")
            .header(
                "authorization",
                bearer(&token_for(Some("default"), &["streaming:read"])),
            )
            .send()
            .await,
        403,
        "TPL-0403",
    )
    .await;
}

/// Polls the tenant's parked events until there are `n`; answers the page.
async fn wait_parked(t: &TestApp, tok: &str, n: usize) -> Value {
    let mut page = Value::Null;
    for _ in 0..300 {
        page = json(t.get(tok, "/v1/streaming/outbox/parked").await).await;
        if page["items"].as_array().map(Vec::len) == Some(n) {
            return page;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("expected {n} parked events, got {page}");
}

/// `GET /v1/streaming/outbox/parked`: a `streaming:admin` caller sees its tenant's parked
/// events, newest parked first, with what an operator needs and never the payload; the limit
/// is checked and bounds the page; another tenant's rows stay invisible; `streaming:read` is
/// refused; a redrive empties the list.
#[tokio::test]
async fn parked_events_are_listed_per_tenant_and_a_redrive_empties_the_list() {
    let t = start_with(Options {
        streaming: true,
        multi_tenant: true,
        tweak: Some(|r| r.streaming_outbox_max_attempts = "1".into()),
        ..Default::default()
    })
    .await;
    let broker = t.broker.clone().unwrap();
    let scopes = all_scopes();
    let a = token_for(Some("tenant-a"), &scopes);
    let b = token_for(Some("tenant-b"), &scopes);
    let empty = json(t.get(&a, "/v1/streaming/outbox/parked").await).await;
    assert_eq!(empty, json!({"items": []}));

    broker.set_unroutable("deadline.created", true);
    let mut body = deadline_body(3);
    body["name"] = json!("Confidential liquidity figure");
    let first = t.create_deadline(&a, body).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    wait_parked(&t, &a, 1).await;
    let second = t.create_deadline(&a, deadline_body(4)).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let other = t.create_deadline(&b, deadline_body(5)).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let page = wait_parked(&t, &a, 2).await;
    let items = page["items"].as_array().unwrap();
    assert_eq!(
        items[0]["subject"],
        second.as_str(),
        "newest parked first: {page}"
    );
    assert_eq!(items[1]["subject"], first.as_str(), "{page}");
    let item = &items[1];
    assert_eq!(item["eventKey"], "deadline.created");
    assert_eq!(item["ceType"], "studio.lerian.reporter.deadline.created");
    assert_eq!(
        item["aggregate"].as_str().map(|s| s.contains(&first)),
        Some(true),
        "{item}"
    );
    // The direct publish (if it was tried) and the dispatcher's, which parked it.
    assert!(item["attempts"].as_u64().unwrap() >= 1, "{item}");
    assert!(
        item["reason"]
            .as_str()
            .unwrap()
            .contains("deadline.created"),
        "{item}"
    );
    assert!(
        chrono::DateTime::parse_from_rfc3339(item["parkedAt"].as_str().unwrap()).is_ok()
            && chrono::DateTime::parse_from_rfc3339(item["createdAt"].as_str().unwrap()).is_ok(),
        "{item}"
    );
    // The row behind it: the ce-id is the event's own.
    let outbox_id: reporter_ports::ids::OutboxId =
        item["outboxId"].as_str().unwrap().parse().unwrap();
    let row = t.app.ports().outbox.get(outbox_id).await.unwrap().unwrap();
    assert_eq!(item["ceId"], row.event.id.as_str());
    // Never the payload.
    let keys: BTreeSet<&str> = item
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        BTreeSet::from([
            "outboxId",
            "eventKey",
            "ceType",
            "ceId",
            "subject",
            "aggregate",
            "attempts",
            "reason",
            "parkedAt",
            "createdAt"
        ])
    );
    assert!(!page.to_string().contains("Confidential"), "{page}");

    // The limit bounds the page and is checked.
    let one = json(t.get(&a, "/v1/streaming/outbox/parked?limit=1").await).await;
    assert_eq!(one["items"].as_array().unwrap().len(), 1);
    assert_eq!(one["items"][0]["subject"], second.as_str());
    for bad in ["0", "1001", "-1"] {
        expect_error(
            t.get(&a, &format!("/v1/streaming/outbox/parked?limit={bad}"))
                .await,
            400,
            "TPL-0024",
        )
        .await;
    }
    // Tenant isolation: each sees its own.
    let of_b = wait_parked(&t, &b, 1).await;
    assert_eq!(of_b["items"][0]["subject"], other.as_str());
    // streaming:read is not enough.
    for path in [
        "/v1/streaming/outbox/parked",
        "/v1/streaming/outbox/parked?limit=5",
    ] {
        expect_error(
            t.get(&token_for(Some("tenant-a"), &["streaming:read"]), path)
                .await,
            403,
            "TPL-0403",
        )
        .await;
    }

    // A's redrive empties A's list and leaves B's; the events are published again.
    broker.set_unroutable("deadline.created", false);
    let r = json(
        t.client
            .post("/v1/streaming/outbox/redrive")
            .header("authorization", bearer(&a))
            .send()
            .await,
    )
    .await;
    assert_eq!(r["redriven"], 2);
    let after = json(t.get(&a, "/v1/streaming/outbox/parked").await).await;
    assert_eq!(after, json!({"items": []}));
    let of_b = json(t.get(&b, "/v1/streaming/outbox/parked").await).await;
    assert_eq!(of_b["items"].as_array().unwrap().len(), 1, "{of_b}");
    let delivered = wait_for(&t, 2).await;
    let subjects: BTreeSet<&str> = delivered.iter().map(|e| e.subject.as_str()).collect();
    assert!(subjects.contains(first.as_str()) && subjects.contains(second.as_str()));
}

/// The seed's failure window: the old design committed the state, then inserted the outbox
/// row separately, so a crash between the two lost the event. Here a failpoint fails the
/// write path at random points; with state and outbox rows in one unit of work every committed
/// change still has its event, while the two-step design loses some.
#[tokio::test]
async fn state_and_outbox_commit_together_so_a_crash_cannot_lose_an_event() {
    use reporter_adapter_memory::MemoryStore;
    use reporter_contract::fixtures;
    use reporter_ports::ports::{Change, Outbox, TemplateRepository, UnitOfWork, UnitOfWorkPort};
    let tenant = fixtures::tenant_a();
    let mut lost_old_design = 0;
    for (design, store) in [
        ("one unit of work", MemoryStore::new()),
        ("state then outbox", MemoryStore::new()),
    ] {
        let mut committed = Vec::new();
        for i in 0..200u32 {
            let crash = i % 3 == 1; // the failpoint fires on every third write
            let template = fixtures::template(&tenant, fixtures::t0());
            let row = fixtures::outbox_row(&tenant, &template.id.to_string(), fixtures::t0());
            let change = Change::Template {
                record: template.clone(),
                expected_version: None,
            };
            if design == "one unit of work" {
                // A crash inside the commit aborts the whole unit: neither is written.
                if !crash {
                    store
                        .commit(&tenant, UnitOfWork::new().change(change).with_outbox([row]))
                        .await
                        .unwrap();
                    committed.push(template.id);
                }
            } else {
                store
                    .commit(&tenant, UnitOfWork::new().change(change))
                    .await
                    .unwrap();
                committed.push(template.id);
                if !crash {
                    store
                        .commit(&tenant, UnitOfWork::new().with_outbox([row]))
                        .await
                        .unwrap();
                }
            }
        }
        let mut with_event = 0;
        let rows = store
            .claim(
                "check",
                fixtures::t0(),
                fixtures::t0() + chrono::Duration::hours(1),
                10_000,
            )
            .await
            .unwrap();
        let subjects: BTreeSet<String> = rows.iter().map(|r| r.event.subject.clone()).collect();
        for id in &committed {
            assert!(
                TemplateRepository::get(&store, &tenant, *id, false)
                    .await
                    .unwrap()
                    .is_some()
            );
            if subjects.contains(&id.to_string()) {
                with_event += 1;
            }
        }
        if design == "one unit of work" {
            assert_eq!(
                with_event,
                committed.len(),
                "every committed change has its event"
            );
        } else {
            lost_old_design = committed.len() - with_event;
        }
    }
    assert!(
        lost_old_design > 0,
        "the two-step design loses events at the failpoint"
    );
}

#[test]
fn every_emitted_key_is_in_the_manifest_and_vice_versa() {
    // Emission only ever names an `EventKey`, and the manifest enumerates `EventKey::ALL`, so
    // the two sets are the same by construction; this pins both to the catalogue's count.
    let manifest: BTreeSet<String> = reporter::streaming::manifest::manifest()
        .events
        .into_iter()
        .map(|e| e.key)
        .collect();
    let code: BTreeSet<String> = EventKey::ALL.iter().map(|k| k.key()).collect();
    assert_eq!(manifest, code);
    assert_eq!(code.len(), EventKey::COUNT);
    let _ = Value::Null;
}
