//! Cross-cutting HTTP behaviour: security headers, request ids, body limits and request
//! metrics.
use super::error::error_response;
use crate::app::{AppError, Code};
use crate::telemetry::HttpMetrics;
use poem::http::{HeaderValue, Method};
use poem::{Body, Endpoint, IntoResponse, Middleware, Request, Response};
use std::sync::Arc;
use std::time::Instant;
use tracing::Instrument;

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

/// The request's correlation id: the client's `X-Request-Id` when it follows the rule
/// (`headers::client_request_id`), else a fresh UUIDv7. Handlers read it from the request's
/// data; it is echoed in the response and carried to report jobs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(pub String);

impl<E: Endpoint> Endpoint for HardeningEndpoint<E> {
    type Output = Response;
    async fn call(&self, mut req: Request) -> poem::Result<Response> {
        let id = super::headers::client_request_id(&req)
            .map(str::to_owned)
            .unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
        req.extensions_mut().insert(RequestId(id.clone()));
        let span = tracing::info_span!("http", request_id = %id, method = %req.method(), path = %req.uri().path());
        // `instrument`, not `enter`: an entered guard held across an await would attach this
        // span to whatever else runs on the thread meanwhile.
        let mut resp = match self.0.call(req).instrument(span).await {
            Ok(r) => r.into_response(),
            Err(e) => e.into_response(),
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
        // Only the methods whose operations read a body are bounded (and can answer 413); a
        // body sent with another method is never read.
        if matches!(*req.method(), Method::POST | Method::PUT | Method::PATCH) {
            let declared = req
                .headers()
                .get("content-length")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
            if declared.is_some_and(|n| n > self.limit as u64) {
                return Ok(too_large());
            }
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

/// Replaces id-like path segments (a UUID, or longer than 40 bytes) with `{id}` to bound label
/// cardinality; paths outside the API and the ops routes are `other`.
pub fn route_label(path: &str) -> String {
    if !(path.starts_with("/v1/")
        || matches!(path, "/health" | "/readyz" | "/version" | "/metrics"))
    {
        return "other".into();
    }
    let mut label = String::with_capacity(path.len());
    for (i, seg) in path.split('/').enumerate() {
        if i > 0 {
            label.push('/');
        }
        let id_like = seg.len() > 40 || uuid::Uuid::parse_str(seg).is_ok();
        label.push_str(if id_like { "{id}" } else { seg });
    }
    label
}

impl<E: Endpoint> Endpoint for MetricsEndpoint<E> {
    type Output = Response;
    async fn call(&self, req: Request) -> poem::Result<Response> {
        let start = Instant::now();
        let method = req.method().clone();
        let route = route_label(req.uri().path());
        let resp = match self.inner.call(req).await {
            Ok(r) => r.into_response(),
            Err(e) => e.into_response(),
        };
        self.metrics.observe(
            method.as_str(),
            &route,
            resp.status().as_str(),
            start.elapsed().as_secs_f64(),
        );
        Ok(resp)
    }
}

#[cfg(test)]
mod tests {
    use super::route_label;

    #[test]
    fn route_labels_hide_ids_and_bound_other_paths() {
        assert_eq!(
            route_label("/v1/templates/019826f4-6a9c-7b31-9d40-2f1e8c5a4b77"),
            "/v1/templates/{id}"
        );
        assert_eq!(
            route_label("/v1/reports/019826f4-6a9c-7b31-9d40-2f1e8c5a4b77/download"),
            "/v1/reports/{id}/download"
        );
        assert_eq!(
            route_label(&format!("/v1/x/{}", "a".repeat(41))),
            "/v1/x/{id}"
        );
        assert_eq!(
            route_label("/v1/templates/019826f46a9c7b319d402f1e8c5a4b77"),
            "/v1/templates/{id}",
            "a UUID in its simple form is an id too"
        );
        assert_eq!(route_label("/v1/templates"), "/v1/templates");
        assert_eq!(route_label("/health"), "/health");
        assert_eq!(route_label("/wp-admin"), "other");
        assert_eq!(
            route_label("/v1/templates/not-a-uuid-but-thirty-six-chars-long!"),
            "/v1/templates/not-a-uuid-but-thirty-six-chars-long!"
        );
    }
}
