//! The request's way in and out, in one endpoint (the outermost but the panic catcher): its
//! correlation id and tracing span, its metrics, and the reference's security headers on every
//! response.
use super::query::QueryContract;
use crate::telemetry::HttpMetrics;
use poem::http::{HeaderMap, HeaderName, HeaderValue, Method, header};
use poem::{Endpoint, IntoResponse, Middleware, Request, Response};
use std::sync::Arc;
use std::time::Instant;
use tracing::Instrument;

/// Assigns (or echoes) `X-Request-Id`, traces and counts the request, adds the security
/// headers (see the module docs).
pub struct Edge {
    /// Where requests are counted.
    pub metrics: Arc<HttpMetrics>,
    /// The API's routes, for the route label.
    pub contract: Arc<QueryContract>,
}

impl<E: Endpoint> Middleware<E> for Edge {
    type Output = EdgeEndpoint<E>;
    fn transform(&self, inner: E) -> Self::Output {
        EdgeEndpoint {
            inner,
            metrics: self.metrics.clone(),
            contract: self.contract.clone(),
        }
    }
}

/// Endpoint of [`Edge`].
pub struct EdgeEndpoint<E> {
    inner: E,
    metrics: Arc<HttpMetrics>,
    contract: Arc<QueryContract>,
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

/// Adds the security headers and `X-Request-Id: id` (when the id is a valid header value) to
/// a response's headers.
fn harden(h: &mut HeaderMap, id: Option<HeaderValue>) {
    h.reserve(SECURITY_HEADERS.len() + 1);
    for (name, value) in SECURITY_HEADERS {
        h.insert(name, HeaderValue::from_static(value));
    }
    if let Some(v) = id {
        h.insert(X_REQUEST_ID, v);
    }
}

/// The route label of a request to `path`: the API route it resolves to as the document
/// spells it (`/v1/templates/{id}`), the ops route it names, else `unmatched`. Every value
/// comes from a closed set, so no client can create a metric series by inventing paths.
pub fn route_label<'a>(contract: &'a QueryContract, path: &str) -> &'a str {
    route_of(contract, path).1
}

/// The labels of the routes outside the API's document, in their [`route_of`] order.
const OTHER_ROUTES: [&str; 6] = [
    "/metrics",
    "/openapi.json",
    "/openapi.yaml",
    "/swagger",
    "/console",
    UNMATCHED,
];

/// The route of a request to `path`: its place among the routes (the document's, in the
/// contract's order, then [`OTHER_ROUTES`]) and its label ([`route_label`]).
fn route_of<'a>(contract: &'a QueryContract, path: &str) -> (usize, &'a str) {
    if let Some((index, template)) = contract.route_index(path) {
        return (index, template);
    }
    let other = match path {
        "/metrics" => 0,
        "/openapi.json" => 1,
        "/openapi.yaml" => 2,
        _ if super::ops_or_api::is_swagger(path) => 3,
        _ if super::console::is_console(path) => 4,
        _ => 5,
    };
    (contract.route_count() + other, OTHER_ROUTES[other])
}

/// The route label of a path no route serves.
pub const UNMATCHED: &str = "unmatched";

/// The method labels: the standard methods' names, then `other` (a client may send any token
/// as its method).
const METHOD_LABELS: [&str; 10] = [
    "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT", "other",
];

/// The place of `method`'s label in [`METHOD_LABELS`].
fn method_index(method: &Method) -> usize {
    const KNOWN: [Method; 9] = [
        Method::GET,
        Method::HEAD,
        Method::POST,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
        Method::OPTIONS,
        Method::TRACE,
        Method::CONNECT,
    ];
    KNOWN
        .iter()
        .position(|m| m == method)
        .unwrap_or(KNOWN.len())
}

/// The method label: a standard method's name, else `other` (a client may send any token as
/// its method).
pub fn method_label(method: &Method) -> &'static str {
    METHOD_LABELS[method_index(method)]
}

/// The metric slots of the requests to `contract`'s routes (see [`metrics_slot`]).
pub fn metrics_slots(contract: &QueryContract) -> usize {
    (contract.route_count() + OTHER_ROUTES.len()) * METHOD_LABELS.len()
}

/// The [`HttpMetrics`] slot of a request's method (its [`METHOD_LABELS`] index) and route
/// (its [`route_of`] index): one per pair.
fn metrics_slot(method: usize, route: usize) -> usize {
    route * METHOD_LABELS.len() + method
}

/// The name of a request's `tracing` span (its log lines' `request_id`, `method`, `path`, and
/// with telemetry on `trace_id` / `span_id`). It is no OpenTelemetry span: the server span is
/// [`ServerSpan`](crate::telemetry::server_span::ServerSpan).
pub const REQUEST_SPAN: &str = "http";

/// The target of the request's `tracing` span (this module).
pub const REQUEST_SPAN_TARGET: &str = module_path!();

