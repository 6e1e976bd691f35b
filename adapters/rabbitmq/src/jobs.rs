//! The report job queue on RabbitMQ: [`RabbitJobQueue`] (producer) and [`RabbitJobConsumer`].
//!
//! # Topology (declared by both sides, all durable)
//! * `exchange` (direct) --`routing_key`--> `queue` (manual ack). `queue` dead-letters to
//!   `dead_letter_exchange` with `dlq_routing_key`, so a job rejected without requeue lands in
//!   the DLQ too.
//! * `retry_queue`: no consumer; each message carries its backoff as the per-message
//!   `expiration`, and the queue dead-letters expired messages to `exchange` / `routing_key`,
//!   i.e. back to `queue`.
//! * `dead_letter_exchange` (direct) --`dlq_routing_key`--> `dlq` (optional TTL and max length).
//!
//! # Messages
//! Body = JSON of [`ReportJob`]; persistent; `content_type` `application/json`; headers
//! `x-retry-count` (integer, 0 on enqueue), `X-Tenant-ID`, `request-id` (when known),
//! `Traceparent` / `Tracestate` (the original's names, read in any case; when the job carries a
//! trace context); on retry and
//! dead-letter also `x-failure-reason` (sanitised, ≤ 256 chars); on dead-letter also
//! `x-dlq-reason` (`dead_lettered`, `max_retries_exceeded` or `invalid_message`).
//!
//! # Caveat
//! RabbitMQ only expires messages at the head of a queue, so a retry with a short delay can wait
//! behind one with a longer delay: the effective delay is at most `retry_max_delay` plus the
//! delays ahead of it, never less than its own.
use crate::error::RabbitError;
use crate::link::{Declare, Link, connect};
use async_trait::async_trait;
use futures_util::StreamExt;
use lapin::message::Delivery;
use lapin::options::{
    BasicAckOptions, BasicCancelOptions, BasicConsumeOptions, BasicNackOptions, BasicQosOptions,
    ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions,
};
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use lapin::{Acker, BasicProperties, Channel, Connection, ExchangeKind};
use reporter_ports::Backoff;
use reporter_ports::error::StoreError;
use reporter_ports::ports::{JobConsumer, JobDelivery, JobQueue, ReportJob};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Mutex, watch};

/// Header carrying the number of retries so far.
pub const RETRY_COUNT_HEADER: &str = "x-retry-count";
/// Header carrying the last failure reason.
pub const FAILURE_REASON_HEADER: &str = "x-failure-reason";
/// Header saying why a job is in the DLQ.
pub const DLQ_REASON_HEADER: &str = "x-dlq-reason";
/// Longest `x-failure-reason`, in characters.
pub const MAX_REASON_CHARS: usize = 256;

/// Configuration of the job queue (both sides).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RabbitJobsConfig {
    /// `amqp://` or `amqps://` URI (it may hold the password, so it is a [`Secret`]).
    pub uri: reporter_ports::Secret,
    /// Direct exchange of the jobs. Default `reporter.generate-report.exchange`.
    pub exchange: String,
    /// Routing key of the jobs. Default `reporter.generate-report.key`.
    pub routing_key: String,
    /// The work queue. Default `reporter.generate-report.queue`.
    pub queue: String,
    /// The delay queue of retries. Default `reporter.generate-report.retry`.
    pub retry_queue: String,
    /// Direct exchange in front of the DLQ. Default `reporter.dlx`.
    pub dead_letter_exchange: String,
    /// The dead-letter queue. Default `reporter.dlq`.
    pub dlq: String,
    /// Routing key from the DLX to the DLQ. Default `reporter.dlq.key`.
    pub dlq_routing_key: String,
    /// `x-message-ttl` of the DLQ. Default 7 days.
    pub dlq_message_ttl: Option<Duration>,
    /// `x-max-length` of the DLQ (oldest dropped beyond it). Default 10,000.
    pub dlq_max_length: Option<u32>,
    /// Unacknowledged deliveries per consumer (QoS). Default 5.
    pub prefetch: u16,
    /// Retries before a job goes to the DLQ: a job is delivered at most `1 + max_retries`
    /// times. Default 5.
    pub max_retries: u32,
    /// Backoff base: the delay before retry `n` (0-based attempt) is uniform in
    /// `[0, min(retry_max_delay, retry_base_delay * 2^n)]`. Default 1 s.
    pub retry_base_delay: Duration,
    /// Backoff cap. Default 30 s.
    pub retry_max_delay: Duration,
    /// Deadline of each publish + confirm (enqueue, retry, dead-letter) and of opening a
    /// channel. Default 5 s.
    pub publish_timeout: Duration,
    /// Connection name prefix shown by the broker. Default `reporter-jobs`.
    pub connection_name: String,
}

