//! Shared helpers of the broker-backed tests.
#![allow(dead_code)]
use chrono::{TimeZone, Utc};
use lapin::message::BasicGetMessage;
use lapin::options::{
    BasicGetOptions, ExchangeDeclareOptions, ExchangeDeleteOptions, QueueBindOptions,
    QueueDeclareOptions, QueueDeleteOptions,
};
use lapin::types::FieldTable;
use lapin::{Channel, Connection, ConnectionProperties, ExchangeKind};
use reporter_contract::services::service_url;
use reporter_ports::TenantId;
use reporter_ports::events::{EventEnvelope, EventKey};
use std::time::Duration;

/// The broker URI, or `None` (test skipped) as the contract helper decides.
pub fn uri() -> Option<String> {
    service_url("RABBITMQ_URI", "RabbitMQ")
}

/// A plain connection and channel for test setup and inspection.
pub struct Admin {
    pub conn: Connection,
    pub ch: Channel,
    exchanges: Vec<String>,
    queues: Vec<String>,
}

impl Admin {
    pub async fn new(uri: &str) -> Self {
        let conn = Connection::connect(uri, ConnectionProperties::default())
            .await
            .expect("admin connect");
        let ch = conn.create_channel().await.expect("admin channel");
        Self {
            conn,
            ch,
            exchanges: Vec::new(),
            queues: Vec::new(),
        }
    }

    /// Remembers names to delete in [`Admin::cleanup`].
    pub fn track(&mut self, exchanges: &[&str], queues: &[&str]) {
        self.exchanges
            .extend(exchanges.iter().map(|s| s.to_string()));
        self.queues.extend(queues.iter().map(|s| s.to_string()));
    }

    pub async fn topic_exchange(&mut self, name: &str) {
        self.ch
            .exchange_declare(
                name.into(),
                ExchangeKind::Topic,
                ExchangeDeclareOptions {
                    durable: true,
                    ..Default::default()
                },
                FieldTable::default(),
            )
            .await
            .expect("declare exchange");
        self.exchanges.push(name.to_owned());
    }

    /// A durable queue bound to `exchange` with `pattern`.
    pub async fn bound_queue(&mut self, queue: &str, exchange: &str, pattern: &str) {
        self.ch
            .queue_declare(
                queue.into(),
                QueueDeclareOptions::durable(),
                FieldTable::default(),
            )
            .await
            .expect("declare queue");
        self.ch
            .queue_bind(
                queue.into(),
                exchange.into(),
                pattern.into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
            .expect("bind queue");
        self.queues.push(queue.to_owned());
    }

    /// The next message of `queue` (auto-ack), waiting up to 5 s.
    pub async fn get(&self, queue: &str) -> Option<BasicGetMessage> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            let m = self
                .ch
                .basic_get(queue.into(), BasicGetOptions { no_ack: true })
                .await
                .expect("basic_get");
            if m.is_some() || tokio::time::Instant::now() > deadline {
                return m;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Messages ready in `queue` (passive declare).
    pub async fn count(&self, queue: &str) -> u32 {
        self.ch
            .queue_declare(
                queue.into(),
                QueueDeclareOptions {
                    passive: true,
                    ..Default::default()
                },
                FieldTable::default(),
            )
            .await
            .expect("passive declare")
            .message_count()
    }

    /// Deletes every tracked queue and exchange.
    pub async fn cleanup(self) {
        for q in &self.queues {
            let _ = self
                .ch
                .queue_delete(q.as_str().into(), QueueDeleteOptions::default())
                .await;
        }
        for e in &self.exchanges {
            let _ = self
                .ch
                .exchange_delete(e.as_str().into(), ExchangeDeleteOptions::default())
                .await;
        }
        let _ = self.conn.close(200, "bye".into()).await;
    }
}

/// An envelope of `key` with a fresh id, a fixed time and a small payload.
pub fn envelope(key: EventKey, n: usize) -> EventEnvelope {
    EventEnvelope {
        id: uuid::Uuid::now_v7().hyphenated().to_string(),
        key,
        tenant: TenantId::parse("tenant-a").expect("tenant"),
        subject: format!("subject-{n}"),
        time: Utc
            .with_ymd_and_hms(2030, 1, 1, 0, 0, 0)
            .single()
            .expect("time")
            + chrono::Duration::milliseconds(n as i64),
        payload: serde_json::json!({ "n": n, "key": key.key(), "pad": "x".repeat(300) }).into(),
        sequence: None,
        trace: None,
    }
}

/// Force-closes the broker connection whose name is `name` (needs `rabbitmqctl`, i.e. root on
/// the broker's host). False when that is not possible.
pub fn force_close_connection(name: &str) -> bool {
    let Ok(out) = std::process::Command::new("rabbitmqctl")
        .args(["list_connections", "-s", "pid", "client_properties"])
        .output()
    else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(pid) = text
        .lines()
        .find(|l| l.contains(name))
        .and_then(|l| l.split_whitespace().next())
    else {
        return false;
    };
    std::process::Command::new("rabbitmqctl")
        .args(["close_connection", pid, "test: forced close"])
        .status()
        .is_ok_and(|s| s.success())
}
