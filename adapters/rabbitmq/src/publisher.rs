//! [`EventPublisher`] on RabbitMQ: CloudEvents (binary mode, `ce-` headers) on a durable topic
//! exchange, with publisher confirms, `mandatory`, and an optional alternate exchange.
use crate::cloudevents::envelope_to_message;
use crate::error::RabbitError;
use crate::link::{Declare, Link};
use async_trait::async_trait;
use lapin::message::BasicReturnMessage;
use lapin::options::{
    BasicPublishOptions, ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions,
};
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use lapin::{BasicProperties, Channel, Confirmation, ExchangeKind, PublisherConfirm};
use reporter_ports::events::EventEnvelope;
use reporter_ports::ports::{EventPublisher, PublishError};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;
use tokio::time::{Instant, timeout_at};

/// Where unroutable events are kept: a fanout, durable exchange named as the events exchange's
/// `alternate-exchange`, bound to one durable queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlternateExchange {
    /// The alternate exchange (fanout, durable). Default `reporter.events.unroutable`.
    pub exchange: String,
    /// The durable queue bound to it. Default `reporter.events.unroutable`.
    pub queue: String,
}

impl Default for AlternateExchange {
    fn default() -> Self {
        Self {
            exchange: "reporter.events.unroutable".into(),
            queue: "reporter.events.unroutable".into(),
        }
    }
}

/// Configuration of [`RabbitPublisher`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RabbitPublisherConfig {
    /// `amqp://` or `amqps://` URI.
    pub uri: String,
    /// The events exchange (topic, durable). Default `reporter.events`.
    pub exchange: String,
    /// Alternate exchange for unroutable events. `Some` (the default): unroutable events are
    /// kept in its queue and their publish is `Ok` (the broker counts them as routed). `None`:
    /// they are returned by the broker and their publish is `Err(Unroutable)`.
    pub alternate_exchange: Option<AlternateExchange>,
    /// Declare the exchanges, the AE queue and its binding on every new channel. Default
    /// `true`. Redeclaring an existing exchange with other arguments (e.g. an events exchange
    /// created without `alternate-exchange`) fails with `PRECONDITION_FAILED`: turn this off
    /// when operators own the topology.
    pub declare_topology: bool,
    /// Deadline of each event's publish + confirm, and of (re)opening the channel. Default 5 s.
    pub publish_timeout: Duration,
    /// Most unconfirmed publishes in flight within one `publish` call. Default 1,000.
    pub max_in_flight: usize,
    /// Connection name shown by the broker. Default `reporter-events-publisher`.
    pub connection_name: String,
}

impl RabbitPublisherConfig {
    /// Defaults for `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            exchange: "reporter.events".into(),
            alternate_exchange: Some(AlternateExchange::default()),
            declare_topology: true,
            publish_timeout: Duration::from_secs(5),
            max_in_flight: 1000,
            connection_name: "reporter-events-publisher".into(),
        }
    }
}

/// Publishes [`EventEnvelope`]s as CloudEvents. Cheap to clone (shared connection).
///
/// * routing key = `key.key()` verbatim; `mandatory`; persistent (`delivery_mode` 2);
///   `content_type` `application/json`; `message_id` = `ce-id` (when ≤ 255 bytes);
///   headers from [`envelope_to_message`].
/// * One `publish` call pipelines its events (window [`RabbitPublisherConfig::max_in_flight`])
///   and then awaits each confirm. Calls are serialized on the publisher's single channel, so
///   a `basic.return` is always matched to an event of its own call.
/// * Own connection with lapin auto-recovery; the channel is reopened on the next call after
///   the broker closed it, and after any timeout. While lapin recovers, a call waits up to 1 s
///   and then answers `Unavailable` (no in-flight publish is replayed: the caller republishes).
/// * A call never hangs: it takes at most about 3 × `publish_timeout` (waiting for the
///   previous call, opening the channel, then publish + confirm).
#[derive(Clone)]
pub struct RabbitPublisher {
    inner: Arc<Inner>,
}

struct Inner {
    config: RabbitPublisherConfig,
    exchange: ShortString,
    link: Link,
    serial: Mutex<()>,
}

fn short(name: &str, what: &str) -> Result<ShortString, RabbitError> {
    ShortString::try_new(name).map_err(|e| RabbitError::Config(format!("{what}: {e}")))
}

