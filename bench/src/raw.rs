//! The baseline publisher: plain lapin, publisher confirms, a sliding window of confirms,
//! the same messages (CloudEvents binary mode, persistent, `mandatory`) as Reporter sends.
use futures_util::stream::{FuturesUnordered, StreamExt};
use lapin::options::{BasicPublishOptions, ConfirmSelectOptions};
use lapin::types::ShortString;
use lapin::{BasicProperties, Channel, Connection};
use reporter_adapter_rabbitmq::cloudevents::{JSON_CONTENT_TYPE, envelope_to_message};
use reporter_ports::events::EventEnvelope;

/// One message ready to publish.
pub struct Prepared {
    /// Routing key.
    pub key: String,
    /// Properties (headers, `message_id` = `ce-id`).
    pub props: BasicProperties,
    /// Body.
    pub body: Vec<u8>,
}

/// The message Reporter would send for `e`.
pub fn prepare(e: &EventEnvelope) -> Prepared {
    let msg = envelope_to_message(e);
    let props = BasicProperties::default()
        .with_delivery_mode(2)
        .with_content_type(ShortString::from(JSON_CONTENT_TYPE))
        .with_headers(msg.headers)
        .with_message_id(ShortString::from(e.id.as_str()));
    Prepared {
        key: e.key.key(),
        props,
        body: msg.body,
    }
}

/// A confirm-mode channel.
pub async fn channel(conn: &Connection) -> anyhow::Result<Channel> {
    let ch = conn.create_channel().await?;
    ch.confirm_select(ConfirmSelectOptions::default()).await?;
    Ok(ch)
}

/// Publishes every message with at most `window` unconfirmed at once; answers how many were
/// acked.
pub async fn publish_windowed(
    ch: &Channel,
    exchange: &str,
    msgs: &[Prepared],
    window: usize,
) -> anyhow::Result<usize> {
    let mut pending = FuturesUnordered::new();
    let mut acked = 0;
    for m in msgs {
        while pending.len() >= window {
            if let Some(c) = pending.next().await {
                acked += usize::from(matches!(c, Ok(lapin::Confirmation::Ack(_))));
            }
        }
        let confirm = ch
            .basic_publish(
                exchange.into(),
                m.key.as_str().into(),
                BasicPublishOptions {
                    mandatory: true,
                    immediate: false,
                },
                &m.body,
                m.props.clone(),
            )
            .await?;
        pending.push(confirm);
    }
    while let Some(c) = pending.next().await {
        acked += usize::from(matches!(c, Ok(lapin::Confirmation::Ack(_))));
    }
    Ok(acked)
}