impl RabbitJobsConfig {
    /// The reference defaults for `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            uri: reporter_ports::Secret::new(uri.into()),
            exchange: "reporter.generate-report.exchange".into(),
            routing_key: "reporter.generate-report.key".into(),
            queue: "reporter.generate-report.queue".into(),
            retry_queue: "reporter.generate-report.retry".into(),
            dead_letter_exchange: "reporter.dlx".into(),
            dlq: "reporter.dlq".into(),
            dlq_routing_key: "reporter.dlq.key".into(),
            dlq_message_ttl: Some(Duration::from_secs(7 * 24 * 3600)),
            dlq_max_length: Some(10_000),
            prefetch: 5,
            max_retries: 5,
            retry_base_delay: Duration::from_secs(1),
            retry_max_delay: Duration::from_secs(30),
            publish_timeout: Duration::from_secs(5),
            connection_name: "reporter-jobs".into(),
        }
    }

    /// Every name, or `Config` when one exceeds 255 bytes.
    fn names(&self) -> Result<Names, RabbitError> {
        let s = |v: &str, what: &str| {
            ShortString::try_new(v).map_err(|e| RabbitError::Config(format!("{what}: {e}")))
        };
        Ok(Names {
            exchange: s(&self.exchange, "exchange")?,
            routing_key: s(&self.routing_key, "routing_key")?,
            queue: s(&self.queue, "queue")?,
            retry_queue: s(&self.retry_queue, "retry_queue")?,
            dlx: s(&self.dead_letter_exchange, "dead_letter_exchange")?,
            dlq: s(&self.dlq, "dlq")?,
            dlq_routing_key: s(&self.dlq_routing_key, "dlq_routing_key")?,
            dlq_message_ttl: self.dlq_message_ttl,
            dlq_max_length: self.dlq_max_length,
        })
    }
}

#[derive(Clone)]
struct Names {
    exchange: ShortString,
    routing_key: ShortString,
    queue: ShortString,
    retry_queue: ShortString,
    dlx: ShortString,
    dlq: ShortString,
    dlq_routing_key: ShortString,
    dlq_message_ttl: Option<Duration>,
    dlq_max_length: Option<u32>,
}

fn text(v: &str) -> AMQPValue {
    AMQPValue::LongString(LongString::from(v))
}

async fn declare_jobs_topology(ch: Channel, n: Names) -> lapin::Result<()> {
    let durable = ExchangeDeclareOptions {
        durable: true,
        ..ExchangeDeclareOptions::default()
    };
    let none = FieldTable::default;
    ch.exchange_declare(n.exchange.clone(), ExchangeKind::Direct, durable, none())
        .await?;
    ch.exchange_declare(n.dlx.clone(), ExchangeKind::Direct, durable, none())
        .await?;

    let mut dlq_args = FieldTable::default();
    if let Some(ttl) = n.dlq_message_ttl {
        let ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        dlq_args.insert("x-message-ttl".into(), AMQPValue::LongLongInt(ms));
    }
    if let Some(max) = n.dlq_max_length {
        dlq_args.insert("x-max-length".into(), AMQPValue::LongLongInt(max.into()));
    }
    ch.queue_declare(n.dlq.clone(), QueueDeclareOptions::durable(), dlq_args)
        .await?;
    ch.queue_bind(
        n.dlq.clone(),
        n.dlx.clone(),
        n.dlq_routing_key.clone(),
        QueueBindOptions::default(),
        none(),
    )
    .await?;

    let mut main_args = FieldTable::default();
    main_args.insert("x-dead-letter-exchange".into(), text(n.dlx.as_str()));
    main_args.insert(
        "x-dead-letter-routing-key".into(),
        text(n.dlq_routing_key.as_str()),
    );
    ch.queue_declare(n.queue.clone(), QueueDeclareOptions::durable(), main_args)
        .await?;
    ch.queue_bind(
        n.queue.clone(),
        n.exchange.clone(),
        n.routing_key.clone(),
        QueueBindOptions::default(),
        none(),
    )
    .await?;

    let mut retry_args = FieldTable::default();
    retry_args.insert("x-dead-letter-exchange".into(), text(n.exchange.as_str()));
    retry_args.insert(
        "x-dead-letter-routing-key".into(),
        text(n.routing_key.as_str()),
    );
    ch.queue_declare(
        n.retry_queue.clone(),
        QueueDeclareOptions::durable(),
        retry_args,
    )
    .await?;
    Ok(())
}

