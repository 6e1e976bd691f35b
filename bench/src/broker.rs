//! The private RabbitMQ node of a benchmark run (`scripts/chaos-broker.sh`), and the small
//! AMQP helpers the figures share.
use anyhow::Context;
use futures_util::StreamExt;
use lapin::options::{
    BasicConsumeOptions, ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions,
    QueueDeleteOptions,
};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{Connection, ConnectionProperties, ExchangeKind};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A private node on free ports, stopped when dropped.
pub struct Broker {
    /// AMQP URI.
    pub uri: String,
    h: Handle,
}

/// Controls the node (`Send`, cheap to clone: for `spawn_blocking`).
#[derive(Clone)]
pub struct Handle {
    port: u16,
    /// Erlang distribution port: free too (the script's default, AMQP port + 20,000, is no
    /// port at all for an AMQP port above 45,535).
    dist_port: u16,
    node: String,
    script: PathBuf,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(5690)
}

impl Broker {
    /// Starts the node.
    pub fn start(repo: &std::path::Path) -> anyhow::Result<Self> {
        let port = free_port();
        let mut dist_port = free_port();
        while dist_port == port {
            dist_port = free_port();
        }
        let b = Self {
            uri: format!("amqp://guest:guest@127.0.0.1:{port}/%2f"),
            h: Handle {
                port,
                dist_port,
                node: format!("reporter-bench-{}@localhost", std::process::id()),
                script: repo.join("scripts/chaos-broker.sh"),
            },
        };
        b.h.run(&["start"])?;
        Ok(b)
    }

    /// The control handle.
    pub fn handle(&self) -> Handle {
        self.h.clone()
    }
}

impl Handle {
    /// The node's OS process id (its pid file, `scripts/chaos-broker.sh`), if it runs.
    pub fn pid(&self) -> Option<u32> {
        std::fs::read_to_string(format!("/tmp/reporter-chaos-rabbit-{}/pid", self.port))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    fn run(&self, args: &[&str]) -> anyhow::Result<()> {
        let out = Command::new("bash")
            .arg(&self.script)
            .args(args)
            .env("CHAOS_RABBITMQ_PORT", self.port.to_string())
            .env("CHAOS_RABBITMQ_DIST_PORT", self.dist_port.to_string())
            .env("CHAOS_RABBITMQ_NODE", &self.node)
            .output()
            .context("running scripts/chaos-broker.sh")?;
        anyhow::ensure!(
            out.status.success(),
            "chaos-broker.sh {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(())
    }

    /// `rabbitmqctl stop_app`.
    pub fn stop_app(&self) -> anyhow::Result<()> {
        self.run(&["ctl", "stop_app"])
    }

    /// Raises a disk alarm (`on`: a free-disk limit no disk meets, so the node blocks every
    /// publishing connection) or clears it (the default limit, 50 MB, back). Unlike a memory
    /// alarm it leaves the node's memory management as it was: no queue pages its messages
    /// out while it lasts or after it.
    pub fn disk_alarm(&self, on: bool) -> anyhow::Result<()> {
        let limit = if on { "100000GB" } else { "50MB" };
        self.run(&["ctl", "set_disk_free_limit", limit])
    }

    /// `rabbitmqctl start_app`, returning once the node accepts connections.
    pub fn start_app(&self) -> anyhow::Result<()> {
        self.run(&["ctl", "start_app"])?;
        self.run(&["ctl", "await_startup", "--timeout", "60"])
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.h.run(&["stop"]);
    }
}

/// Connects, retrying every 20 ms until `deadline` (the broker may be starting).
pub async fn connect_retrying(uri: &str, deadline: Instant) -> anyhow::Result<Connection> {
    loop {
        match Connection::connect(uri, ConnectionProperties::default()).await {
            Ok(c) => return Ok(c),
            Err(e) if Instant::now() >= deadline => return Err(e.into()),
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

/// Declares `exchange` as Reporter declares it (durable topic, alternate exchange
/// `<exchange>.unroutable`) and a durable queue bound to it with `#`, holding at most
/// `max_len` messages (the oldest dropped) when given.
pub async fn bound_queue(
    uri: &str,
    exchange: &str,
    queue: &str,
    max_len: Option<i64>,
) -> anyhow::Result<()> {
    let conn = Connection::connect(uri, ConnectionProperties::default()).await?;
    let ch = conn.create_channel().await?;
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
    .await?;
    let mut qargs = FieldTable::default();
    if let Some(n) = max_len {
        qargs.insert("x-max-length".into(), AMQPValue::LongLongInt(n));
    }
    ch.queue_declare(queue.into(), QueueDeclareOptions::durable(), qargs)
        .await?;
    ch.queue_bind(
        queue.into(),
        exchange.into(),
        "#".into(),
        QueueBindOptions::default(),
        FieldTable::default(),
    )
    .await?;
    let _ = conn.close(200, "done".into()).await;
    Ok(())
}

/// Deletes a queue (best effort).
pub async fn delete_queue(uri: &str, queue: &str) {
    if let Ok(conn) = Connection::connect(uri, ConnectionProperties::default()).await {
        if let Ok(ch) = conn.create_channel().await {
            let _ = ch
                .queue_delete(queue.into(), QueueDeleteOptions::default())
                .await;
        }
        let _ = conn.close(200, "done".into()).await;
    }
}

/// Arrival instants by `message_id` (= `ce-id`), first arrival only.
pub type Arrivals = Arc<Mutex<HashMap<String, Instant>>>;

/// Consumes `queue` in the background (auto-ack), recording first arrivals; stops when the
/// returned handle is aborted or the connection drops.
pub async fn consume(
    conn: Connection,
    queue: &str,
) -> anyhow::Result<(Arrivals, tokio::task::JoinHandle<()>)> {
    let ch = conn.create_channel().await?;
    let mut consumer = ch
        .basic_consume(
            queue.into(),
            "bench".into(),
            BasicConsumeOptions {
                no_ack: true,
                ..Default::default()
            },
            FieldTable::default(),
        )
        .await?;
    let arrivals: Arrivals = Arc::default();
    let a = arrivals.clone();
    let task = tokio::spawn(async move {
        let _conn = conn;
        while let Some(Ok(d)) = consumer.next().await {
            let now = Instant::now();
            let id = d
                .properties
                .message_id()
                .as_ref()
                .map(|s| s.as_str().to_owned())
                .unwrap_or_default();
            a.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .entry(id)
                .or_insert(now);
        }
    });
    Ok((arrivals, task))
}

/// Waits until `n` distinct messages arrived or `until`.
pub async fn wait_for(arrivals: &Arrivals, n: usize, until: Instant) -> usize {
    loop {
        let got = arrivals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len();
        if got >= n || Instant::now() >= until {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
