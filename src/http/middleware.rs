//! Cross-cutting HTTP behaviour: security headers, request ids, body limits, idempotent
//! replays and request metrics.
use super::auth::AuthOutcome;
use super::error::error_response;
use crate::app::{AppError, Code};
use crate::telemetry::HttpMetrics;
use poem::http::{HeaderValue, Method, StatusCode};
use poem::{Body, Endpoint, IntoResponse, Middleware, Request, Response};
use reporter_ports::Clock;
use reporter_ports::ports::{IdempotencyBegin, IdempotencyScope, IdempotencyStore, StoredResponse};
use std::sync::Arc;
use std::time::Instant;

/// Adds the reference's security headers to every response and echoes (or assigns) `X-Request-Id`.
pub struct Hardening;

impl<E: Endpoint> Middleware<E> for Hardening {
    type Output = HardeningEndpoint<E>;
    fn transform(&self, ep: E) -> Self::Output {
        HardeningEndpoint(ep)
    }
}

/// Endpoint of [`Hardening`].
pub struct HardeningEndpoint<E>(E);

fn request_id(req: &Request) -> String {
    req.headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map(str::to_owned)
        .unwrap_or_else(|| uuid::Uuid::now_v7().to_string())
}

impl<E: Endpoint> Endpoint for HardeningEndpoint<E> {
    type Output = Response;
    async fn call(&self, req: Request) -> poem::Result<Response> {
        let id = request_id(&req);
        let span = tracing::info_span!("http", request_id = %id, method = %req.method(), path = %req.uri().path());
        let mut resp = {
            let _g = span.enter();
            match self.0.call(req).await {
                Ok(r) => r.into_response(),
                Err(e) => e.into_response(),
            }
        };
        let h = resp.headers_mut();
        h.insert(
            "x-content-type-options",
            HeaderValue::from_static("nosniff"),
        );
        h.insert("x-frame-options", HeaderValue::from_static("DENY"));
        h.insert("x-xss-protection", HeaderValue::from_static("0"));
        h.insert(
            "strict-transport-security",
            HeaderValue::from_static("max-age=31536000; includeSubDomains"),
        );
        h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
        if let Ok(v) = HeaderValue::from_str(&id) {
            h.insert("x-request-id", v);
        }
        Ok(resp)
    }
}

/// Refuses bodies above a limit with 413, whether or not the client sent Content-Length.
pub struct BodyLimit(pub usize);

impl<E: Endpoint> Middleware<E> for BodyLimit {
    type Output = BodyLimitEndpoint<E>;
    fn transform(&self, ep: E) -> Self::Output {
        BodyLimitEndpoint {
            inner: ep,
            limit: self.0,
        }
    }
}

/// Endpoint of [`BodyLimit`].
pub struct BodyLimitEndpoint<E> {
    inner: E,
    limit: usize,
}

impl<E: Endpoint> Endpoint for BodyLimitEndpoint<E> {
    type Output = Response;
    async fn call(&self, mut req: Request) -> poem::Result<Response> {
        let too_large = || {
            error_response(&AppError::new(
                Code::PayloadTooLarge,
                "the request body is too large",
            ))
        };
        let declared = req
            .headers()
            .get("content-length")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > self.limit as u64) {
            return Ok(too_large());
        }
        if matches!(*req.method(), Method::POST | Method::PUT | Method::PATCH) {
            let body = req.take_body();
            match body.into_bytes_limit(self.limit).await {
                Ok(bytes) => req.set_body(Body::from_bytes(bytes)),
                Err(poem::error::ReadBodyError::PayloadTooLarge) => return Ok(too_large()),
                Err(_) => {
                    return Ok(error_response(&AppError::new(
                        Code::BadRequest,
                        "the request body could not be read",
                    )));
                }
            }
        }
        Ok(self.inner.call(req).await?.into_response())
    }
}

/// Replays completed `X-Idempotency` requests and refuses concurrent duplicates.
///
/// Applies to `POST` on the listed paths when the header is present. A 2xx response is kept
/// for the configured TTL and replayed with `X-Idempotency-Replayed: true`; any other outcome
/// releases the key so the client can retry.
pub struct Idempotency {
    /// Store of records.
    pub store: Arc<dyn IdempotencyStore>,
    /// Time.
    pub clock: Arc<dyn Clock>,
    /// Paths it applies to.
    pub paths: Vec<&'static str>,
    /// Replay window.
    pub ttl: chrono::Duration,
    /// In-flight reservation.
    pub in_flight: chrono::Duration,
}

impl<E: Endpoint> Middleware<E> for Idempotency {
    type Output = IdempotencyEndpoint<E>;
    fn transform(&self, ep: E) -> Self::Output {
        IdempotencyEndpoint {
            inner: ep,
            store: self.store.clone(),
            clock: self.clock.clone(),
            paths: self.paths.clone(),
            ttl: self.ttl,
            in_flight: self.in_flight,
        }
    }
}

