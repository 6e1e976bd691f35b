//! (b) What publication costs the write path: `POST /v1/deadlines` against the release binary
//! (`reporter serve`, state in memory) under load from `wrk`, with publication on (events to
//! the private node, routed to a bounded queue) and off; req/s, p99 and the process's peak
//! RSS.
use crate::broker::{bound_queue, delete_queue};
use crate::harness::{Ctx, Figure, Sample, Target};
use async_trait::async_trait;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SECRET: &str = "bench-secret-bench-secret-bench-secret-01";

#[derive(Default)]
pub struct PublishCost;

/// What one run measured.
#[derive(Debug, Clone, Copy)]
struct Run {
    rps: f64,
    p99_ms: f64,
    peak_rss_mb: f64,
}

struct Serve(Child);
impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_addr() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(4099);
    format!("127.0.0.1:{port}")
}

fn token() -> anyhow::Result<String> {
    let scopes: Vec<&str> = reporter::http::auth::Scope::ALL
        .iter()
        .map(|s| s.as_str())
        .collect();
    let claims = reporter::http::auth::Claims {
        sub: Some("bench".into()),
        exp: (chrono::Utc::now() + chrono::Duration::hours(2)).timestamp(),
        scope: Some(scopes.join(" ")),
        tenant_id: Some("default".into()),
        iss: None,
        aud: None,
    };
    reporter::http::auth::mint_hs256(SECRET.as_bytes(), &claims).map_err(|e| anyhow::anyhow!(e))
}

/// Parses `wrk --latency` output: (req/s, p99 ms, non-2xx count).
fn parse_wrk(out: &str) -> anyhow::Result<(f64, f64, u64)> {
    let rps = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .ok_or_else(|| anyhow::anyhow!("no Requests/sec in wrk output:\n{out}"))?;
    let p99 = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("99%"))
        .map(str::trim)
        .and_then(duration_ms)
        .ok_or_else(|| anyhow::anyhow!("no 99% latency in wrk output:\n{out}"))?;
    let non2xx = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("Non-2xx or 3xx responses:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    Ok((rps, p99, non2xx))
}

fn duration_ms(v: &str) -> Option<f64> {
    let (num, unit) = v.split_at(v.find(|c: char| c.is_ascii_alphabetic())?);
    let n: f64 = num.parse().ok()?;
    Some(match unit {
        "us" => n / 1000.0,
        "ms" => n,
        "s" => n * 1000.0,
        "m" => n * 60_000.0,
        _ => return None,
    })
}

fn peak_rss_mb(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn run(ctx: &Ctx, publish: bool, exchange: &str, secs: u64) -> anyhow::Result<Run> {
    let addr = free_addr();
    let mut c = Command::new(&ctx.reporter_bin);
    c.arg("serve")
        .env("SERVER_ADDRESS", &addr)
        .env("AUTH_JWT_SECRET", SECRET)
        .env("LOG_LEVEL", "error")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    if publish {
        c.env("STREAMING_ENABLED", "true")
            .env("RABBITMQ_REPORT_EVENTS_EXCHANGE", exchange)
            .env("STREAMING_BROKERS", &ctx.broker.uri)
            .env("STREAMING_CLOUDEVENTS_SOURCE", "reporter")
            .env(
                "STREAMING_ALTERNATE_EXCHANGE",
                format!("{exchange}.unroutable"),
            );
    }
    let mut serve = Serve(c.spawn()?);
    let started = Instant::now();
    while std::net::TcpStream::connect(&addr).is_err() {
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(30),
            "reporter serve did not listen"
        );
        if let Some(status) = serve.0.try_wait()? {
            anyhow::bail!("reporter serve exited: {status}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let script = std::env::temp_dir().join(format!("reporter-bench-{}.lua", std::process::id()));
    std::fs::write(
        &script,
        format!(
            r##"wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer {}"
wrk.body = '{{"name":"Liquidity report","type":"regulatory","dueDate":"2030-03-31T23:59:59Z","frequency":"once","color":"#1E88E5","notifyDaysBefore":10}}'
"##,
            token()?
        ),
    )?;
    let out = Command::new(&ctx.wrk)
        .args(["-t2", "-c32", &format!("-d{secs}s"), "--latency", "-s"])
        .arg(&script)
        .arg(format!("http://{addr}/v1/deadlines"))
        .output()?;
    let _ = std::fs::remove_file(&script);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (rps, p99_ms, non2xx) = parse_wrk(&text)?;
    anyhow::ensure!(non2xx == 0, "{non2xx} answers were not 2xx:\n{text}");
    let peak = peak_rss_mb(serve.0.id());
    drop(serve);
    Ok(Run {
        rps,
        p99_ms,
        peak_rss_mb: peak,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrk_output_is_read() {
        let out = "Running 3s test @ http://127.0.0.1:1/v1/deadlines
  Latency Distribution
     50%    1.20ms
     75%    2.00ms
     90%    3.10ms
     99%   12.34ms
  36000 requests in 3.00s, 10.00MB read
Requests/sec:  12000.50
Transfer/sec:      3.33MB
";
        let (rps, p99, non) = parse_wrk(out).unwrap();
        assert_eq!(rps, 12000.5);
        assert_eq!(p99, 12.34);
        assert_eq!(non, 0);
        assert_eq!(duration_ms("850.00us"), Some(0.85));
        assert_eq!(duration_ms("1.50s"), Some(1500.0));
        assert!(parse_wrk("nothing").is_err());
    }
}
