//! (c) Commit → consumer latency of a critical event at a fixed rate: Reporter commits a unit
//! of work carrying a `deadline.delivered` row (the dispatcher is woken, claims it, publishes
//! it), against a raw lapin publish of the same message; both timed to the moment a consumer
//! on the private node receives it.
use super::util::{commit, critical_row};
use crate::broker::{Arrivals, bound_queue, connect_retrying, consume};
use crate::harness::{Ctx, Figure, Sample, Target, quantile};
use crate::inproc::{Instance, start};
use crate::raw::{channel, prepare};
use async_trait::async_trait;
use lapin::options::BasicPublishOptions;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Events per second.
const RATE: u64 = 200;

#[derive(Default)]
pub struct CommitLatency {
    state: Option<State>,
}

struct State {
    inst: Instance,
    exchange: String,
    arrivals: Arrivals,
    consumer: tokio::task::JoinHandle<()>,
    raw: lapin::Channel,
    _raw_conn: lapin::Connection,
}

impl CommitLatency {
    fn count(ctx: &Ctx) -> usize {
        if ctx.quick { 200 } else { 1_000 }
    }

    async fn state(&mut self, ctx: &Ctx) -> anyhow::Result<&State> {
        if self.state.is_none() {
            let exchange = format!("bench.latency.{}", uuid::Uuid::now_v7().simple());
            let queue = format!("{exchange}.q");
            bound_queue(&ctx.broker.uri, &exchange, &queue, None).await?;
            let inst = start(&ctx.broker.uri, &exchange).await?;
            let deadline = Instant::now() + Duration::from_secs(10);
            let conn = connect_retrying(&ctx.broker.uri, deadline).await?;
            let (arrivals, consumer) = consume(conn, &queue).await?;
            let raw_conn = connect_retrying(&ctx.broker.uri, deadline).await?;
            let raw = channel(&raw_conn).await?;
            self.state = Some(State {
                inst,
                exchange,
                arrivals,
                consumer,
                raw,
                _raw_conn: raw_conn,
            });
        }
        Ok(self.state.as_ref().expect("just set"))
    }

    /// Latencies in ms of the events sent at `sent`.
    async fn latencies(st: &State, sent: HashMap<String, Instant>) -> anyhow::Result<Vec<f64>> {
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            let done = {
                let a = st
                    .arrivals
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                sent.keys().all(|k| a.contains_key(k))
            };
            if done || Instant::now() >= until {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let a = st
            .arrivals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let lat: Vec<f64> = sent
            .iter()
            .filter_map(|(id, t)| {
                a.get(id)
                    .map(|r| r.duration_since(*t).as_secs_f64() * 1000.0)
            })
            .collect();
        anyhow::ensure!(
            lat.len() == sent.len(),
            "{} of {} arrived",
            lat.len(),
            sent.len()
        );
        Ok(lat)
    }

    async fn reporter(&mut self, ctx: &Ctx) -> anyhow::Result<Vec<f64>> {
        let n = Self::count(ctx);
        let st = self.state(ctx).await?;
        let mut sent = HashMap::with_capacity(n);
        let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / RATE));
        for i in 0..n {
            tick.tick().await;
            let row = critical_row(&st.inst.app, i);
            sent.insert(row.event.id.clone(), Instant::now());
            commit(&st.inst.app, vec![row]).await?;
        }
        Self::latencies(st, sent).await
    }

    async fn raw(&mut self, ctx: &Ctx) -> anyhow::Result<Vec<f64>> {
        let n = Self::count(ctx);
        let st = self.state(ctx).await?;
        let msgs: Vec<_> = (0..n)
            .map(|i| prepare(&critical_row(&st.inst.app, i).event))
            .collect();
        let mut sent = HashMap::with_capacity(n);
        let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / RATE));
        for m in &msgs {
            tick.tick().await;
            let id = m
                .props
                .message_id()
                .as_ref()
                .map(|s| s.as_str().to_owned())
                .unwrap_or_default();
            sent.insert(id, Instant::now());
            let confirm = st
                .raw
                .basic_publish(
                    st.exchange.as_str().into(),
                    m.key.as_str().into(),
                    BasicPublishOptions {
                        mandatory: true,
                        immediate: false,
                    },
                    &m.body,
                    m.props.clone(),
                )
                .await?;
            tokio::spawn(confirm);
        }
        Self::latencies(st, sent).await
    }
}

#[async_trait]
impl Figure for CommitLatency {
    fn name(&self) -> &'static str {
        "commit-latency"
    }

    async fn round(&mut self, ctx: &Ctx, reporter_first: bool) -> anyhow::Result<Vec<Sample>> {
        let (r, b) = if reporter_first {
            let r = self.reporter(ctx).await?;
            (r, self.raw(ctx).await?)
        } else {
            let b = self.raw(ctx).await?;
            (self.reporter(ctx).await?, b)
        };
        let row = |q: f64, name: &str, target| Sample {
            row: format!("(c) critical event commit → consumer {name} at {RATE}/s"),
            unit: "ms",
            reporter: quantile(r.clone(), q),
            baseline: quantile(b.clone(), q),
            baseline_name: "raw publish → consume",
            target,
        };
        Ok(vec![
            row(0.5, "p50", None),
            row(0.99, "p99", Some(Target::DiffAtMost(2.0))),
        ])
    }

    async fn finish(&mut self, _ctx: &Ctx) {
        if let Some(st) = self.state.take() {
            st.consumer.abort();
        }
    }
}
