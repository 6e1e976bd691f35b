//! Rate limiting at the REST edge, before authentication (as the original): each request
//! but the public ops ones falls in one tier, first match wins: a path ending in
//! `/download` is **export**, POST/PUT/PATCH/DELETE is **dispatch**, anything else
//! **global**. Each (tier, client address) has a fixed window counted by the
//! [`RateLimiter`] port (Redis: shared by every API process). An allowed response carries
//! `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset` (seconds until the
//! window ends); a refused one is 429 `TPL-0429` with `Retry-After` as well. When the
//! limiter's backend does not answer, the request passes (fail open) or is answered 503
//! `TPL-0503` with `Retry-After` (fail closed); either way it is logged and counted in
//! `reporter_rate_limit_backend_errors_total{outcome}`.
use super::client_ip::client_ip;
use super::error::error_response;
use crate::app::{AppError, Code};
use ipnet::IpNet;
use poem::http::{HeaderMap, HeaderName, HeaderValue, Method, header};
use poem::web::RemoteAddr;
use poem::{Endpoint, IntoResponse, Middleware, Request, Response};
use prometheus::{IntCounterVec, Opts, Registry};
use reporter_ports::ports::RateLimiter;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Duration;

/// The limits and rules of the limiter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimitPolicy {
    /// Limit of the global tier.
    pub global: u32,
    /// Limit of the export tier.
    pub export: u32,
    /// Limit of the dispatch tier.
    pub dispatch: u32,
    /// The fixed window.
    pub window: Duration,
    /// Proxies whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Vec<IpNet>,
    /// Requests pass when the backend does not answer.
    pub fail_open: bool,
}

/// A request's tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// Everything not in another tier.
    Global,
    /// Downloads (paths ending in `/download`).
    Export,
    /// State changes (POST, PUT, PATCH, DELETE).
    Dispatch,
}

impl Tier {
    /// The tier's name in keys and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Global => "global",
            Self::Export => "export",
            Self::Dispatch => "dispatch",
        }
    }
}

/// The tier of a request, or `None` for the exempt public ops paths (health, readiness,
/// version, metrics, the spec and Swagger UI).
pub fn tier_of(method: &Method, path: &str) -> Option<Tier> {
    let exempt = matches!(
        path,
        "/health"
            | "/ready"
            | "/readyz"
            | "/version"
            | "/metrics"
            | "/openapi.json"
            | "/openapi.yaml"
    ) || super::ops_or_api::is_swagger(path);
    if exempt {
        None
    } else if path.ends_with("/download") {
        Some(Tier::Export)
    } else if matches!(
        *method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    ) {
        Some(Tier::Dispatch)
    } else {
        Some(Tier::Global)
    }
}

/// The limiter's counters in the Prometheus registry.
#[derive(Clone)]
pub struct RateLimitMetrics {
    refused: IntCounterVec,
    backend_errors: IntCounterVec,
}

impl RateLimitMetrics {
    /// Registers `reporter_rate_limit_refused_total{tier}` and
    /// `reporter_rate_limit_backend_errors_total{outcome}` in `registry`.
    ///
    /// # Errors
    /// When the registry already holds them.
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let refused = IntCounterVec::new(
            Opts::new(
                "reporter_rate_limit_refused_total",
                "Requests answered 429 by the rate limiter, by tier",
            ),
            &["tier"],
        )?;
        let backend_errors = IntCounterVec::new(
            Opts::new(
                "reporter_rate_limit_backend_errors_total",
                "Requests the rate limiter could not count (its backend did not answer), by outcome: allowed (fail open) or refused (fail closed)",
            ),
            &["outcome"],
        )?;
        registry.register(Box::new(refused.clone()))?;
        registry.register(Box::new(backend_errors.clone()))?;
        Ok(Self {
            refused,
            backend_errors,
        })
    }
}

/// The middleware (see the module docs).
#[derive(Clone)]
pub struct RateLimit {
    /// The counters.
    pub limiter: Arc<dyn RateLimiter>,
    /// Limits and rules.
    pub policy: Arc<RateLimitPolicy>,
    /// Metrics.
    pub metrics: RateLimitMetrics,
}

impl<E: Endpoint> Middleware<E> for RateLimit {
    type Output = RateLimitEndpoint<E>;
    fn transform(&self, inner: E) -> Self::Output {
        RateLimitEndpoint {
            inner,
            limit: self.clone(),
        }
    }
}

