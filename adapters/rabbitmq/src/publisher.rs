//! [`EventPublisher`] on RabbitMQ: CloudEvents (binary mode, `ce-` headers) on a durable topic
//! exchange, with publisher confirms, `mandatory`, and an optional alternate exchange.
use crate::cloudevents::envelope_headers;
use crate::confirms::{Confirms, Outstanding};
use crate::error::RabbitError;
use crate::link::{Declare, Link, NotReady, OnReady};
use crate::topology::{AlternateExchange, EventsTopology};
use async_trait::async_trait;
use lapin::options::BasicPublishOptions;
use lapin::types::ShortString;
use lapin::{BasicProperties, Channel};
use reporter_ports::events::EventEnvelope;
use reporter_ports::ports::{EventPublisher, PublishError};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Semaphore, oneshot};
use tokio::time::{Instant, timeout_at};

/// Configuration of [`RabbitPublisher`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RabbitPublisherConfig {
    /// `amqp://` or `amqps://` URI (it may hold the password, so it is a [`Secret`]).
    pub uri: reporter_ports::Secret,
    /// The events exchange (topic, durable). Default `reporter.events`.
    pub exchange: String,
    /// Alternate exchange for unroutable events. `Some` (the default): unroutable events are
    /// kept in its queue and their publish is `Ok` (the broker counts them as routed). `None`:
    /// they are returned by the broker and their publish is `Err(Unroutable)`.
    pub alternate_exchange: Option<AlternateExchange>,
    /// Make sure the exchanges, the AE queue and its binding exist on every new channel
    /// ([`crate::topology`]: missing ones are declared; existing ones declared with other
    /// arguments are used as they are, the difference logged). Default `true`; `false`
    /// touches nothing.
    pub declare_topology: bool,
    /// Deadline of each event's publish + confirm, and of (re)opening the channel. Default 5 s.
    pub publish_timeout: Duration,
    /// Most published messages awaiting their broker confirm at once, across every concurrent
    /// `publish` call (one sliding window per publisher). Default 256.
    pub max_in_flight: usize,
    /// Connection name shown by the broker. Default `reporter-events-publisher`.
    pub connection_name: String,
}

impl RabbitPublisherConfig {
    /// Defaults for `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            uri: reporter_ports::Secret::new(uri.into()),
            exchange: "reporter.events".into(),
            alternate_exchange: Some(AlternateExchange::default()),
            declare_topology: true,
            publish_timeout: Duration::from_secs(5),
            max_in_flight: 256,
            connection_name: "reporter-events-publisher".into(),
        }
    }
}

/// Publishes [`EventEnvelope`]s as CloudEvents. Cheap to clone (shared connection).
///
/// * routing key = `key.key()` verbatim; `mandatory`; persistent (`delivery_mode` 2);
///   `content_type` `application/json`; `message_id` = `ce-id` (when ≤ 255 bytes);
///   headers from [`envelope_headers`](crate::cloudevents::envelope_headers).
/// * Calls run concurrently on the publisher's one confirm channel and share one sliding
///   window of [`RabbitPublisherConfig::max_in_flight`] messages awaiting their confirm: a
///   call publishes as soon as a slot frees up, never waits for another call to finish, and
///   every confirm frees its slot the moment it arrives. One task awaits every confirm and
///   matches each `basic.return` to its event by `message_id` (= `ce-id`), whichever call
///   published it.
/// * Own connection with lapin auto-recovery, retried every 50–200 ms (forever); the channel
///   is reopened after the broker closed it and after any timeout. While the link is down, or
///   the broker blocks the connection (a resource alarm), a call answers `Unavailable` at once
///   (no in-flight publish is replayed: the caller republishes). [`Self::on_reconnect`]
///   reports the link's return.
/// * A call never hangs: waiting for a window slot, publishing and awaiting the confirms all
///   share one deadline of `publish_timeout` (opening a channel that is gone takes at most
///   another `publish_timeout`). An event that found no free slot by then was never sent and
///   answers [`PublishError::WindowFull`], distinct from a broker-side `Timeout`.
#[derive(Clone)]
pub struct RabbitPublisher {
    inner: Arc<Inner>,
}

struct Inner {
    config: RabbitPublisherConfig,
    exchange: ShortString,
    link: Arc<Link>,
    window: Arc<Semaphore>,
    confirms: Confirms,
}

fn short(name: &str, what: &str) -> Result<ShortString, RabbitError> {
    ShortString::try_new(name).map_err(|e| RabbitError::Config(format!("{what}: {e}")))
}

