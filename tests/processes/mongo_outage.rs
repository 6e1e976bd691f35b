//! A MongoDB outage, end to end: while the server cannot be reached every API call that needs
//! it answers a clean 503 (TPL-0503) within the server selection timeout, `/readyz` names
//! MongoDB, `/health` stays up; when the server returns the service recovers by itself, and
//! nothing written before the outage — records, artifacts, events — is lost.
//!
//! The outage is a cut TCP proxy between the service and the shared MongoDB (every
//! connection closed, new ones refused), so other tests keep their server.
use crate::common;

use common::cut_proxy::CutProxy;
use common::*;
use reporter_ports::events::EventKey;
use serde_json::json;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

/// host:port of a `mongodb://host:port[/…]` connection string (one host).
fn server_addr(uri: &str) -> SocketAddr {
    let rest = uri.strip_prefix("mongodb://").expect("a mongodb:// URI");
    let hostport = rest.split(['/', '?']).next().expect("host");
    let hostport = hostport.rsplit('@').next().expect("host");
    let hostport = if hostport.contains(':') {
        hostport.to_owned()
    } else {
        format!("{hostport}:27017")
    };
    hostport
        .to_socket_addrs()
        .expect("resolve")
        .next()
        .expect("an address")
}

async fn drop_database(uri: &str, name: &str) {
    if let Ok(client) = mongodb::Client::with_uri_str(uri).await {
        let _ = client.database(name).drop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_answers_503_and_the_service_recovers_with_nothing_lost() {
    let Some(uri) = reporter_contract::services::service_url("MONGODB_URI", "MongoDB") else {
        return;
    };
    if uri.starts_with("mongodb+srv://") || uri.split('?').next().is_some_and(|h| h.contains(',')) {
        // The proxy stands in front of one server, reached with directConnection.
        reporter_contract::services::skipped(
            "a single-host mongodb:// MONGODB_URI (a primary), for the outage test",
        );
        return;
    }
    let proxy = CutProxy::start(server_addr(&uri)).await;
    // directConnection: the server's replica-set hello names its own address, which the
    // driver would otherwise connect to, around the proxy.
    let proxied = format!("mongodb://{}/?directConnection=true", proxy.addr());
    let t = start_with(Options {
        streaming: true,
        mongo_uri: Some(proxied),
        tweak: Some(|r| r.mongo_server_selection_timeout_ms = "1000".into()),
        ..Default::default()
    })
    .await;
    let database = t.mongo_database.clone().expect("a MongoDB instance");
    let tok = token();

    // Before: a template (record + GridFS artifact) and a deadline.
    let template = t.create_template(&tok, "before the outage").await;
    let before = t.create_deadline(&tok, deadline_body(10)).await;
    let before_id = before["id"].as_str().expect("id").to_owned();
    let deliver = format!("/v1/deadlines/{before_id}/deliver");
    let ready = t.client.get("/readyz").send().await;
    ready.assert_status_is_ok();
    let body = json(ready).await;
    assert_eq!(body["checks"]["mongodb"]["status"], "up", "{body}");
    // The events of those writes are settled before the cut: a cut between an event's publish
    // and the mark of its row would make the dispatcher publish it again after the lease (a
    // duplicate with the same ce-id, as GUARANTEES.md says), which is not what this test is
    // about.
    let settling = Instant::now();
    loop {
        let stats = t.app.ports().outbox.stats(chrono::Utc::now()).await;
        if stats.as_ref().is_ok_and(|s| s.pending == 0) {
            break;
        }
        assert!(
            settling.elapsed() < Duration::from_secs(10),
            "the events of the writes before the outage were not settled in 10 s: {stats:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    proxy.cut().await;
    let outage = Instant::now();

    let started = Instant::now();
    let resp = t.get(&tok, "/v1/deadlines").await;
    let list_took = started.elapsed();
    expect_error(resp, 503, "TPL-0503").await;
    let started = Instant::now();
    let resp = t.get(&tok, &format!("/v1/templates/{template}")).await;
    expect_error(resp, 503, "TPL-0503").await;
    let resp = t.post_json(&tok, "/v1/deadlines", deadline_body(20)).await;
    let body = expect_error(resp, 503, "TPL-0503").await;
    assert!(
        !body.to_string().contains("mongodb"),
        "driver details stay in the log: {body}"
    );
    let form = Form::new()
        .file("template", "t.tpl", b"{{ 1 }}")
        .text("outputFormat", "txt")
        .text("description", "during the outage");
    // The upload stores the file first: GridFS, in the same server, is what answers first.
    expect_error(t.upload(&tok, form).await, 503, "TPL-0034").await;
    let resp = t
        .patch_json(&tok, &deliver, json!({ "delivered": true }))
        .await;
    expect_error(resp, 503, "TPL-0503").await;
    let writes_took = started.elapsed();
    let ready = t.client.get("/readyz").send().await;
    assert_eq!(ready.0.status().as_u16(), 503);
    let body = json(ready).await;
    // The original's unhealthy body: top-level status, the failing check down with its error.
    assert_eq!(body["status"], "unhealthy", "{body}");
    assert_eq!(body["checks"]["mongodb"]["status"], "down", "{body}");
    assert!(
        body["checks"]["mongodb"]["error"]
            .as_str()
            .is_some_and(|e| !e.trim().is_empty()),
        "the failing check says why: {body}"
    );
    assert!(
        body["version"].is_string() && body["deployment_mode"].is_string(),
        "{body}"
    );
    t.client.get("/health").send().await.assert_status_is_ok();
    // One server selection timeout (1 s) per call, plus retries of a connection that broke;
    // never the 30 s transaction budget.
    assert!(
        list_took < Duration::from_secs(5),
        "a read during the outage took {list_took:?}; the server selection timeout is 1 s"
    );
    assert!(
        writes_took < Duration::from_secs(15),
        "four calls during the outage took {writes_took:?}; the selection timeout is 1 s"
    );

    proxy.restore().await;
    let outage_took = outage.elapsed();
    let restored = Instant::now();
    let mut recovered = None;
    while restored.elapsed() < Duration::from_secs(30) {
        let resp = t.get(&tok, "/v1/deadlines").await;
        if resp.0.status().is_success() {
            recovered = Some(restored.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let recovered = recovered.expect("the API answers again within 30 s of the server's return");

    // After: what was written before is intact, and writes work again.
    let resp = t.get(&tok, &format!("/v1/deadlines/{before_id}")).await;
    resp.assert_status_is_ok();
    let artifact = t
        .app
        .ports()
        .storage
        .get(&format!("templates/{template}.tpl"))
        .await
        .expect("GridFS answers")
        .expect("the template file is still in GridFS");
    assert_eq!(artifact.bytes.as_ref(), STATEMENT_TPL.as_bytes());
    let after = t.create_deadline(&tok, deadline_body(30)).await;
    let after_id = after["id"].as_str().expect("id").to_owned();
    let resp = t
        .patch_json(&tok, &deliver, json!({ "delivered": true }))
        .await;
    resp.assert_status_is_ok();
    let ready = t.client.get("/readyz").send().await;
    ready.assert_status_is_ok();

    // Events: exactly one per successful write, none for the writes refused with 503.
    let broker = t.broker.as_ref().expect("memory broker");
    let expected = [
        (EventKey::TemplateCreated, template.as_str()),
        (EventKey::DeadlineCreated, before_id.as_str()),
        (EventKey::DeadlineCreated, after_id.as_str()),
        (EventKey::DeadlineDelivered, before_id.as_str()),
    ];
    let waited = Instant::now();
    loop {
        let got: Vec<(EventKey, String)> = broker
            .deliveries()
            .into_iter()
            .map(|e| (e.key, e.subject))
            .collect();
        let complete = expected
            .iter()
            .all(|(k, s)| got.iter().any(|(gk, gs)| gk == k && gs == s));
        if complete {
            let mut ids: Vec<String> = broker.deliveries().into_iter().map(|e| e.id).collect();
            let n = ids.len();
            ids.sort();
            ids.dedup();
            assert_eq!(ids.len(), n, "an event was published twice: {got:?}");
            assert_eq!(n, expected.len(), "unexpected events: {got:?}");
            break;
        }
        assert!(
            waited.elapsed() < Duration::from_secs(30),
            "events missing 30 s after recovery: got {got:?}, expected {expected:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    reporter_contract::figure!(
        "mongo outage: {outage_took:?} cut; a read answered 503 in {list_took:?}, four more \
         calls (reads, writes, upload) in {writes_took:?}; API answering again {recovered:?} \
         after the server returned"
    );
    drop(t);
    drop_database(&uri, &database).await;
}
