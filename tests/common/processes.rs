//! Real `reporter` processes for the chaos tests: the command of a role on a private MongoDB
//! stand-in and the shared RabbitMQ, a handle that kills its process on drop (or at once, as a
//! crash), and the per-test setup (stand-in, events exchange, durable queue, broker clean-up).
#![allow(dead_code)]

use super::chaos::{PrivateMongo, durable_queue};
use reporter_contract::services::{service_url, unique_name};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running `reporter` process, killed (and reaped) when dropped.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Proc {
    /// SIGKILL, as a crash.
    pub fn kill9(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `f` on tokio's blocking pool (plain-socket calls, process starts).
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.expect("blocking task")
}

/// `reporter <role>` on MongoDB database `name`, publishing to `exchange` on `rabbit`.
pub fn reporter(role: &str, name: &str, mongo: &str, rabbit: &str, exchange: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_reporter"));
    c.arg(role)
        .env("TMPDIR", super::children_tmpdir())
        .env("AUTH_JWT_SECRET", super::SECRET)
        .env("MONGO_URI", mongo)
        .env("MONGO_NAME", name)
        .env("MONGO_TENANT_DB_PREFIX", name)
        .env("OBJECT_STORAGE_BACKEND", "gridfs")
        .env("STREAMING_ENABLED", "true")
        .env("RABBITMQ_REPORT_EVENTS_EXCHANGE", exchange)
        .env("STREAMING_BROKERS", rabbit)
        .env("STREAMING_CLOUDEVENTS_SOURCE", "reporter")
        .env(
            "STREAMING_ALTERNATE_EXCHANGE",
            format!("{exchange}.unroutable"),
        )
        .env(
            "LOG_LEVEL",
            std::env::var("E2E_PROC_LOG").unwrap_or_else(|_| "error".into()),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    c
}

/// Points `c` (`reporter api` or `reporter worker`) at the report job queue of test `name` on
/// `rabbit`: exchange `<name>.jobs`, queue `<name>.queue`, DLQ `<name>.dlq` behind `<name>.dlx`
/// (the names [`setup`]'s guard removes).
pub fn job_queue(c: &mut Command, name: &str, rabbit: &str) {
    c.env("RABBITMQ_URI", rabbit)
        .env("RABBITMQ_EXCHANGE", format!("{name}.jobs"))
        .env("RABBITMQ_GENERATE_REPORT_QUEUE", format!("{name}.queue"))
        .env("RABBITMQ_GENERATE_REPORT_KEY", format!("{name}.key"))
        .env("RABBITMQ_DLQ_QUEUE", format!("{name}.dlq"))
        .env("RABBITMQ_DLX", format!("{name}.dlx"));
}

/// Starts `c` and waits (60 s at most) until it listens on `addr`.
pub fn spawn(mut c: Command, addr: &str) -> Proc {
    let mut p = Proc(c.spawn().expect("spawn reporter"));
    super::wait_listening(addr, &mut p.0, Duration::from_secs(60));
    p
}

/// What a process scenario runs on.
pub struct Setup {
    /// The MongoDB stand-in of the test's own.
    pub mongo: PrivateMongo,
    /// The shared RabbitMQ.
    pub rabbit: String,
    /// The test's unique name (database, job queue names).
    pub name: String,
    /// The per-test events exchange.
    pub exchange: String,
    /// A durable queue bound to it with `#`.
    pub queue: String,
    _topology: super::RabbitTopology,
}

/// A stand-in, a per-test events exchange with its durable queue, and a guard that removes
/// them and the job queue's entities afterwards; `None` (skip, printed) without RabbitMQ or the
/// stand-in.
pub async fn setup() -> Option<Setup> {
    let rabbit = service_url("RABBITMQ_URI", "RabbitMQ")?;
    let mongo = blocking(PrivateMongo::start).await?;
    let name = unique_name("chaos");
    let exchange = format!("{name}.events");
    let queue = format!("{name}.durable");
    durable_queue(&rabbit, &exchange, &queue).await;
    let topology = super::RabbitTopology {
        queues: vec![
            queue.clone(),
            format!("{exchange}.unroutable"),
            format!("{name}.queue"),
            format!("{name}.queue.retry"),
            format!("{name}.dlq"),
        ],
        exchanges: vec![
            exchange.clone(),
            format!("{exchange}.unroutable"),
            format!("{name}.jobs"),
            format!("{name}.dlx"),
        ],
    };
    Some(Setup {
        mongo,
        rabbit,
        name,
        exchange,
        queue,
        _topology: topology,
    })
}

/// `reporter_jobs_received_total{redelivered="true"}` in a metrics text.
pub fn redelivered_jobs(metrics: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(r#"reporter_jobs_received_total{redelivered="true"} "#))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}
