//! The server span of one HTTP request, built with the OpenTelemetry SDK directly rather than
//! through `tracing`: no `tracing` span registry entry, field visiting or per-poll enter/exit
//! bookkeeping is paid for it (issue 32: telemetry's cost per request). The spans below it
//! (use cases, jobs, renders) stay `tracing` spans and find it as their parent through the
//! OpenTelemetry context the request's future carries ([`ServerSpan::context`]).
use super::otel::{tracer, trust_incoming};
use opentelemetry::trace::{SpanId, SpanKind, Status, TraceContextExt as _, TraceId, Tracer as _};
use opentelemetry::{Context, KeyValue};
use reporter_ports::TraceCarrier;
use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};

/// Span names already spelled: per route, per method `(method, "<method> <route>")`.
type Names = HashMap<Box<str>, Vec<(&'static str, &'static str)>>;

/// The span name `"<method> <route>"` and the route, spelled once per pair and kept for the
/// process: both come from closed sets (the method and route labels of the metrics), so the
/// pairs are bounded, and no request allocates them (nor the exporter frees them).
fn names(method: &'static str, route: &str) -> (&'static str, &'static str) {
    static NAMES: OnceLock<RwLock<Names>> = OnceLock::new();
    let names = NAMES.get_or_init(Default::default);
    let route_of = |name: &'static str| -> &'static str { &name[method.len() + 1..] };
    let known = names
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .get(route)
        .and_then(|methods| methods.iter().find(|(m, _)| *m == method).map(|(_, n)| *n));
    if let Some(name) = known {
        return (name, route_of(name));
    }
    let mut names = names.write().unwrap_or_else(|p| p.into_inner());
    let methods = names.entry(Box::from(route)).or_default();
    let name = match methods.iter().find(|(m, _)| *m == method) {
        Some((_, name)) => *name,
        None => {
            let name: &'static str = Box::leak(format!("{method} {route}").into_boxed_str());
            methods.push((method, name));
            name
        }
    };
    (name, route_of(name))
}

/// The attributes known when the request starts, with room for the status code [`ServerSpan::end`]
/// adds (no reallocation per request).
fn attributes(
    method: &'static str,
    route: &'static str,
    scheme: &'static str,
    version: &'static str,
) -> Vec<KeyValue> {
    let mut attributes = Vec::with_capacity(5);
    attributes.extend([
        KeyValue::new("http.request.method", method),
        KeyValue::new("http.route", route),
        KeyValue::new("url.scheme", scheme),
        KeyValue::new("network.protocol.version", version),
    ]);
    attributes
}

/// A request's server span while the request runs (telemetry on).
pub struct ServerSpan {
    cx: Context,
}

impl ServerSpan {
    /// Starts the server span of a request, named `"<method> <route>"` from the closed route
    /// set, with the semantic-convention attributes `http.request.method`, `http.route`,
    /// `url.scheme` and `network.protocol.version`. MUST NOT carry the path's values, the
    /// query, headers or the body. Continues an incoming `traceparent` / `tracestate` (read by
    /// `header`, which MUST match names case-insensitively) when
    /// OTEL_TRUST_INCOMING_TRACEPARENT allows; else starts a new trace. `None` when off.
    pub fn start<'a>(
        method: &'static str,
        route: &str,
        scheme: &'static str,
        version: &'static str,
        header: impl Fn(&str) -> Option<&'a str>,
    ) -> Option<Self> {
        let tracer = tracer()?;
        let parent = trust_incoming()
            .then(|| header("traceparent"))
            .flatten()
            .and_then(|tp| TraceCarrier::new(tp, header("tracestate")))
            .map_or_else(Context::new, |c| super::context::parent_of(&c));
        let (name, route) = names(method, route);
        let span = tracer
            .span_builder(name)
            .with_kind(SpanKind::Server)
            .with_attributes(attributes(method, route, scheme, version))
            .start_with_context(tracer, &parent);
        Some(Self {
            cx: parent.with_span(span),
        })
    }

    /// The context whose active span is this one: the request's future MUST run inside it
    /// (`opentelemetry::context::FutureExt::with_context`) so the spans it opens are children.
    pub fn context(&self) -> &Context {
        &self.cx
    }

    /// `(trace_id, span_id)` for the log lines of the request; both print as lower-case hex
    /// (`Display`), so recording them allocates nothing.
    pub fn ids(&self) -> (TraceId, SpanId) {
        let span = self.cx.span();
        let sc = span.span_context();
        (sc.trace_id(), sc.span_id())
    }

    /// Ends the span with the response's status: `http.response.status_code`, and the span
    /// status `Error` for a 5xx (a 4xx is the client's error, not the server's).
    pub fn end(self, status: u16) {
        let span = self.cx.span();
        span.set_attribute(KeyValue::new(
            "http.response.status_code",
            i64::from(status),
        ));
        if status >= 500 {
            span.set_status(Status::error(""));
        }
        span.end();
    }
}

#[cfg(test)]
mod tests {
    use super::names;

    #[test]
    fn names_are_spelled_once_per_method_and_route() {
        let (name, route) = names("GET", "/v1/templates/{id}");
        assert_eq!(
            (name, route),
            ("GET /v1/templates/{id}", "/v1/templates/{id}")
        );
        let (again, _) = names("GET", &String::from("/v1/templates/{id}"));
        assert!(std::ptr::eq(name, again), "the same spelling is reused");
        assert_eq!(
            names("DELETE", "/v1/templates/{id}"),
            ("DELETE /v1/templates/{id}", "/v1/templates/{id}")
        );
        assert_eq!(
            names("other", "unmatched"),
            ("other unmatched", "unmatched")
        );
    }
}
