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
    publish_paced(ch, exchange, msgs, window, None).await
}

/// [`publish_windowed`] at `rate` messages a second on average when given (a tick per message,
/// late ticks caught up at once, confirms taken as they come while waiting for the next).
pub async fn publish_paced(
    ch: &Channel,
    exchange: &str,
    msgs: &[Prepared],
    window: usize,
    rate: Option<f64>,
) -> anyhow::Result<usize> {
    let mut pending = FuturesUnordered::new();
    let mut acked = 0;
    let is_ack = |c: lapin::Result<lapin::Confirmation>| {
        usize::from(matches!(c, Ok(lapin::Confirmation::Ack(_))))
    };
    let mut pace = rate.filter(|r| *r > 0.0).map(|r| {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs_f64(1.0 / r));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
        tick
    });
    for m in msgs {
        if let Some(tick) = pace.as_mut() {
            loop {
                tokio::select! {
                    biased;
                    _ = tick.tick() => break,
                    Some(c) = pending.next(), if !pending.is_empty() => acked += is_ack(c),
                }
            }
        }
        while pending.len() >= window {
            if let Some(c) = pending.next().await {
                acked += is_ack(c);
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
        acked += is_ack(c);
    }
    Ok(acked)
}

/// A message Reporter published, taken off a queue: the model of the baseline's messages in
/// figure `publish-cpu` (same routing key, headers, properties and body; only `ce-id` and the
/// `message_id` differ, with an id of the same length).
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    /// Routing key.
    pub key: String,
    /// Every header, in the table's order (all AMQP long strings, as Reporter writes them).
    pub headers: Vec<(String, String)>,
    /// Body.
    pub body: String,
}

impl Template {
    /// The template of a message received with `key`, `props` and `body`. MUST fail when a
    /// header is not a long string or the body is not UTF-8 (Reporter writes neither).
    pub fn of_delivery(key: &str, props: &BasicProperties, body: &[u8]) -> anyhow::Result<Self> {
        let mut headers = Vec::new();
        if let Some(table) = props.headers() {
            for (k, v) in table.inner() {
                let lapin::types::AMQPValue::LongString(s) = v else {
                    anyhow::bail!("header {k} is not a long string: {v:?}");
                };
                headers.push((
                    k.as_str().to_owned(),
                    String::from_utf8(s.as_bytes().to_vec())?,
                ));
            }
        }
        Ok(Self {
            key: key.to_owned(),
            headers,
            body: String::from_utf8(body.to_vec())?,
        })
    }

    /// As JSON, for the `raw-publisher` process.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({ "key": self.key, "headers": self.headers, "body": self.body })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reporter_ports::TenantId;
    use reporter_ports::events::EventKey;

    #[test]
    fn a_template_holds_reporters_message() {
        let e = EventEnvelope {
            id: uuid::Uuid::now_v7().to_string(),
            key: EventKey::DeadlineCreated,
            tenant: TenantId::default_tenant(),
            subject: uuid::Uuid::now_v7().to_string(),
            time: chrono::Utc::now(),
            payload: serde_json::json!({"name": "Liquidity report", "n": 10}).into(),
            sequence: Some(1),
            trace: None,
        };
        let m = prepare(&e);
        let t = Template::of_delivery(&m.key, &m.props, &m.body).unwrap();
        assert_eq!(t.key, "deadline.created");
        assert_eq!(t.headers.len(), 11, "{t:?}");
        assert!(t.headers.contains(&("ce-id".to_owned(), e.id.clone())));
        assert_eq!(t.body.as_bytes(), m.body.as_slice());
        assert_eq!(t.to_json()["headers"][0][0], "ce-eventtype");
        let mut table = lapin::types::FieldTable::default();
        table.insert("x".into(), lapin::types::AMQPValue::LongLongInt(1));
        let odd = m.props.clone().with_headers(table);
        assert!(Template::of_delivery(&m.key, &odd, &m.body).is_err());
    }
}