fn topology(names: &Names) -> Declare {
    let names = names.clone();
    Arc::new(move |conn: Arc<Connection>| {
        let names = names.clone();
        Box::pin(async move {
            let ch = conn.create_channel().await?;
            declare_jobs_topology(ch.clone(), names).await?;
            let _ = ch.close(200, "topology declared".into()).await;
            Ok(())
        })
    })
}

/// `reason` without control characters, cut to [`MAX_REASON_CHARS`] characters.
pub fn sanitize_reason(reason: &str) -> String {
    reason
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_REASON_CHARS)
        .collect()
}

/// The retry count of a message: `x-retry-count` as any AMQP integer or decimal text; 0 when
/// absent or unreadable.
fn retry_count(props: &BasicProperties) -> u32 {
    let Some(v) = props
        .headers()
        .as_ref()
        .and_then(|h| h.inner().get(RETRY_COUNT_HEADER))
    else {
        return 0;
    };
    let n: Option<i64> = match v {
        AMQPValue::ShortShortInt(i) => Some((*i).into()),
        AMQPValue::ShortShortUInt(i) => Some((*i).into()),
        AMQPValue::ShortInt(i) => Some((*i).into()),
        AMQPValue::ShortUInt(i) => Some((*i).into()),
        AMQPValue::LongInt(i) => Some((*i).into()),
        AMQPValue::LongUInt(i) => Some((*i).into()),
        AMQPValue::LongLongInt(i) => Some(*i),
        AMQPValue::LongString(s) => std::str::from_utf8(s.as_bytes())
            .ok()
            .and_then(|s| s.trim().parse().ok()),
        AMQPValue::ShortString(s) => s.as_str().trim().parse().ok(),
        _ => None,
    };
    n.and_then(|n| u32::try_from(n).ok()).unwrap_or(0)
}

/// The trace context headers, as the original names them (MIME-canonical case).
const TRACEPARENT_HEADER: &str = "Traceparent";
/// See [`TRACEPARENT_HEADER`].
const TRACESTATE_HEADER: &str = "Tracestate";

/// A text header matched case-insensitively (`traceparent`, `Traceparent`, `TRACEPARENT`).
fn header_text<'a>(props: &'a BasicProperties, name: &str) -> Option<&'a str> {
    let headers = props.headers().as_ref()?;
    headers
        .inner()
        .iter()
        .find(|(k, _)| k.as_str().eq_ignore_ascii_case(name))
        .and_then(|(_, v)| match v {
            AMQPValue::LongString(s) => std::str::from_utf8(s.as_bytes()).ok(),
            AMQPValue::ShortString(s) => Some(s.as_str()),
            _ => None,
        })
}

/// The job's trace carrier from its headers (`None` when absent or not a valid W3C value).
fn trace_of(props: &BasicProperties) -> Option<reporter_ports::TraceCarrier> {
    reporter_ports::TraceCarrier::new(
        header_text(props, TRACEPARENT_HEADER)?,
        header_text(props, TRACESTATE_HEADER),
    )
}