/// Endpoint of [`RateLimit`].
pub struct RateLimitEndpoint<E> {
    inner: E,
    limit: RateLimit,
}

const LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
const REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
const RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");

/// Whole seconds of `d`, rounded up (at least 1).
fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

fn set_headers(h: &mut HeaderMap, limit: u32, remaining: u32, reset: u64) {
    h.insert(LIMIT, HeaderValue::from(limit));
    h.insert(REMAINING, HeaderValue::from(remaining));
    h.insert(RESET, HeaderValue::from(reset));
}

impl RateLimit {
    fn limit_of(&self, tier: Tier) -> u32 {
        match tier {
            Tier::Global => self.policy.global,
            Tier::Export => self.policy.export,
            Tier::Dispatch => self.policy.dispatch,
        }
    }
}

/// The peer address of a request (unspecified when the server gave none, e.g. in tests).
fn peer(req: &Request) -> IpAddr {
    match req.remote_addr() {
        RemoteAddr(poem::Addr::SocketAddr(a)) => a.ip(),
        _ => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
    }
}

impl<E: Endpoint> Endpoint for RateLimitEndpoint<E> {
    type Output = Response;
    async fn call(&self, req: Request) -> poem::Result<Response> {
        let Some(tier) = tier_of(req.method(), req.uri().path()) else {
            return self.inner.call(req).await.map(IntoResponse::into_response);
        };
        let l = &self.limit;
        let client = client_ip(peer(&req), req.headers(), &l.policy.trusted_proxies);
        let limit = l.limit_of(tier);
        let key = format!("{}:{client}", tier.as_str());
        match l.limiter.hit(&key, limit, l.policy.window).await {
            Ok(d) if d.allowed => {
                let mut resp = self.inner.call(req).await?.into_response();
                set_headers(
                    resp.headers_mut(),
                    limit,
                    d.remaining(limit),
                    ceil_secs(d.reset_after),
                );
                Ok(resp)
            }
            Ok(d) => {
                let retry = ceil_secs(d.reset_after);
                l.metrics.refused.with_label_values(&[tier.as_str()]).inc();
                let mut resp = error_response(&AppError::new(
                    Code::RateLimited,
                    format!("Rate limit exceeded. Please retry after {retry} seconds."),
                ));
                set_headers(resp.headers_mut(), limit, 0, retry);
                resp.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(retry));
                Ok(resp)
            }
            Err(e) if l.policy.fail_open => {
                l.metrics
                    .backend_errors
                    .with_label_values(&["allowed"])
                    .inc();
                tracing::warn!(error = %e, backend = l.limiter.backend(), tier = tier.as_str(), "rate limiter unavailable: request allowed (ALLOW_RATELIMIT_FAIL_OPEN)");
                self.inner.call(req).await.map(IntoResponse::into_response)
            }
            Err(e) => {
                l.metrics
                    .backend_errors
                    .with_label_values(&["refused"])
                    .inc();
                tracing::warn!(error = %e, backend = l.limiter.backend(), tier = tier.as_str(), "rate limiter unavailable: request refused (fail closed)");
                let mut resp = error_response(&AppError::new(
                    Code::ServiceUnavailable,
                    "the rate limiter is unavailable; retry later",
                ));
                resp.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(1u32));
                Ok(resp)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_follow_the_original_first_match_wins() {
        let t = |m: Method, p: &str| tier_of(&m, p);
        for p in [
            "/health",
            "/readyz",
            "/ready",
            "/version",
            "/metrics",
            "/openapi.json",
            "/swagger/",
        ] {
            assert_eq!(t(Method::GET, p), None, "{p} is exempt");
        }
        assert_eq!(t(Method::GET, "/v1/reports/x/download"), Some(Tier::Export));
        assert_eq!(
            t(Method::POST, "/v1/reports/x/download"),
            Some(Tier::Export)
        );
        for m in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
            assert_eq!(t(m, "/v1/templates"), Some(Tier::Dispatch));
        }
        assert_eq!(t(Method::GET, "/v1/templates"), Some(Tier::Global));
        assert_eq!(t(Method::OPTIONS, "/v1/templates"), Some(Tier::Global));
        assert_eq!(t(Method::GET, "/nowhere"), Some(Tier::Global));
    }

    #[test]
    fn seconds_round_up() {
        assert_eq!(ceil_secs(Duration::from_millis(1)), 1);
        assert_eq!(ceil_secs(Duration::from_millis(59_001)), 60);
        assert_eq!(ceil_secs(Duration::from_secs(60)), 60);
    }
}
