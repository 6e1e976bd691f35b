//! The request's way in and out, in one endpoint (the outermost but the panic catcher): its
//! correlation id and tracing span, its metrics, and the reference's security headers on every
//! response.
use crate::telemetry::HttpMetrics;
use poem::http::{HeaderMap, HeaderName, HeaderValue, header};
use poem::{Endpoint, IntoResponse, Middleware, Request, Response};
use std::sync::Arc;
use std::time::Instant;
use tracing::Instrument;

/// Assigns (or echoes) `X-Request-Id`, traces and counts the request, adds the security
/// headers (see the module docs).
pub struct Edge(pub Arc<HttpMetrics>);

impl<E: Endpoint> Middleware<E> for Edge {
    type Output = EdgeEndpoint<E>;
    fn transform(&self, inner: E) -> Self::Output {
        EdgeEndpoint {
            inner,
            metrics: self.0.clone(),
        }
    }
}

/// Endpoint of [`Edge`].
pub struct EdgeEndpoint<E> {
    inner: E,
    metrics: Arc<HttpMetrics>,
}

/// `X-Request-Id`.
const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The reference's security headers, on every response (standard names: nothing is parsed
/// per response).
const SECURITY_HEADERS: [(HeaderName, &str); 5] = [
    (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    (header::X_FRAME_OPTIONS, "DENY"),
    (header::X_XSS_PROTECTION, "0"),
    (
        header::STRICT_TRANSPORT_SECURITY,
        "max-age=31536000; includeSubDomains",
    ),
    (header::REFERRER_POLICY, "no-referrer"),
];

/// The request's correlation id: the client's `X-Request-Id` when it follows the rule
/// (`headers::client_request_id`), else a fresh UUIDv7. Handlers read it from the request's
/// data; it is echoed in the response and carried to report jobs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(pub String);

/// Adds the security headers and `X-Request-Id: id` to a response's headers.
fn harden(h: &mut HeaderMap, id: &str) {
    h.reserve(SECURITY_HEADERS.len() + 1);
    for (name, value) in SECURITY_HEADERS {
        h.insert(name, HeaderValue::from_static(value));
    }
    if let Ok(v) = HeaderValue::from_str(id) {
        h.insert(X_REQUEST_ID, v);
    }
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

impl<E: Endpoint> Endpoint for EdgeEndpoint<E> {
    type Output = Response;
    async fn call(&self, mut req: Request) -> poem::Result<Response> {
        let start = Instant::now();
        let id = super::headers::client_request_id(&req)
            .map_or_else(super::headers::fresh_request_id, str::to_owned);
        let method = req.method().clone();
        let route = route_label(req.uri().path());
        let span = tracing::info_span!("http", request_id = %id, method = %method, path = %req.uri().path());
        req.extensions_mut().insert(RequestId(id.clone()));
        // `instrument`, not `enter`: an entered guard held across an await would attach this
        // span to whatever else runs on the thread meanwhile.
        let mut resp = match self.inner.call(req).instrument(span).await {
            Ok(r) => r.into_response(),
            Err(e) => e.into_response(),
        };
        self.metrics.observe(
            method.as_str(),
            &route,
            resp.status().as_str(),
            start.elapsed().as_secs_f64(),
        );
        harden(resp.headers_mut(), &id);
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
