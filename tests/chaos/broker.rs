//! Chaos: the event broker fails under a steady write load, and nothing is lost.
//!
//! Its scenarios run side by side, as they were written to, and never beside another family's
//! (each takes [`crate::common::chaos::family`] first). Shared helpers are in `tests/common`.
//!
//! Every scenario runs against a PRIVATE RabbitMQ node the test starts on free ports
//! (`scripts/chaos-broker.sh`) and removes afterwards — never the shared broker — so the
//! scenarios run in parallel with each other (and with tests of other crates):
//! 1. `rabbitmqctl stop_app` for 10 s, and for 120 s, then `start_app`;
//! 2. a memory alarm (`set_vm_memory_high_watermark` near zero, restored after).
//!
//! Each prints its figures (events expected / delivered / duplicated, API errors, max API
//! latency, time from recovery to the first and last event) and asserts: every call answered
//! 2xx quickly, the breaker opened, the backlog gauge stayed true during the outage, every
//! event arrived (one distinct `ce-id` each, duplicates share theirs), and the outbox drained.
use crate::common;

use common::chaos::{Counter, Figures, PrivateBroker, durable_queue, settle};
use common::*;
use reporter_contract::services::unique_name;
use serde_json::{Value, json};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

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

fn gauge(text: &str, name: &str) -> Option<f64> {
    samples(text, name).get("").copied()
}

/// What the write load did.
#[derive(Default)]
struct Load {
    /// Events the successful calls produced: (routing key, subject).
    expected: Vec<(String, String)>,
    calls: usize,
    errors: usize,
    max_latency: Duration,
}

impl Load {
    fn record(&mut self, started: Instant, ok: bool) {
        self.calls += 1;
        self.max_latency = self.max_latency.max(started.elapsed());
        if !ok {
            self.errors += 1;
        }
    }
}

/// One round: create a deadline (important event), then deliver it (critical event).
async fn round(t: &TestApp, tok: &str, i: usize, load: &RefCell<Load>) {
    let started = Instant::now();
    let resp = t
        .post_json(tok, "/v1/deadlines", deadline_body(5 + (i % 300) as i64))
        .await;
    let ok = resp.0.status().is_success();
    load.borrow_mut().record(started, ok);
    if !ok {
        return;
    }
    let d: Value = json(resp).await;
    let id = d["id"].as_str().expect("id").to_owned();
    load.borrow_mut()
        .expected
        .push(("deadline.created".into(), id.clone()));
    let started = Instant::now();
    let resp = t
        .patch_json(
            tok,
            &format!("/v1/deadlines/{id}/deliver"),
            json!({"delivered": true}),
        )
        .await;
    let ok = resp.0.status().is_success();
    load.borrow_mut().record(started, ok);
    if ok {
        load.borrow_mut()
            .expected
            .push(("deadline.delivered".into(), id));
    }
}

/// Runs rounds every `every` until `stop` says so.
async fn drive(t: &TestApp, every: Duration, load: &RefCell<Load>, stop: &RefCell<bool>) {
    let tok = token();
    let mut i = 0;
    let mut next = tokio::time::Instant::now();
    while !*stop.borrow() {
        round(t, &tok, i, load).await;
        i += 1;
        next += every;
        tokio::time::sleep_until(next).await;
    }
}

/// Every event the load produced arrived (before or after the fault), each with one distinct
/// `ce-id`, and nothing else did.
fn check_all_arrived(
    expected: &[(String, String)],
    pre: Vec<(String, (String, String))>,
    post: &common::chaos::Received,
) {
    let mut by_id: BTreeMap<String, (String, String)> = pre.into_iter().collect();
    for (id, s) in &post.by_id {
        let entry = (s.key.clone(), s.subject.clone());
        if let Some(prev) = by_id.insert(id.clone(), entry.clone()) {
            assert_eq!(prev, entry, "a duplicate shares its event ({id})");
        }
    }
    let mut seen: Vec<(String, String)> = by_id.into_values().collect();
    seen.sort();
    let mut want = expected.to_vec();
    want.sort();
    let missing: Vec<_> = want
        .iter()
        .filter(|w| seen.binary_search(w).is_err())
        .collect();
    let extra: Vec<_> = seen
        .iter()
        .filter(|s| want.binary_search(s).is_err())
        .collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{} of {} events missing: {:?}; {} unexpected: {:?}",
        missing.len(),
        want.len(),
        missing.iter().take(5).collect::<Vec<_>>(),
        extra.len(),
        extra.iter().take(5).collect::<Vec<_>>()
    );
    assert_eq!(seen.len(), want.len(), "one distinct ce-id per event");
}

