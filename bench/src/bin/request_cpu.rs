//! `request-cpu`: the CPU one `GET /v1/templates/{id}` (P3, issues 34 and 32) costs Reporter's
//! own request path, without the network: the real endpoint (`reporter::http::endpoint`, state
//! in memory, auth on, the token cache at its default) called on one thread, one request after
//! another, with a bearer token, the template uploaded first through the same endpoint. The
//! figure is the calling thread's CPU time per request (`CLOCK_THREAD_CPUTIME_ID`), and the
//! process's (every thread: with telemetry on, the span export thread and the local
//! OTLP receiver's reads too). wrk's req/s on this shared machine varies by a third from run to
//! run; this figure varies by a few percent, so it is the evidence for a cut on the request
//! path (and `--only template-read` the figure the issue names).
//!
//! Usage: `request-cpu [--telemetry] [requests per batch] [batches]` (defaults 40,000 and 7);
//! `LOG_LEVEL` as the service reads it (default here `error`: no log span is enabled).
//! `--telemetry`: ENABLE_TELEMETRY with OTLP/HTTP to a receiver in this process that reads and
//! discards every export. The template sandbox's program is `TEMPLATE_SANDBOX_EXE`, else the
//! `reporter` next to this binary. Prints the median, minimum and maximum over the batches.
#[path = "../bench_auth.rs"]
mod bench_auth;
#[path = "../otlp_sink.rs"]
mod otlp_sink;

use bench_auth::{SECRET, token};
use otlp_sink::sink;
use poem::Endpoint as _;
use poem::http::{Method, StatusCode};

/// A small csv template over the bundled `bank` example data (as `template-read`'s).
const TEMPLATE: &str = "account_id,holder_name\n{% for a in bank.accounts %}{{ a.account_id }},{{ a.holder_name }}\n{% endfor %}";

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let telemetry = args.iter().any(|a| a == "--telemetry");
    let numbers: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let per_batch = numbers.first().copied().unwrap_or(40_000);
    let batches = numbers.get(1).copied().unwrap_or(7);
    // The requests run on this thread (`block_on`); the runtime's one worker runs what the
    // service spawns (the span export's HTTP client among it).
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    rt.block_on(run(telemetry, per_batch, batches))
}

async fn run(telemetry: bool, per_batch: usize, batches: usize) -> anyhow::Result<()> {
    let mut raw = reporter::config::RawConfig::defaults();
    // LOG_LEVEL as a service runs it (`info` by default there) shows the cost of the log
    // spans' fields; unset, only errors are logged and the request span is disabled.
    raw.log_level = std::env::var("LOG_LEVEL").unwrap_or_else(|_| "error".into());
    raw.auth_jwt_secret = Some(SECRET.into());
    raw.template_sandbox_exe = Some(sandbox_exe()?);
    if telemetry {
        raw.telemetry.enable_telemetry = "true".into();
        raw.telemetry.otel_endpoint = Some(sink()?);
        raw.telemetry.otel_protocol = "http/protobuf".into();
    }
    let config = raw
        .validate(&[])
        .map_err(|e| anyhow::anyhow!("configuration: {e:?}"))?;
    let _guard =
        reporter::telemetry::init_observability(&config.log_level, false, &config.telemetry);
    let built = reporter::wiring::build(&config, reporter::wiring::Role::Serve).await?;
    let ep = reporter::http::endpoint(built.app, built.http)?;
    let token = format!("Bearer {}", token()?);
    let id = upload(&ep, &token).await?;
    let path = format!("/v1/templates/{id}");
    let get = || {
        poem::Request::builder()
            .method(Method::GET)
            .uri_str(&path)
            .header("Authorization", &token)
            .finish()
    };
    let first = ep.get_response(get()).await;
    anyhow::ensure!(
        first.status() == StatusCode::OK,
        "GET {path}: {}",
        first.status()
    );
    for _ in 0..per_batch / 2 {
        std::hint::black_box(ep.get_response(get()).await);
    }
    let (mut thread, mut process) = (Vec::new(), Vec::new());
    for _ in 0..batches {
        let (t0, p0) = (
            cpu(libc::CLOCK_THREAD_CPUTIME_ID),
            cpu(libc::CLOCK_PROCESS_CPUTIME_ID),
        );
        for _ in 0..per_batch {
            std::hint::black_box(ep.get_response(get()).await);
        }
        let per = |spent: f64| spent * 1e6 / per_batch as f64;
        thread.push(per(cpu(libc::CLOCK_THREAD_CPUTIME_ID) - t0));
        process.push(per(cpu(libc::CLOCK_PROCESS_CPUTIME_ID) - p0));
    }
    let mode = if telemetry { "on" } else { "off" };
    println!(
        "request-cpu telemetry {mode}: thread {} µs/request, process {} µs/request ({batches} batches of {per_batch})",
        summary(&mut thread),
        summary(&mut process)
    );
    Ok(())
}

/// `median (min–max)` of `v`.
fn summary(v: &mut [f64]) -> String {
    v.sort_by(f64::total_cmp);
    let median = v.get(v.len() / 2).copied().unwrap_or(f64::NAN);
    let (lo, hi) = (v.first().copied(), v.last().copied());
    format!(
        "{median:.3} ({:.3}–{:.3})",
        lo.unwrap_or(f64::NAN),
        hi.unwrap_or(f64::NAN)
    )
}

/// CPU time of `clock`, seconds.
fn cpu(clock: libc::clockid_t) -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// `TEMPLATE_SANDBOX_EXE`, else `reporter` next to this binary.
fn sandbox_exe() -> anyhow::Result<String> {
    if let Ok(p) = std::env::var("TEMPLATE_SANDBOX_EXE") {
        return Ok(p);
    }
    let me = std::env::current_exe()?;
    let reporter = me.with_file_name("reporter");
    Ok(reporter.to_string_lossy().into_owned())
}

/// Uploads [`TEMPLATE`] through `ep`: its id.
async fn upload(
    ep: &impl poem::Endpoint<Output = poem::Response>,
    token: &str,
) -> anyhow::Result<String> {
    let b = "request-cpu-boundary";
    let body = format!(
        "--{b}\r\nContent-Disposition: form-data; name=\"template\"; filename=\"a.csv.tpl\"\r\nContent-Type: text/plain\r\n\r\n{TEMPLATE}\r\n--{b}\r\nContent-Disposition: form-data; name=\"outputFormat\"\r\n\r\ncsv\r\n--{b}--\r\n"
    );
    let req = poem::Request::builder()
        .method(Method::POST)
        .uri_str("/v1/templates")
        .header("Authorization", token)
        .header("Content-Type", format!("multipart/form-data; boundary={b}"))
        .body(body);
    let resp = ep.get_response(req).await;
    let status = resp.status();
    let answer = resp.into_body().into_string().await?;
    anyhow::ensure!(status.is_success(), "upload: {status} {answer}");
    let v: serde_json::Value = serde_json::from_str(&answer)?;
    v["id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| anyhow::anyhow!("no id in {answer}"))
}
