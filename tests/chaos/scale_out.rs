//! Scale-out under chaos (issue 17, "Production operation"): two `reporter api` and two
//! `reporter worker` processes on one private MongoDB stand-in and the shared RabbitMQ, a
//! bounded mixed load from a few clients alternating between both APIs (deadlines created,
//! updated, delivered; reports requested, each POST with an `X-Idempotency` key), and mid-load a
//! SIGKILL of one worker and one API, each replaced by a new process on a new port. A request
//! that failed at the transport level is retried on the other API with the same key.
//!
//! Its scenarios run side by side, as they were written to, and never beside another family's
//! (each takes [`crate::common::chaos::family`] first). Shared helpers are in `tests/common`.
//!
//! Then every report is terminal (`Finished`), generated once (one terminal event, one distinct
//! `ce-id`), nothing is left `Processing`, every 2xx write has its event, and no critical event
//! (dispatcher path: `deadline.delivered`, the terminal report events) arrives before its
//! resource's first event (`deadline.created`, `report.requested`). Important events of one
//! resource published directly by different APIs may overtake each other (GUARANTEES.md: order
//! holds per resource on the dispatcher path only); the figures count those overtakes, with
//! and without a publish failure. It prints its figures.
use crate::common;

use common::chaos::{Counter, Figures, Received, TransactionReaper, settle};
use common::processes::{blocking, job_queue, redelivered_jobs, reporter, setup, spawn};
use common::{TransportError, id_of, try_request_with};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Client threads.
const CLIENTS: usize = 3;
/// Rounds per client; each creates a deadline and requests a report (so 30 of each), updates
/// every other deadline and delivers every third.
const ROUNDS: usize = 10;
/// Rounds done (all clients together) before the kills.
const KILL_AFTER: usize = 12;
/// Outbox and direct leases of every process are short so the rows a killed process held are
/// published again within seconds, not the default 30 s.
const LEASE_S: &str = "5";
const PUBLISH_TIMEOUT_MS: &str = "3000";
/// The in-flight lease of an idempotency key: a retry of a request the killed API held waits
/// for it (409 `TPL-0039` meanwhile).
const IDEMPOTENCY_LEASE_S: &str = "3";
/// `REPORT_REQUEUE_AFTER_SEC`, its minimum.
const REQUEUE_AFTER_S: &str = "60";
/// Every request, retries included, is answered within this. The longest case: the killed
/// API died while committing a report, its open transaction holds the request's idempotency
/// key, and the retry answers 409 `TPL-0039` until the database aborts that transaction
/// (mongod's `transactionLifetimeLimitSeconds`, 60 s; the stand-in as soon as the
/// [`TransactionReaper`] ticks after that), then creates the report once.
const CALL_LIMIT: Duration = Duration::from_secs(90);

/// The current address of each of the two API slots (a replacement takes its victim's slot).
type Apis = Arc<Mutex<[String; 2]>>;

/// One request as the clients saw it, after its retries.
#[derive(Debug, Clone)]
struct Call {
    status: u16,
    body: Vec<u8>,
    /// The API that answered.
    api: String,
    answered: Instant,
    /// An earlier attempt may have been processed (cut after it was sent).
    ambiguous: bool,
}