/// The request's OpenTelemetry server span (telemetry on; see
/// [`ServerSpan::start`](crate::telemetry::server_span::ServerSpan::start)).
fn server_span(
    req: &Request,
    (method_index, method): (usize, &'static str),
    (route_index, route): (usize, &str),
) -> Option<crate::telemetry::server_span::ServerSpan> {
    let scheme = match req.uri().scheme_str() {
        Some("https") => "https",
        _ => "http",
    };
    let version = match req.version() {
        poem::http::Version::HTTP_2 => "2",
        poem::http::Version::HTTP_10 => "1.0",
        _ => "1.1",
    };
    let spelling = crate::telemetry::server_span::Spelling {
        method,
        route,
        key: route_index * METHOD_LABELS.len() + method_index,
        scheme,
        version,
    };
    crate::telemetry::server_span::ServerSpan::start(spelling, |name| {
        req.headers().get(name).and_then(|v| v.to_str().ok())
    })
}

impl<E: Endpoint> Endpoint for EdgeEndpoint<E> {
    type Output = Response;
    async fn call(&self, mut req: Request) -> poem::Result<Response> {
        let start = Instant::now();
        let id = super::headers::client_request_id(&req)
            .map_or_else(super::headers::fresh_request_id, str::to_owned);
        let method_index = method_index(req.method());
        let method = METHOD_LABELS[method_index];
        let (route_index, route) = route_of(&self.contract, req.uri().path());
        let server = server_span(&req, (method_index, method), (route_index, route));
        let span = tracing::info_span!(
            target: REQUEST_SPAN_TARGET,
            REQUEST_SPAN,
            request_id = %id,
            method = %method,
            path = %req.uri().path(),
            trace_id = tracing::field::Empty,
            span_id = tracing::field::Empty,
        );
        if let Some(server) = &server
            && !span.is_disabled()
        {
            let (trace_id, span_id) = server.ids();
            span.record("trace_id", tracing::field::display(trace_id));
            span.record("span_id", tracing::field::display(span_id));
        }
        // The header value now, so that the id itself moves into the request's data.
        let id_header = HeaderValue::from_str(&id).ok();
        req.extensions_mut().insert(RequestId(id));
        // `instrument`, not `enter`: an entered guard held across an await would attach this
        // span to whatever else runs on the thread meanwhile. The server span is the ambient
        // context of every poll the same way, so the spans the request opens are its children.
        let answer = crate::telemetry::ambient::in_context(
            server.as_ref().map(|s| s.context().clone()),
            self.inner.call(req).instrument(span),
        )
        .await;
        let mut resp = match answer {
            Ok(r) => r.into_response(),
            Err(e) => e.into_response(),
        };
        if let Some(server) = server {
            server.end(resp.status().as_u16());
        }
        self.metrics.observe(
            metrics_slot(method_index, route_index),
            method,
            route,
            resp.status(),
            start.elapsed().as_secs_f64(),
        );
        harden(resp.headers_mut(), id_header);
        Ok(resp)
    }
}

#[cfg(test)]
mod tests {
    use super::{QueryContract, UNMATCHED, method_label, route_label};
    use poem::http::Method;

    fn contract() -> QueryContract {
        QueryContract::from_spec(&crate::http::spec::raw())
    }

    #[test]
    fn route_labels_are_the_documents_routes() {
        let c = contract();
        assert_eq!(
            route_label(&c, "/v1/templates/019826f4-6a9c-7b31-9d40-2f1e8c5a4b77"),
            "/v1/templates/{id}"
        );
        assert_eq!(
            route_label(&c, "/v1/reports/anything/download"),
            "/v1/reports/{id}/download"
        );
        assert_eq!(route_label(&c, "/v1/templates"), "/v1/templates");
        assert_eq!(
            route_label(&c, "/v1/deadlines/notifications"),
            "/v1/deadlines/notifications"
        );
        for ops in [
            "/health",
            "/readyz",
            "/version",
            "/metrics",
            "/openapi.json",
        ] {
            assert_eq!(route_label(&c, ops), ops);
        }
        assert_eq!(route_label(&c, "/swagger/"), "/swagger");
    }

    #[test]
    fn paths_no_route_serves_share_one_label() {
        let c = contract();
        for path in [
            "/wp-admin",
            "/v1/x",
            "/v1/templates/a/b/c",
            "/v1/templates/not-a-uuid-but-thirty-six-chars-long!",
            &format!("/v1/7/{}", vec!["a".repeat(39); 195].join("/")),
            "/metrics/",
            "/",
        ] {
            let label = route_label(&c, path);
            assert!(
                label == UNMATCHED || label.starts_with("/v1/templates/{"),
                "{path}: {label}"
            );
        }
        assert_eq!(route_label(&c, "/v1/x/y"), UNMATCHED);
    }

    #[test]
    fn extension_methods_share_one_label() {
        assert_eq!(method_label(&Method::GET), "GET");
        assert_eq!(method_label(&Method::PATCH), "PATCH");
        let invented = Method::from_bytes(b"FOOBAR").expect("a method token");
        assert_eq!(method_label(&invented), "other");
    }
}