fn job_properties(job: &ReportJob) -> BasicProperties {
    let mut headers = FieldTable::default();
    headers.insert(RETRY_COUNT_HEADER.into(), AMQPValue::LongLongInt(0));
    headers.insert("X-Tenant-ID".into(), text(job.tenant.as_str()));
    if let Some(r) = &job.request_id {
        headers.insert("request-id".into(), text(r));
    }
    if let Some(t) = &job.trace {
        headers.insert(TRACEPARENT_HEADER.into(), text(t.traceparent()));
        if let Some(ts) = t.tracestate() {
            headers.insert(TRACESTATE_HEADER.into(), text(ts));
        }
    }
    BasicProperties::default()
        .with_delivery_mode(2)
        .with_content_type("application/json".into())
        .with_headers(headers)
}

/// Producer side. Cheap to clone (shared connection).
#[derive(Clone)]
pub struct RabbitJobQueue {
    inner: Arc<QueueInner>,
}

struct QueueInner {
    config: RabbitJobsConfig,
    link: Link,
}

impl RabbitJobQueue {
    /// Connects (own connection `<connection_name>-producer`), opens a confirm channel and
    /// declares the topology, within `publish_timeout`.
    pub async fn connect(config: RabbitJobsConfig) -> Result<Self, RabbitError> {
        let names = config.names()?;
        let link = Link::new(
            config.uri.expose(),
            &format!("{}-producer", config.connection_name),
            config.publish_timeout,
            Some(topology(&names)),
        );
        link.channel().await?;
        Ok(Self {
            inner: Arc::new(QueueInner { config, link }),
        })
    }

    /// The configuration in use.
    pub fn config(&self) -> &RabbitJobsConfig {
        &self.inner.config
    }

    /// Readiness: `Ok` when the confirm channel is open (reopening it if needed).
    pub async fn check(&self) -> Result<(), RabbitError> {
        self.inner.link.channel().await.map(|_| ())
    }

    /// Closes the connection.
    pub async fn close(&self) {
        self.inner.link.close().await;
    }
}

#[async_trait]
impl JobQueue for RabbitJobQueue {
    /// Publishes the job persistently to `exchange`/`routing_key` and waits for the broker's
    /// confirm (no return) within `publish_timeout`; otherwise `Unavailable`.
    async fn enqueue(&self, job: &ReportJob) -> Result<(), StoreError> {
        let body = serde_json::to_vec(job)
            .map_err(|e| StoreError::Unavailable(format!("job serialization: {e}")))?;
        let c = &self.inner.config;
        self.inner
            .link
            .publish_confirmed(&c.exchange, &c.routing_key, &body, job_properties(job))
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, report_id = %job.report_id, "enqueue failed");
                StoreError::from(e)
            })
    }
}

/// Consumer side: one consumer (manual ack, QoS `prefetch`) on the work queue, on its own
/// connection; retries and dead letters are published with confirms on a second connection.
/// `next` may be called from several tasks at once (each gets a different job).
#[derive(Clone)]
pub struct RabbitJobConsumer {
    inner: Arc<ConsumerInner>,
}

struct ConsumerInner {
    config: RabbitJobsConfig,
    conn: Connection,
    channel: Channel,
    consumer: Mutex<lapin::Consumer>,
    publisher: Link,
    closed: watch::Sender<bool>,
}

impl RabbitJobConsumer {
    /// Connects, declares the topology, sets QoS and starts consuming.
    pub async fn connect(config: RabbitJobsConfig) -> Result<Self, RabbitError> {
        let names = config.names()?;
        let timeout = config.publish_timeout;
        let conn = connect(
            config.uri.expose(),
            &format!("{}-consumer", config.connection_name),
            timeout,
        )
        .await?;
        let setup = async {
            let ch = conn.create_channel().await?;
            declare_jobs_topology(ch.clone(), names.clone()).await?;
            ch.basic_qos(config.prefetch, BasicQosOptions::default())
                .await?;
            let consumer = ch
                .basic_consume(
                    names.queue.clone(),
                    "".into(),
                    BasicConsumeOptions::default(),
                    FieldTable::default(),
                )
                .await?;
            Ok::<_, lapin::Error>((ch, consumer))
        };
        let (channel, consumer) = match tokio::time::timeout(timeout, setup).await {
            Ok(r) => r?,
            Err(_) => return Err(RabbitError::Timeout(timeout)),
        };
        let publisher = Link::new(
            config.uri.expose(),
            &format!("{}-republisher", config.connection_name),
            timeout,
            Some(topology(&names)),
        );
        publisher.channel().await?;
        tracing::info!(queue = %config.queue, prefetch = config.prefetch, "job consumer started");
        Ok(Self {
            inner: Arc::new(ConsumerInner {
                config,
                conn,
                channel,
                consumer: Mutex::new(consumer),
                publisher,
                closed: watch::channel(false).0,
            }),
        })
    }