#[derive(Debug, Default)]
struct Log {
    latencies: Vec<Duration>,
    /// Refused connections, retried on the other API.
    not_sent: usize,
    /// Connections cut after the request was sent, retried on the other API, same key.
    cut: usize,
    /// The three slowest answers: (latency, operation, status, API).
    slowest: Vec<(Duration, &'static str, u16, String)>,
    /// Those cut connections by operation.
    cut_ops: BTreeMap<&'static str, usize>,
    /// 409 `TPL-0039` (the key in flight on a dead process) and 503, retried.
    retried_answers: usize,
    /// Answers `X-Idempotency-Replayed: true`.
    replayed: usize,
    /// Final answers that were not the expected 2xx.
    errors: Vec<String>,
}

#[derive(Debug, Default)]
struct State {
    /// (deadline id, create call).
    created: Vec<(String, Call)>,
    /// Deadline ids of each 200 update.
    updated: Vec<String>,
    /// Deadline ids delivered (200, or 422 after a cut attempt: the first one delivered).
    delivered: Vec<String>,
    /// (report id, request call).
    reports: Vec<(String, Call)>,
    /// Creates retried after a cut attempt (deadlines honour no idempotency key: the cut
    /// attempt may have created one more deadline).
    ambiguous_creates: usize,
    log: Log,
}

struct Client {
    apis: Apis,
    token: String,
    state: Arc<Mutex<State>>,
    /// The API the test kills, and how many report requests are in flight on it: the kill
    /// waits (briefly) for one, so an idempotent request is cut mid-way.
    victim: String,
    victim_reports: AtomicUsize,
}

impl Client {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `method path` on API slot `slot`; a transport failure is retried on the other slot
    /// (same key), and so are 409 `TPL-0039` and 503 when `idempotent`.
    #[allow(clippy::too_many_arguments)]
    fn call(
        &self,
        slot: usize,
        method: &str,
        path: &str,
        content_type: &str,
        body: &[u8],
        key: &str,
        idempotent: bool,
    ) -> Call {
        let started = Instant::now();
        let headers = format!("Content-Type: {content_type}\r\nX-Idempotency: {key}\r\n");
        let mut slot = slot;
        let mut ambiguous = false;
        loop {
            if started.elapsed() > CALL_LIMIT {
                return Call {
                    status: 0,
                    body: format!("{method} {path} (key {key}): no answer within {CALL_LIMIT:?}")
                        .into_bytes(),
                    api: String::new(),
                    answered: Instant::now(),
                    ambiguous,
                };
            }
            let addr = self
                .apis
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)[slot % 2]
                .clone();
            let t0 = Instant::now();
            let watched = addr == self.victim && path == "/v1/reports";
            if watched {
                self.victim_reports.fetch_add(1, Ordering::SeqCst);
            }
            let outcome = try_request_with(&addr, method, path, &self.token, &headers, body);
            if watched {
                self.victim_reports.fetch_sub(1, Ordering::SeqCst);
            }
            let took = t0.elapsed();
            slot += 1;
            match outcome {
                Ok(a) => {
                    let mut st = self.state();
                    st.log.latencies.push(took);
                    st.log
                        .slowest
                        .push((took, operation(method, path), a.status, addr.clone()));
                    st.log.slowest.sort_by_key(|s| std::cmp::Reverse(s.0));
                    st.log.slowest.truncate(3);
                    let code = serde_json::from_slice::<serde_json::Value>(&a.body)
                        .ok()
                        .and_then(|v| v["code"].as_str().map(str::to_owned));
                    let retry = idempotent
                        && (a.status == 503
                            || (a.status == 409 && code.as_deref() == Some("TPL-0039")));
                    if retry {
                        st.log.retried_answers += 1;
                        drop(st);
                        std::thread::sleep(Duration::from_millis(250));
                        continue;
                    }
                    if a.head
                        .to_ascii_lowercase()
                        .contains("x-idempotency-replayed: true")
                    {
                        st.log.replayed += 1;
                    }
                    return Call {
                        status: a.status,
                        body: a.body,
                        api: addr,
                        answered: Instant::now(),
                        ambiguous,
                    };
                }
                Err(TransportError::NotSent(_)) => self.state().log.not_sent += 1,
                Err(TransportError::Ambiguous(_)) => {
                    ambiguous = true;
                    let mut st = self.state();
                    st.log.cut += 1;
                    *st.log.cut_ops.entry(operation(method, path)).or_default() += 1;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn error(&self, what: &str, c: &Call) {
        self.state().log.errors.push(format!(
            "{what}: {} {}",
            c.status,
            String::from_utf8_lossy(&c.body)
        ));
    }

    /// Client `t`'s share of the load.
    fn run(&self, t: usize, run: &str, template: &str, progress: &AtomicUsize) {
        for r in 0..ROUNDS {
            let n = t * ROUNDS + r;
            let slot = t + r;
            let body = common::deadline_body(10 + n as i64).to_string();
            let c = self.call(
                slot,
                "POST",
                "/v1/deadlines",
                "application/json",
                body.as_bytes(),
                &format!("{run}-dl-{n}"),
                false,
            );
            if c.status != 201 {
                self.error("create deadline", &c);
                continue;
            }
            let id = id_of(&c.body);
            {
                let mut st = self.state();
                st.ambiguous_creates += usize::from(c.ambiguous);
                st.created.push((id.clone(), c));
            }
            if r % 2 == 0 {
                let c = self.call(
                    slot + 1,
                    "PATCH",
                    &format!("/v1/deadlines/{id}"),
                    "application/json",
                    br#"{"name":"Liquidity report updated"}"#,
                    &format!("{run}-up-{n}"),
                    false,
                );
                if c.status == 200 {
                    self.state().updated.push(id.clone());
                } else {
                    self.error("update deadline", &c);
                }
            }
            if r % 3 == 0 {
                let c = self.call(
                    slot,
                    "PATCH",
                    &format!("/v1/deadlines/{id}/deliver"),
                    "application/json",
                    br#"{"delivered":true}"#,
                    &format!("{run}-dv-{n}"),
                    false,
                );
                if c.status == 200 || (c.status == 422 && c.ambiguous) {
                    self.state().delivered.push(id.clone());
                } else {
                    self.error("deliver deadline", &c);
                }
            }
            let req = serde_json::json!({"templateId": template, "filters": {}}).to_string();
            let c = self.call(
                slot + 1,
                "POST",
                "/v1/reports",
                "application/json",
                req.as_bytes(),
                &format!("{run}-rep-{n}"),
                true,
            );
            if c.status == 201 {
                let id = id_of(&c.body);
                self.state().reports.push((id, c));
            } else {
                self.error("request report", &c);
            }
            progress.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The operation of a request, for the figures.
fn operation(method: &str, path: &str) -> &'static str {
    match (method, path) {
        ("POST", "/v1/deadlines") => "create deadline",
        ("POST", "/v1/reports") => "request report",
        ("POST", "/v1/templates") => "upload template",
        ("PATCH", p) if p.ends_with("/deliver") => "deliver deadline",
        ("PATCH", _) => "update deadline",
        _ => "other",
    }
}

/// `q`-quantile of `d` (sorted in place).
fn quantile(d: &mut [Duration], q: f64) -> Duration {
    d.sort();
    d.get(((d.len() as f64 - 1.0) * q).round() as usize)
        .copied()
        .unwrap_or_default()
}

/// Distinct events of `subject` as (position of first arrival, ce-id, key).
fn events_of<'a>(
    got: &'a Received,
    pos: &BTreeMap<&str, usize>,
    subject: &str,
) -> Vec<(usize, &'a str, &'a str)> {
    let mut v: Vec<(usize, &str, &str)> = got
        .by_id
        .iter()
        .filter(|(_, s)| s.subject == subject)
        .map(|(id, s)| (pos[id.as_str()], id.as_str(), s.key.as_str()))
        .collect();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "chaos scenario (minutes, private servers): cargo test -p reporter --test chaos -- --ignored; CI runs it"]
async fn two_apis_and_two_workers_lose_a_worker_and_an_api_mid_load_and_every_report_ends_once() {
    let _family = common::chaos::family("scale_out");
    let Some(s) = setup().await else { return };
    let Some(pg) = common::ScratchPostgres::create("chaos_scale").await else {
        return;
    };
    // Each job's query takes 0.3 s, so jobs are running when the worker dies.
    pg.create_slow_view(0.3).await;
    let _reaper = TransactionReaper::start(&s.mongo.uri).await;
    let started = Instant::now();
    let cmd = |role: &str, var: &str, addr: &str| {
        let mut c = reporter(role, &s.name, &s.mongo.uri, &s.rabbit, &s.exchange);
        c.env(var, addr)
            .env("STREAMING_OUTBOX_LEASE_S", LEASE_S)
            .env("STREAMING_PUBLISH_TIMEOUT_MS", PUBLISH_TIMEOUT_MS)
            .env("STREAMING_DISPATCH_POLL_MS", "200")
            .env("IDEMPOTENCY_IN_FLIGHT_SECONDS", IDEMPOTENCY_LEASE_S)
            // The shortest stuck-report sweep (a report committed by the killed API whose job
            // was never queued is queued again after it).
            .env("ENGINE_TIMEOUT_SEC", "30")
            .env("REPORT_REQUEUE_AFTER_SEC", REQUEUE_AFTER_S);
        job_queue(&mut c, &s.name, &s.rabbit);
        for (k, v) in pg.source_env("SLOW") {
            c.env(k, v);
        }
        c
    };
    let start = |role: &str| {
        let (var, addr) = if role == "api" {
            ("SERVER_ADDRESS", common::free_addr())
        } else {
            ("HEALTH_ADDRESS", common::free_addr())
        };
        let c = cmd(role, var, &addr);
        async move {
            let a = addr.clone();
            (blocking(move || spawn(c, &a)).await, addr)
        }
    };
    let (mut api1, api1_addr) = start("api").await;
    let (_api2, api2_addr) = start("api").await;
    let (mut worker1, _) = start("worker").await;
    let (_worker2, worker2_health) = start("worker").await;
    let up = started.elapsed();
    // Which build runs (the target directory may be shared with another worktree).
    let (a, tok) = (api2_addr.clone(), common::token());
    let (_, version) =
        blocking(move || common::request(&a, "GET", "/version", &tok, "application/json", b""))
            .await;
    let version: serde_json::Value = serde_json::from_slice(&version).unwrap_or_default();
    let counter = Counter::start(&s.rabbit, &s.queue).await;
    let token = common::token();
    let apis: Apis = Arc::new(Mutex::new([api1_addr.clone(), api2_addr.clone()]));
    let state = Arc::new(Mutex::new(State::default()));
    let client = Arc::new(Client {
        apis: apis.clone(),
        token: token.clone(),
        state: state.clone(),
        victim: api1_addr.clone(),
        victim_reports: AtomicUsize::new(0),
    });
    // The template, uploaded once (idempotent).
    let (c, run) = (client.clone(), s.name.clone());
    let template = blocking(move || {
        let form = common::Form::new()
            .file("template", "t.tpl", b"{{ slow.slow.0.id }}")
            .text("outputFormat", "txt")
            .text("description", "scale-out");
        let ct = form.content_type();
        let up = c.call(
            0,
            "POST",
            "/v1/templates",
            &ct,
            &form.into_body(),
            &format!("{run}-tpl"),
            true,
        );
        assert_eq!(up.status, 201, "{}", String::from_utf8_lossy(&up.body));
        id_of(&up.body)
    })
    .await;
    let load_began = Instant::now();
    let progress = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|t| {
            let (c, run, tpl, p) = (
                client.clone(),
                s.name.clone(),
                template.clone(),
                progress.clone(),
            );
            std::thread::spawn(move || c.run(t, &run, &tpl, &p))
        })
        .collect();
    // Mid-load: once KILL_AFTER rounds are done and a job's query runs, a worker and an API die.
    while progress.load(Ordering::SeqCst) < KILL_AFTER {
        assert!(
            load_began.elapsed() < Duration::from_secs(90),
            "the load stalled"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let waiting = Instant::now();
    let mut job_running = false;
    while waiting.elapsed() < Duration::from_secs(5) {
        if pg.slow_query_running().await {
            job_running = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    worker1.kill9();
    let worker_killed = Instant::now();
    let mut report_in_flight = false;
    while worker_killed.elapsed() < Duration::from_secs(3) {
        if client.victim_reports.load(Ordering::SeqCst) > 0 {
            report_in_flight = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    api1.kill9();
    let api_killed = Instant::now();
    let (_worker3, worker3_health) = start("worker").await;
    let (_api3, api3_addr) = start("api").await;
    apis.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)[0] = api3_addr.clone();
    let replaced = api_killed.elapsed();
    let progress_at_kill = KILL_AFTER;
    let load_done = blocking(move || {
        for c in clients {
            c.join().expect("a client panicked");
        }
        Instant::now()
    })
    .await;
    // Every report leaves Processing (bounded).
    let reports: Vec<String> = state
        .lock()
        .unwrap()
        .reports
        .iter()
        .map(|(id, _)| id.clone())
        .collect();
    let (a, tok, ids) = (api2_addr.clone(), token.clone(), reports.clone());
    let last: BTreeMap<String, serde_json::Value> = blocking(move || {
        // The stuck-report sweep (60 s, then a sweep every 15 s) plus the job.
        let until = Instant::now() + Duration::from_secs(110);
        ids.iter()
            .map(|id| {
                let mut r = common::wait_report_raw(&a, &tok, id, 1);
                while r["status"] == "Processing" && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(100));
                    r = common::wait_report_raw(&a, &tok, id, 1);
                }
                (id.clone(), r)
            })
            .collect()
    })
    .await;
    let terminal_at = Instant::now();
    let (created, updated, delivered, report_calls, ambiguous_creates) = {
        let st = state.lock().unwrap();
        (
            st.created.clone(),
            st.updated.clone(),
            st.delivered.clone(),
            st.reports.clone(),
            st.ambiguous_creates,
        )
    };
    let report_set: BTreeSet<&str> = reports.iter().map(String::as_str).collect();
    let deadline_set: BTreeSet<&str> = created.iter().map(|(id, _)| id.as_str()).collect();
    // Events: every 2xx write's, one terminal per report.
    let complete = |got: &[Received]| {
        let g = &got[0];
        let has = |key: &str, subject: &str| {
            g.by_id
                .values()
                .filter(|v| v.key == key && v.subject == subject)
                .count()
        };
        created
            .iter()
            .all(|(id, _)| has("deadline.created", id) >= 1)
            && delivered
                .iter()
                .all(|id| has("deadline.delivered", id) >= 1)
            && updated.iter().all(|id| {
                has("deadline.updated", id) >= updated.iter().filter(|u| *u == id).count()
            })
            && reports.iter().all(|id| {
                has("report.requested", id) >= 1
                    && has("report.finished", id)
                        + has("report.partial", id)
                        + has("report.errored", id)
                        >= 1
            })
    };
    settle(
        &[&counter],
        Instant::now() + Duration::from_secs(60),
        Duration::from_secs(2),
        complete,
    )
    .await;
    let got = counter.stop();
    let all_arrived = complete(std::slice::from_ref(&got));
    let pos: BTreeMap<&str, usize> = got
        .order
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i))
        .collect();
    let count = |key: &str, subject: &str| {
        got.by_id
            .values()
            .filter(|v| v.key == key && v.subject == subject)
            .count()
    };
    let mut missing: Vec<String> = Vec::new();
    let mut extra: Vec<String> = Vec::new();
    let mut expected = 0;
    for (id, _) in &created {
        expected += 1;
        match count("deadline.created", id) {
            1 => {}
            0 => missing.push(format!("deadline.created {id}")),
            n => extra.push(format!("{n} distinct deadline.created of {id}")),
        }
    }
    for id in &delivered {
        expected += 1;
        match count("deadline.delivered", id) {
            1 => {}
            0 => missing.push(format!("deadline.delivered {id}")),
            n => extra.push(format!("{n} distinct deadline.delivered of {id}")),
        }
    }
    let mut per_update: BTreeMap<&str, usize> = BTreeMap::new();
    for id in &updated {
        *per_update.entry(id).or_default() += 1;
    }
    for (id, n) in &per_update {
        expected += n;
        let have = count("deadline.updated", id);
        if have < *n {
            missing.push(format!("{} deadline.updated of {id}", n - have));
        }
    }
    let mut terminal_keys: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for id in &reports {
        expected += 2;
        match count("report.requested", id) {
            1 => {}
            0 => missing.push(format!("report.requested {id}")),
            n => extra.push(format!("{n} distinct report.requested of {id}")),
        }
        let keys: Vec<&str> = got
            .by_id
            .values()
            .filter(|v| {
                v.subject == *id
                    && matches!(
                        v.key.as_str(),
                        "report.finished" | "report.partial" | "report.errored"
                    )
            })
            .map(|v| v.key.as_str())
            .collect();
        if keys.is_empty() {
            missing.push(format!("terminal event of {id}"));
        }
        terminal_keys.insert(id, keys);
    }
    // Events of resources the clients never heard of: a create cut after it was sent may have
    // created a deadline (deadlines honour no idempotency key); a report never (they do).
    let ghost_deadlines: BTreeSet<&str> = got
        .by_id
        .values()
        .filter(|v| v.key == "deadline.created" && !deadline_set.contains(v.subject.as_str()))
        .map(|v| v.subject.as_str())
        .collect();
    let ghost_reports: BTreeSet<&str> = got
        .by_id
        .values()
        .filter(|v| v.key.starts_with("report.") && !report_set.contains(v.subject.as_str()))
        .map(|v| v.subject.as_str())
        .collect();
    // Order per deadline (and per report): the creating event first. GUARANTEES.md: "order
    // holds per resource on the dispatcher path only" (rows of one resource are claimed and
    // published in commit order, the rows behind a pending one wait for it). A critical event
    // (`deadline.delivered`, the terminal report events) is published by the dispatcher only,
    // so it never overtakes the creating event, whatever failed: asserted. Two important
    // events (`deadline.created`, `deadline.updated`) both go the direct path, from whichever
    // API answered, and may overtake each other (the README names the case of an older event
    // waiting after a failed publish): printed, split into those after a publish failure
    // (answered by the killed API and arriving after its death, or published twice) and those
    // without any.
    const CRITICAL: [&str; 5] = [
        "deadline.delivered",
        "deadline.delivery_reverted",
        "report.finished",
        "report.partial",
        "report.errored",
    ];
    let mut order_broken: Vec<String> = Vec::new();
    let mut overtaken_after_failure: Vec<String> = Vec::new();
    let mut overtaken_without_failure: Vec<String> = Vec::new();
    let firsts = created
        .iter()
        .map(|(id, c)| (id, c, "deadline.created"))
        .chain(
            report_calls
                .iter()
                .map(|(id, c)| (id, c, "report.requested")),
        );
    for (id, call, first_key) in firsts {
        let evs = events_of(&got, &pos, id);
        let Some(&(first_pos, first_id, _)) = evs.iter().find(|e| e.2 == first_key) else {
            continue;
        };
        let arrived = got.at[first_id];
        let failed_publish = (call.api == api1_addr && arrived > api_killed)
            || got.copies.get(first_id).is_some_and(|c| c.len() > 1);
        for &(_, ce_id, key) in evs.iter().filter(|e| e.0 < first_pos) {
            let line = format!(
                "{id}: {key} arrived {:?} before {first_key} (created by {}, answered {:?} before the API kill; {first_key} arrived {:?} after the answer)",
                arrived.saturating_duration_since(got.at[ce_id]),
                call.api,
                api_killed.saturating_duration_since(call.answered),
                arrived.saturating_duration_since(call.answered),
            );
            if CRITICAL.contains(&key) {
                order_broken.push(line);
            } else if failed_publish {
                overtaken_after_failure.push(line);
            } else {
                overtaken_without_failure.push(line);
            }
        }
    }
    // Whatever the arrival order, `ce-sequence` restores commit order: every event has one,
    // they are distinct per resource, and the creating event has the lowest.
    let mut unsequenced: Vec<String> = Vec::new();
    let ids_and_firsts = created
        .iter()
        .map(|(id, _)| (id, "deadline.created"))
        .chain(report_calls.iter().map(|(id, _)| (id, "report.requested")));
    for (id, first_key) in ids_and_firsts {
        let mut evs: Vec<(Option<&String>, &str)> = got
            .by_id
            .values()
            .filter(|s| &s.subject == id)
            .map(|s| (s.sequence.as_ref(), s.key.as_str()))
            .collect();
        evs.sort();
        let distinct: BTreeSet<Option<&String>> = evs.iter().map(|e| e.0).collect();
        if evs.iter().any(|e| e.0.is_none())
            || distinct.len() != evs.len()
            || evs.first().map(|e| e.1) != Some(first_key)
        {
            unsequenced.push(format!("{id}: {evs:?}"));
        }
    }
    // Nothing left Processing, per report and in the list.
    let not_finished: Vec<String> = last
        .iter()
        .filter(|(_, r)| r["status"] != "Finished")
        .map(|(id, r)| format!("{id}: {}", r["status"]))
        .collect();
    let (a, tok) = (api3_addr.clone(), token.clone());
    let (list_status, list) = blocking(move || {
        common::request(
            &a,
            "GET",
            "/v1/reports?status=Processing&limit=100",
            &tok,
            "application/json",
            b"",
        )
    })
    .await;
    let list: serde_json::Value = serde_json::from_slice(&list).unwrap_or_default();
    // Redeliveries the surviving and the new worker saw.
    let mut redelivered = 0.0;
    for h in [worker2_health.clone(), worker3_health.clone()] {
        let tok = token.clone();
        let (_, m) =
            blocking(move || common::request(&h, "GET", "/metrics", &tok, "text/plain", b"")).await;
        redelivered += redelivered_jobs(&String::from_utf8_lossy(&m));
    }
    let mut log = std::mem::take(&mut state.lock().unwrap().log);
    let calls = log.latencies.len();
    let (p50, p95, max) = (
        quantile(&mut log.latencies, 0.5),
        quantile(&mut log.latencies, 0.95),
        quantile(&mut log.latencies, 1.0),
    );
    let duplicated_terminal = reports
        .iter()
        .filter_map(|id| {
            got.by_id
                .iter()
                .find(|(_, v)| v.subject == *id && v.key == "report.finished")
                .and_then(|(ce, _)| got.copies.get(ce))
                .filter(|c| c.len() > 1)
        })
        .count();
    Figures {
        scenario: "2 APIs + 2 workers, a worker and an API killed mid-load".into(),
        expected,
        delivered: expected - missing.len(),
        duplicated: got.duplicates(),
        api_errors: log.errors.len(),
        max_api_latency: max,
        recovery_to_first: None,
        recovery_to_last: Some(terminal_at.duration_since(api_killed)),
        notes: format!(
            "{} deadlines ({} updates, {} deliveries), {} reports, {calls} HTTP answers (p50 {p50:?}, p95 {p95:?}); \
             processes up in {up:?}; killed after {progress_at_kill} of {} rounds, {:?} into the load: worker {:?} and API {:?} after a job's query was seen running ({job_running}) and with a report request in flight on it ({report_in_flight}), \
             replacement API listening {replaced:?} after the kill; load done {:?} after the kill; \
             transport failures retried on the other API: {} refused, {} cut {:?}; {} answers 409 TPL-0039/503 retried; slowest answers {:?}; {} idempotent replays; \
             {ambiguous_creates} creates retried after a cut; {} unknown deadlines, {} unknown reports; \
             {duplicated_terminal} terminal events delivered more than once (same ce-id); {redelivered} jobs redelivered (workers 2 and 3); \
             order: {} critical events before their resource's first, important events overtaken {} times after a publish failure {:?} and {} times without any {:?}; all terminal {:?} after the kill (recovery -> last above); binary commit {} dirty {} (test built at {}); total {:?}",
            created.len(),
            updated.len(),
            delivered.len(),
            reports.len(),
            CLIENTS * ROUNDS,
            worker_killed.duration_since(load_began),
            worker_killed.duration_since(load_began),
            api_killed.duration_since(load_began),
            load_done.duration_since(api_killed),
            log.not_sent,
            log.cut,
            log.cut_ops,
            log.retried_answers,
            log.slowest,
            log.replayed,
            ghost_deadlines.len(),
            ghost_reports.len(),
            order_broken.len(),
            overtaken_after_failure.len(),
            overtaken_after_failure,
            overtaken_without_failure.len(),
            overtaken_without_failure,
            terminal_at.duration_since(api_killed),
            version["commit"],
            version["dirty"],
            env!("REPORTER_BUILD_COMMIT"),
            started.elapsed(),
        ),
    }
    .print();
    assert!(log.errors.is_empty(), "API errors: {:?}", log.errors);
    assert_eq!(
        reports.len(),
        CLIENTS * ROUNDS,
        "every report was requested"
    );
    assert!(
        not_finished.is_empty(),
        "reports not Finished: {not_finished:?}"
    );
    assert_eq!(
        (list_status, &list["total"]),
        (200, &serde_json::json!(0)),
        "nothing left Processing: {list}"
    );
    assert!(
        all_arrived && missing.is_empty(),
        "events missing: {missing:?}"
    );
    assert!(
        extra.is_empty(),
        "more than one distinct event of one fact: {extra:?}"
    );
    for (id, keys) in &terminal_keys {
        assert_eq!(
            keys,
            &vec!["report.finished"],
            "report {id}: one terminal event, report.finished"
        );
    }
    assert!(
        ghost_reports.is_empty(),
        "events of reports nobody was answered: {ghost_reports:?}"
    );
    assert!(
        ghost_deadlines.len() <= ambiguous_creates,
        "{} deadlines nobody was answered, {ambiguous_creates} creates cut after sending: {ghost_deadlines:?}",
        ghost_deadlines.len()
    );
    assert!(
        unsequenced.is_empty(),
        "ordered by ce-sequence, a resource's events start with its creating event: {unsequenced:#?}"
    );
    assert!(
        order_broken.is_empty(),
        "a critical event (dispatcher path) arrived before its resource's first event: {order_broken:#?}"
    );
    pg.remove().await;
}
