//! Chaos: the RabbitMQ broker goes away (`rabbitmqctl stop_app`) while the API keeps working.
//! Every call still answers 2xx, the breaker opens, important events fall back to the outbox,
//! and once the broker is back (`rabbitmqctl start_app`) every event emitted reaches a durable
//! queue bound to the events exchange: one distinct `ce-id` per event, duplicates allowed.
//!
//! ONE test: it stops the shared local broker, so the binary must run alone. The broker is
//! restarted by a guard even when the test fails.
mod common;

use common::*;
use futures_util::StreamExt;
use reporter_adapter_rabbitmq::tail::tail;
use reporter_contract::services::{service_url, unique_name};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// Restarts the broker when dropped (unless already restored), so a failing test never leaves
/// it stopped.
struct BrokerOutage {
    restored: bool,
}

impl BrokerOutage {
    /// Stops the RabbitMQ application (the node stays up for `rabbitmqctl`).
    fn begin() -> Self {
        let guard = Self { restored: false };
        rabbitmqctl(&["stop_app"]).expect("rabbitmqctl stop_app");
        guard
    }

    /// Starts the application again and waits until it accepts connections.
    fn end(&mut self) -> Result<(), String> {
        if self.restored {
            return Ok(());
        }
        self.restored = true;
        rabbitmqctl(&["start_app"])?;
        rabbitmqctl(&["await_startup", "--timeout", "60"]).map(|_| ())
    }
}

impl Drop for BrokerOutage {
    fn drop(&mut self) {
        if let Err(e) = self.end() {
            eprintln!("could not restart RabbitMQ: {e}");
        }
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.expect("blocking task")
}

/// `name{labels} value` lines of a metric family, as label text -> value.
fn samples(text: &str, name: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let rest = l.strip_prefix(name)?;
            let (labels, value) = rest.rsplit_once(' ')?;
            if !(labels.is_empty() || labels.starts_with('{')) {
                return None;
            }
            Some((labels.to_owned(), value.trim().parse().ok()?))
        })
        .collect()
}

fn breaker_state(text: &str) -> Option<f64> {
    samples(text, "reporter_events_breaker_state")
        .get("")
        .copied()
}

/// The events expected on the wire, as (routing key, subject).
#[derive(Default)]
struct Expected(Vec<(String, String)>);

impl Expected {
    fn push(&mut self, key: &str, subject: &str) {
        self.0.push((key.to_owned(), subject.to_owned()));
    }
}

fn status_2xx(resp: &poem::test::TestResponse, what: &str) {
    let s = resp.0.status();
    assert!(s.is_success(), "{what} answered {s} during the outage");
}

