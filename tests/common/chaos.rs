//! Chaos-test helpers: private servers the tests may stop, alarm and restart (never the shared
//! ones), an event counter on a durable queue, and the figures every scenario prints.
#![allow(dead_code)]

use super::ports::free_port;
use futures_util::StreamExt;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, ExchangeDeclareOptions, QueueBindOptions,
    QueueDeclareOptions,
};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{Connection, ConnectionProperties, ExchangeKind};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// True when a private server can be started: the tests need `rabbitmq-server` (private
/// broker) or the stand-in script; without them they skip (or fail with
/// `REPORTER_REQUIRE_SERVICES=1`).
pub fn require(what: &str, available: bool) -> bool {
    if available {
        return true;
    }
    if reporter_contract::services::required() {
        panic!("{what} is required (REPORTER_REQUIRE_SERVICES=1)");
    }
    reporter_contract::services::skipped(what);
    false
}

/// The chaos families (broker, processes, scale-out) share one test binary: a family's
/// scenarios run side by side, as they were written to, but never beside another family's,
/// whose load and faults would perturb their timing. Held for the whole scenario.
pub struct FamilyGuard;

static FAMILY: std::sync::Mutex<(Option<&'static str>, usize)> = std::sync::Mutex::new((None, 0));
static FAMILY_FREE: std::sync::Condvar = std::sync::Condvar::new();

/// Waits until no scenario of another family runs, then enters `name`'s.
pub fn family(name: &'static str) -> FamilyGuard {
    let mut state = FAMILY.lock().unwrap_or_else(|p| p.into_inner());
    while state.0.is_some_and(|running| running != name) {
        state = FAMILY_FREE.wait(state).unwrap_or_else(|p| p.into_inner());
    }
    *state = (Some(name), state.1 + 1);
    FamilyGuard
}

impl Drop for FamilyGuard {
    fn drop(&mut self) {
        let mut state = FAMILY.lock().unwrap_or_else(|p| p.into_inner());
        state.1 -= 1;
        if state.1 == 0 {
            state.0 = None;
            FAMILY_FREE.notify_all();
        }
    }
}

/// A RabbitMQ node of the test's own (`scripts/chaos-broker.sh`), on free ports, stopped and
/// removed when dropped.
pub struct PrivateBroker {
    /// AMQP URI.
    pub uri: String,
    ctl: BrokerCtl,
}

/// The control handle of a [`PrivateBroker`] (cheap to clone, `Send`: for `spawn_blocking`).
#[derive(Clone)]
pub struct BrokerCtl {
    port: u16,
    dist_port: u16,
    node: String,
}

impl PrivateBroker {
    /// Starts a node; `None` (skip) when `rabbitmq-server` is not installed.
    pub fn start() -> Option<Self> {
        let installed = Command::new("sh")
            .args(["-c", "command -v rabbitmq-server"])
            .output()
            .is_ok_and(|o| o.status.success());
        if !require("rabbitmq-server (a private RabbitMQ node)", installed) {
            return None;
        }
        let port = free_port();
        let mut dist_port = free_port();
        while dist_port == port {
            dist_port = free_port();
        }
        let node = format!("reporter-chaos-{}-{port}@localhost", std::process::id());
        let b = Self {
            uri: format!("amqp://guest:guest@127.0.0.1:{port}/%2f"),
            ctl: BrokerCtl {
                port,
                dist_port,
                node,
            },
        };
        let out = b.ctl.script(&["start"]);
        assert!(
            out.status.success(),
            "private broker did not start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some(b)
    }

    /// Its control handle.
    pub fn ctl(&self) -> BrokerCtl {
        self.ctl.clone()
    }
}

impl BrokerCtl {
    fn script(&self, args: &[&str]) -> std::process::Output {
        Command::new("bash")
            .arg(repo().join("scripts/chaos-broker.sh"))
            .args(args)
            .env("CHAOS_RABBITMQ_PORT", self.port.to_string())
            .env("CHAOS_RABBITMQ_DIST_PORT", self.dist_port.to_string())
            .env("CHAOS_RABBITMQ_NODE", &self.node)
            .env(
                "CHAOS_RABBITMQ_BASE",
                format!("/tmp/reporter-chaos-rabbit-{}", self.port),
            )
            .output()
            .expect("run scripts/chaos-broker.sh")
    }

    /// `rabbitmqctl` against this node; panics on failure.
    pub fn rabbitmqctl(&self, args: &[&str]) {
        let mut all = vec!["ctl"];
        all.extend_from_slice(args);
        let out = self.script(&all);
        assert!(
            out.status.success(),
            "rabbitmqctl {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Stops the RabbitMQ application (the node stays up).
    pub fn stop_app(&self) {
        self.rabbitmqctl(&["stop_app"]);
    }

    /// Starts the application again and waits until it accepts connections.
    pub fn start_app(&self) {
        self.rabbitmqctl(&["start_app"]);
        self.rabbitmqctl(&["await_startup", "--timeout", "60"]);
    }

    /// Sets the memory high watermark (a tiny value raises the memory alarm).
    pub fn watermark(&self, ratio: &str) {
        self.rabbitmqctl(&["set_vm_memory_high_watermark", ratio]);
    }
}

impl Drop for PrivateBroker {
    fn drop(&mut self) {
        let _ = self.ctl.script(&["stop"]);
    }
}

/// A MongoDB stand-in of the test's own (`scripts/mongo-standin.sh` on a free port), stopped
/// and removed when dropped.
pub struct PrivateMongo {
    /// Connection string.
    pub uri: String,
    port: u16,
}

impl PrivateMongo {
    /// Starts one; `None` (skip) when the stand-in cannot be installed (no python3).
    pub fn start() -> Option<Self> {
        let python = Command::new("sh")
            .args(["-c", "command -v python3"])
            .output()
            .is_ok_and(|o| o.status.success());
        if !require("python3 (the MongoDB stand-in)", python) {
            return None;
        }
        let port = free_port();
        let m = Self {
            uri: format!("mongodb://127.0.0.1:{port}"),
            port,
        };
        let out = m.script("start", "TERM");
        assert!(
            out.status.success(),
            "private MongoDB stand-in did not start: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Some(m)
    }

    fn script(&self, cmd: &str, signal: &str) -> std::process::Output {
        self.script_down(cmd, signal, Duration::ZERO)
    }

    fn script_down(&self, cmd: &str, signal: &str, down: Duration) -> std::process::Output {
        Command::new("bash")
            .arg(repo().join("scripts/mongo-standin.sh"))
            .arg(cmd)
            .env("MONGO_PORT", self.port.to_string())
            .env("MONGO_RESTART_SIGNAL", signal)
            .env("MONGO_RESTART_DOWN_S", format!("{:.3}", down.as_secs_f64()))
            .output()
            .expect("run scripts/mongo-standin.sh")
    }

    /// Kills the server (SIGKILL), leaves it down for `down`, and starts it again on the same
    /// data (the start itself takes a second or two more).
    pub fn restart(&self, down: Duration) {
        let out = self.script_down("restart", "KILL", down);
        assert!(
            out.status.success(),
            "stand-in restart: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for PrivateMongo {
    fn drop(&mut self) {
        let _ = self.script("stop", "TERM");
    }
}

/// How often [`TransactionReaper`] sends its transaction statement.
pub const REAPER_PERIOD: Duration = Duration::from_secs(5);

/// Plays mongod's background reaper on the stand-in. mongod aborts a transaction idle past
/// `transactionLifetimeLimitSeconds` (60 s) on its own; the stand-in does so only when some
/// transaction statement arrives. A process killed mid-commit leaves its transaction open,
/// holding its records (e.g. an idempotency key a retry waits for), so a test that kills
/// processes sends one small transaction every [`REAPER_PERIOD`] to let the stand-in end the
/// dead ones as mongod would. Stops when dropped.
pub struct TransactionReaper(tokio::task::JoinHandle<()>);

impl TransactionReaper {
    /// Starts it on the server at `uri` (inside a tokio runtime).
    pub async fn start(uri: &str) -> Self {
        let client = mongodb::Client::with_uri_str(uri)
            .await
            .expect("the reaper's client");
        Self(tokio::spawn(async move {
            let coll = client
                .database("reaper")
                .collection::<mongodb::bson::Document>("ticks");
            loop {
                tokio::time::sleep(REAPER_PERIOD).await;
                let Ok(mut session) = client.start_session().await else {
                    continue;
                };
                if session.start_transaction().await.is_err() {
                    continue;
                }
                let _ = coll
                    .insert_one(mongodb::bson::doc! { "at": mongodb::bson::DateTime::now() })
                    .session(&mut session)
                    .await;
                let _ = session.abort_transaction().await;
            }
        }))
    }
}

impl Drop for TransactionReaper {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One received message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// Routing key.
    pub key: String,
    /// `ce-subject`.
    pub subject: String,
    /// `ce-sequence` (the resource's version after the change), when the event has one.
    pub sequence: Option<String>,
}

/// What a durable queue bound to the events exchange received.
#[derive(Debug, Default)]
pub struct Received {
    /// Distinct events by `ce-id`.
    pub by_id: BTreeMap<String, Seen>,
    /// Messages read (duplicates included).
    pub messages: usize,
    /// When the last new event arrived.
    pub last_new: Option<Instant>,
    /// When the first message arrived.
    pub first: Option<Instant>,
    /// When each distinct event first arrived.
    pub at: BTreeMap<String, Instant>,
    /// When each copy of each event arrived, by `ce-id`.
    pub copies: BTreeMap<String, Vec<Instant>>,
    /// The `ce-id` of each distinct event, in the order of their first arrivals.
    pub order: Vec<String>,
}

impl Received {
    /// (ce-id, (routing key, subject)) of every distinct event.
    pub fn seen(&self) -> Vec<(String, (String, String))> {
        self.by_id
            .iter()
            .map(|(id, s)| (id.clone(), (s.key.clone(), s.subject.clone())))
            .collect()
    }

    /// Messages beyond the first of each `ce-id`.
    pub fn duplicates(&self) -> usize {
        self.messages - self.by_id.len()
    }
}

fn header(headers: &FieldTable, name: &str) -> Option<String> {
    match headers.inner().get(name)? {
        AMQPValue::LongString(s) => Some(String::from_utf8_lossy(s.as_bytes()).into_owned()),
        AMQPValue::ShortString(s) => Some(s.as_str().to_owned()),
        _ => None,
    }
}

/// Declares (on `uri`) the durable topic `exchange` (alternate exchange
/// `<exchange>.unroutable`, as the tests configure the service) and a durable queue `queue`
/// bound to it with `#`, so messages published while nobody reads survive a broker restart.
pub async fn durable_queue(uri: &str, exchange: &str, queue: &str) {
    let conn = Connection::connect(uri, ConnectionProperties::default())
        .await
        .expect("connect");
    let ch = conn.create_channel().await.expect("channel");
    // Declared as the service declares it (alternate exchange `<exchange>.unroutable`), so
    // whichever comes first, the other finds it equivalent.
    let mut args = FieldTable::default();
    args.insert(
        "alternate-exchange".into(),
        AMQPValue::LongString(format!("{exchange}.unroutable").as_str().into()),
    );
    ch.exchange_declare(
        exchange.into(),
        ExchangeKind::Topic,
        ExchangeDeclareOptions {
            durable: true,
            ..Default::default()
        },
        args,
    )
    .await
    .expect("declare exchange");
    ch.queue_declare(
        queue.into(),
        QueueDeclareOptions::durable(),
        FieldTable::default(),
    )
    .await
    .expect("declare queue");
    ch.queue_bind(
        queue.into(),
        exchange.into(),
        "#".into(),
        QueueBindOptions::default(),
        FieldTable::default(),
    )
    .await
    .expect("bind queue");
    let _ = conn.close(200, "done".into()).await;
}

/// A consumer of a durable queue running in the background, recording every message; it
/// stops by itself when its connection drops (e.g. the broker stops).
pub struct Counter {
    seen: std::sync::Arc<std::sync::Mutex<Received>>,
    task: tokio::task::JoinHandle<()>,
}

impl Counter {
    /// Connects and starts consuming `queue`.
    pub async fn start(uri: &str, queue: &str) -> Self {
        let conn = Connection::connect(uri, ConnectionProperties::default())
            .await
            .expect("consumer connect");
        let ch = conn.create_channel().await.expect("consumer channel");
        ch.basic_qos(500, Default::default()).await.expect("qos");
        let mut consumer = ch
            .basic_consume(
                queue.into(),
                "chaos-counter".into(),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await
            .expect("consume");
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Received::default()));
        let s = seen.clone();
        let task = tokio::spawn(async move {
            let _conn = conn;
            while let Some(Ok(delivery)) = consumer.next().await {
                let headers = delivery.properties.headers().clone().unwrap_or_default();
                let id = header(&headers, "ce-id").unwrap_or_default();
                let item = Seen {
                    key: delivery.routing_key.as_str().to_owned(),
                    subject: header(&headers, "ce-subject").unwrap_or_default(),
                    sequence: header(&headers, "ce-sequence"),
                };
                {
                    let mut got = s.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    got.messages += 1;
                    got.first.get_or_insert_with(Instant::now);
                    got.copies
                        .entry(id.clone())
                        .or_default()
                        .push(Instant::now());
                    match got.by_id.get(&id) {
                        Some(prev) => {
                            assert_eq!(prev, &item, "a duplicate shares its event ({id})")
                        }
                        None => {
                            got.at.insert(id.clone(), Instant::now());
                            got.order.push(id.clone());
                            got.by_id.insert(id, item);
                            got.last_new = Some(Instant::now());
                        }
                    }
                }
                let _ = delivery.ack(BasicAckOptions::default()).await;
            }
        });
        Self { seen, task }
    }

    /// Distinct events so far.
    pub fn distinct(&self) -> usize {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .by_id
            .len()
    }

    /// A copy of what arrived so far.
    pub fn snapshot(&self) -> Received {
        let g = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Received {
            by_id: g.by_id.clone(),
            messages: g.messages,
            last_new: g.last_new,
            first: g.first,
            at: g.at.clone(),
            copies: g.copies.clone(),
            order: g.order.clone(),
        }
    }

    /// Stops consuming; what arrived.
    pub fn stop(self) -> Received {
        self.task.abort();
        self.snapshot()
    }
}

/// Waits until `done` says the counters together hold enough, or `until`; then `linger` more
/// for late duplicates.
pub async fn settle(
    counters: &[&Counter],
    until: Instant,
    linger: Duration,
    done: impl Fn(&[Received]) -> bool,
) {
    loop {
        let snaps: Vec<Received> = counters.iter().map(|c| c.snapshot()).collect();
        if done(&snaps) || Instant::now() >= until {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(linger).await;
}

/// Reads `queue` until `want` distinct events arrived or `until`, then for `linger` more to
/// catch late duplicates.
pub async fn collect(
    uri: &str,
    queue: &str,
    want: usize,
    until: Instant,
    linger: Duration,
) -> Received {
    let c = Counter::start(uri, queue).await;
    settle(&[&c], until, linger, |s| s[0].by_id.len() >= want).await;
    c.stop()
}

/// The figures every chaos scenario prints (and the lead reads in CI's log).
#[derive(Debug, Default)]
pub struct Figures {
    /// Scenario name.
    pub scenario: String,
    /// Events the successful writes produced.
    pub expected: usize,
    /// Distinct events received.
    pub delivered: usize,
    /// Extra copies received (same `ce-id`).
    pub duplicated: usize,
    /// API calls that did not answer 2xx.
    pub api_errors: usize,
    /// Slowest API call.
    pub max_api_latency: Duration,
    /// From the server's recovery to the last new event received.
    pub recovery_to_last: Option<Duration>,
    /// From the server's recovery to the first event received.
    pub recovery_to_first: Option<Duration>,
    /// Anything else worth a line.
    pub notes: String,
}

impl Figures {
    /// Prints one line, also into the figures log `.ci/run` shows
    /// ([`reporter_contract::figures`]).
    pub fn print(&self) {
        reporter_contract::figure!(
            "CHAOS {}: events expected {} / delivered {} / duplicated {}; API errors {}; max API latency {:?}; recovery -> first event {:?}, -> last event {:?}; {}",
            self.scenario,
            self.expected,
            self.delivered,
            self.duplicated,
            self.api_errors,
            self.max_api_latency,
            self.recovery_to_first,
            self.recovery_to_last,
            self.notes
        );
    }
}
