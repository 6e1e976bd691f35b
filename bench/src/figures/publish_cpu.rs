//! (e) Publication's own cost (issue 34, target 5): the CPU time Reporter's process spends per
//! published event, on the direct path and on the outbox dispatcher, read from its own
//! counters, against a raw lapin publisher sending the same messages with the same confirm
//! window from a process of its own (`raw-publisher`); the broker's CPU per event beside both.
use super::keepalive::{Request, drive};
use super::serve::{Server, cpu_seconds, token};
use super::util::blocking;
use crate::broker::{bound_queue, connect_retrying};
use crate::harness::{Ctx, Figure, Sample, Target};
use crate::raw::Template;
use anyhow::Context;
use async_trait::async_trait;
use lapin::options::{
    BasicGetOptions, ExchangeDeleteOptions, QueueDeclareOptions, QueueDeleteOptions,
    QueuePurgeOptions,
};
use lapin::types::FieldTable;
use std::time::{Duration, Instant};

/// What BENCHMARKS.md says the figure measures.
pub const DESCRIPTION: &str = "- **(e) Publication's own CPU** (issue 34, target 5): CPU time (user + system of every thread, `/proc/<pid>/stat`) per published event of the release `reporter serve` (state in memory, publication on to the private node, routed to a durable queue of the figure's own, purged between phases; exchange and queues deleted after the last round) against a raw lapin publisher (`raw-publisher`, a process of its own whose CPU is read from its own counters over its publishing alone, after its messages are built and its channel is open) sending the same persistent, `mandatory`, confirmed messages (a message Reporter published, taken off the queue: same routing key, headers and body, a fresh `ce-id` of the same length each) with the same confirm window (256); N = 20,000 events a phase (2,000 with `--quick`). Reporter is made to publish by HTTP requests sent over 8 keep-alive connections by a client in the bench process (not counted); the HTTP handling is taken out by sending the same requests to a second `reporter serve` with publication off and subtracting: Reporter's value is (CPU with publication on − CPU with it off) / N, each measured from the first request to the moment every event was routed (queue depth) and its outbox row settled (`reporter_outbox_pending` 0). Direct path: N `POST /v1/deadlines` (`deadline.created`, important: published straight after the commit) at 3,000 requests/s, below what the broker takes here, so the direct path has room for nearly every event (the informational row counts those published directly; unpaced, most would wait for the dispatcher). Dispatcher: N `PATCH /v1/deadlines/{id}/deliver` (`deadline.delivered`, critical: outbox and dispatcher only) at 3,000/s. The baseline of both publishes at the same average pace (a tick per message, caught up at the timer's 1 ms grain), so both sides pay for events that come one at a time; the informational row compares the direct path with the baseline unpaced (its cheapest case). Outbox drain: while the broker blocks publishing (a disk alarm, `rabbitmqctl set_disk_free_limit` above the disk's size; the node keeps running, so its counters hold only the drain, and unlike a memory alarm it leaves no queue paging to disk), N `PATCH …/deliver` reverts (`deadline.delivery_reverted`) wait in the outbox; from clearing the alarm to the last event routed and settled no requests run, so nothing is subtracted but the process's idle CPU while `rabbitmqctl` clears the alarm (its rate measured for 1 s before); the baseline unpaced. The broker's rows give the RabbitMQ node's (beam) CPU per event over the same intervals (Reporter: on − off) against its CPU while the raw publisher sends. Clock ticks are 10 ms: 0.5 µs per event over 20,000 events. Target: Reporter ≤ 2× the raw publisher's CPU per event on each path.\n";

/// Events a second while requests run (the direct and dispatcher phases, and the baseline
/// beside them): below what the broker takes on this machine, so the direct path has room
/// for nearly every event.
const RATE: f64 = 3_000.0;

/// Keep-alive connections of the load.
const CONNECTIONS: usize = 8;
/// Reporter's confirm window (`STREAMING_DISPATCH_BATCH` default) and the baseline's.
const WINDOW: usize = 256;

