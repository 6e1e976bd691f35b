//! The rate limiter of the API roles: Redis when `REDIS_HOST` is set (one budget shared by
//! every API process), else in process memory; and its `/readyz` check.
use crate::config::{Config, RateLimitSettings};
use crate::http::ops::{CheckProbe, CheckStatus, ProbeOutcome};
use crate::http::rate_limit::RateLimitPolicy;
use reporter_adapter_memory::MemoryRateLimiter;
use reporter_adapter_redis::RedisRateLimiter;
use reporter_ports::ports::RateLimiter;
use std::sync::Arc;

/// Prefix of the limiter's Redis keys: `reporter:ratelimit:<tier>:<client>`.
pub const REDIS_KEY_PREFIX: &str = "reporter:ratelimit:";

/// The counters and policy, when rate limiting is on and `serves_api` (the worker serves
/// only exempt ops paths).
pub(super) fn rate_limiter(
    config: &Config,
    serves_api: bool,
    summary: &mut Vec<String>,
) -> anyhow::Result<Option<(Arc<dyn RateLimiter>, RateLimitPolicy)>> {
    let s: &RateLimitSettings = &config.rate_limit;
    if !s.enabled || !serves_api {
        return Ok(None);
    }
    let limiter: Arc<dyn RateLimiter> = match &s.redis {
        Some(redis) => Arc::new(
            RedisRateLimiter::new(redis, s.redis_timeout, REDIS_KEY_PREFIX)
                .map_err(|e| anyhow::anyhow!("rate limiter: {e}"))?,
        ),
        None => Arc::new(MemoryRateLimiter::default()),
    };
    summary.push(format!(
        "rate limiting: {} per {} s (global {}, export {}, dispatch {}), {} when the backend does not answer",
        match &s.redis {
            Some(r) => format!("Redis at {} (shared by every API process)", r.address()),
            None => "in process memory".to_owned(),
        },
        s.window.as_secs(),
        s.global,
        s.export,
        s.dispatch,
        if s.fail_open { "fail open" } else { "fail closed" },
    ));
    let policy = RateLimitPolicy {
        global: s.global,
        export: s.export,
        dispatch: s.dispatch,
        window: s.window,
        trusted_proxies: s.trusted_proxies.clone(),
        fail_open: s.fail_open,
    };
    Ok(Some((limiter, policy)))
}

/// `/readyz`'s `rateLimiter` check: up when the backend answers; when it does not, down
/// if the limiter fails closed (every limited request would answer 503) and degraded if
/// it fails open (requests pass uncounted).
pub(super) fn rate_limiter_check(limiter: Arc<dyn RateLimiter>, fail_open: bool) -> CheckProbe {
    Arc::new(move || {
        let limiter = limiter.clone();
        Box::pin(async move {
            match limiter.check().await {
                Ok(()) => ProbeOutcome {
                    status: CheckStatus::Up,
                    error: None,
                    breaker_state: None,
                },
                Err(e) => ProbeOutcome {
                    status: if fail_open {
                        CheckStatus::Degraded
                    } else {
                        CheckStatus::Down
                    },
                    error: Some(format!(
                        "{e}; requests are {}",
                        if fail_open {
                            "allowed uncounted (fail open)"
                        } else {
                            "refused with 503 (fail closed)"
                        }
                    )),
                    breaker_state: None,
                },
            }
        })
    })
}
