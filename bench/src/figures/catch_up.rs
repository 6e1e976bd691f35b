//! (a) Outage catch-up: N events wait while the broker is down (`rabbitmqctl stop_app` on the
//! private node); from `start_app` to the last event received, Reporter (outbox + dispatcher)
//! against a raw lapin publisher with a confirm window of the same size (256) publishing the
//! same messages.
use super::util::{blocking, commit, critical_row};
use crate::broker::{bound_queue, connect_retrying, consume, wait_for};
use crate::harness::{Ctx, Figure, Sample, Target};
use crate::inproc::{Instance, start};
use crate::raw::{channel, prepare, publish_windowed};
use async_trait::async_trait;
use std::time::{Duration, Instant};

/// The window of Reporter's publisher (`STREAMING_DISPATCH_BATCH` default) and the baseline's.
const WINDOW: usize = 256;
/// How long the broker stays down.
const OUTAGE: Duration = Duration::from_secs(3);

#[derive(Default)]
pub struct CatchUp {
    inst: Option<(Instance, String, String)>,
}

/// From the broker's return: first and last event received.
struct Run {
    first: Duration,
    last: Duration,
}

impl CatchUp {
    fn n(ctx: &Ctx) -> usize {
        if ctx.quick { 2_000 } else { 20_000 }
    }

    async fn instance(&mut self, ctx: &Ctx) -> anyhow::Result<&(Instance, String, String)> {
        if self.inst.is_none() {
            let exchange = format!("bench.catchup.{}", uuid::Uuid::now_v7().simple());
            let queue = format!("{exchange}.q");
            bound_queue(&ctx.broker.uri, &exchange, &queue, None).await?;
            let inst = start(&ctx.broker.uri, &exchange).await?;
            self.inst = Some((inst, exchange, queue));
        }
        Ok(self.inst.as_ref().expect("just set"))
    }

    async fn outage(ctx: &Ctx) -> anyhow::Result<()> {
        blocking_ctl(ctx, true).await
    }

    async fn measure(ctx: &Ctx, queue: &str, n: usize, back: Instant) -> anyhow::Result<Run> {
        let conn = connect_retrying(&ctx.broker.uri, back + Duration::from_secs(30)).await?;
        let (arrivals, task) = consume(conn, queue).await?;
        let got = wait_for(&arrivals, n, back + Duration::from_secs(300)).await;
        task.abort();
        anyhow::ensure!(got >= n, "only {got} of {n} events arrived");
        let a = arrivals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let first = a.values().min().copied().unwrap_or(back);
        let last = a.values().max().copied().unwrap_or(back);
        Ok(Run {
            first: first.duration_since(back),
            last: last.duration_since(back),
        })
    }

    async fn reporter(&mut self, ctx: &Ctx) -> anyhow::Result<Run> {
        let n = Self::n(ctx);
        let (inst, _, queue) = self.instance(ctx).await?;
        let app = inst.app.clone();
        let queue = queue.clone();
        Self::outage(ctx).await?;
        let rows: Vec<_> = (0..n).map(|i| critical_row(&app, i)).collect();
        for chunk in rows.chunks(500) {
            commit(&app, chunk.to_vec()).await?;
        }
        tokio::time::sleep(OUTAGE).await;
        blocking_ctl(ctx, false).await?;
        let back = Instant::now();
        let run = Self::measure(ctx, &queue, n, back).await?;
        // The last events can reach the consumer before their confirms are marked in the
        // outbox: give the marks a bounded moment.
        let settled = Instant::now() + Duration::from_secs(10);
        let left = loop {
            let left = app.ports().outbox.stats(chrono::Utc::now()).await?;
            if left.pending == 0 || Instant::now() >= settled {
                break left;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        anyhow::ensure!(left.pending == 0, "outbox not drained: {left:?}");
        Ok(run)
    }

    async fn raw(&mut self, ctx: &Ctx) -> anyhow::Result<Run> {
        let n = Self::n(ctx);
        let (inst, exchange, queue) = self.instance(ctx).await?;
        let (exchange, queue) = (exchange.clone(), queue.clone());
        let msgs: Vec<_> = (0..n)
            .map(|i| prepare(&critical_row(&inst.app, i).event))
            .collect();
        Self::outage(ctx).await?;
        tokio::time::sleep(OUTAGE).await;
        blocking_ctl(ctx, false).await?;
        let back = Instant::now();
        let uri = ctx.broker.uri.clone();
        let publisher = tokio::spawn(async move {
            let conn = connect_retrying(&uri, back + Duration::from_secs(30)).await?;
            let ch = channel(&conn).await?;
            let acked = publish_windowed(&ch, &exchange, &msgs, WINDOW).await?;
            let _ = conn.close(200, "done".into()).await;
            anyhow::Ok(acked)
        });
        let run = Self::measure(ctx, &queue, n, back).await?;
        let acked = publisher.await??;
        anyhow::ensure!(acked == n, "raw publisher: {acked} of {n} acked");
        Ok(run)
    }
}

async fn blocking_ctl(ctx: &Ctx, stop: bool) -> anyhow::Result<()> {
    let b = ctx.broker.handle();
    blocking(move || if stop { b.stop_app() } else { b.start_app() }).await
}

#[async_trait]
impl Figure for CatchUp {
    fn name(&self) -> &'static str {
        "catch-up"
    }

    async fn round(&mut self, ctx: &Ctx, reporter_first: bool) -> anyhow::Result<Vec<Sample>> {
        let n = Self::n(ctx);
        let (r, b) = if reporter_first {
            let r = self.reporter(ctx).await?;
            (r, self.raw(ctx).await?)
        } else {
            let b = self.raw(ctx).await?;
            (self.reporter(ctx).await?, b)
        };
        let rate = |run: &Run| n as f64 / run.last.as_secs_f64();
        Ok(vec![
            Sample {
                row: format!("(a) outage catch-up rate, {n} events waiting"),
                unit: "events/s",
                reporter: rate(&r),
                baseline: rate(&b),
                baseline_name: "raw lapin, window 256",
                target: Some(Target::RatioAtLeast(0.8)),
            },
            Sample {
                row: "(a) broker return → last event".into(),
                unit: "s",
                reporter: r.last.as_secs_f64(),
                baseline: b.last.as_secs_f64(),
                baseline_name: "raw lapin, window 256",
                target: Some(Target::RatioAtMost(1.25)),
            },
            Sample {
                row: "(a) broker return → first event".into(),
                unit: "s",
                reporter: r.first.as_secs_f64(),
                baseline: b.first.as_secs_f64(),
                baseline_name: "raw lapin, window 256",
                target: Some(Target::AtMost(1.0)),
            },
        ])
    }
}