fn events_topology(config: &RabbitPublisherConfig) -> Result<Option<Declare>, RabbitError> {
    if !config.declare_topology {
        return Ok(None);
    }
    let exchange = short(&config.exchange, "exchange")?;
    let ae = match &config.alternate_exchange {
        Some(ae) => Some((
            short(&ae.exchange, "alternate exchange")?,
            short(&ae.queue, "alternate queue")?,
        )),
        None => None,
    };
    let declare: Declare = Arc::new(move |ch: Channel| {
        let exchange = exchange.clone();
        let ae = ae.clone();
        Box::pin(async move {
            let durable = ExchangeDeclareOptions {
                durable: true,
                ..ExchangeDeclareOptions::default()
            };
            let mut args = FieldTable::default();
            if let Some((ae_exchange, ae_queue)) = ae {
                ch.exchange_declare(
                    ae_exchange.clone(),
                    ExchangeKind::Fanout,
                    durable,
                    FieldTable::default(),
                )
                .await?;
                ch.queue_declare(
                    ae_queue.clone(),
                    QueueDeclareOptions::durable(),
                    FieldTable::default(),
                )
                .await?;
                ch.queue_bind(
                    ae_queue,
                    ae_exchange.clone(),
                    "".into(),
                    QueueBindOptions::default(),
                    FieldTable::default(),
                )
                .await?;
                args.insert(
                    "alternate-exchange".into(),
                    AMQPValue::LongString(LongString::from(ae_exchange.as_str())),
                );
            }
            ch.exchange_declare(exchange, ExchangeKind::Topic, durable, args)
                .await
        })
    });
    Ok(Some(declare))
}

impl RabbitPublisher {
    /// Connects, opens the confirm channel and declares the topology (when configured), all
    /// within `publish_timeout`.
    pub async fn connect(config: RabbitPublisherConfig) -> Result<Self, RabbitError> {
        let exchange = short(&config.exchange, "exchange")?;
        if config.max_in_flight == 0 {
            return Err(RabbitError::Config(
                "max_in_flight must be at least 1".into(),
            ));
        }
        let declare = events_topology(&config)?;
        let link = Link::new(
            &config.uri,
            &config.connection_name,
            config.publish_timeout,
            declare,
        );
        link.channel().await?;
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                exchange,
                link,
                serial: Mutex::new(()),
            }),
        })
    }

    /// The configuration in use.
    pub fn config(&self) -> &RabbitPublisherConfig {
        &self.inner.config
    }

    /// Readiness: `Ok` when the confirm channel is open (reopening it if needed, within
    /// `publish_timeout`).
    pub async fn check(&self) -> Result<(), RabbitError> {
        self.inner.link.channel().await.map(|_| ())
    }

    /// Closes the connection. Later publishes reconnect.
    pub async fn close(&self) {
        self.inner.link.close().await;
    }

    async fn publish_all(&self, events: &[EventEnvelope]) -> Vec<Result<(), PublishError>> {
        let n = events.len();
        let timeout = self.inner.config.publish_timeout;
        let call_deadline = Instant::now() + timeout;
        let Ok(_serial) = timeout_at(call_deadline, self.inner.serial.lock()).await else {
            tracing::warn!(events = n, "publish: timed out waiting for the channel");
            return vec![Err(PublishError::Timeout); n];
        };
        let ch = match self.inner.link.channel().await {
            Ok(ch) => ch,
            Err(e) => {
                tracing::warn!(error = %e, events = n, "publish: no channel");
                let e = PublishError::from(e);
                return vec![Err(e); n];
            }
        };
        let mut results: Vec<Option<Result<(), PublishError>>> = vec![None; n];
        let mut returns: Vec<(usize, BasicReturnMessage)> = Vec::new();
        let mut pending: VecDeque<(usize, Instant, PublisherConfirm)> = VecDeque::new();
        let mut timed_out = false;
        let window = self.inner.config.max_in_flight;
        for (i, e) in events.iter().enumerate() {
            if timed_out {
                results[i] = Some(Err(PublishError::Timeout));
                continue;
            }
            while pending.len() >= window {
                if let Some((j, deadline, confirm)) = pending.pop_front() {
                    let r = settle(j, deadline, confirm, &mut returns).await;
                    timed_out |= r == Err(PublishError::Timeout);
                    results[j] = Some(r);
                }
            }
            if timed_out {
                results[i] = Some(Err(PublishError::Timeout));
                continue;
            }
            let msg = envelope_to_message(e);
            let mut props = BasicProperties::default()
                .with_delivery_mode(2)
                .with_content_type(ShortString::from(crate::cloudevents::JSON_CONTENT_TYPE))
                .with_headers(msg.headers);
            if let Ok(id) = ShortString::try_new(e.id.as_str()) {
                props = props.with_message_id(id);
            }
            let deadline = Instant::now() + timeout;
            let publish = ch.basic_publish(
                self.inner.exchange.clone(),
                ShortString::from(e.key.key()),
                BasicPublishOptions {
                    mandatory: true,
                    immediate: false,
                },
                &msg.body,
                props,
            );
            match timeout_at(deadline, publish).await {
                Ok(Ok(confirm)) => pending.push_back((i, deadline, confirm)),
                Ok(Err(err)) => {
                    tracing::warn!(error = %err, event_id = %e.id, "publish failed");
                    results[i] = Some(Err(PublishError::Unavailable(err.to_string())));
                }
                Err(_) => {
                    tracing::warn!(event_id = %e.id, ?timeout, "publish timed out (blocked connection?)");
                    results[i] = Some(Err(PublishError::Timeout));
                    timed_out = true;
                }
            }
        }
        while let Some((j, deadline, confirm)) = pending.pop_front() {
            let r = settle(j, deadline, confirm, &mut returns).await;
            timed_out |= r == Err(PublishError::Timeout);
            results[j] = Some(r);
        }
        if timed_out {
            self.inner.link.discard_channel().await;
        }
        attribute_returns(events, &mut results, returns);
        results
            .into_iter()
            .map(|r| r.unwrap_or(Err(PublishError::Unavailable("not published".into()))))
            .collect()
    }
}