struct Scenario {
    t: TestApp,
    broker: PrivateBroker,
    queue: String,
}

async fn scenario() -> Option<Scenario> {
    let broker = blocking(PrivateBroker::start).await?;
    let exchange = unique_name("chaos_events");
    let alternate = format!("{exchange}.unroutable");
    let queue = unique_name("chaos_durable");
    let mut raw = rabbit_raw(&broker.uri, &exchange, &alternate);
    raw.streaming_cb_min_requests = "4".into();
    raw.streaming_cb_timeout_s = "1".into();
    raw.streaming_publish_timeout_ms = "1000".into();
    let t = start_raw(raw, Vec::new()).await;
    durable_queue(&broker.uri, &exchange, &queue).await;
    Some(Scenario { t, broker, queue })
}

/// The fault a scenario injects.
#[derive(Clone, Copy)]
enum Fault {
    /// `rabbitmqctl stop_app` for this long, then `start_app`.
    Stop(Duration),
    /// A memory alarm for this long, then the watermark restored.
    Alarm(Duration),
}

impl Fault {
    fn name(self) -> String {
        match self {
            Self::Stop(d) => format!("rabbitmq stop_app {}s", d.as_secs()),
            Self::Alarm(d) => format!("rabbitmq memory alarm {}s", d.as_secs()),
        }
    }
    fn length(self) -> Duration {
        match self {
            Self::Stop(d) | Self::Alarm(d) => d,
        }
    }
}

/// What was observed while the fault lasted.
#[derive(Default)]
struct During {
    saw_open: bool,
    /// (gauge, outbox) samples of the pending backlog.
    backlog: Vec<(f64, f64)>,
    /// (gauge, outbox) samples of the oldest pending row's age in seconds.
    oldest: Vec<(f64, f64)>,
}

/// Steady load (a create and a deliver every 50 ms) for 3 s, the fault, 3 s more; then every
/// event must arrive. Answers the figures and what was observed during the fault.
async fn under_load(s: &Scenario, fault: Fault) -> (Figures, During) {
    let started = Instant::now();
    let load = RefCell::new(Load::default());
    let stop = RefCell::new(false);
    let early = Counter::start(&s.broker.uri, &s.queue).await;
    let orchestrate = async {
        tokio::time::sleep(Duration::from_secs(3)).await;
        let ctl = s.broker.ctl();
        match fault {
            Fault::Stop(_) => blocking(move || ctl.stop_app()).await,
            Fault::Alarm(_) => blocking(move || ctl.watermark("0.0000001")).await,
        }
        let began = Instant::now();
        let mut during = During::default();
        while began.elapsed() < fault.length() {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let m = s.t.metrics().await;
            during.saw_open |= gauge(&m, "reporter_events_breaker_state") == Some(2.0);
            let shown = gauge(&m, "reporter_outbox_pending").unwrap_or(0.0);
            let stats =
                s.t.app
                    .ports()
                    .outbox
                    .stats(chrono::Utc::now())
                    .await
                    .expect("stats");
            during.backlog.push((shown, stats.pending as f64));
            let age = gauge(&m, "reporter_outbox_oldest_pending_age_seconds").unwrap_or(0.0);
            let truth_age = stats.oldest_pending_age_secs.unwrap_or(0) as f64;
            during.oldest.push((age, truth_age));
        }
        let ctl = s.broker.ctl();
        match fault {
            Fault::Stop(_) => blocking(move || ctl.start_app()).await,
            Fault::Alarm(_) => blocking(move || ctl.watermark("0.4")).await,
        }
        let healed = Instant::now();
        let late = Counter::start(&s.broker.uri, &s.queue).await;
        tokio::time::sleep(Duration::from_secs(3)).await;
        *stop.borrow_mut() = true;
        (healed, late, during)
    };
    let ((healed, late, during), ()) = tokio::join!(
        orchestrate,
        drive(&s.t, Duration::from_millis(50), &load, &stop)
    );
    let load = load.into_inner();
    let want = load.expected.len();
    settle(
        &[&early, &late],
        healed + Duration::from_secs(60),
        Duration::from_millis(500),
        |got| {
            let mut ids: std::collections::BTreeSet<&String> = got[0].by_id.keys().collect();
            ids.extend(got[1].by_id.keys());
            ids.len() >= want
        },
    )
    .await;
    let (pre, post) = (early.stop(), late.stop());
    let stats =
        s.t.app
            .ports()
            .outbox
            .stats(chrono::Utc::now())
            .await
            .unwrap();
    // Arrivals after the fault of events not read before it.
    let new_after: Vec<Instant> = post
        .at
        .iter()
        .filter(|(id, _)| !pre.by_id.contains_key(*id))
        .map(|(_, at)| *at)
        .collect();
    let figures = Figures {
        scenario: fault.name(),
        expected: want,
        delivered: {
            let mut ids: std::collections::BTreeSet<&String> = pre.by_id.keys().collect();
            ids.extend(post.by_id.keys());
            ids.len()
        },
        duplicated: pre.messages + post.messages
            - pre.by_id.len()
            - post
                .by_id
                .keys()
                .filter(|k| !pre.by_id.contains_key(*k))
                .count(),
        api_errors: load.errors,
        max_api_latency: load.max_latency,
        recovery_to_first: new_after.iter().min().map(|f| f.duration_since(healed)),
        recovery_to_last: new_after.iter().max().map(|l| l.duration_since(healed)),
        notes: format!(
            "{} API calls; backlog at the end of the fault {:?}, oldest pending age {:?} s (gauge, outbox); outbox after {stats:?}; total {:?}",
            load.calls,
            during.backlog.last(),
            during.oldest.last(),
            started.elapsed()
        ),
    };
    figures.print();
    assert_eq!(load.errors, 0, "every call answered 2xx");
    assert!(
        load.max_latency < Duration::from_secs(2),
        "API calls never wait for the broker ({:?})",
        load.max_latency
    );
    check_all_arrived(&load.expected, pre.seen(), &post);
    assert_eq!(stats.pending, 0, "the outbox drained");
    assert_eq!(stats.parked, 0, "nothing parked");
    (figures, during)
}

