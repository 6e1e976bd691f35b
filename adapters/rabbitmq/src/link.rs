//! A connection plus one confirm-mode channel, rebuilt on demand.
//!
//! lapin's auto-recovery (`enable_auto_recover`) restores the connection and its channels after
//! a broker outage, but a channel the broker closed (e.g. publish to a missing exchange) is never
//! reopened, and a connection whose recovery gave up stays dead. [`Link::channel`] covers all
//! three: it answers the live channel, reports `Unavailable` while lapin is recovering, and
//! otherwise opens a new channel (and, if needed, a new connection) and redeclares the topology.
//!
//! Reconnection is fast: lapin retries the TCP connection every [`RECONNECT_MIN`] to
//! [`RECONNECT_MAX`] with jitter, forever (its default is 1 s doubling to 60 s and 16 tries, so
//! after a long outage the first retry could come a minute after the broker returned). A link
//! that is [watched](Link::watch) also runs its own loop every [`WATCH_EVERY`]: it reopens what
//! lapin does not (a closed or discarded channel, a connection whose recovery ended) and calls
//! the watcher each time the link becomes usable again, so a dispatcher waiting for the broker
//! is woken within a second of its return.
use crate::error::RabbitError;
use lapin::options::{BasicPublishOptions, ConfirmSelectOptions};
use lapin::types::{LongString, ShortString};
use lapin::{
    BasicProperties, Channel, Confirmation, Connection, ConnectionProperties, ConnectionStatus,
};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::Mutex;

/// How long [`Link::channel`] waits for an ongoing lapin recovery before answering
/// `Unavailable` (links built with [`Link::new`]; see [`Link::with_recovery_grace`]).
pub(crate) const RECOVERY_GRACE: Duration = Duration::from_secs(1);
/// Smallest delay between two TCP connection attempts of lapin's recovery.
pub(crate) const RECONNECT_MIN: Duration = Duration::from_millis(50);
/// Largest delay between two TCP connection attempts of lapin's recovery.
pub(crate) const RECONNECT_MAX: Duration = Duration::from_millis(200);
/// Period of a watched link's own check.
pub(crate) const WATCH_EVERY: Duration = Duration::from_millis(50);
/// How long a watched link lets lapin's recovery work alone before also trying fresh
/// connections itself.
pub(crate) const STUCK_AFTER: Duration = Duration::from_secs(2);

/// Declares the topology a link needs, on channels of its own on the link's connection (so a
/// refused declaration never closes the confirm channel). Runs after every (re)open of the
/// confirm channel.
pub(crate) type Declare = Arc<
    dyn Fn(Arc<Connection>) -> Pin<Box<dyn Future<Output = Result<(), RabbitError>> + Send>>
        + Send
        + Sync,
>;

/// Called each time a watched link becomes usable again after it was not.
pub type OnReady = Arc<dyn Fn() + Send + Sync>;

/// Opens an auto-recovering connection named `name` (visible in `rabbitmqctl
/// list_connections client_properties`), within `timeout`. Recovery retries the TCP connection
/// forever, every [`RECONNECT_MIN`]–[`RECONNECT_MAX`].
pub(crate) async fn connect(
    uri: &str,
    name: &str,
    timeout: Duration,
) -> Result<Connection, RabbitError> {
    let props = ConnectionProperties::default()
        .configure_backoff(|b| {
            b.with_min_delay(RECONNECT_MIN)
                .with_max_delay(RECONNECT_MAX)
                .with_factor(2.0)
                .with_jitter()
                .without_max_times()
        })
        .enable_auto_recover()
        .with_connection_name(LongString::from(name));
    match tokio::time::timeout(timeout, Connection::connect(uri, props)).await {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(e)) => Err(RabbitError::Unavailable(e.to_string())),
        Err(_) => Err(RabbitError::Timeout(timeout)),
    }
}

struct State {
    conn: Option<Arc<Connection>>,
    channel: Option<Channel>,
}