/// Endpoint of [`Idempotency`].
pub struct IdempotencyEndpoint<E> {
    inner: E,
    store: Arc<dyn IdempotencyStore>,
    clock: Arc<dyn Clock>,
    paths: Vec<&'static str>,
    ttl: chrono::Duration,
    in_flight: chrono::Duration,
}

impl<E: Endpoint> Endpoint for IdempotencyEndpoint<E> {
    type Output = Response;
    async fn call(&self, req: Request) -> poem::Result<Response> {
        let applies = req.method() == Method::POST
            && self.paths.contains(&req.uri().path().trim_end_matches('/'));
        let key = req
            .headers()
            .get("x-idempotency")
            .map(|v| v.to_str().map(str::trim).map(str::to_owned));
        let tenant = match req.extensions().get::<AuthOutcome>() {
            Some(AuthOutcome(Ok(p))) => Some(p.tenant.clone()),
            _ => None,
        };
        let (Some(key), Some(tenant), true) = (key, tenant, applies) else {
            return Ok(self.inner.call(req).await?.into_response());
        };
        let key = match key {
            Ok(k) if !k.is_empty() && k.len() <= 255 => k,
            _ => {
                return Ok(error_response(
                    &AppError::new(
                        Code::BadRequest,
                        "X-Idempotency must be 1-255 visible ASCII characters",
                    )
                    .field("X-Idempotency", "invalid"),
                ));
            }
        };
        let scope = IdempotencyScope {
            tenant,
            operation: format!("POST {}", req.uri().path().trim_end_matches('/')),
            key,
        };
        let now = self.clock.now();
        match self.store.begin(&scope, now, now + self.in_flight).await {
            Ok(IdempotencyBegin::Completed(stored)) => {
                let mut resp = Response::builder()
                    .status(StatusCode::from_u16(stored.status).unwrap_or(StatusCode::OK))
                    .content_type(stored.content_type)
                    .body(stored.body);
                resp.headers_mut()
                    .insert("x-idempotency-replayed", HeaderValue::from_static("true"));
                return Ok(resp);
            }
            Ok(IdempotencyBegin::InFlight) => {
                return Ok(error_response(&AppError::new(
                    Code::IdempotencyInFlight,
                    "a request with this X-Idempotency key is still being processed; retry later",
                )));
            }
            Ok(IdempotencyBegin::Started) => {}
            Err(e) => {
                tracing::error!(error = %e, "idempotency store unavailable");
                return Ok(error_response(&AppError::new(
                    Code::ServiceUnavailable,
                    "the idempotency store is unavailable; retry later",
                )));
            }
        }
        let resp = match self.inner.call(req).await {
            Ok(r) => r.into_response(),
            Err(e) => super::error::normalize_error(e).await,
        };
        if resp.status().is_success() {
            let status = resp.status();
            let headers = resp.headers().clone();
            let content_type = resp.content_type().unwrap_or("application/json").to_owned();
            let body = resp.into_body().into_vec().await.unwrap_or_default();
            let stored = StoredResponse {
                status: status.as_u16(),
                content_type,
                body: body.clone(),
            };
            if let Err(e) = self
                .store
                .complete(&scope, stored, self.clock.now() + self.ttl)
                .await
            {
                tracing::error!(error = %e, "could not record an idempotent response; a replay will run again");
            }
            let mut rebuilt = Response::builder().status(status).body(body);
            *rebuilt.headers_mut() = headers;
            Ok(rebuilt)
        } else {
            if let Err(e) = self.store.release(&scope).await {
                tracing::warn!(error = %e, "could not release an idempotency key; it expires with its reservation");
            }
            Ok(resp)
        }
    }
}

/// Counts requests and their latency by method, normalized route and status.
pub struct Metrics(pub Arc<HttpMetrics>);

impl<E: Endpoint> Middleware<E> for Metrics {
    type Output = MetricsEndpoint<E>;
    fn transform(&self, ep: E) -> Self::Output {
        MetricsEndpoint {
            inner: ep,
            metrics: self.0.clone(),
        }
    }
}

/// Endpoint of [`Metrics`].
pub struct MetricsEndpoint<E> {
    inner: E,
    metrics: Arc<HttpMetrics>,
}

/// Replaces id-like path segments with `{id}` to bound label cardinality.
pub fn route_label(path: &str) -> String {
    if !(path.starts_with("/v1/")
        || matches!(path, "/health" | "/readyz" | "/version" | "/metrics"))
    {
        return "other".into();
    }
    path.split('/')
        .map(|seg| {
            if uuid::Uuid::parse_str(seg).is_ok() || seg.len() > 40 {
                "{id}"
            } else {
                seg
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

impl<E: Endpoint> Endpoint for MetricsEndpoint<E> {
    type Output = Response;
    async fn call(&self, req: Request) -> poem::Result<Response> {
        let start = Instant::now();
        let method = req.method().to_string();
        let route = route_label(req.uri().path());
        let resp = match self.inner.call(req).await {
            Ok(r) => r.into_response(),
            Err(e) => e.into_response(),
        };
        self.metrics.observe(
            &method,
            &route,
            resp.status().as_u16(),
            start.elapsed().as_secs_f64(),
        );
        Ok(resp)
    }
}
