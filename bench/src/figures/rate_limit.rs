//! Rate limiter (issue 32): `GET /v1/templates/{id}` (the P3 request) under `wrk -t2 -c32`
//! against the release `reporter serve` with rate limiting on and its counters in Redis
//! (`REDIS_URL`, default `redis://127.0.0.1:6379`: every request one atomic script on the
//! server), vs the same service with rate limiting off; informational, the in-process
//! limiter (memory mode) vs off. Every request comes from another client address
//! (`X-Forwarded-For` from the trusted loopback proxy, random per request), so each one opens
//! a window of its own (the script's every step: INCR, PTTL, PEXPIRE) and none is refused:
//! the global limit is the largest allowed (10,000) over a one-second window, which also keeps
//! Redis's key count to about a second of requests.
use super::serve::{Server, token, wrk};
use super::template_read::upload;
use crate::harness::{Ctx, Figure, Sample};
use async_trait::async_trait;

#[derive(Default)]
pub struct RateLimit;

const TEMPLATE: &str = "account_id,holder_name\n{% for a in bank.accounts %}{{ a.account_id }},{{ a.holder_name }}\n{% endfor %}";

/// `host:port` of `REDIS_URL` (`redis://host:port[/db]`).
fn redis_host() -> String {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let rest = url.strip_prefix("redis://").unwrap_or(&url);
    rest.split('/').next().unwrap_or(rest).to_owned()
}

/// A Reporter with rate limiting as `mode`: `off`, `memory` or `redis`.
fn reporter(ctx: &Ctx, mode: &str) -> anyhow::Result<Server> {
    let mut env: Vec<(&str, String)> = vec![("TRUSTED_PROXIES", "127.0.0.1/32".into())];
    if mode == "off" {
        env.push(("RATE_LIMIT_ENABLED", "false".into()));
    } else {
        env.push(("RATE_LIMIT_ENABLED", "true".into()));
        env.push(("RATE_LIMIT_GLOBAL", "10000".into()));
        env.push(("RATE_LIMIT_WINDOW_SECONDS", "1".into()));
        env.push(("ALLOW_RATELIMIT_FAIL_OPEN", "false".into()));
    }
    if mode == "redis" {
        env.push(("REDIS_HOST", redis_host()));
    }
    Server::reporter(ctx, &env)
}

/// One round: (Redis, memory, off) req/s.
fn measure(ctx: &Ctx, reporter_first: bool, secs: u64) -> anyhow::Result<[f64; 3]> {
    let servers = [
        reporter(ctx, "redis")?,
        reporter(ctx, "memory")?,
        reporter(ctx, "off")?,
    ];
    let mut paths = Vec::new();
    for s in &servers {
        let id = upload(s, "ids.csv.tpl", TEMPLATE, "csv")?;
        paths.push(format!("http://{}/v1/templates/{id}", s.addr));
    }
    let script = format!(
        "wrk.method = \"GET\"\nwrk.headers[\"Authorization\"] = \"Bearer {}\"\nrequest = function()\n  wrk.headers[\"X-Forwarded-For\"] = string.format(\"10.%d.%d.%d\", math.random(0, 255), math.random(0, 255), math.random(0, 255))\n  return wrk.format()\nend\n",
        token()?
    );
    let mut rps = [0.0; 3];
    let order: [usize; 3] = if reporter_first { [0, 1, 2] } else { [2, 1, 0] };
    for i in order {
        rps[i] = wrk(ctx, &script, &paths[i], secs)?.rps;
    }
    Ok(rps)
}

#[async_trait]
impl Figure for RateLimit {
    fn name(&self) -> &'static str {
        "rate-limit"
    }

    async fn round(&mut self, ctx: &Ctx, reporter_first: bool) -> anyhow::Result<Vec<Sample>> {
        let secs = if ctx.quick { 3 } else { 10 };
        let [redis, memory, off] =
            tokio::task::block_in_place(|| measure(ctx, reporter_first, secs))?;
        Ok(vec![
            Sample {
                row: "Rate limiter: GET /v1/templates/{id} throughput, limiter in Redis vs off"
                    .into(),
                unit: "req/s",
                reporter: redis,
                baseline: off,
                baseline_name: "rate limiting off",
                target: None,
            },
            Sample {
                row: "Rate limiter: GET /v1/templates/{id} throughput, limiter in memory vs off"
                    .into(),
                unit: "req/s",
                reporter: memory,
                baseline: off,
                baseline_name: "rate limiting off",
                target: None,
            },
        ])
    }
}