    /// Stops receiving: pending and later `next` calls answer `Ok(None)`; the consumer is
    /// cancelled, so prefetched but undelivered messages go back to the queue. Deliveries
    /// already handed out can still be settled.
    pub async fn close(&self) {
        if self.inner.closed.send_replace(true) {
            return;
        }
        let tag = self.inner.consumer.lock().await.tag();
        let cancel = self
            .inner
            .channel
            .basic_cancel(tag, BasicCancelOptions::default());
        if let Err(e) = tokio::time::timeout(self.inner.config.publish_timeout, cancel).await {
            tracing::warn!(error = %e, "job consumer: cancel timed out");
        }
    }

    /// [`close`](Self::close), then closes both connections: unsettled deliveries are
    /// redelivered by the broker.
    pub async fn shutdown(&self) {
        self.close().await;
        let t = self.inner.config.publish_timeout;
        let _ = tokio::time::timeout(t, self.inner.conn.close(200, "shutdown".into())).await;
        self.inner.publisher.close().await;
    }

    fn is_closed(&self) -> bool {
        *self.inner.closed.borrow()
    }

    /// Receives the next raw delivery; `Ok(None)` once closed.
    async fn next_raw(&self) -> Result<Option<Delivery>, StoreError> {
        let mut closed = self.inner.closed.subscribe();
        loop {
            if self.is_closed() {
                return Ok(None);
            }
            let item = {
                let mut consumer = tokio::select! {
                    _ = closed.wait_for(|c| *c) => return Ok(None),
                    c = self.inner.consumer.lock() => c,
                };
                tokio::select! {
                    _ = closed.wait_for(|c| *c) => return Ok(None),
                    item = consumer.next() => item,
                }
            };
            match item {
                Some(Ok(d)) => return Ok(Some(d)),
                Some(Err(e)) => {
                    tracing::warn!(error = %e, "job consumer: delivery error");
                    if self.is_closed() {
                        return Ok(None);
                    }
                    if let Err(e) = self.inner.channel.wait_for_recovery(e).await {
                        return Err(StoreError::Unavailable(format!("job consumer: {e}")));
                    }
                    tracing::info!("job consumer: channel recovered");
                }
                None if self.is_closed() => return Ok(None),
                None => {
                    return Err(StoreError::Unavailable(
                        "job consumer cancelled by the broker".into(),
                    ));
                }
            }
        }
    }
}

#[async_trait]
impl JobConsumer for RabbitJobConsumer {
    /// The next job. A message whose body is not a [`ReportJob`] is moved to the DLQ
    /// (`x-dlq-reason: invalid_message`) and skipped. `Ok(None)` after [`close`](Self::close).
    async fn next(&self) -> Result<Option<Box<dyn JobDelivery>>, StoreError> {
        loop {
            let Some(d) = self.next_raw().await? else {
                return Ok(None);
            };
            let attempt = retry_count(&d.properties);
            match serde_json::from_slice::<ReportJob>(&d.data) {
                Ok(mut job) => {
                    job.trace = trace_of(&d.properties);
                    return Ok(Some(Box::new(RabbitDelivery {
                        job,
                        attempt,
                        redelivered: d.redelivered,
                        acker: d.acker,
                        properties: d.properties,
                        body: d.data,
                        inner: self.inner.clone(),
                        settled: false,
                    })));
                }
                Err(e) => {
                    let reason = format!("invalid job message: {e}");
                    tracing::warn!(%reason, "job consumer: dead-lettering a malformed message");
                    let props =
                        copy_properties(&d.properties, attempt, &reason, Some("invalid_message"));
                    let c = &self.inner.config;
                    let published = self
                        .inner
                        .publisher
                        .publish_confirmed(
                            &c.dead_letter_exchange,
                            &c.dlq_routing_key,
                            &d.data,
                            props,
                        )
                        .await;
                    let settle = match published {
                        // Published: drop the original.
                        Ok(()) => d.acker.ack(BasicAckOptions::default()).await,
                        // Could not publish: let the queue's own dead-lettering take it.
                        Err(_) => {
                            d.acker
                                .nack(BasicNackOptions {
                                    multiple: false,
                                    requeue: false,
                                })
                                .await
                        }
                    };
                    if let Err(e) = settle {
                        tracing::warn!(error = %e, "job consumer: settling a malformed message failed");
                    }
                }
            }
        }
    }
}