fn events_topology(config: &RabbitPublisherConfig) -> Option<Declare> {
    config.declare_topology.then(|| {
        crate::topology::declare_on_link(EventsTopology {
            exchange: config.exchange.clone(),
            alternate: config.alternate_exchange.clone(),
        })
    })
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
        let declare = events_topology(&config);
        let link = Link::new(
            config.uri.expose(),
            &config.connection_name,
            config.publish_timeout,
            declare,
        )
        .with_recovery_grace(Duration::ZERO);
        link.channel().await?;
        let window = Arc::new(Semaphore::new(config.max_in_flight));
        let link = Arc::new(link);
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                exchange,
                confirms: Confirms::start(barrier(link.clone())),
                link,
                window,
            }),
        })
    }

    /// Watches the connection: `on_ready` is called each time the publisher can publish again
    /// after it could not (lapin's recovery after an outage, a reopened channel, the end of a
    /// resource alarm), within about 50 ms. Also reopens, every 50 ms, a channel or
    /// connection that lapin does not recover. Call once.
    pub fn on_reconnect(&self, on_ready: OnReady) {
        self.inner.link.watch(on_ready);
    }

    /// True when a publish could start now: the channel is open and not blocked.
    pub fn ready(&self) -> bool {
        self.inner.link.ready_channel().is_ok()
    }

    /// Messages awaiting their confirm right now (for metrics and tests).
    pub fn in_flight(&self) -> usize {
        self.inner
            .config
            .max_in_flight
            .saturating_sub(self.inner.window.available_permits())
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

    /// Publishes `events` in order within one `publish_timeout`, pipelined through the shared
    /// confirm window: one verdict per event. After the first event that cannot be sent, the
    /// rest are not sent and carry the same error.
    async fn publish_all(&self, events: &[EventEnvelope]) -> Vec<Result<(), PublishError>> {
        let n = events.len();
        let deadline = Instant::now() + self.inner.config.publish_timeout;
        let ch = match self.channel_for(n).await {
            Ok(ch) => ch,
            Err(e) => return vec![Err(e); n],
        };
        let mut results: Vec<Option<Result<(), PublishError>>> = vec![None; n];
        let mut verdicts = Vec::with_capacity(n);
        let mut stop: Option<PublishError> = None;
        for (i, e) in events.iter().enumerate() {
            if let Some(err) = &stop {
                results[i] = Some(Err(err.clone()));
                continue;
            }
            match self.send_one(&ch, e, deadline, n - i).await {
                Ok(rx) => verdicts.push((i, rx)),
                Err(err) => {
                    results[i] = Some(Err(err.clone()));
                    stop = Some(err);
                }
            }
        }
        for (i, rx) in verdicts {
            results[i] = Some(match timeout_at(deadline, rx).await {
                Ok(Ok(v)) => v,
                Ok(Err(_)) => Err(PublishError::Unavailable("confirm lost".into())),
                Err(_) => Err(PublishError::Timeout),
            });
        }
        let timed_out = results
            .iter()
            .any(|r| matches!(r, Some(Err(PublishError::Timeout))));
        if timed_out && !self.inner.link.blocked() {
            // The channel may hold a half-sent frame: start over on a new one. (A blocked
            // connection keeps its channel: nothing can be sent on any channel until the
            // broker unblocks it.)
            self.inner.link.discard_channel().await;
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or(Err(PublishError::Unavailable("not published".into()))))
            .collect()
    }

    /// The confirm channel for a call of `n` events: the open one, or a new one when the link
    /// is down. MUST answer `Unavailable` at once while the broker blocks the connection.
    async fn channel_for(&self, n: usize) -> Result<Channel, PublishError> {
        match self.inner.link.ready_channel() {
            Ok(ch) => Ok(ch),
            Err(NotReady::Blocked) => {
                tracing::debug!(events = n, "publish: the broker blocks the connection");
                Err(PublishError::Unavailable(BLOCKED.into()))
            }
            Err(NotReady::Down) => self.inner.link.channel().await.map_err(|e| {
                tracing::debug!(error = %e, events = n, "publish: no channel");
                PublishError::from(e)
            }),
        }
    }

    /// Takes a slot of the shared window and publishes `e` before `deadline`: the receiver of
    /// its confirm verdict. `left` counts this event and the rest of the call (for the log).
    ///
    /// MUST answer `WindowFull` when no slot frees in time (nothing was sent: it says nothing
    /// against the broker's health), `Timeout` when the publish itself does not complete, and
    /// `Unavailable` when the connection is blocked, the publish fails or the publisher closed.
    async fn send_one(
        &self,
        ch: &Channel,
        e: &EventEnvelope,
        deadline: Instant,
        left: usize,
    ) -> Result<oneshot::Receiver<Result<(), PublishError>>, PublishError> {
        let closed = || PublishError::Unavailable("publisher closed".into());
        let permit = match timeout_at(deadline, self.inner.window.clone().acquire_owned()).await {
            Ok(Ok(p)) => p,
            Ok(Err(_)) => return Err(closed()),
            Err(_) => {
                tracing::debug!(events = left, "publish: the confirm window stayed full");
                return Err(PublishError::WindowFull);
            }
        };
        if self.inner.link.blocked() {
            return Err(PublishError::Unavailable(BLOCKED.into()));
        }
        let props = properties(e);
        let message_id = ShortString::try_new(e.id.as_str())
            .ok()
            .map(|_| e.id.clone());
        if let Some(id) = &message_id {
            self.inner.confirms.expect(id);
        }
        let withdraw = |id: &Option<String>| {
            if let Some(id) = id {
                self.inner.confirms.withdraw(id);
            }
        };
        let publish = ch.basic_publish(
            self.inner.exchange.clone(),
            ShortString::from(e.key.key()),
            BasicPublishOptions {
                mandatory: true,
                immediate: false,
            },
            e.payload.as_bytes(),
            props,
        );
        let confirm = match timeout_at(deadline, publish).await {
            Ok(Ok(confirm)) => confirm,
            Ok(Err(err)) => {
                withdraw(&message_id);
                tracing::warn!(error = %err, event_id = %e.id, "publish failed");
                return Err(PublishError::Unavailable(err.to_string()));
            }
            Err(_) => {
                withdraw(&message_id);
                let timeout = self.inner.config.publish_timeout;
                tracing::warn!(event_id = %e.id, ?timeout, "publish timed out (blocked connection?)");
                return Err(PublishError::Timeout);
            }
        };
        let (tx, rx) = oneshot::channel();
        let entry = Outstanding {
            message_id,
            confirm,
            permit,
            give_up_at: deadline + GIVE_UP_GRACE,
            verdict: tx,
        };
        if let Err(entry) = self.inner.confirms.track(entry) {
            withdraw(&entry.message_id);
            return Err(closed());
        }
        Ok(rx)
    }
}