/// The channel in use and its connection's status, readable without waiting for an opening in
/// progress.
#[derive(Clone)]
struct Live {
    channel: Channel,
    conn: ConnectionStatus,
}

/// A connection and a confirm-mode channel on it.
pub(crate) struct Link {
    uri: reporter_ports::Secret,
    name: String,
    timeout: Duration,
    grace: Duration,
    declare: Option<Declare>,
    state: Mutex<State>,
    live: std::sync::Mutex<Option<Live>>,
    closed: std::sync::atomic::AtomicBool,
}

/// Why [`Link::ready_channel`] has no channel to offer right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotReady {
    /// lapin is reconnecting, or no channel is open (the watcher reopens it).
    Down,
    /// The broker blocked the connection (a resource alarm): publishes would hang.
    Blocked,
}

impl Link {
    /// A link that connects lazily (or now, with [`Link::channel`]).
    pub(crate) fn new(uri: &str, name: &str, timeout: Duration, declare: Option<Declare>) -> Self {
        Self {
            uri: reporter_ports::Secret::from(uri),
            name: name.to_owned(),
            timeout,
            grace: RECOVERY_GRACE,
            declare,
            state: Mutex::new(State {
                conn: None,
                channel: None,
            }),
            live: std::sync::Mutex::new(None),
            closed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// How long [`Link::channel`] waits for an ongoing recovery (zero: answer at once).
    pub(crate) fn with_recovery_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    fn live(&self) -> Option<Live> {
        self.live
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn set_live(&self, live: Option<Live>) {
        *self
            .live
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = live;
    }

    /// The open channel, without waiting: `Err` while lapin reconnects, while no channel is
    /// open, or while the broker blocks the connection.
    pub(crate) fn ready_channel(&self) -> Result<Channel, NotReady> {
        let Some(live) = self.live() else {
            return Err(NotReady::Down);
        };
        if !live.channel.status().connected() {
            return Err(NotReady::Down);
        }
        if live.conn.blocked() {
            return Err(NotReady::Blocked);
        }
        Ok(live.channel)
    }

    /// True while the broker blocks the connection (a memory or disk alarm).
    pub(crate) fn blocked(&self) -> bool {
        self.live().is_some_and(|l| l.conn.blocked())
    }

    /// The live confirm-mode channel, opening what is missing within the link's timeout.
    /// `Unavailable` when lapin is still recovering the connection after the recovery grace;
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
        self.set_live(None);
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
                let grace = tokio::time::Instant::now() + self.grace.min(self.timeout);
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
        self.open(&mut st).await
    }

    /// Opens a channel, on a new connection when the current one is dead.
    async fn open(&self, st: &mut State) -> Result<Channel, RabbitError> {
        st.channel = None;
        self.set_live(None);
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
            let new = Arc::new(connect(self.uri.expose(), &self.name, self.timeout).await?);
            if let Some(old) = st.conn.replace(new) {
                // A connection lapin is still trying to recover: stop it.
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(
                        Duration::from_secs(5),
                        old.close(200, "replaced".into()),
                    )
                    .await;
                });
            }
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
            declare(conn.clone()).await?;
        }
        tracing::debug!(link = %self.name, channel = ch.id(), "channel open (confirm mode)");
        self.set_live(Some(Live {
            channel: ch.clone(),
            conn: conn.status().clone(),
        }));
        st.channel = Some(ch.clone());
        Ok(ch)
    }

    /// Opens a channel on a new connection, replacing the current one (which lapin may still
    /// be trying to recover) — unless lapin recovered it meanwhile: then the new connection is
    /// closed and the recovered one kept, so publishes in flight on it are not cut off.
    async fn reconnect_fresh(&self) -> Result<(), RabbitError> {
        let new = connect(self.uri.expose(), &self.name, self.timeout).await?;
        let mut st = self.state.lock().await;
        let recovered = st.channel.as_ref().is_some_and(|c| c.status().connected())
            || st.conn.as_ref().is_some_and(|c| c.status().connected());
        if recovered {
            tokio::spawn(async move {
                let _ =
                    tokio::time::timeout(Duration::from_secs(5), new.close(200, "unused".into()))
                        .await;
            });
            return Ok(());
        }
        tracing::info!(link = %self.name, "lapin's recovery is stuck: using a fresh connection");
        if let Some(old) = st.conn.replace(Arc::new(new)) {
            tokio::spawn(async move {
                let _ =
                    tokio::time::timeout(Duration::from_secs(5), old.close(200, "replaced".into()))
                        .await;
            });
        }
        match tokio::time::timeout(self.timeout, self.open(&mut st)).await {
            Ok(r) => r.map(|_| ()),
            Err(_) => Err(RabbitError::Timeout(self.timeout)),
        }
    }

    /// Starts the link's own reconnect loop: every [`WATCH_EVERY`] it checks the channel,
    /// reopens it when it is gone and lapin is not recovering it, and calls `on_ready` each
    /// time the link turns usable after it was not (lapin's recovery included). A link that
    /// has not been usable for [`STUCK_AFTER`] gets company: every second the loop also
    /// tries a fresh connection, and the first to succeed wins (lapin can stay stuck in
    /// recovery when the broker dropped it mid-handshake). This MUST hold whether or not the
    /// link still holds a channel: a channel discarded after a publish timeout leaves a
    /// connection in recovery that nothing else would replace. The loop ends when the link is
    /// closed or dropped.
    pub(crate) fn watch(self: &Arc<Self>, on_ready: OnReady) {
        let weak: Weak<Self> = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut was_ready = true;
            let mut recovering_since: Option<tokio::time::Instant> = None;
            let mut last_fresh_try = tokio::time::Instant::now();
            loop {
                tokio::time::sleep(WATCH_EVERY).await;
                let Some(link) = weak.upgrade() else { break };
                if link.closed.load(std::sync::atomic::Ordering::Acquire) {
                    break;
                }
                let ready = match link.ready_channel() {
                    Ok(_) => true,
                    Err(NotReady::Blocked) => false,
                    Err(NotReady::Down) => {
                        let now = tokio::time::Instant::now();
                        let since = *recovering_since.get_or_insert(now);
                        let reconnecting = link.live().is_some_and(|l| {
                            l.channel.status().reconnecting() || l.conn.reconnecting()
                        });
                        // Nobody is on it: open a channel (and connection) ourselves. That
                        // fails while the stored connection is still in lapin's recovery,
                        // also when the channel was discarded (a publish timed out): then
                        // `live` is empty, and only the fresh connection below ends a stuck
                        // recovery.
                        let opened = !reconnecting && link.channel().await.is_ok();
                        if !opened
                            && now.duration_since(since) >= STUCK_AFTER
                            && now.duration_since(last_fresh_try) >= Duration::from_secs(1)
                        {
                            last_fresh_try = now;
                            let _ = link.reconnect_fresh().await;
                        }
                        // Usable only when a publish could start now: lapin may have recovered
                        // the connection while the channel is still being recovered, and
                        // `on_ready` MUST NOT run before the channel is open.
                        link.ready_channel().is_ok()
                    }
                };
                if ready {
                    recovering_since = None;
                }
                if ready && !was_ready {
                    tracing::info!(link = %link.name, "broker link usable again");
                    on_ready();
                }
                was_ready = ready;
            }
        });
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

    /// Closes the connection (best effort) and ends the watcher.
    pub(crate) async fn close(&self) {
        self.closed
            .store(true, std::sync::atomic::Ordering::Release);
        self.set_live(None);
        let mut st = self.state.lock().await;
        st.channel = None;
        if let Some(c) = st.conn.take() {
            let _ = tokio::time::timeout(self.timeout, c.close(200, "bye".into())).await;
        }
    }
}