/// Awaits one confirm until `deadline`. An `Ack` carrying a returned message answers `Ok` here
/// and pushes the return to `returns` for [`attribute_returns`].
async fn settle(
    i: usize,
    deadline: Instant,
    confirm: PublisherConfirm,
    returns: &mut Vec<(usize, BasicReturnMessage)>,
) -> Result<(), PublishError> {
    match timeout_at(deadline, confirm).await {
        Ok(Ok(Confirmation::Ack(ret))) => {
            if let Some(ret) = ret {
                returns.push((i, ret));
            }
            Ok(())
        }
        Ok(Ok(Confirmation::Nack(ret))) => {
            if let Some(ret) = ret {
                returns.push((i, ret));
            }
            tracing::warn!(index = i, "publish nacked by the broker");
            Err(PublishError::Nacked)
        }
        Ok(Ok(Confirmation::NotRequested)) => Err(PublishError::Unavailable(
            "channel is not in confirm mode".into(),
        )),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, index = i, "publish confirm failed");
            Err(PublishError::Unavailable(e.to_string()))
        }
        Err(_) => {
            tracing::warn!(index = i, "publish confirm timed out");
            Err(PublishError::Timeout)
        }
    }
}

/// Marks returned events `Unroutable`. lapin hands a `basic.return` to whichever confirm it
/// resolves next (with `multiple` acks that may be another event's), so each return is matched
/// by its `message_id` (= `ce-id`) first, and only falls back to the confirm it came with.
fn attribute_returns(
    events: &[EventEnvelope],
    results: &mut [Option<Result<(), PublishError>>],
    returns: Vec<(usize, BasicReturnMessage)>,
) {
    if returns.is_empty() {
        return;
    }
    let mut by_id: HashMap<&str, VecDeque<usize>> = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        by_id.entry(e.id.as_str()).or_default().push_back(i);
    }
    for (attached, ret) in returns {
        let target = ret
            .delivery
            .properties
            .message_id()
            .as_ref()
            .and_then(|id| by_id.get_mut(id.as_str()))
            .and_then(|q| q.pop_front())
            .unwrap_or(attached);
        let why = format!(
            "{} {} (exchange {}, routing key {})",
            ret.reply_code, ret.reply_text, ret.delivery.exchange, ret.delivery.routing_key
        );
        tracing::warn!(index = target, reason = %why, "event returned by the broker");
        if let Some(slot) = results.get_mut(target) {
            *slot = Some(Err(PublishError::Unroutable(why)));
        }
    }
}

#[async_trait]
impl EventPublisher for RabbitPublisher {
    /// One result per event, in input order: `Ok` only for an `Ack` with no `basic.return`;
    /// `Unroutable` when returned (only possible without an alternate exchange); `Nacked`;
    /// `Timeout` when publish + confirm exceeded `publish_timeout` (a blocked connection
    /// included — later events of the call then fail fast with `Timeout`); `Unavailable` for
    /// connection or channel errors (e.g. a missing exchange, which also closes the channel:
    /// the next call opens a new one).
    async fn publish(&self, events: &[EventEnvelope]) -> Vec<Result<(), PublishError>> {
        if events.is_empty() {
            return Vec::new();
        }
        self.publish_all(events).await
    }
}