/// The figure: its exchange, queue and the bench's own channel to the broker.
#[derive(Default)]
pub struct PublishCpu {
    names: Option<(String, String)>,
    link: Option<(lapin::Connection, lapin::Channel)>,
    /// Reporter's messages of each phase (direct, dispatcher, drain): the baseline's models.
    templates: Option<[Template; 3]>,
}

/// CPU seconds over one interval.
#[derive(Debug, Clone, Copy, Default)]
struct Cpu {
    reporter: f64,
    broker: f64,
}

/// Counters of Reporter and the broker at one instant.
#[derive(Debug, Clone, Copy)]
struct Mark {
    reporter: f64,
    broker: f64,
}

impl Mark {
    fn now(reporter: u32, broker: u32) -> Self {
        Self {
            reporter: cpu_seconds(reporter),
            broker: cpu_seconds(broker),
        }
    }

    fn since(self, before: Mark) -> Cpu {
        Cpu {
            reporter: self.reporter - before.reporter,
            broker: self.broker - before.broker,
        }
    }
}

/// What one `reporter serve` process measured.
#[derive(Debug, Clone, Copy, Default)]
struct Run {
    direct: Cpu,
    dispatch: Cpu,
    /// Publication on only.
    drain: Cpu,
    /// Events of the direct phase published directly (publication on).
    published_directly: f64,
}

/// What the raw publisher measured.
#[derive(Debug, Clone, Copy)]
struct Raw {
    cpu: f64,
    broker: f64,
}

const CREATE_BODY: &str = r##"{"name":"Liquidity report","type":"regulatory","dueDate":"2030-03-31T23:59:59Z","frequency":"once","color":"#1E88E5","notifyDaysBefore":10}"##;

