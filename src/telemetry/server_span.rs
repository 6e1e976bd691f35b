//! The server span of one HTTP request, started by the edge rather than through `tracing`
//! (its attributes come from the request, not from a span's fields). The request's future
//! runs with it as the [`ambient`](super::ambient) context, so the spans the request opens
//! (use cases, jobs, renders) are its children.
use super::otel::{spans, trust_incoming};
use super::span_record::SpanRecord;
use super::span_sink::{Parent, SpanSink};
use opentelemetry::KeyValue;
use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status, TraceId};
use poem::http::HeaderName;
use reporter_ports::TraceCarrier;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};

/// Span names already spelled: per route, per method `(method, "<method> <route>")` (hashed
/// with foldhash: SipHash cost a request about 300 instructions here).
type Names = HashMap<Box<str>, Vec<(&'static str, &'static str)>, foldhash::fast::RandomState>;

/// The incoming trace context's headers, spelled once: a name given as text is parsed (and
/// checked) on every lookup.
static TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
static TRACESTATE: HeaderName = HeaderName::from_static("tracestate");

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
    record: SpanRecord,
    sink: &'static SpanSink,
}

impl ServerSpan {
    /// Starts the server span of a request, named `"<method> <route>"` from the closed route
    /// set, with the semantic-convention attributes `http.request.method`, `http.route`,
    /// `url.scheme` and `network.protocol.version`. MUST NOT carry the path's values, the
    /// query, headers or the body. Continues an incoming `traceparent` / `tracestate` (read by
    /// `header`) when
    /// OTEL_TRUST_INCOMING_TRACEPARENT allows; else starts a new trace. `None` when off.
    pub fn start<'a>(
        method: &'static str,
        route: &str,
        scheme: &'static str,
        version: &'static str,
        header: impl Fn(&HeaderName) -> Option<&'a str>,
    ) -> Option<Self> {
        let sink = spans()?;
        let remote = trust_incoming()
            .then(|| header(&TRACEPARENT))
            .flatten()
            .and_then(|tp| TraceCarrier::new(tp, header(&TRACESTATE)))
            .map(|c| super::context::parent_of(&c));
        let parent = remote.as_ref().map_or(Parent::Root, Parent::Remote);
        let (name, route) = names(method, route);
        let record = sink.start(
            parent,
            Cow::Borrowed(name),
            SpanKind::Server,
            attributes(method, route, scheme, version),
        );
        Some(Self { record, sink })
    }

    /// This span's context.
    pub fn context(&self) -> &SpanContext {
        &self.record.context
    }

    /// `(trace_id, span_id)` for the log lines of the request; both print as lower-case hex
    /// (`Display`), so recording them allocates nothing.
    pub fn ids(&self) -> (TraceId, SpanId) {
        (self.context().trace_id(), self.context().span_id())
    }

    /// Ends the span with the response's status: `http.response.status_code`, and the span
    /// status `Error` for a 5xx (a 4xx is the client's error, not the server's).
    pub fn end(mut self, status: u16) {
        self.record.attributes.push(KeyValue::new(
            "http.response.status_code",
            i64::from(status),
        ));
        if status >= 500 {
            self.record.status = Status::error("");
        }
        self.sink.end(self.record);
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