/// A copy of a job message's properties with the retry bookkeeping headers replaced.
fn copy_properties(
    original: &BasicProperties,
    retry_count: u32,
    reason: &str,
    dlq_reason: Option<&str>,
) -> BasicProperties {
    let mut headers = FieldTable::default();
    if let Some(h) = original.headers() {
        for (k, v) in h.inner() {
            let k = k.as_str();
            // The broker's own dead-lettering bookkeeping does not belong in a copy.
            if k == "x-death" || k.starts_with("x-first-death") || k.starts_with("x-last-death") {
                continue;
            }
            headers.insert(k.into(), v.clone());
        }
    }
    headers.insert(
        RETRY_COUNT_HEADER.into(),
        AMQPValue::LongLongInt(retry_count.into()),
    );
    headers.insert(FAILURE_REASON_HEADER.into(), text(&sanitize_reason(reason)));
    if let Some(r) = dlq_reason {
        headers.insert(DLQ_REASON_HEADER.into(), text(r));
    }
    let mut props = BasicProperties::default()
        .with_delivery_mode(2)
        .with_headers(headers);
    if let Some(ct) = original.content_type() {
        props = props.with_content_type(ct.clone());
    }
    props
}

/// One job handed out by [`RabbitJobConsumer`]. Dropping it unsettled nacks it with requeue.
struct RabbitDelivery {
    job: ReportJob,
    attempt: u32,
    redelivered: bool,
    acker: Acker,
    properties: BasicProperties,
    body: Vec<u8>,
    inner: Arc<ConsumerInner>,
    settled: bool,
}

impl RabbitDelivery {
    async fn ack_original(&mut self) -> Result<(), StoreError> {
        self.settled = true;
        match self.acker.ack(BasicAckOptions::default()).await {
            Ok(true) => Ok(()),
            // lapin answers `false` for an acker whose channel died: the broker requeues the
            // message, so it is not settled.
            Ok(false) => Err(StoreError::Unavailable(
                "ack: the channel closed; the job will be redelivered".into(),
            )),
            Err(e) => Err(StoreError::Unavailable(format!("ack: {e}"))),
        }
    }

    async fn move_to_dlq(&mut self, reason: &str, dlq_reason: &str) -> Result<(), StoreError> {
        let c = &self.inner.config;
        let props = copy_properties(&self.properties, self.attempt, reason, Some(dlq_reason));
        self.inner
            .publisher
            .publish_confirmed(
                &c.dead_letter_exchange,
                &c.dlq_routing_key,
                &self.body,
                props,
            )
            .await
            .map_err(StoreError::from)?;
        self.ack_original().await
    }
}

impl Drop for RabbitDelivery {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        let acker = self.acker.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let opts = BasicNackOptions {
                    multiple: false,
                    requeue: true,
                };
                if let Err(e) = acker.nack(opts).await {
                    tracing::warn!(error = %e, "requeue of a dropped job failed (the broker redelivers it when the channel closes)");
                }
            });
        }
    }
}

#[async_trait]
impl JobDelivery for RabbitDelivery {
    fn job(&self) -> &ReportJob {
        &self.job
    }

    fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The broker's `redelivered` flag: the message was delivered before and not settled.
    fn redelivered(&self) -> bool {
        self.redelivered
    }

    async fn ack(mut self: Box<Self>) -> Result<(), StoreError> {
        self.ack_original().await
    }

