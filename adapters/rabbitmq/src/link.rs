//! A connection plus one confirm-mode channel, rebuilt on demand.
//!
//! lapin's auto-recovery (`enable_auto_recover`) restores the connection and its channels after
//! a broker outage, but a channel the broker closed (e.g. publish to a missing exchange) is never
//! reopened, and a connection whose recovery gave up stays dead. [`Link::channel`] covers all
//! three: it answers the live channel, reports `Unavailable` while lapin is recovering, and
//! otherwise opens a new channel (and, if needed, a new connection) and redeclares the topology.
use crate::error::RabbitError;
use lapin::options::{BasicPublishOptions, ConfirmSelectOptions};
use lapin::types::{LongString, ShortString};
use lapin::{BasicProperties, Channel, Confirmation, Connection, ConnectionProperties};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;

/// How long [`Link::channel`] waits for an ongoing lapin recovery before answering
/// `Unavailable`.
pub(crate) const RECOVERY_GRACE: Duration = Duration::from_secs(1);

/// Declares the topology a link needs on a fresh channel.
pub(crate) type Declare =
    Arc<dyn Fn(Channel) -> Pin<Box<dyn Future<Output = lapin::Result<()>> + Send>> + Send + Sync>;

/// Opens an auto-recovering connection named `name` (visible in `rabbitmqctl
/// list_connections client_properties`), within `timeout`.
pub(crate) async fn connect(
    uri: &str,
    name: &str,
    timeout: Duration,
) -> Result<Connection, RabbitError> {
    let props = ConnectionProperties::default()
        .enable_auto_recover()
        .with_connection_name(LongString::from(name));
    match tokio::time::timeout(timeout, Connection::connect(uri, props)).await {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(e)) => Err(RabbitError::Unavailable(e.to_string())),
        Err(_) => Err(RabbitError::Timeout(timeout)),
    }
}

struct State {
    conn: Option<Connection>,
    channel: Option<Channel>,
}

/// A connection and a confirm-mode channel on it.
pub(crate) struct Link {
    uri: String,
    name: String,
    timeout: Duration,
    declare: Option<Declare>,
    state: Mutex<State>,
}

impl Link {
    /// A link that connects lazily (or now, with [`Link::channel`]).
    pub(crate) fn new(uri: &str, name: &str, timeout: Duration, declare: Option<Declare>) -> Self {
        Self {
            uri: uri.to_owned(),
            name: name.to_owned(),
            timeout,
            declare,
            state: Mutex::new(State {
                conn: None,
                channel: None,
            }),
        }
    }

    /// The live confirm-mode channel, opening what is missing within the link's timeout.
    /// `Unavailable` when lapin is still recovering the connection after [`RECOVERY_GRACE`];
    /// `Timeout` when the broker does not answer in time (e.g. a blocked connection).
    pub(crate) async fn channel(&self) -> Result<Channel, RabbitError> {
        match tokio::time::timeout(self.timeout, self.channel_inner()).await {
            Ok(r) => r,
            Err(_) => Err(RabbitError::Timeout(self.timeout)),
        }
    }

    /// Forgets the current channel so the next [`Link::channel`] opens a new one (after a
    /// timeout the channel may hold a half-sent frame or wait forever).
    pub(crate) async fn discard_channel(&self) {
        let mut st = self.state.lock().await;
        if let Some(ch) = st.channel.take() {
            tracing::debug!(link = %self.name, channel = ch.id(), "discarding channel");
            // Closing may hang on a blocked connection: do it in the background.
            tokio::spawn(async move {
                let _ =
                    tokio::time::timeout(Duration::from_secs(5), ch.close(200, "discarded".into()))
                        .await;
            });
        }
    }

    async fn channel_inner(&self) -> Result<Channel, RabbitError> {
        let mut st = self.state.lock().await;
        if let Some(ch) = &st.channel {
            let status = ch.status();
            if status.connected() {
                return Ok(ch.clone());
            }
            if status.reconnecting() {
                // A short blip (lapin recovers within a round trip when the broker is up) is
                // absorbed; a real outage answers `Unavailable` quickly so callers can fall back.
                let grace = tokio::time::Instant::now() + RECOVERY_GRACE.min(self.timeout);
                while tokio::time::Instant::now() < grace && ch.status().reconnecting() {
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
                if ch.status().connected() {
                    tracing::info!(link = %self.name, "channel recovered");
                    return Ok(ch.clone());
                }
                if ch.status().reconnecting() {
                    return Err(RabbitError::Unavailable(
                        "reconnecting to the broker".into(),
                    ));
                }
            }
        }
        st.channel = None;
        let conn_ok = match &st.conn {
            Some(c) if c.status().connected() => true,
            Some(c) if c.status().reconnecting() => {
                return Err(RabbitError::Unavailable(
                    "reconnecting to the broker".into(),
                ));
            }
            _ => false,
        };
        if !conn_ok {
            tracing::info!(link = %self.name, "connecting to RabbitMQ");
            st.conn = Some(connect(&self.uri, &self.name, self.timeout).await?);
        }
        let conn = st
            .conn
            .as_ref()
            .ok_or_else(|| RabbitError::Unavailable("no connection".into()))?;
        let ch = conn.create_channel().await.map_err(RabbitError::from)?;
        ch.confirm_select(ConfirmSelectOptions::default())
            .await
            .map_err(RabbitError::from)?;
        if let Some(declare) = &self.declare {
            declare(ch.clone()).await.map_err(RabbitError::from)?;
        }
        tracing::debug!(link = %self.name, channel = ch.id(), "channel open (confirm mode)");
        st.channel = Some(ch.clone());
        Ok(ch)
    }

    /// Publishes one message (`mandatory`) and awaits its confirm, all within the link's
    /// timeout. `Ok` only for an `Ack` without a `basic.return`. After a timeout the channel is
    /// discarded.
    pub(crate) async fn publish_confirmed(
        &self,
        exchange: &str,
        routing_key: &str,
        body: &[u8],
        properties: BasicProperties,
    ) -> Result<(), RabbitError> {
        let deadline = tokio::time::Instant::now() + self.timeout;
        let exchange =
            ShortString::try_new(exchange).map_err(|e| RabbitError::Config(e.to_string()))?;
        let routing_key =
            ShortString::try_new(routing_key).map_err(|e| RabbitError::Config(e.to_string()))?;
        let attempt = async {
            let ch = self.channel().await?;
            let confirm = ch
                .basic_publish(
                    exchange,
                    routing_key,
                    BasicPublishOptions {
                        mandatory: true,
                        immediate: false,
                    },
                    body,
                    properties,
                )
                .await?;
            match confirm.await? {
                Confirmation::Ack(None) => Ok(()),
                Confirmation::Ack(Some(ret)) => Err(RabbitError::Unavailable(format!(
                    "returned: {} {}",
                    ret.reply_code, ret.reply_text
                ))),
                Confirmation::Nack(_) => {
                    Err(RabbitError::Unavailable("nacked by the broker".into()))
                }
                Confirmation::NotRequested => Err(RabbitError::Unavailable(
                    "channel is not in confirm mode".into(),
                )),
            }
        };
        match tokio::time::timeout_at(deadline, attempt).await {
            Ok(r) => r,
            Err(_) => {
                self.discard_channel().await;
                Err(RabbitError::Timeout(self.timeout))
            }
        }
    }

    /// Closes the connection (best effort).
    pub(crate) async fn close(&self) {
        let mut st = self.state.lock().await;
        st.channel = None;
        if let Some(c) = st.conn.take() {
            let _ = tokio::time::timeout(self.timeout, c.close(200, "bye".into())).await;
        }
    }
}
