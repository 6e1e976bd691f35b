//! The events topology: the events exchange (durable topic), its alternate exchange (durable
//! fanout) and the alternate exchange's bounded queue.
//!
//! The events exchange belongs to the operator (`RABBITMQ_REPORT_EVENTS_EXCHANGE`), so
//! [`ensure_events_topology`] treats what already exists as authoritative:
//!
//! * each entity is first checked passively; one that is missing is declared with Reporter's
//!   arguments;
//! * one that exists is compared by redeclaring it with Reporter's arguments on a throwaway
//!   channel: the broker answers `PRECONDITION_FAILED` naming the first argument that
//!   differs, which is logged as a warning and returned in [`TopologyReport::differences`];
//!   start-up goes on with the entity as it is (e.g. an events exchange without
//!   `alternate-exchange`: unroutable events are then returned to Reporter and parked in the
//!   outbox instead of kept in the queue);
//! * a real failure (a missing entity the user may not declare, a closed connection) is an
//!   error naming the entity and the broker's reply.
//!
//! Every step runs on a channel of its own: a refused declaration closes its channel, never
//! the caller's.
use crate::error::RabbitError;
use lapin::options::{ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use lapin::{Connection, ExchangeKind};
use std::time::Duration;

/// AMQP reply code of a missing entity.
const NOT_FOUND: u16 = 404;
/// AMQP reply code of a declaration that differs from the existing entity.
const PRECONDITION_FAILED: u16 = 406;
/// AMQP reply code of a refused permission.
const ACCESS_REFUSED: u16 = 403;

/// Where unroutable events are kept: a durable fanout exchange named as the events exchange's
/// `alternate-exchange`, bound to one durable queue bounded by message TTL and length (as the
/// original's dead-letter queue: 7 days, 10,000 messages), so unrouted events cannot fill the
/// broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlternateExchange {
    /// The alternate exchange (fanout, durable). Default `reporter.events.unroutable`.
    pub exchange: String,
    /// The durable queue bound to it. Default `reporter.events.unroutable`.
    pub queue: String,
    /// `x-message-ttl` of the queue; `None` keeps messages until consumed. Default 7 days.
    pub message_ttl: Option<Duration>,
    /// `x-max-length` of the queue (the oldest message is dropped beyond it); `None` for no
    /// limit. Default 10,000.
    pub max_length: Option<u32>,
}

/// The original's dead-letter queue TTL.
pub const DEFAULT_UNROUTABLE_TTL: Duration = Duration::from_secs(7 * 24 * 3600);
/// The original's dead-letter queue length.
pub const DEFAULT_UNROUTABLE_MAX_LENGTH: u32 = 10_000;

impl Default for AlternateExchange {
    fn default() -> Self {
        Self {
            exchange: "reporter.events.unroutable".into(),
            queue: "reporter.events.unroutable".into(),
            message_ttl: Some(DEFAULT_UNROUTABLE_TTL),
            max_length: Some(DEFAULT_UNROUTABLE_MAX_LENGTH),
        }
    }
}

impl AlternateExchange {
    /// The queue's arguments: `x-message-ttl` (milliseconds) and `x-max-length`.
    pub fn queue_arguments(&self) -> FieldTable {
        let mut args = FieldTable::default();
        if let Some(ttl) = self.message_ttl {
            let ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
            args.insert("x-message-ttl".into(), AMQPValue::LongLongInt(ms));
        }
        if let Some(max) = self.max_length {
            args.insert("x-max-length".into(), AMQPValue::LongLongInt(max.into()));
        }
        args
    }
}

/// What Reporter wants on the broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventsTopology {
    /// The events exchange (topic, durable).
    pub exchange: String,
    /// Its alternate exchange and queue, if any.
    pub alternate: Option<AlternateExchange>,
}

/// What [`ensure_events_topology`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopologyReport {
    /// Entities that did not exist and were declared, e.g. `exchange 'reporter.events'`.
    pub declared: Vec<String>,
    /// Entities that exist with other arguments than Reporter's, with the broker's words.
    pub differences: Vec<String>,
}

