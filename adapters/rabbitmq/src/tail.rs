//! A live view of the events exchange (what `reporter events tail` shows).
use crate::cloudevents::AmqpMessage;
use crate::error::RabbitError;
use crate::link::connect;
use ::cloudevents::Event;
use ::cloudevents::message::MessageDeserializer;
use futures_util::Stream;
use lapin::options::{BasicConsumeOptions, QueueBindOptions, QueueDeclareOptions};
use lapin::types::{FieldTable, ShortString};
use lapin::{Connection, Consumer};
use std::collections::BTreeMap;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// Deadline of connecting and setting up the tail queue.
pub const TAIL_SETUP_TIMEOUT: Duration = Duration::from_secs(10);

/// One message seen on the events exchange.
#[derive(Debug, Clone)]
pub struct TailedEvent {
    /// The AMQP routing key (the event definition key, e.g. `report.finished`).
    pub routing_key: String,
    /// Every CloudEvents header (`ce-`, `cloudEvents_` or `cloudEvents:` prefix), as text,
    /// keyed by its name on the wire.
    pub headers: BTreeMap<String, String>,
    /// The AMQP `content_type` property.
    pub content_type: Option<String>,
    /// The AMQP `delivery_mode` property (2 = persistent).
    pub delivery_mode: Option<u8>,
    /// The body, verbatim.
    pub payload: Vec<u8>,
    /// The CloudEvent decoded with the binding, or why it could not be decoded.
    pub event: Result<Event, String>,
}

/// The stream returned by [`tail`]. Owns its connection; dropping it closes the connection and
/// (being exclusive and auto-delete) the tail queue disappears.
pub struct Tail {
    _conn: Connection,
    consumer: Consumer,
    queue: String,
}

impl Tail {
    /// The server-named queue bound to the exchange.
    pub fn queue(&self) -> &str {
        &self.queue
    }
}

impl Stream for Tail {
    type Item = Result<TailedEvent, RabbitError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match Pin::new(&mut self.consumer).poll_next(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(RabbitError::from(e)))),
            Poll::Ready(Some(Ok(d))) => {
                let msg = AmqpMessage::from_parts(
                    d.properties.headers().clone(),
                    d.properties
                        .content_type()
                        .as_ref()
                        .map(|c| c.as_str().to_owned()),
                    d.data,
                );
                let event = TailedEvent {
                    routing_key: d.routing_key.as_str().to_owned(),
                    headers: msg.ce_headers_as_text(),
                    content_type: msg.content_type.clone(),
                    delivery_mode: *d.properties.delivery_mode(),
                    payload: msg.body.clone(),
                    event: MessageDeserializer::into_event(msg).map_err(|e| e.to_string()),
                };
                Poll::Ready(Some(Ok(event)))
            }
        }
    }
}

/// Binds a fresh exclusive, auto-delete, server-named queue to `exchange` with
/// `binding_pattern` (topic syntax, e.g. `#` or `report.*`) and streams what arrives (no ack).
/// The exchange is not declared: a missing one is an error. Setup runs within
/// [`TAIL_SETUP_TIMEOUT`].
pub async fn tail(uri: &str, exchange: &str, binding_pattern: &str) -> Result<Tail, RabbitError> {
    let exchange =
        ShortString::try_new(exchange).map_err(|e| RabbitError::Config(e.to_string()))?;
    let pattern =
        ShortString::try_new(binding_pattern).map_err(|e| RabbitError::Config(e.to_string()))?;
    let conn = connect(uri, "reporter-events-tail", TAIL_SETUP_TIMEOUT).await?;
    let setup = async {
        let ch = conn.create_channel().await?;
        let q = ch
            .queue_declare(
                "".into(),
                QueueDeclareOptions {
                    exclusive: true,
                    auto_delete: true,
                    ..QueueDeclareOptions::default()
                },
                FieldTable::default(),
            )
            .await?;
        let queue = q.name().clone();
        ch.queue_bind(
            queue.clone(),
            exchange,
            pattern,
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await?;
        let consumer = ch
            .basic_consume(
                queue.clone(),
                "".into(),
                BasicConsumeOptions {
                    no_ack: true,
                    exclusive: true,
                    ..BasicConsumeOptions::default()
                },
                FieldTable::default(),
            )
            .await?;
        Ok::<_, lapin::Error>((consumer, queue.as_str().to_owned()))
    };
    match tokio::time::timeout(TAIL_SETUP_TIMEOUT, setup).await {
        Ok(Ok((consumer, queue))) => Ok(Tail {
            _conn: conn,
            consumer,
            queue,
        }),
        Ok(Err(e)) => Err(e.into()),
        Err(_) => Err(RabbitError::Timeout(TAIL_SETUP_TIMEOUT)),
    }
}
