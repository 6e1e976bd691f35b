//! Chaos on real processes: the released binary is killed, and its database is restarted,
//! and nothing is lost.
//!
//! Its scenarios run side by side, as they were written to, and never beside another family's
//! (each takes [`crate::common::chaos::family`] first). Shared helpers are in `tests/common`.
//!
//! 3. `kill -9` of `reporter serve` on MongoDB while twenty rows are leased (ten by the direct
//!    path, ten by the dispatcher) and their events were routed but not confirmed (a proxy
//!    holds the broker's replies), then a restart: the new process publishes exactly those
//!    rows again after their leases end (a duplicate of each, same `ce-id`), nothing is lost;
//! 4. the MongoDB stand-in killed (SIGKILL) and kept down 3 s under a write load: at least
//!    one write is refused, every refusal is a clean 503, the service recovers by itself, every
//!    accepted write's event arrives;
//! 5. a worker killed while its job's query runs (`reporter api` + `reporter worker`): the
//!    second worker receives the job as a broker redelivery (its metrics say so), and the
//!    report ends in one terminal state with one terminal event.
//!
//! Each scenario runs on a MongoDB stand-in of its own (`scripts/mongo-standin.sh` on a free
//! port), never the shared one; the events go to a per-test exchange on the shared RabbitMQ,
//! which nothing here stops. Each prints its figures.
use crate::common;

use common::chaos::{Counter, Figures, PrivateMongo, settle};
use common::id_of;
use common::processes::{blocking, job_queue, redelivered_jobs, reporter, setup, spawn};
use std::time::{Duration, Instant};

/// POST a deadline (201 expected); its id.
fn create_deadline(addr: &str, token: &str, days: i64) -> (u16, Vec<u8>, Duration) {
    let body = common::deadline_body(days).to_string();
    let started = Instant::now();
    let (status, body) = common::request(
        addr,
        "POST",
        "/v1/deadlines",
        token,
        "application/json",
        body.as_bytes(),
    );
    (status, body, started.elapsed())
}

fn union(a: &common::chaos::Received, b: &common::chaos::Received) -> Vec<(String, String)> {
    let mut all: std::collections::BTreeMap<&String, &common::chaos::Seen> =
        a.by_id.iter().collect();
    for (id, s) in &b.by_id {
        if let Some(prev) = all.insert(id, s) {
            assert_eq!(prev, s, "a duplicate shares its event ({id})");
        }
    }
    all.values()
        .map(|s| (s.key.clone(), s.subject.clone()))
        .collect()
}

/// The AMQP server's address in `uri`.
fn amqp_addr(uri: &str) -> std::net::SocketAddr {
    let parsed: lapin::uri::AMQPUri = uri.parse().expect("RABBITMQ_URI");
    use std::net::ToSocketAddrs;
    (parsed.authority.host.as_str(), parsed.authority.port)
        .to_socket_addrs()
        .expect("resolve")
        .next()
        .expect("an address")
}

/// `uri` with its host and port replaced by `proxy`.
fn through(uri: &str, proxy: std::net::SocketAddr) -> String {
    let parsed: lapin::uri::AMQPUri = uri.parse().expect("RABBITMQ_URI");
    format!(
        "amqp://{}:{}@{proxy}/{}",
        parsed.authority.userinfo.username,
        parsed.authority.userinfo.password,
        parsed.vhost.replace('%', "%25").replace('/', "%2f")
    )
}

/// Creates deadlines `days` (201 each): their ids and the slowest call.
fn create_many(addr: &str, token: &str, days: std::ops::Range<i64>) -> (Vec<String>, Duration) {
    let mut ids = Vec::new();
    let mut max = Duration::ZERO;
    for d in days {
        let (status, body, took) = create_deadline(addr, token, 10 + d);
        max = max.max(took);
        assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
        ids.push(id_of(&body));
    }
    (ids, max)
}

/// Delivers each deadline (200 each); the slowest call.
fn deliver_all(addr: &str, token: &str, ids: &[String]) -> Duration {
    let mut max = Duration::ZERO;
    for id in ids {
        let t0 = Instant::now();
        let (status, body) = common::request(
            addr,
            "PATCH",
            &format!("/v1/deadlines/{id}/deliver"),
            token,
            "application/json",
            br#"{"delivered":true}"#,
        );
        max = max.max(t0.elapsed());
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    }
    max
}

