//! The cost of telemetry (issue 32): P3 (`GET /v1/templates/{id}`, `wrk -t2 -c32` with a
//! bearer token) against the release `reporter serve` with ENABLE_TELEMETRY on — every
//! request a server span exported over OTLP/HTTP to a local receiver that reads and discards
//! each export — vs the same service with telemetry off; req/s and p99.
use super::serve::{Server, token, wrk};
use super::template_read::upload;
use crate::harness::{Ctx, Figure, Sample, Target};
use async_trait::async_trait;

/// What BENCHMARKS.md says this figure measures.
pub const DESCRIPTION: &str = "- **Telemetry cost** (issue 32): P3 (`GET /v1/templates/{id}`, `wrk -t2 -c32`, bearer token) against the release `reporter serve` (state in memory, auth on) with `ENABLE_TELEMETRY=true` and the default configuration a user gets (every trace sampled, `ParentBased(AlwaysOn)`, as the original; Reporter's batch defaults: batches of 2048 spans from a queue of 8192, an export every 5 s when no batch fills up), every request's spans (the server span `GET /v1/templates/{id}` and the use-case span `get_template`) exported over OTLP/HTTP (protobuf) to a local receiver that reads and discards each export, and the Prometheus metrics exported every 60 s, vs the same service with telemetry off; req/s and p99, and informational the service's CPU time per request over each `wrk` run (user + system of every thread, `/proc/<pid>/stat`, in 10 ms ticks), which other processes on the machine disturb less than req/s. The service, `wrk` and the receiver share the machine's cores, so the ratio follows the CPU telemetry adds per request. Each round runs each side for 10 s in slices of 2 s, alternating in the order ABBA… (a slow drift of the machine's other load falls on both sides alike); req/s and CPU per request are over a side's slices, p99 the median slice's. Target: ≥ 0.9×.\n";

#[derive(Default)]
pub struct TelemetryCost;

const TEMPLATE: &str =
    "account_id,n\n{% for a in bank.accounts %}{{ a.account_id }},1\n{% endfor %}";

fn measure(ctx: &Ctx, reporter_first: bool, secs: u64) -> anyhow::Result<[Run; 2]> {
    let endpoint = crate::otlp_sink::sink()?;
    let on = Server::reporter(
        ctx,
        &[
            ("ENABLE_TELEMETRY", "true".into()),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf".into()),
        ],
    )?;
    let off = Server::reporter(ctx, &[])?;
    let on_id = upload(&on, "a.csv.tpl", TEMPLATE, "csv")?;
    let off_id = upload(&off, "a.csv.tpl", TEMPLATE, "csv")?;
    let script = format!(
        "wrk.method = \"GET\"\nwrk.headers[\"Authorization\"] = \"Bearer {}\"\n",
        token()?
    );
    let on_url = format!("http://{}/v1/templates/{on_id}", on.addr);
    let off_url = format!("http://{}/v1/templates/{off_id}", off.addr);
    // The service's CPU per request (`/proc/<pid>/stat`) next to its req/s: on a shared
    // machine the CPU a request costs varies less than the rate other processes leave.
    let run = |server: &Server, url: &str, secs: u64| -> anyhow::Result<Slice> {
        let before = crate::cpu::cpu_seconds(server.pid());
        let wrk = wrk(ctx, &script, url, secs)?;
        let cpu_s = crate::cpu::cpu_seconds(server.pid()) - before;
        Ok(Slice {
            requests: wrk.rps * secs as f64,
            secs,
            cpu_s,
            p99_ms: wrk.p99_ms,
        })
    };
    // The two sides alternate in slices of SLICE_SECS, in the order ABBA…: the machine's
    // other load drifts over a round, and a drift between one long run of each side moved
    // the ratio more than the change it measures.
    let (mut on_slices, mut off_slices) = (Vec::new(), Vec::new());
    let slices = secs.div_ceil(SLICE_SECS).max(1);
    let slice = SLICE_SECS.min(secs);
    for i in 0..slices {
        if reporter_first == (i % 2 == 0) {
            on_slices.push(run(&on, &on_url, slice)?);
            off_slices.push(run(&off, &off_url, slice)?);
        } else {
            off_slices.push(run(&off, &off_url, slice)?);
            on_slices.push(run(&on, &on_url, slice)?);
        }
    }
    Ok([Run::of(&on_slices), Run::of(&off_slices)])
}

/// How long one side runs before the other takes its turn.
const SLICE_SECS: u64 = 2;

/// One `wrk` run of one side.
struct Slice {
    requests: f64,
    secs: u64,
    cpu_s: f64,
    p99_ms: f64,
}

/// One side's slices of a round: req/s over all of them, the median slice's p99 and the
/// service's CPU per request over all of them.
struct Run {
    rps: f64,
    p99_ms: f64,
    cpu_us: f64,
}

impl Run {
    fn of(slices: &[Slice]) -> Self {
        let requests: f64 = slices.iter().map(|s| s.requests).sum();
        let secs: u64 = slices.iter().map(|s| s.secs).sum();
        let cpu_s: f64 = slices.iter().map(|s| s.cpu_s).sum();
        let mut p99: Vec<f64> = slices.iter().map(|s| s.p99_ms).collect();
        p99.sort_by(f64::total_cmp);
        Self {
            rps: requests / secs.max(1) as f64,
            p99_ms: p99.get(p99.len() / 2).copied().unwrap_or(0.0),
            cpu_us: cpu_s * 1e6 / requests.max(1.0),
        }
    }
}

#[async_trait]
impl Figure for TelemetryCost {
    fn name(&self) -> &'static str {
        "telemetry-cost"
    }

    async fn round(&mut self, ctx: &Ctx, reporter_first: bool) -> anyhow::Result<Vec<Sample>> {
        let secs = if ctx.quick { 3 } else { 10 };
        let [on, off] = tokio::task::block_in_place(|| measure(ctx, reporter_first, secs))?;
        Ok(vec![
            Sample {
                row: "P3 GET /v1/templates/{id} throughput, telemetry on (OTLP to a local receiver) vs off".into(),
                unit: "req/s",
                reporter: on.rps,
                baseline: off.rps,
                baseline_name: "telemetry off",
                target: Some(Target::RatioAtLeast(0.9)),
            },
            Sample {
                row: "P3 GET /v1/templates/{id} p99, telemetry on vs off".into(),
                unit: "ms",
                reporter: on.p99_ms,
                baseline: off.p99_ms,
                baseline_name: "telemetry off",
                target: None,
            },
            Sample {
                row: "P3 GET /v1/templates/{id} service CPU per request, telemetry on vs off".into(),
                unit: "µs",
                reporter: on.cpu_us,
                baseline: off.cpu_us,
                baseline_name: "telemetry off",
                target: None,
            },
        ])
    }
}