async fn broker_stopped_under_load(outage: Duration) {
    let Some(s) = scenario().await else { return };
    let (_, during) = under_load(&s, Fault::Stop(outage)).await;
    assert!(during.saw_open, "the breaker opened during the outage");
    let (_, truth) = during.backlog.last().copied().unwrap_or_default();
    assert!(truth > 0.0, "events waited in the outbox");
    for (shown, truth) in &during.backlog {
        assert!(
            (shown - truth).abs() <= (truth * 0.05).max(5.0),
            "reporter_outbox_pending stays true during the outage: shown {shown}, outbox {truth}"
        );
    }
    check_oldest_age(&during.oldest, outage);
}

/// `reporter_outbox_oldest_pending_age_seconds` during an outage: it follows the outbox
/// (refreshed every second, so at most 2 s behind) and grows with the outage, the oldest row
/// having waited since about its start.
fn check_oldest_age(samples: &[(f64, f64)], outage: Duration) {
    for (shown, truth) in samples {
        assert!(
            (shown - truth).abs() <= 2.0,
            "the oldest-pending-age gauge stays true: shown {shown} s, outbox {truth} s"
        );
    }
    let (last, _) = samples.last().copied().unwrap_or_default();
    let floor = outage.as_secs_f64() / 2.0;
    assert!(
        last >= floor,
        "the oldest pending event waited about as long as the outage: gauge {last} s at the \
         end of {outage:?} (samples {samples:?})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "chaos scenario (minutes, private servers): cargo test -p reporter --test chaos -- --ignored; CI runs it"]
async fn rabbitmq_stopped_10s_under_load_loses_nothing() {
    let _family = common::chaos::family("broker");
    broker_stopped_under_load(Duration::from_secs(10)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "chaos scenario (minutes, private servers): cargo test -p reporter --test chaos -- --ignored; CI runs it"]
async fn rabbitmq_stopped_120s_under_load_loses_nothing() {
    let _family = common::chaos::family("broker");
    broker_stopped_under_load(Duration::from_secs(120)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "chaos scenario (minutes, private servers): cargo test -p reporter --test chaos -- --ignored; CI runs it"]
async fn a_memory_alarm_times_publishes_out_opens_the_breaker_and_loses_nothing() {
    let _family = common::chaos::family("broker");
    let Some(s) = scenario().await else { return };
    let (_, during) = under_load(&s, Fault::Alarm(Duration::from_secs(12))).await;
    assert!(during.saw_open, "the breaker opened during the alarm");
    let m = s.t.metrics().await;
    let within = samples(&m, "reporter_events_publish_seconds_bucket")
        .iter()
        .find(|(l, _)| l.contains(r#"le="2.5""#))
        .map(|(_, v)| *v)
        .unwrap_or_default();
    let all = gauge(&m, "reporter_events_publish_seconds_count").unwrap_or_default();
    assert!(all > 0.0);
    assert_eq!(
        within, all,
        "every publish + confirm ended within its 1 s deadline (+ margin)\n{m}"
    );
}