/// How an existing entity compares with Reporter's declaration.
enum Found {
    Missing,
    Same,
    Different(String),
    NotCompared(String),
}

fn short(name: &str, what: &str) -> Result<ShortString, RabbitError> {
    ShortString::try_new(name).map_err(|e| RabbitError::Config(format!("{what}: {e}")))
}

/// The broker's reply code and text of a refused operation.
fn reply(e: &lapin::Error) -> Option<(u16, String)> {
    match e.kind() {
        lapin::ErrorKind::ProtocolError(a) => Some((a.get_id(), a.get_message().to_string())),
        _ => None,
    }
}

fn failure(what: &str, action: &str, e: &lapin::Error) -> RabbitError {
    match reply(e) {
        Some((ACCESS_REFUSED, text)) => RabbitError::Topology(format!(
            "{what} is missing and the user may not {action} it ({text}); declare it, or grant the user configure permission"
        )),
        Some((code, text)) => RabbitError::Topology(format!("{action} {what}: {code} {text}")),
        None => RabbitError::Unavailable(format!("{action} {what}: {e}")),
    }
}

/// An entity to ensure: an exchange or a queue.
#[derive(Clone)]
enum Entity {
    Exchange {
        name: ShortString,
        kind: ExchangeKind,
        args: FieldTable,
    },
    Queue {
        name: ShortString,
        args: FieldTable,
    },
}

impl Entity {
    fn describe(&self) -> String {
        match self {
            Self::Exchange { name, .. } => format!("exchange '{name}'"),
            Self::Queue { name, .. } => format!("queue '{name}'"),
        }
    }

    /// Declares the entity on a fresh channel, passively or with Reporter's arguments.
    async fn declare(&self, conn: &Connection, passive: bool) -> Result<(), lapin::Error> {
        let ch = conn.create_channel().await?;
        let result = match self {
            Self::Exchange { name, kind, args } => ch
                .exchange_declare(
                    name.clone(),
                    kind.clone(),
                    ExchangeDeclareOptions {
                        passive,
                        durable: true,
                        ..ExchangeDeclareOptions::default()
                    },
                    if passive {
                        FieldTable::default()
                    } else {
                        args.clone()
                    },
                )
                .await
                .map(|_| ()),
            Self::Queue { name, args } => ch
                .queue_declare(
                    name.clone(),
                    QueueDeclareOptions {
                        passive,
                        durable: true,
                        ..QueueDeclareOptions::default()
                    },
                    if passive {
                        FieldTable::default()
                    } else {
                        args.clone()
                    },
                )
                .await
                .map(|_| ()),
        };
        if result.is_ok() {
            let _ = ch.close(200, "topology checked".into()).await;
        }
        result
    }

    /// Passive check, then comparison (an active declaration with Reporter's arguments).
    async fn inspect(&self, conn: &Connection) -> Result<Found, RabbitError> {
        match self.declare(conn, true).await {
            Ok(()) => {}
            Err(e) if reply(&e).is_some_and(|(c, _)| c == NOT_FOUND) => return Ok(Found::Missing),
            Err(e) => return Err(failure(&self.describe(), "check", &e)),
        }
        match self.declare(conn, false).await {
            Ok(()) => Ok(Found::Same),
            Err(e) => match reply(&e) {
                Some((PRECONDITION_FAILED, text)) => Ok(Found::Different(text)),
                Some((ACCESS_REFUSED, text)) => Ok(Found::NotCompared(text)),
                _ => Err(failure(&self.describe(), "compare", &e)),
            },
        }
    }