/// The confirms task's barrier (`confirms` module docs): an empty, `mandatory` message with
/// its own id to the default exchange under a routing key no queue has, which the broker
/// returns (and acks).
fn barrier(link: Arc<Link>) -> crate::confirms::Barrier {
    Arc::new(move |id: String| {
        let link = link.clone();
        Box::pin(async move {
            let ch = link.ready_channel().ok()?;
            let publish = ch.basic_publish(
                ShortString::from(""),
                ShortString::from(BARRIER_ROUTING_KEY),
                BasicPublishOptions {
                    mandatory: true,
                    immediate: false,
                },
                &[],
                BasicProperties::default().with_message_id(ShortString::from(id)),
            );
            tokio::time::timeout(std::time::Duration::from_secs(5), publish)
                .await
                .ok()?
                .ok()
        })
    })
}

/// No queue is named so (names starting `amq.` are reserved to the broker), so the default
/// exchange routes the barrier nowhere and returns it.
const BARRIER_ROUTING_KEY: &str = "amq.reporter.confirm-barrier";

/// What a publish answers while the broker blocks the connection.
const BLOCKED: &str = "the broker blocks publishing (resource alarm)";

/// How long after a call's deadline its unresolved confirms are still awaited (to free their
/// window slots) before they are given up.
const GIVE_UP_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// The AMQP properties of an event (its body is the payload's bytes, sent as they are).
fn properties(e: &EventEnvelope) -> BasicProperties {
    let mut props = BasicProperties::default()
        .with_delivery_mode(2)
        .with_content_type(ShortString::from(crate::cloudevents::JSON_CONTENT_TYPE))
        .with_headers(envelope_headers(e));
    if let Ok(id) = ShortString::try_new(e.id.as_str()) {
        props = props.with_message_id(id);
    }
    props
}

#[async_trait]
impl EventPublisher for RabbitPublisher {
    /// One result per event, in input order: `Ok` only for an `Ack` with no `basic.return`;
    /// `Unroutable` when returned (only possible without an alternate exchange); `Nacked`;
    /// `WindowFull` when no slot of the shared confirm window freed up within
    /// `publish_timeout` (the event was not sent, nor were the later events of the call);
    /// `Timeout` when the publish or the confirm did not come within `publish_timeout` (later
    /// events of the call then fail fast with `Timeout`);
    /// `Unavailable` while the link is down or blocked by the broker, and for connection or
    /// channel errors (e.g. a missing exchange, which also closes the channel: the next call
    /// opens a new one).
    async fn publish(&self, events: &[EventEnvelope]) -> Vec<Result<(), PublishError>> {
        if events.is_empty() {
            return Vec::new();
        }
        self.publish_all(events).await
    }

    /// `false` while the link is down (lapin reconnecting, no channel) or blocked by the
    /// broker.
    fn ready(&self) -> bool {
        RabbitPublisher::ready(self)
    }
}