/// An outbox row still pending under a lease when the service died.
#[derive(Debug)]
struct Held {
    id: String,
    ce_id: String,
    owner: String,
    lease_until_ms: i64,
}

async fn leased_rows(outbox: &mongodb::Collection<mongodb::bson::Document>) -> Vec<Held> {
    use futures_util::TryStreamExt;
    let docs: Vec<mongodb::bson::Document> = outbox
        .find(mongodb::bson::doc! { "status": "pending", "lease_owner": { "$ne": null } })
        .await
        .expect("find")
        .try_collect()
        .await
        .expect("collect");
    docs.iter()
        .map(|d| Held {
            id: d.get_str("_id").expect("_id").to_owned(),
            ce_id: d
                .get_document("event")
                .and_then(|e| e.get_str("id"))
                .expect("event.id")
                .to_owned(),
            owner: d.get_str("lease_owner").expect("lease_owner").to_owned(),
            lease_until_ms: d
                .get_datetime("lease_until")
                .expect("lease_until")
                .timestamp_millis(),
        })
        .collect()
}

/// Publish deadline and lease of both paths in this scenario: long enough that the kill always
/// lands while every publish of the second phase still awaits its confirm.
const HELD_FOR_S: u64 = 15;

/// `kill -9` of `reporter serve` while every event of a burst was published to the broker
/// (and routed) but none of their confirms came back (a proxy holds the broker's replies), so
/// each of those rows is pending under a lease — the direct path's or the dispatcher's — when
/// the process dies. The restarted process publishes exactly those rows again once their
/// leases end: a duplicate of each, with the same `ce-id`, and nothing lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "chaos scenario (minutes, private servers): cargo test -p reporter --test chaos -- --ignored; CI runs it"]
async fn serve_killed_mid_dispatch_loses_nothing_and_duplicates_share_their_ce_id() {
    let _family = common::chaos::family("processes");
    let Some(s) = setup().await else { return };
    let started = Instant::now();
    let proxy = common::cut_proxy::CutProxy::start(amqp_addr(&s.rabbit)).await;
    let proxied = through(&s.rabbit, proxy.addr());
    let addr = common::free_addr();
    let cmd = |broker: &str| {
        let mut c = reporter("serve", &s.name, &s.mongo.uri, broker, &s.exchange);
        c.env("SERVER_ADDRESS", &addr)
            .env(
                "STREAMING_PUBLISH_TIMEOUT_MS",
                (HELD_FOR_S * 1000).to_string(),
            )
            .env("STREAMING_OUTBOX_LEASE_S", HELD_FOR_S.to_string());
        c
    };
    let first = cmd(&proxied);
    let a = addr.clone();
    let mut serve = blocking(move || spawn(first, &a)).await;
    let counter = Counter::start(&s.rabbit, &s.queue).await;
    let outbox = mongodb::Client::with_uri_str(&s.mongo.uri)
        .await
        .expect("MongoDB")
        .database(&s.name)
        .collection::<mongodb::bson::Document>("outbox");
    let token = common::token();
    // Phase 1, the broker answering: ten deadlines created (important: direct path).
    let (a, tok) = (addr.clone(), token.clone());
    let (phase1, max1) = blocking(move || create_many(&a, &tok, 0..10)).await;
    let settled_by = Instant::now() + Duration::from_secs(30);
    while outbox
        .count_documents(mongodb::bson::doc! { "status": "pending" })
        .await
        .expect("count")
        > 0
    {
        assert!(Instant::now() < settled_by, "phase 1 never settled");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Phase 2, the broker's replies held: ten more created (direct path) and the first ten
    // delivered (critical: the dispatcher). Every publish reaches the queue; no confirm returns.
    proxy.hold_replies(true);
    let hold_began = Instant::now();
    let (a, tok, ids) = (addr.clone(), token.clone(), phase1.clone());
    let (phase2, max2) = blocking(move || {
        let (created, max) = create_many(&a, &tok, 10..20);
        (created, max.max(deliver_all(&a, &tok, &ids)))
    })
    .await;
    let mut expected: Vec<(String, String)> = phase1
        .iter()
        .map(|id| ("deadline.created".to_owned(), id.clone()))
        .chain(
            phase2
                .iter()
                .map(|id| ("deadline.created".to_owned(), id.clone())),
        )
        .chain(
            phase1
                .iter()
                .map(|id| ("deadline.delivered".to_owned(), id.clone())),
        )
        .collect();
    expected.sort();
    let want = expected.len();
    // Every created row is leased by the direct path; the dispatcher holds the delivered rows
    // of the batches it claimed (at most two batches in flight, each now awaiting confirms);
    // the rest stay pending, unclaimed. Kill once every leased row's event was routed.
    let held = loop {
        let held = leased_rows(&outbox).await;
        let routed = counter.snapshot();
        let direct = held.iter().filter(|h| h.owner == "direct").count();
        if direct == 10
            && held.len() > direct
            && held.iter().all(|h| routed.by_id.contains_key(&h.ce_id))
        {
            break held;
        }
        assert!(
            hold_began.elapsed() < Duration::from_secs(HELD_FOR_S - 3),
            "before the first publish deadline: {direct} rows leased by the direct path, {} by \
             the dispatcher, {} events routed",
            held.len() - direct,
            routed.by_id.len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    serve.kill9();
    proxy.cut().await;
    let direct = held.iter().filter(|h| h.owner == "direct").count();
    let second = cmd(&s.rabbit);
    let a = addr.clone();
    let _serve = blocking(move || spawn(second, &a)).await;
    let restarted = Instant::now();
    let replayed = |got: &[common::chaos::Received]| {
        held.iter()
            .all(|h| got[0].copies.get(&h.ce_id).is_some_and(|c| c.len() >= 2))
    };
    settle(
        &[&counter],
        restarted + Duration::from_secs(HELD_FOR_S * 2 + 60),
        Duration::from_millis(500),
        replayed,
    )
    .await;
    let got = counter.stop();
    let mut seen = union(&got, &Default::default());
    seen.sort();
    let replays: Vec<Instant> = held
        .iter()
        .filter_map(|h| got.copies.get(&h.ce_id).and_then(|c| c.get(1).copied()))
        .collect();
    Figures {
        scenario: "kill -9 of reporter serve mid-dispatch (MongoDB)".into(),
        expected: want,
        delivered: seen.len(),
        duplicated: got.duplicates(),
        api_errors: 0,
        max_api_latency: max1.max(max2),
        recovery_to_first: replays.iter().min().map(|t| t.duration_since(restarted)),
        recovery_to_last: replays.iter().max().map(|t| t.duration_since(restarted)),
        notes: format!(
            "{} rows leased at the kill ({direct} direct, {} dispatcher), all routed, none \
             confirmed; {} published again after their lease; total {:?}",
            held.len(),
            held.len() - direct,
            replays.len(),
            started.elapsed()
        ),
    }
    .print();
    assert_eq!(
        seen, expected,
        "every event arrived, one distinct ce-id each"
    );
    let rows_now: Vec<_> = {
        use futures_util::TryStreamExt;
        outbox
            .find(mongodb::bson::doc! {})
            .await
            .expect("find")
            .try_collect::<Vec<_>>()
            .await
            .expect("rows")
    };
    assert!(
        replayed(std::slice::from_ref(&got)),
        "each held row was published again: copies {:?}; rows {rows_now:?}",
        held.iter()
            .map(|h| got.copies.get(&h.ce_id).map_or(0, Vec::len))
            .collect::<Vec<_>>()
    );
    assert!(got.duplicates() >= held.len(), "a duplicate per held row");
    for h in &held {
        let row = outbox
            .find_one(mongodb::bson::doc! { "_id": &h.id })
            .await
            .expect("find")
            .expect("row");
        assert_eq!(row.get_str("status"), Ok("published"), "{h:?}");
        let published = row
            .get_datetime("published_at")
            .expect("published_at")
            .timestamp_millis();
        assert!(
            published >= h.lease_until_ms,
            "row {} was published again at {published} ms, inside the dead process's lease \
             (until {} ms)",
            h.id,
            h.lease_until_ms
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "chaos scenario (minutes, private servers): cargo test -p reporter --test chaos -- --ignored; CI runs it"]
async fn a_mongodb_restart_under_load_answers_clean_503s_and_loses_nothing() {
    let _family = common::chaos::family("processes");
    let Some(s) = setup().await else { return };
    let started = Instant::now();
    let addr = common::free_addr();
    let mut c = reporter("serve", &s.name, &s.mongo.uri, &s.rabbit, &s.exchange);
    c.env("SERVER_ADDRESS", &addr)
        .env("MONGO_SERVER_SELECTION_TIMEOUT_MS", "1000");
    let a = addr.clone();
    let _serve = blocking(move || spawn(c, &a)).await;
    let counter = Counter::start(&s.rabbit, &s.queue).await;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (a, tok, st) = (addr.clone(), common::token(), stop.clone());
    let load = tokio::task::spawn_blocking(move || {
        let mut ok = Vec::new();
        let mut refused: Vec<(u16, String)> = Vec::new();
        let mut max = Duration::ZERO;
        let mut last_ok = None;
        let mut i = 0;
        while !st.load(std::sync::atomic::Ordering::SeqCst) {
            let (status, body, took) = create_deadline(&a, &tok, 10 + i);
            max = max.max(took);
            if status == 201 {
                ok.push(("deadline.created".to_owned(), id_of(&body)));
                last_ok = Some(Instant::now());
            } else {
                let v: serde_json::Value =
                    serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
                refused.push((status, v["code"].as_str().unwrap_or("").to_owned()));
            }
            i += 1;
            std::thread::sleep(Duration::from_millis(50));
        }
        (ok, refused, max, last_ok)
    });
    tokio::time::sleep(Duration::from_secs(3)).await;
    let m = &s.mongo;
    let restart_began = Instant::now();
    blocking_restart(m, OUTAGE).await;
    let restarted = Instant::now();
    tokio::time::sleep(Duration::from_secs(8)).await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let (ok, refused, max, last_ok) = load.await.expect("load");
    let want = ok.len();
    settle(
        &[&counter],
        Instant::now() + Duration::from_secs(90),
        Duration::from_millis(500),
        |got| {
            ok.iter().all(|(_, id)| {
                got[0]
                    .by_id
                    .values()
                    .any(|v| v.key == "deadline.created" && &v.subject == id)
            })
        },
    )
    .await;
    let got = counter.stop();
    let seen = union(&got, &Default::default());
    let missing: Vec<_> = ok.iter().filter(|e| !seen.contains(e)).collect();
    let after: Vec<Instant> = got
        .at
        .values()
        .copied()
        .filter(|t| *t >= restarted)
        .collect();
    Figures {
        scenario: "MongoDB stand-in restarted under load".into(),
        expected: want,
        delivered: want - missing.len(),
        duplicated: got.duplicates(),
        api_errors: refused.len(),
        max_api_latency: max,
        recovery_to_first: after.iter().min().map(|t| t.duration_since(restarted)),
        recovery_to_last: after.iter().max().map(|t| t.duration_since(restarted)),
        notes: format!(
            "restart took {:?}; refused {:?}; last accepted write {:?} after the restart; total {:?}",
            restarted.duration_since(restart_began),
            refused.iter().take(3).collect::<Vec<_>>(),
            last_ok.map(|l| l.saturating_duration_since(restarted)),
            started.elapsed()
        ),
    }
    .print();
    // The server stays away for OUTAGE, longer than the driver's 1 s server selection: the
    // writes issued meanwhile (one every 50 ms, each waiting at most that second) are refused,
    // and every refusal is a clean 503.
    assert!(
        !refused.is_empty(),
        "the outage was observed: no write was refused while MongoDB was away for {OUTAGE:?}"
    );
    for (status, code) in &refused {
        assert_eq!(
            (*status, code.as_str()),
            (503, "TPL-0503"),
            "a refused write is a clean 503"
        );
    }
    assert!(
        last_ok.is_some_and(|l| l > restarted),
        "the service recovered by itself"
    );
    assert!(
        max < Duration::from_secs(15),
        "calls stay bounded while MongoDB is away ({max:?})"
    );
    assert!(
        missing.is_empty(),
        "events of accepted writes lost: {missing:?}"
    );
}

/// How long the stand-in stays down in the restart scenario (then its start takes a second or
/// two more): three times the service's server selection timeout.
const OUTAGE: Duration = Duration::from_secs(3);

async fn blocking_restart(m: &PrivateMongo, down: Duration) {
    // The restart is a plain process run; block this worker thread for it.
    tokio::task::block_in_place(|| m.restart(down));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "chaos scenario (minutes, private servers): cargo test -p reporter --test chaos -- --ignored; CI runs it"]
async fn a_worker_killed_mid_job_is_redelivered_and_ends_in_one_terminal_event() {
    let _family = common::chaos::family("processes");
    let Some(s) = setup().await else { return };
    let Some(pg) = common::ScratchPostgres::create("chaos_slow").await else {
        return;
    };
    pg.create_slow_view(4.0).await;
    let started = Instant::now();
    let addr = common::free_addr();
    let health = common::free_addr();
    let cmd = |role: &str| {
        let mut c = reporter(role, &s.name, &s.mongo.uri, &s.rabbit, &s.exchange);
        c.env("SERVER_ADDRESS", &addr)
            .env("HEALTH_ADDRESS", &health);
        job_queue(&mut c, &s.name, &s.rabbit);
        for (k, v) in pg.source_env("SLOW") {
            c.env(k, v);
        }
        c
    };
    let api_cmd = cmd("api");
    let a = addr.clone();
    let _api = blocking(move || spawn(api_cmd, &a)).await;
    let first = cmd("worker");
    let h = health.clone();
    let mut worker = blocking(move || spawn(first, &h)).await;
    let counter = Counter::start(&s.rabbit, &s.queue).await;
    let token = common::token();
    let (a, tok) = (addr.clone(), token.clone());
    let report = blocking(move || {
        let tpl = common::upload_txt_raw(&a, &tok, "{{ slow.slow.0.id }}", "chaos");
        common::request_report_raw(&a, &tok, &tpl)
    })
    .await;
    // Kill the worker once it really holds the job: its query (4 s of pg_sleep) is running.
    let running = Instant::now();
    while !pg.slow_query_running().await {
        assert!(
            running.elapsed() < Duration::from_secs(60),
            "the worker never started the job's query"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    worker.kill9();
    let killed = Instant::now();
    let health2 = common::free_addr();
    let mut second = cmd("worker");
    second.env("HEALTH_ADDRESS", &health2);
    let h = health2.clone();
    let _worker2 = blocking(move || spawn(second, &h)).await;
    let (a, tok, r) = (addr.clone(), token.clone(), report.clone());
    let last = blocking(move || common::wait_report_raw(&a, &tok, &r, 600)).await;
    let finished = Instant::now();
    settle(
        &[&counter],
        Instant::now() + Duration::from_secs(30),
        Duration::from_secs(2),
        |got| {
            got[0].by_id.values().any(|v| {
                v.subject == report && v.key.starts_with("report.") && v.key != "report.requested"
            })
        },
    )
    .await;
    let got = counter.stop();
    let terminal: Vec<(&String, &common::chaos::Seen)> = got
        .by_id
        .iter()
        .filter(|(_, v)| v.subject == report && v.key != "report.requested")
        .collect();
    Figures {
        scenario: "worker killed mid-job".into(),
        expected: 1,
        delivered: terminal.len(),
        duplicated: got.duplicates(),
        api_errors: 0,
        max_api_latency: Duration::ZERO,
        recovery_to_first: Some(finished.duration_since(killed)),
        recovery_to_last: None,
        notes: format!(
            "killed as soon as the job's query ran ({:?} after the request); report {} after the kill; terminal events {:?}; total {:?}",
            killed.duration_since(running),
            last["status"],
            terminal
                .iter()
                .map(|(_, v)| v.key.clone())
                .collect::<Vec<_>>(),
            started.elapsed()
        ),
    }
    .print();
    assert_eq!(
        last["status"], "Finished",
        "the redelivered job finished the report: {last}"
    );
    assert_eq!(
        terminal.len(),
        1,
        "one terminal event (one distinct ce-id): {terminal:?}"
    );
    assert_eq!(terminal[0].1.key, "report.finished");
    let (h, tok) = (health2.clone(), token.clone());
    let (status, metrics) =
        blocking(move || common::request(&h, "GET", "/metrics", &tok, "text/plain", b"")).await;
    let metrics = String::from_utf8_lossy(&metrics).into_owned();
    assert_eq!(status, 200, "{metrics}");
    assert!(
        redelivered_jobs(&metrics) >= 1.0,
        "the second worker received the job as a redelivery:\n{metrics}"
    );
    // It stays in its one terminal state.
    let (a, tok, r) = (addr.clone(), token.clone(), report.clone());
    let again = blocking(move || {
        std::thread::sleep(Duration::from_secs(1));
        common::wait_report_raw(&a, &tok, &r, 1)
    })
    .await;
    assert_eq!(again["status"], "Finished");
    drop(_api);
    pg.remove().await;
}