    /// Republishes a copy to the retry queue with `x-retry-count + 1`, the reason and a
    /// full-jitter `expiration`, then acks the original. When `attempt() >= max_retries` the
    /// job goes to the DLQ instead (`x-dlq-reason: max_retries_exceeded`). On error the
    /// original stays unsettled and is requeued.
    async fn retry(mut self: Box<Self>, reason: &str) -> Result<(), StoreError> {
        let c = &self.inner.config;
        if self.attempt >= c.max_retries {
            tracing::warn!(
                attempt = self.attempt,
                reason,
                "job exhausted its retries: dead-lettering"
            );
            return self.move_to_dlq(reason, "max_retries_exceeded").await;
        }
        let delay = Backoff::new(c.retry_base_delay, c.retry_max_delay).full_jitter(self.attempt);
        let props = copy_properties(&self.properties, self.attempt + 1, reason, None)
            .with_expiration(delay.as_millis().to_string().into());
        tracing::info!(
            attempt = self.attempt,
            delay_ms = delay.as_millis() as u64,
            reason,
            "retrying job"
        );
        self.inner
            .publisher
            .publish_confirmed("", &c.retry_queue, &self.body, props)
            .await
            .map_err(StoreError::from)?;
        self.ack_original().await
    }

    /// Publishes a copy to the DLQ (`x-dlq-reason: dead_lettered`, `x-failure-reason`), then
    /// acks the original.
    async fn dead_letter(mut self: Box<Self>, reason: &str) -> Result<(), StoreError> {
        tracing::warn!(attempt = self.attempt, reason, "dead-lettering job");
        self.move_to_dlq(reason, "dead_lettered").await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn trace_headers_are_written_as_the_original_names_them_and_read_in_any_case() {
        let job = ReportJob {
            tenant: reporter_ports::TenantId::parse("default").expect("tenant"),
            report_id: reporter_ports::ReportId::new(),
            request_id: None,
            trace: reporter_ports::TraceCarrier::new(TP, Some("k=v")),
        };
        let props = job_properties(&job);
        let headers = props.headers().as_ref().expect("headers");
        let names: Vec<&str> = headers.inner().keys().map(|k| k.as_str()).collect();
        assert!(
            names.contains(&"Traceparent") && names.contains(&"Tracestate"),
            "{names:?}"
        );
        assert_eq!(trace_of(&props), job.trace);
        for (tp_name, ts_name) in [("traceparent", "tracestate"), ("TRACEPARENT", "TraceState")] {
            let mut h = FieldTable::default();
            h.insert(tp_name.into(), text(TP));
            h.insert(ts_name.into(), AMQPValue::ShortString("k=v".into()));
            let read = trace_of(&BasicProperties::default().with_headers(h)).expect("read");
            assert_eq!(read.traceparent(), TP);
            assert_eq!(read.tracestate(), Some("k=v"));
        }
        let mut bad = FieldTable::default();
        bad.insert("traceparent".into(), text("not-a-traceparent"));
        assert_eq!(
            trace_of(&BasicProperties::default().with_headers(bad)),
            None
        );
        assert_eq!(trace_of(&BasicProperties::default()), None);
    }

    #[test]
    fn reasons_are_sanitised_and_capped() {
        assert_eq!(sanitize_reason("a\nb\tc"), "a b c");
        let long = "é".repeat(300);
        assert_eq!(sanitize_reason(&long).chars().count(), MAX_REASON_CHARS);
    }

    #[test]
    fn retry_count_reads_any_integer_or_text() {
        let with = |v: AMQPValue| {
            let mut h = FieldTable::default();
            h.insert(RETRY_COUNT_HEADER.into(), v);
            BasicProperties::default().with_headers(h)
        };
        assert_eq!(retry_count(&BasicProperties::default()), 0);
        assert_eq!(retry_count(&with(AMQPValue::LongLongInt(3))), 3);
        assert_eq!(retry_count(&with(AMQPValue::LongInt(4))), 4);
        assert_eq!(retry_count(&with(AMQPValue::ShortShortUInt(5))), 5);
        assert_eq!(retry_count(&with(text(" 6 "))), 6);
        assert_eq!(retry_count(&with(AMQPValue::LongLongInt(-1))), 0);
        assert_eq!(retry_count(&with(text("x"))), 0);
    }
}