/// `value` of the metric line `name{labels} value` whose labels hold every one of `labels`
/// (0 when there is none).
fn metric(text: &str, name: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter(|l| {
            l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .filter(|l| labels.iter().all(|label| l.contains(label)))
        .filter_map(|l| l.rsplit_once(' ')?.1.trim().parse::<f64>().ok())
        .sum()
}

impl PublishCpu {
    fn n(ctx: &Ctx) -> usize {
        if ctx.quick { 2_000 } else { 20_000 }
    }

    async fn names(&mut self, ctx: &Ctx) -> anyhow::Result<(String, String)> {
        if self.names.is_none() {
            let exchange = format!("bench.pubcpu.{}", uuid::Uuid::now_v7().simple());
            let queue = format!("{exchange}.q");
            bound_queue(&ctx.broker.uri, &exchange, &queue, None).await?;
            self.names = Some((exchange, queue));
        }
        Ok(self.names.clone().expect("just set"))
    }

    /// The bench's channel to the broker (a new one after an outage).
    async fn channel(&mut self, ctx: &Ctx) -> anyhow::Result<lapin::Channel> {
        if let Some((conn, ch)) = &self.link
            && conn.status().connected()
            && ch.status().connected()
        {
            return Ok(ch.clone());
        }
        let conn =
            connect_retrying(&ctx.broker.uri, Instant::now() + Duration::from_secs(30)).await?;
        let ch = conn.create_channel().await?;
        self.link = Some((conn, ch.clone()));
        Ok(ch)
    }

    async fn purge(&mut self, ctx: &Ctx) -> anyhow::Result<()> {
        let (_, queue) = self.names(ctx).await?;
        self.channel(ctx)
            .await?
            .queue_purge(queue.as_str().into(), QueuePurgeOptions::default())
            .await?;
        Ok(())
    }

    /// Waits until the queue holds `n` messages.
    async fn routed(&mut self, ctx: &Ctx, n: usize) -> anyhow::Result<()> {
        let (_, queue) = self.names(ctx).await?;
        let ch = self.channel(ctx).await?;
        let until = Instant::now() + Duration::from_secs(180);
        loop {
            let q = ch
                .queue_declare(
                    queue.as_str().into(),
                    QueueDeclareOptions {
                        passive: true,
                        ..Default::default()
                    },
                    FieldTable::default(),
                )
                .await?;
            let depth = q.message_count() as usize;
            if depth >= n {
                return Ok(());
            }
            anyhow::ensure!(
                Instant::now() < until,
                "only {depth} of {n} events routed in 180 s"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// One message off the queue, as a template.
    async fn take_template(&mut self, ctx: &Ctx) -> anyhow::Result<Template> {
        let (_, queue) = self.names(ctx).await?;
        let got = self
            .channel(ctx)
            .await?
            .basic_get(queue.as_str().into(), BasicGetOptions { no_ack: true })
            .await?
            .context("the queue is empty")?;
        let d = &got.delivery;
        Template::of_delivery(d.routing_key.as_str(), &d.properties, &d.data)
    }

    /// One `reporter serve` process through the three phases (the drain only with
    /// publication on).
    async fn reporter(&mut self, ctx: &Ctx, publish: bool) -> anyhow::Result<Run> {
        let n = Self::n(ctx);
        let (exchange, _) = self.names(ctx).await?;
        let mut env = Vec::new();
        if publish {
            env = vec![
                ("STREAMING_ENABLED", "true".to_owned()),
                ("RABBITMQ_REPORT_EVENTS_EXCHANGE", exchange.clone()),
                ("STREAMING_BROKERS", ctx.broker.uri.clone()),
                ("STREAMING_CLOUDEVENTS_SOURCE", "reporter".to_owned()),
                (
                    "STREAMING_ALTERNATE_EXCHANGE",
                    format!("{exchange}.unroutable"),
                ),
            ];
        }
        let serve = tokio::task::block_in_place(|| Server::reporter(ctx, &env))?;
        let token = token()?;
        let (pid, broker) = (serve.pid(), ctx.broker.handle().pid().unwrap_or(0));
        let mut templates = Vec::new();

        // Warm-up: connections, allocator, the publisher's channel.
        let warm = create(&serve.addr, &token, n.min(500), None).await?;
        deliver(&serve.addr, &token, &warm, true, None).await?;
        if publish {
            self.routed(ctx, 2 * warm.len()).await?;
        }
        settled(&serve, publish).await?;
        self.purge(ctx).await?;

        let before = Mark::now(pid, broker);
        let published0 = emitted(&serve, "deadline.created", "published");
        let ids = create(&serve.addr, &token, n, Some(RATE)).await?;
        if publish {
            self.routed(ctx, n).await?;
        }
        settled(&serve, publish).await?;
        let direct = Mark::now(pid, broker).since(before);
        let published_directly = emitted(&serve, "deadline.created", "published") - published0;
        if publish {
            templates.push(self.take_template(ctx).await?);
        }
        self.purge(ctx).await?;

        let before = Mark::now(pid, broker);
        deliver(&serve.addr, &token, &ids, true, Some(RATE)).await?;
        if publish {
            self.routed(ctx, n).await?;
        }
        settled(&serve, publish).await?;
        let dispatch = Mark::now(pid, broker).since(before);
        if publish {
            templates.push(self.take_template(ctx).await?);
        }
        self.purge(ctx).await?;

        let mut drain = Cpu::default();
        if publish {
            // The events wait in the outbox while the broker blocks publishing (a disk alarm:
            // the node keeps running, so its counters hold only what it does for the drain
            // once the alarm clears; a memory alarm would leave its queues paging to disk).
            let b = ctx.broker.handle();
            blocking(move || b.disk_alarm(true)).await?;
            deliver(&serve.addr, &token, &ids, false, None).await?;
            tokio::time::sleep(Duration::from_millis(500)).await;
            let idle0 = (cpu_seconds(pid), Instant::now());
            tokio::time::sleep(Duration::from_secs(1)).await;
            let idle_rate =
                (cpu_seconds(pid) - idle0.0) / idle0.1.elapsed().as_secs_f64().max(1e-3);
            let waiting = metric(&metrics_text(&serve), "reporter_outbox_pending", &[]);
            anyhow::ensure!(
                waiting >= n as f64,
                "only {waiting} of {n} events waited in the outbox during the alarm"
            );
            let profile = profile_drain(pid)?;
            let (before, cleared) = (Mark::now(pid, broker), Instant::now());
            let b = ctx.broker.handle();
            blocking(move || b.disk_alarm(false)).await?;
            let clearing = cleared.elapsed().as_secs_f64();
            self.routed(ctx, n).await?;
            settled(&serve, publish).await?;
            drain = Mark::now(pid, broker).since(before);
            if let Some(mut perf) = profile {
                // SIGINT: perf writes its data and exits.
                let _ = std::process::Command::new("kill")
                    .args(["-INT", &perf.id().to_string()])
                    .status();
                let _ = tokio::task::block_in_place(|| perf.wait());
            }
            eprintln!(
                "bench:   drain of {n} events: {:.2} s from clearing the alarm ({clearing:.2} s in rabbitmqctl)",
                cleared.elapsed().as_secs_f64()
            );
            // What the process spends idle while `rabbitmqctl` clears the alarm.
            drain.reporter -= idle_rate * clearing;
            templates.push(self.take_template(ctx).await?);
            self.purge(ctx).await?;
        }
        drop(serve);
        if let Ok(t) = <[Template; 3]>::try_from(templates) {
            self.templates = Some(t);
        }
        let us = |s: f64| s * 1e6 / n as f64;
        eprintln!(
            "bench:   publication {}: CPU per event µs (reporter/broker): direct {:.1}/{:.1}, dispatcher {:.1}/{:.1}, drain {:.1}/{:.1}; {published_directly} of {n} published directly",
            if publish { "on" } else { "off" },
            us(direct.reporter),
            us(direct.broker),
            us(dispatch.reporter),
            us(dispatch.broker),
            us(drain.reporter),
            us(drain.broker),
        );
        Ok(Run {
            direct,
            dispatch,
            drain,
            published_directly,
        })
    }

    /// The raw publisher process, once per template.
    async fn raw(&mut self, ctx: &Ctx) -> anyhow::Result<[Raw; 4]> {
        let n = Self::n(ctx);
        let (exchange, _) = self.names(ctx).await?;
        let templates = self
            .templates
            .clone()
            .context("no template yet: Reporter's publishing run comes first")?;
        let mut out = Vec::with_capacity(4);
        // Paced as Reporter's requests were in the direct and dispatcher phases; the drain
        // publishes as fast as the window allows, and so does the baseline beside it; last,
        // the direct phase's message unpaced (the baseline's cheapest case).
        let runs = [(0, RATE), (1, RATE), (2, 0.0), (0, 0.0)];
        for (t, rate) in runs.into_iter().map(|(i, rate)| (&templates[i], rate)) {
            self.purge(ctx).await?;
            let path = std::env::temp_dir().join(format!(
                "reporter-bench-template-{}.json",
                uuid::Uuid::now_v7().simple()
            ));
            std::fs::write(&path, serde_json::to_vec(&t.to_json())?)?;
            let mut cmd = std::process::Command::new(&ctx.raw_publisher_bin);
            cmd.arg(&ctx.broker.uri)
                .arg(&exchange)
                .arg(&path)
                .arg(n.to_string())
                .arg(WINDOW.to_string())
                .arg(rate.to_string());
            if let Some(pid) = ctx.broker.handle().pid() {
                cmd.arg(pid.to_string());
            }
            let output = tokio::task::block_in_place(|| cmd.output());
            let _ = std::fs::remove_file(&path);
            let output = output.context("running raw-publisher")?;
            anyhow::ensure!(
                output.status.success(),
                "raw-publisher: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            let v: serde_json::Value = serde_json::from_slice(&output.stdout)?;
            let acked = v["acked"].as_u64().unwrap_or(0);
            anyhow::ensure!(acked == n as u64, "raw publisher: {acked} of {n} acked");
            let raw = Raw {
                cpu: v["cpu_s"].as_f64().unwrap_or(f64::NAN),
                broker: v["broker_cpu_s"].as_f64().unwrap_or(f64::NAN),
            };
            eprintln!(
                "bench:   raw lapin {} at {rate}/s (0: unpaced): CPU per event µs (publisher/broker): {:.1}/{:.1}, {:.2} s",
                t.key,
                raw.cpu * 1e6 / n as f64,
                raw.broker * 1e6 / n as f64,
                v["secs"].as_f64().unwrap_or(f64::NAN)
            );
            out.push(raw);
        }
        self.purge(ctx).await?;
        <[Raw; 4]>::try_from(out).map_err(|_| anyhow::anyhow!("four raw runs"))
    }
}

/// `perf record` of process `pid` into `BENCH_PERF_DRAIN` (a path) when that is set: a profile
/// of the drain for the closing note of issue 34 (it costs CPU beside the measured process, so
/// leave it unset for the figures).
fn profile_drain(pid: u32) -> anyhow::Result<Option<std::process::Child>> {
    let Some(path) = std::env::var_os("BENCH_PERF_DRAIN") else {
        return Ok(None);
    };
    let child = std::process::Command::new("perf")
        .args(["record", "-q", "-F", "2999", "-p", &pid.to_string(), "-o"])
        .arg(path)
        .stdout(std::process::Stdio::null())
        .spawn()
        .context("BENCH_PERF_DRAIN: running perf")?;
    std::thread::sleep(Duration::from_millis(300));
    Ok(Some(child))
}

/// `n` deadlines created (`POST /v1/deadlines`), at most `rate` a second when given: their
/// ids.
async fn create(
    addr: &str,
    token: &str,
    n: usize,
    rate: Option<f64>,
) -> anyhow::Result<Vec<String>> {
    let requests = (0..n)
        .map(|_| Request {
            method: "POST",
            path: "/v1/deadlines".into(),
            body: CREATE_BODY.into(),
        })
        .collect();
    drive(addr, token, requests, CONNECTIONS, rate)
        .await?
        .iter()
        .map(|body| {
            let v: serde_json::Value = serde_json::from_slice(body)?;
            v["id"]
                .as_str()
                .map(str::to_owned)
                .context("no id in the created deadline")
        })
        .collect()
}

/// Every deadline of `ids` delivered (or its delivery reverted), at most `rate` a second when
/// given.
async fn deliver(
    addr: &str,
    token: &str,
    ids: &[String],
    delivered: bool,
    rate: Option<f64>,
) -> anyhow::Result<()> {
    let requests = ids
        .iter()
        .map(|id| Request {
            method: "PATCH",
            path: format!("/v1/deadlines/{id}/deliver"),
            body: format!(r#"{{"delivered":{delivered}}}"#),
        })
        .collect();
    drive(addr, token, requests, CONNECTIONS, rate).await?;
    Ok(())
}

/// `/metrics` of the server.
fn metrics_text(serve: &Server) -> String {
    serve
        .call("GET", "/metrics", None, b"")
        .map(|(_, body)| String::from_utf8_lossy(&body).into_owned())
        .unwrap_or_default()
}

/// `reporter_events_emitted_total` of `event` and `outcome`.
fn emitted(serve: &Server, event: &str, outcome: &str) -> f64 {
    metric(
        &metrics_text(serve),
        "reporter_events_emitted_total",
        &[
            &format!("event=\"{event}\""),
            &format!("outcome=\"{outcome}\""),
        ],
    )
}

/// Waits until no outbox row is pending (one `/metrics` read with publication off too, so
/// both runs pay it).
async fn settled(serve: &Server, publish: bool) -> anyhow::Result<()> {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let text = metrics_text(serve);
        let pending = metric(&text, "reporter_outbox_pending", &[]);
        if !publish || pending == 0.0 {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < until,
            "{pending} outbox rows still pending after 60 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[async_trait]
impl Figure for PublishCpu {
    fn name(&self) -> &'static str {
        "publish-cpu"
    }

    async fn round(&mut self, ctx: &Ctx, reporter_first: bool) -> anyhow::Result<Vec<Sample>> {
        let n = Self::n(ctx);
        let (on, off, raw) = if reporter_first || self.templates.is_none() {
            let on = self.reporter(ctx, true).await?;
            let off = self.reporter(ctx, false).await?;
            (on, off, self.raw(ctx).await?)
        } else {
            let raw = self.raw(ctx).await?;
            let off = self.reporter(ctx, false).await?;
            (self.reporter(ctx, true).await?, off, raw)
        };
        let us = |s: f64| s * 1e6 / n as f64;
        let broker_base = "broker CPU per event, raw lapin";
        let paths = [
            (
                format!("direct path (POST /v1/deadlines at {RATE}/s, on − off)"),
                on.direct.reporter - off.direct.reporter,
                on.direct.broker - off.direct.broker,
                raw[0],
                "raw lapin at the same pace, own process, window 256",
            ),
            (
                format!(
                    "dispatcher (PATCH /v1/deadlines/{{id}}/deliver at {RATE}/s, critical, on − off)"
                ),
                on.dispatch.reporter - off.dispatch.reporter,
                on.dispatch.broker - off.dispatch.broker,
                raw[1],
                "raw lapin at the same pace, own process, window 256",
            ),
            (
                "dispatcher draining the outbox after a broker alarm (unpaced)".to_owned(),
                on.drain.reporter,
                on.drain.broker,
                raw[2],
                "raw lapin unpaced, own process, window 256",
            ),
        ];
        let mut samples = Vec::new();
        for (path, reporter, broker, raw, base) in paths {
            samples.push(Sample {
                row: format!("(e) Reporter CPU per event, {path}, {n} events"),
                unit: "µs",
                reporter: us(reporter),
                baseline: us(raw.cpu),
                baseline_name: base,
                target: Some(Target::RatioAtMost(2.0)),
            });
            samples.push(Sample {
                row: format!("(e) broker CPU per event, {path}"),
                unit: "µs",
                reporter: us(broker),
                baseline: us(raw.broker),
                baseline_name: broker_base,
                target: None,
            });
        }
        samples.push(Sample {
            row: format!(
                "(e) Reporter CPU per event, direct path at {RATE}/s vs raw lapin unpaced"
            ),
            unit: "µs",
            reporter: us(on.direct.reporter - off.direct.reporter),
            baseline: us(raw[3].cpu),
            baseline_name: "raw lapin, own process, window 256, unpaced",
            target: None,
        });
        samples.push(Sample {
            row: "(e) events of the direct-path run published directly".into(),
            unit: "events",
            reporter: on.published_directly,
            baseline: n as f64,
            baseline_name: "events published",
            target: None,
        });
        Ok(samples)
    }

    async fn finish(&mut self, ctx: &Ctx) {
        let Some((exchange, queue)) = self.names.take() else {
            return;
        };
        if let Ok(ch) = self.channel(ctx).await {
            let unroutable = format!("{exchange}.unroutable");
            for q in [&queue, &unroutable] {
                let _ = ch
                    .queue_delete(q.as_str().into(), QueueDeleteOptions::default())
                    .await;
            }
            for x in [&exchange, &unroutable] {
                let _ = ch
                    .exchange_delete(x.as_str().into(), ExchangeDeleteOptions::default())
                    .await;
            }
        }
        if let Some((conn, _)) = self.link.take() {
            let _ = conn.close(200, "done".into()).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_lines_are_summed_by_label() {
        let text = "# HELP reporter_events_emitted_total x\n\
reporter_events_emitted_total{event=\"deadline.created\",outcome=\"published\"} 19000\n\
reporter_events_emitted_total{event=\"deadline.created\",outcome=\"dispatched\"} 1000\n\
reporter_events_emitted_total{event=\"deadline.delivered\",outcome=\"dispatched\"} 7\n\
reporter_outbox_pending 3\n\
reporter_outbox_pending_age 9\n";
        let created = ["event=\"deadline.created\"", "outcome=\"published\""];
        assert_eq!(
            metric(text, "reporter_events_emitted_total", &created),
            19000.0
        );
        assert_eq!(
            metric(
                text,
                "reporter_events_emitted_total",
                &["outcome=\"dispatched\""]
            ),
            1007.0
        );
        assert_eq!(metric(text, "reporter_outbox_pending", &[]), 3.0);
        assert_eq!(metric(text, "reporter_outbox_parked", &[]), 0.0);
    }
}
