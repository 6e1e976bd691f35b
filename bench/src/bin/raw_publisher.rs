//! `raw-publisher`: the baseline of figure `publish-cpu`, in a process of its own so that its
//! CPU time can be read from its own counters with nothing else counted. Plain lapin, a
//! confirm-mode channel, a sliding window of confirms (`raw::publish_paced`), COUNT copies
//! of the message in TEMPLATE (a message Reporter published: same routing key, headers and
//! body, each copy with a fresh `ce-id` of the same length), persistent and `mandatory`.
//!
//! ```text
//! raw-publisher URI EXCHANGE TEMPLATE_FILE COUNT WINDOW RATE [BROKER_PID]
//! ```
//! RATE: messages a second on average (`raw::publish_paced`); 0 for as fast as the window
//! allows.
//! Prints one JSON line: `cpu_s` (this process's user + system time over the publishing
//! alone: the messages are built and the channel opened before), `broker_cpu_s` (the same
//! interval on BROKER_PID's counters, NaN without it), `acked` and `secs` (wall time).
#[path = "../cpu.rs"]
mod cpu;
#[path = "../raw.rs"]
#[allow(dead_code)] // `prepare` and the template's reading serve the figures, not this process.
mod raw;

use anyhow::Context;
use lapin::BasicProperties;
use lapin::types::{AMQPValue, FieldTable, ShortString};
use reporter_adapter_rabbitmq::cloudevents::JSON_CONTENT_TYPE;
use std::time::Instant;

/// A template read back from [`raw::Template::to_json`]'s form.
fn template(v: &serde_json::Value) -> anyhow::Result<raw::Template> {
    let text = |v: &serde_json::Value, what: &str| {
        v.as_str()
            .map(str::to_owned)
            .ok_or_else(|| anyhow::anyhow!("template: {what} is not a string"))
    };
    let headers = v["headers"]
        .as_array()
        .context("template: no headers")?
        .iter()
        .map(|h| {
            Ok((
                text(&h[0], "a header name")?,
                text(&h[1], "a header value")?,
            ))
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(raw::Template {
        key: text(&v["key"], "key")?,
        headers,
        body: text(&v["body"], "body")?,
    })
}

/// The template's message with `id` as its `ce-id` and `message_id`, persistent,
/// `application/json` (as `raw::prepare` builds Reporter's).
fn message(t: &raw::Template, id: &str) -> raw::Prepared {
    let mut table = FieldTable::default();
    for (k, v) in &t.headers {
        let v = if k == "ce-id" { id } else { v.as_str() };
        table.insert(
            ShortString::from(k.as_str()),
            AMQPValue::LongString(v.into()),
        );
    }
    raw::Prepared {
        key: t.key.clone(),
        props: BasicProperties::default()
            .with_delivery_mode(2)
            .with_content_type(ShortString::from(JSON_CONTENT_TYPE))
            .with_headers(table)
            .with_message_id(ShortString::from(id)),
        body: t.body.clone().into_bytes(),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "raw-publisher URI EXCHANGE TEMPLATE_FILE COUNT WINDOW RATE [BROKER_PID]";
    anyhow::ensure!((6..=7).contains(&args.len()), "usage: {usage}");
    let (uri, exchange) = (&args[0], &args[1]);
    let json: serde_json::Value = serde_json::from_slice(
        &std::fs::read(&args[2]).with_context(|| format!("reading {}", args[2]))?,
    )?;
    let template = template(&json)?;
    let count: usize = args[3].parse().context("COUNT")?;
    let window: usize = args[4].parse().context("WINDOW")?;
    let rate: f64 = args[5].parse().context("RATE")?;
    let broker: Option<u32> = args.get(6).map(|p| p.parse()).transpose()?;
    let msgs: Vec<raw::Prepared> = (0..count)
        .map(|_| message(&template, &uuid::Uuid::now_v7().to_string()))
        .collect();
    let conn = lapin::Connection::connect(uri, lapin::ConnectionProperties::default()).await?;
    let ch = raw::channel(&conn).await?;
    let me = std::process::id();
    let broker_cpu = || broker.map_or(f64::NAN, cpu::cpu_seconds);
    let (cpu0, broker0, t0) = (cpu::cpu_seconds(me), broker_cpu(), Instant::now());
    let acked = raw::publish_paced(&ch, exchange, &msgs, window, Some(rate)).await?;
    let (cpu1, broker1, secs) = (
        cpu::cpu_seconds(me),
        broker_cpu(),
        t0.elapsed().as_secs_f64(),
    );
    let _ = conn.close(200, "done".into()).await;
    println!(
        "{}",
        serde_json::json!({
            "cpu_s": cpu1 - cpu0,
            "broker_cpu_s": broker1 - broker0,
            "acked": acked,
            "secs": secs,
        })
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use reporter_ports::TenantId;
    use reporter_ports::events::{EventEnvelope, EventKey};

    #[test]
    fn the_copies_are_reporters_message_with_another_id() {
        let e = EventEnvelope {
            id: uuid::Uuid::now_v7().to_string(),
            key: EventKey::DeadlineDelivered,
            tenant: TenantId::default_tenant(),
            subject: uuid::Uuid::now_v7().to_string(),
            time: chrono::Utc::now(),
            payload: serde_json::json!({"name": "Liquidity report", "n": 10}).into(),
            sequence: Some(3),
            trace: None,
        };
        let reporter = raw::prepare(&e);
        let t = raw::Template::of_delivery(&reporter.key, &reporter.props, &reporter.body).unwrap();
        let t = template(&t.to_json()).unwrap();
        let same = message(&t, &e.id);
        assert_eq!(same.key, reporter.key);
        assert_eq!(same.body, reporter.body);
        assert_eq!(same.props, reporter.props);
        let other = uuid::Uuid::now_v7().to_string();
        let copy = message(&t, &other);
        assert_eq!(
            copy.props.message_id().as_ref().map(|s| s.as_str()),
            Some(other.as_str())
        );
        assert_ne!(copy.props.headers(), reporter.props.headers());
        assert!(template(&serde_json::json!({"key": "k"})).is_err());
    }
}