/// One round of API calls: a template, a deadline on it, delivered; every other round also
/// renamed. Answers nothing; records the events it emitted.
async fn round(t: &TestApp, tok: &str, i: usize, expected: &mut Expected) {
    let tpl = t.create_template(tok, &format!("chaos {i}")).await;
    expected.push("template.created", &tpl);
    let mut body = deadline_body(5 + i as i64);
    body["templateId"] = json!(tpl);
    let resp = t.post_json(tok, "/v1/deadlines", body).await;
    status_2xx(&resp, "POST /v1/deadlines");
    let d: Value = json(resp).await;
    let did = d["id"].as_str().unwrap().to_owned();
    expected.push("deadline.created", &did);
    if i.is_multiple_of(2) {
        let resp = t
            .patch_json(
                tok,
                &format!("/v1/deadlines/{did}"),
                json!({"name": format!("renamed {i}")}),
            )
            .await;
        status_2xx(&resp, "PATCH /v1/deadlines/{id}");
        expected.push("deadline.updated", &did);
    }
    let resp = t
        .patch_json(
            tok,
            &format!("/v1/deadlines/{did}/deliver"),
            json!({"delivered": true}),
        )
        .await;
    status_2xx(&resp, "PATCH /v1/deadlines/{id}/deliver");
    expected.push("deadline.delivered", &did);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_outage_loses_no_event_and_never_fails_the_api() {
    let Some(uri) = service_url("RABBITMQ_URI", "RabbitMQ") else {
        return;
    };
    let started = Instant::now();
    let exchange = unique_name("reporter_chaos_events");
    let alternate = format!("{exchange}.unroutable");
    let queue = unique_name("reporter_chaos_durable");
    let drain = unique_name("reporter_chaos_drain");
    let _topology = RabbitTopology {
        queues: vec![queue.clone(), alternate.clone()],
        exchanges: vec![exchange.clone(), alternate.clone(), drain.clone()],
    };
    let mut raw = rabbit_raw(&uri, &exchange, &alternate);
    raw.streaming_cb_min_requests = "2".into();
    raw.streaming_cb_timeout_s = "1".into();
    raw.streaming_publish_timeout_ms = "1000".into();
    raw.streaming_dispatch_poll_ms = "100".into();
    let t = start_raw(raw, Vec::new()).await;
    // A durable, non-exclusive queue bound with `#`: it survives the outage.
    {
        let (q, x) = (queue.clone(), exchange.clone());
        blocking(move || rabbit_declare_bound_queue(&q, &x, "#")).await;
    }
    let tok = token();
    let mut expected = Expected::default();

    // Broker up.
    for i in 0..3 {
        round(&t, &tok, i, &mut expected).await;
    }
    let before = expected.0.len();
    let mut depth = None;
    for _ in 0..40 {
        let q = queue.clone();
        depth = blocking(move || rabbit_queue_depth(&q)).await;
        if depth >= Some(before as u64) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(
        depth,
        Some(before as u64),
        "with the broker up every event arrives"
    );
    let m = t.metrics().await;
    assert_eq!(breaker_state(&m), Some(0.0), "breaker closed while up");

    // Outage.
    let outage_started = Instant::now();
    let mut outage = blocking(BrokerOutage::begin).await;
    let stop_took = outage_started.elapsed();
    let mut calls = 0usize;
    let mut saw_open = false;
    let mut states = BTreeSet::new();
    let mut i = 3;
    let busy = Instant::now();
    while busy.elapsed() < Duration::from_secs(6) {
        let call = Instant::now();
        round(&t, &tok, i, &mut expected).await;
        calls += 3 + usize::from(i % 2 == 0);
        assert!(
            call.elapsed() < Duration::from_secs(2),
            "API calls do not wait for the broker ({:?})",
            call.elapsed()
        );
        i += 1;
        let m = t.metrics().await;
        if let Some(s) = breaker_state(&m) {
            states.insert(s as i64);
            saw_open |= s == 2.0;
        }
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    let m = t.metrics().await;
    let emitted = samples(&m, "reporter_events_emitted_total");
    let important_outboxed: f64 = emitted
        .iter()
        .filter(|(labels, _)| {
            labels.contains(r#"outcome="outboxed""#)
                && ["template.created", "deadline.created", "deadline.updated"]
                    .iter()
                    .any(|k| labels.contains(&format!(r#"event="{k}""#)))
        })
        .map(|(_, v)| v)
        .sum();
    let pending_in_outage = t.app.ports.outbox.stats(chrono::Utc::now()).await.unwrap();
    assert!(
        saw_open,
        "reporter_events_breaker_state reached 2 (open); states seen {states:?}\n{m}"
    );
    assert!(
        important_outboxed > 0.0,
        "important events fell back to the outbox while the breaker was open\n{m}"
    );
    assert!(pending_in_outage.pending > 0, "{pending_in_outage:?}");

    // Broker back.
    let restart = Instant::now();
    let restored = blocking(move || {
        let r = outage.end();
        (outage, r)
    })
    .await;
    restored.1.expect("rabbitmqctl start_app");
    let restart_took = restart.elapsed();
    let outage_total = outage_started.elapsed();
    let n = expected.0.len();
    let recovery = Instant::now();
    let deadline = recovery + Duration::from_secs(60);
    // The durable queue kept what arrived before the outage, and fills up with the rest.
    let mut depth = None;
    let mut timeline = Vec::new();
    while Instant::now() < deadline {
        let q = queue.clone();
        depth = blocking(move || rabbit_queue_depth(&q)).await;
        let pending = t
            .app
            .ports
            .outbox
            .stats(chrono::Utc::now())
            .await
            .map(|s| s.pending)
            .unwrap_or_default();
        timeline.push(format!(
            "{:.1}s: queue {} / outbox {pending}",
            recovery.elapsed().as_secs_f64(),
            depth.unwrap_or_default()
        ));
        if depth >= Some(n as u64) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let depth_reached = recovery.elapsed();
    // Read the queue: a policy dead-letters its messages (properties and headers intact) to a
    // fanout exchange where a tail listens.
    {
        let d = drain.clone();
        blocking(move || rabbit_declare_fanout(&d)).await;
    }
    let mut reader = tail(&uri, &drain, "#").await.expect("tail on the drain");
    {
        let (q, d) = (queue.clone(), drain.clone());
        blocking(move || rabbit_drain_queue_to(&q, &d)).await;
    }
    let mut by_id: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut received = 0usize;
    let mut anonymous = 0usize;
    let read_until = deadline.max(Instant::now() + Duration::from_secs(10));
    while by_id.len() < n {
        let now = Instant::now();
        if now >= read_until {
            break;
        }
        match tokio::time::timeout(read_until - now, reader.next()).await {
            Ok(Some(Ok(e))) => {
                received += 1;
                let Some(id) = e.headers.get("ce-id").cloned() else {
                    anonymous += 1;
                    continue;
                };
                let entry = (
                    e.routing_key.clone(),
                    e.headers.get("ce-subject").cloned().unwrap_or_default(),
                );
                if let Some(prev) = by_id.insert(id.clone(), entry.clone()) {
                    assert_eq!(prev, entry, "duplicates share their event ({id})");
                }
            }
            Ok(Some(Err(e))) => panic!("drain tail failed: {e}"),
            Ok(None) => panic!("drain tail ended"),
            Err(_) => break,
        }
    }
    // Late duplicates, if any.
    while let Ok(Some(Ok(e))) =
        tokio::time::timeout(Duration::from_millis(500), reader.next()).await
    {
        received += 1;
        if let Some(id) = e.headers.get("ce-id") {
            by_id.entry(id.clone()).or_insert_with(|| {
                (
                    e.routing_key.clone(),
                    e.headers.get("ce-subject").cloned().unwrap_or_default(),
                )
            });
        }
    }
    let stats = t.app.ports.outbox.stats(chrono::Utc::now()).await.unwrap();
    let final_metrics = t.metrics().await;
    let duplicates = received - by_id.len() - anonymous;
    eprintln!(
        "chaos: {n} events ({before} before the outage, {calls} API calls during it); \
         stop_app {stop_took:?}, outage {outage_total:?} (start_app {restart_took:?}); \
         queue depth {depth:?} after {depth_reached:?}; read {received} messages, {} distinct \
         ce-id, {duplicates} duplicates, total {:?}; breaker states seen {states:?}; outbox {stats:?}\n\
         recovery timeline: {timeline:?}",
        by_id.len(),
        started.elapsed()
    );
    assert_eq!(anonymous, 0, "every message carries ce-id");
    let mut seen: Vec<(String, String)> = by_id.into_values().collect();
    seen.sort();
    let mut want = expected.0.clone();
    want.sort();
    let missing: Vec<_> = want.iter().filter(|w| !seen.contains(w)).collect();
    assert!(
        missing.is_empty(),
        "{} of {n} events never reached the durable queue within 60 s of the restart: \
         {missing:?}\noutbox {stats:?}\n{final_metrics}",
        missing.len()
    );
    assert_eq!(seen, want, "exactly one distinct ce-id per emitted event");
    assert_eq!(stats.pending, 0, "the outbox drained");
    assert_eq!(stats.parked, 0, "nothing parked");
    // The breaker closed again (the next direct publish succeeded).
    t.create_template(&tok, "after").await;
    let mut closed = false;
    for _ in 0..40 {
        if breaker_state(&t.metrics().await) == Some(0.0) {
            closed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let _ = t.create_template(&tok, "after").await;
    }
    assert!(
        closed,
        "the breaker closes once the broker is back\n{}",
        t.metrics().await
    );
    drop(restored.0);
}