    /// Makes sure the entity exists; records a declaration or a difference in `report`.
    async fn ensure(
        &self,
        conn: &Connection,
        report: &mut TopologyReport,
    ) -> Result<(), RabbitError> {
        let what = self.describe();
        match self.inspect(conn).await? {
            Found::Same => Ok(()),
            Found::Missing => {
                self.declare(conn, false)
                    .await
                    .map_err(|e| failure(&what, "declare", &e))?;
                tracing::info!(entity = %what, "declared");
                report.declared.push(what);
                Ok(())
            }
            Found::Different(text) => {
                tracing::warn!(
                    entity = %what,
                    broker = %text,
                    "exists with other arguments than Reporter declares; using it as it is"
                );
                report.differences.push(format!("{what}: {text}"));
                Ok(())
            }
            Found::NotCompared(text) => {
                tracing::info!(entity = %what, broker = %text, "exists; not compared (no configure permission)");
                Ok(())
            }
        }
    }
}

/// Makes sure the events topology exists (see the module docs): the alternate exchange, its
/// bounded queue and their binding first, then the events exchange.
pub async fn ensure_events_topology(
    conn: &Connection,
    topology: &EventsTopology,
) -> Result<TopologyReport, RabbitError> {
    let mut report = TopologyReport::default();
    let mut exchange_args = FieldTable::default();
    if let Some(ae) = &topology.alternate {
        let ae_exchange = short(&ae.exchange, "alternate exchange")?;
        let ae_queue = short(&ae.queue, "alternate queue")?;
        Entity::Exchange {
            name: ae_exchange.clone(),
            kind: ExchangeKind::Fanout,
            args: FieldTable::default(),
        }
        .ensure(conn, &mut report)
        .await?;
        Entity::Queue {
            name: ae_queue.clone(),
            args: ae.queue_arguments(),
        }
        .ensure(conn, &mut report)
        .await?;
        let ch = conn.create_channel().await.map_err(RabbitError::from)?;
        match ch
            .queue_bind(
                ae_queue.clone(),
                ae_exchange.clone(),
                "".into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
        {
            Ok(()) => {
                let _ = ch.close(200, "topology checked".into()).await;
            }
            // The operator may own the bindings too: without this one unroutable events are
            // dropped by the fanout, which the warning says.
            Err(e) if reply(&e).is_some_and(|(c, _)| c == ACCESS_REFUSED) => {
                let text = reply(&e).map(|(_, t)| t).unwrap_or_default();
                tracing::warn!(queue = %ae_queue, exchange = %ae_exchange, broker = %text, "could not bind the unroutable queue to the alternate exchange");
                report.differences.push(format!(
                    "binding of queue '{ae_queue}' to exchange '{ae_exchange}': {text}"
                ));
            }
            Err(e) => {
                return Err(failure(
                    &format!("binding of queue '{ae_queue}' to exchange '{ae_exchange}'"),
                    "declare",
                    &e,
                ));
            }
        }
        exchange_args.insert(
            "alternate-exchange".into(),
            AMQPValue::LongString(LongString::from(ae.exchange.as_str())),
        );
    }
    Entity::Exchange {
        name: short(&topology.exchange, "exchange")?,
        kind: ExchangeKind::Topic,
        args: exchange_args,
    }
    .ensure(conn, &mut report)
    .await?;
    Ok(report)
}

/// The [`Declare`](crate::link::Declare) of a publisher link: ensures `topology` on every new
/// channel; differences are logged, not errors.
pub(crate) fn declare_on_link(topology: EventsTopology) -> crate::link::Declare {
    std::sync::Arc::new(move |conn: std::sync::Arc<Connection>| {
        let topology = topology.clone();
        Box::pin(async move { ensure_events_topology(&conn, &topology).await.map(|_| ()) })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unroutable_queue_is_bounded_like_the_original_s_dlq() {
        let ae = AlternateExchange::default();
        let args = ae.queue_arguments();
        let inner = args.inner();
        assert_eq!(
            inner.get("x-message-ttl"),
            Some(&AMQPValue::LongLongInt(604_800_000))
        );
        assert_eq!(
            inner.get("x-max-length"),
            Some(&AMQPValue::LongLongInt(10_000))
        );
        let unbounded = AlternateExchange {
            message_ttl: None,
            max_length: None,
            ..ae
        };
        assert!(unbounded.queue_arguments().inner().is_empty());
    }
}
