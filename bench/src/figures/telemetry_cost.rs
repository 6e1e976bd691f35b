//! The cost of telemetry (issue 32): P3 (`GET /v1/templates/{id}`, `wrk -t2 -c32` with a
//! bearer token) against the release `reporter serve` with ENABLE_TELEMETRY on — every
//! request a server span exported over OTLP/HTTP to a local receiver that reads and discards
//! each export — vs the same service with telemetry off; req/s and p99.
use super::serve::{Server, token, wrk};
use super::template_read::upload;
use crate::harness::{Ctx, Figure, Sample, Target};
use async_trait::async_trait;

/// What BENCHMARKS.md says this figure measures.
pub const DESCRIPTION: &str = "- **Telemetry cost** (issue 32): P3 (`GET /v1/templates/{id}`, `wrk -t2 -c32`, bearer token) against the release `reporter serve` (state in memory, auth on) with `ENABLE_TELEMETRY=true` and the default configuration a user gets (every trace sampled, `ParentBased(AlwaysOn)`, as the original; Reporter's batch defaults: batches of 2048 spans from a queue of 8192, an export every 5 s when no batch fills up), every request's spans (the server span `GET /v1/templates/{id}` and the use-case span `get_template`) exported over OTLP/HTTP (protobuf) to a local receiver that reads and discards each export, and the Prometheus metrics exported every 60 s, vs the same service with telemetry off; req/s and p99, and informational the service's CPU time per request over each `wrk` run (user + system of every thread, `/proc/<pid>/stat`, in 10 ms ticks), which other processes on the machine disturb less than req/s. The service, `wrk` and the receiver share the machine's cores, so the ratio follows the CPU telemetry adds per request. Target: ≥ 0.9×.\n";

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
    let run = |server: &Server, url: &str| -> anyhow::Result<Run> {
        let before = crate::cpu::cpu_seconds(server.pid());
        let wrk = wrk(ctx, &script, url, secs)?;
        let spent = crate::cpu::cpu_seconds(server.pid()) - before;
        Ok(Run {
            wrk,
            cpu_us: spent * 1e6 / (wrk.rps * secs as f64),
        })
    };
    Ok(if reporter_first {
        let a = run(&on, &on_url)?;
        [a, run(&off, &off_url)?]
    } else {
        let b = run(&off, &off_url)?;
        [run(&on, &on_url)?, b]
    })
}

/// One side's `wrk` run and the service's CPU per request over it.
struct Run {
    wrk: super::serve::WrkRun,
    cpu_us: f64,
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
                reporter: on.wrk.rps,
                baseline: off.wrk.rps,
                baseline_name: "telemetry off",
                target: Some(Target::RatioAtLeast(0.9)),
            },
            Sample {
                row: "P3 GET /v1/templates/{id} p99, telemetry on vs off".into(),
                unit: "ms",
                reporter: on.wrk.p99_ms,
                baseline: off.wrk.p99_ms,
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
