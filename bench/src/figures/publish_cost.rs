//! (b) What publication costs the write path: `POST /v1/deadlines` against the release binary
//! (`reporter serve`, state in memory) under load from `wrk`, with publication on (events to
//! the private node, routed to a bounded queue) and off; req/s, p99 and the process's peak
//! RSS.
use super::serve::{Server, cpu_seconds, peak_rss_mb, token, wrk};
use crate::broker::{bound_queue, delete_queue};
use crate::harness::{Ctx, Figure, Sample, Target};
use async_trait::async_trait;

#[derive(Default)]
pub struct PublishCost;

/// What one run measured.
#[derive(Debug, Clone, Copy)]
struct Run {
    rps: f64,
    p99_ms: f64,
    peak_rss_mb: f64,
    /// CPU the service used per request answered, µs.
    service_us: f64,
    /// CPU the broker used per request answered, µs.
    broker_us: f64,
    /// Events still waiting in the outbox when the load stopped.
    pending: f64,
}

/// `reporter_outbox_pending` of the server's `/metrics` (0 with publication off).
fn pending(serve: &Server) -> f64 {
    serve
        .call("GET", "/metrics", None, b"")
        .ok()
        .and_then(|(_, body)| {
            String::from_utf8_lossy(&body).lines().find_map(|l| {
                l.strip_prefix("reporter_outbox_pending ")
                    .and_then(|v| v.trim().parse().ok())
            })
        })
        .unwrap_or(0.0)
}

fn run(ctx: &Ctx, publish: bool, exchange: &str, secs: u64) -> anyhow::Result<Run> {
    let mut env = Vec::new();
    if publish {
        env = vec![
            ("STREAMING_ENABLED", "true".to_owned()),
            ("RABBITMQ_REPORT_EVENTS_EXCHANGE", exchange.to_owned()),
            ("STREAMING_BROKERS", ctx.broker.uri.clone()),
            ("STREAMING_CLOUDEVENTS_SOURCE", "reporter".to_owned()),
            (
                "STREAMING_ALTERNATE_EXCHANGE",
                format!("{exchange}.unroutable"),
            ),
        ];
    }
    let serve = Server::reporter(ctx, &env)?;
    let script = format!(
        r##"wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer {}"
wrk.body = '{{"name":"Liquidity report","type":"regulatory","dueDate":"2030-03-31T23:59:59Z","frequency":"once","color":"#1E88E5","notifyDaysBefore":10}}'
"##,
        token()?
    );
    let broker = ctx.broker.handle().pid().unwrap_or(0);
    let (service0, broker0) = (cpu_seconds(serve.pid()), cpu_seconds(broker));
    let load = wrk(
        ctx,
        &script,
        &format!("http://{}/v1/deadlines", serve.addr),
        secs,
    )?;
    let requests = load.rps * secs as f64;
    let per_request = |before: f64, after: f64| (after - before) * 1e6 / requests;
    let service_us = per_request(service0, cpu_seconds(serve.pid()));
    let broker_us = per_request(broker0, cpu_seconds(broker));
    let pending = pending(&serve);
    let peak = peak_rss_mb(serve.pid());
    drop(serve);
    eprintln!(
        "bench:   publication {}: {:.0} req/s, CPU per request: service {service_us:.1} µs, broker {broker_us:.1} µs; {pending:.0} of {requests:.0} events still in the outbox when the load stopped",
        if publish { "on" } else { "off" },
        load.rps
    );
    Ok(Run {
        rps: load.rps,
        p99_ms: load.p99_ms,
        peak_rss_mb: peak,
        service_us,
        broker_us,
        pending,
    })
}

#[async_trait]
impl Figure for PublishCost {
    fn name(&self) -> &'static str {
        "publish-cost"
    }

    async fn round(&mut self, ctx: &Ctx, reporter_first: bool) -> anyhow::Result<Vec<Sample>> {
        let secs = if ctx.quick { 3 } else { 10 };
        let exchange = format!("bench.cost.{}", uuid::Uuid::now_v7().simple());
        let queue = format!("{exchange}.q");
        bound_queue(&ctx.broker.uri, &exchange, &queue, Some(20_000)).await?;
        let mut on = None;
        let mut off = None;
        for publish in if reporter_first {
            [true, false]
        } else {
            [false, true]
        } {
            // A process and a load run of several seconds: block this worker thread for them.
            let r = tokio::task::block_in_place(|| run(ctx, publish, &exchange, secs))?;
            if publish {
                on = Some(r);
            } else {
                off = Some(r);
            }
        }
        delete_queue(&ctx.broker.uri, &queue).await;
        let (on, off) = (
            on.ok_or_else(|| anyhow::anyhow!("no run"))?,
            off.ok_or_else(|| anyhow::anyhow!("no run"))?,
        );
        let base = "publication off";
        Ok(vec![
            Sample {
                row: "(b) POST /v1/deadlines throughput, publication on".into(),
                unit: "req/s",
                reporter: on.rps,
                baseline: off.rps,
                baseline_name: base,
                target: Some(Target::RatioAtLeast(0.75)),
            },
            Sample {
                row: "(b) POST /v1/deadlines p99, publication on".into(),
                unit: "ms",
                reporter: on.p99_ms,
                baseline: off.p99_ms,
                baseline_name: base,
                target: Some(Target::RatioAtMost(1.5)),
            },
            Sample {
                row: "(b) service CPU per request, publication on".into(),
                unit: "µs",
                reporter: on.service_us,
                baseline: off.service_us,
                baseline_name: base,
                target: None,
            },
            Sample {
                row: "(b) broker CPU per request, publication on (vs the service's, off)".into(),
                unit: "µs",
                reporter: on.broker_us,
                baseline: off.service_us,
                baseline_name: "service CPU per request, publication off",
                target: None,
            },
            Sample {
                row: "(b) events left in the outbox when the load stops, of those committed".into(),
                unit: "events",
                reporter: on.pending,
                baseline: on.rps * secs as f64,
                baseline_name: "events committed",
                target: None,
            },
            Sample {
                row: "(b) peak RSS of reporter serve, publication on".into(),
                unit: "MB",
                reporter: on.peak_rss_mb,
                baseline: off.peak_rss_mb,
                baseline_name: base,
                target: Some(Target::RatioAtMost(1.5)),
            },
        ])
    }
}
