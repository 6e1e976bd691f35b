//! The server span of one HTTP request, started by the edge rather than through `tracing`
//! (its attributes come from the request, not from a span's fields). The request's future
//! runs with it as the [`ambient`](super::ambient) context, so the spans the request opens
//! (use cases, jobs, renders) are its children.
use super::encoded_attributes::EncodedAttributes;
use super::fixed_attributes::FixedAttributes;
use super::otel::{spans, trust_incoming};
use super::otlp_body::Scalar;
use super::span_record::SpanRecord;
use super::span_sink::{Parent, SpanSink};
use opentelemetry::KeyValue;
use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status, TraceId};
use poem::http::HeaderName;
use reporter_ports::TraceCarrier;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};

/// What a request's server span shares with every other of its method, route, scheme and
/// protocol version, spelled and encoded once (see [`spelled`]).
#[derive(Debug)]
struct Spelled {
    method: &'static str,
    scheme: &'static str,
    version: &'static str,
    /// `"<method> <route>"`.
    name: &'static str,
    /// `http.request.method`, `http.route`, `url.scheme`, `network.protocol.version`.
    fixed: &'static FixedAttributes,
}

/// Per route, what its requests' server spans share (hashed with foldhash: SipHash cost a
/// request about 300 instructions here).
type Names = HashMap<Box<str>, Vec<&'static Spelled>, foldhash::fast::RandomState>;

/// The incoming trace context's headers, spelled once: a name given as text is parsed (and
/// checked) on every lookup.
static TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
static TRACESTATE: HeaderName = HeaderName::from_static("tracestate");

/// The span name `"<method> <route>"` and the fixed attributes of a request of `method`,
/// `route`, `scheme` and `version`, spelled once per combination and kept for the process:
/// all come from closed sets (the method and route labels of the metrics, two schemes, three
/// versions), so the combinations are bounded, and no request allocates them (nor the
/// exporter frees them).
fn spelled(
    method: &'static str,
    route: &str,
    scheme: &'static str,
    version: &'static str,
) -> &'static Spelled {
    static NAMES: OnceLock<RwLock<Names>> = OnceLock::new();
    let names = NAMES.get_or_init(Default::default);
    let this = |s: &Spelled| s.method == method && s.scheme == scheme && s.version == version;
    let known = names
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .get(route)
        .and_then(|all| all.iter().find(|s| this(s)).copied());
    if let Some(known) = known {
        return known;
    }
    let mut names = names.write().unwrap_or_else(|p| p.into_inner());
    let all = names.entry(Box::from(route)).or_default();
    if let Some(known) = all.iter().find(|s| this(s)) {
        return known;
    }
    let name: &'static str = Box::leak(format!("{method} {route}").into_boxed_str());
    let route: &'static str = &name[method.len() + 1..];
    let fixed = FixedAttributes::new(vec![
        KeyValue::new("http.request.method", method),
        KeyValue::new("http.route", route),
        KeyValue::new("url.scheme", scheme),
        KeyValue::new("network.protocol.version", version),
    ]);
    let new: &'static Spelled = Box::leak(Box::new(Spelled {
        method,
        scheme,
        version,
        name,
        fixed: Box::leak(Box::new(fixed)),
    }));
    all.push(new);
    new
}

/// The attribute of the response's status code.
const STATUS_CODE: &str = "http.response.status_code";

/// The bytes of the status code's encoded attribute: key, its header, and a value of up to
/// 3 bytes with its headers.
const STATUS_CODE_BYTES: usize = STATUS_CODE.len() + 12;

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
        let spelled = spelled(method, route, scheme, version);
        // Room for the status code `end` adds (no reallocation per request).
        let mut record = sink.start(
            parent,
            Cow::Borrowed(spelled.name),
            SpanKind::Server,
            EncodedAttributes::with_capacity(STATUS_CODE_BYTES),
        );
        record.fixed = Some(spelled.fixed);
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
        self.record
            .encoded
            .push_scalar(STATUS_CODE, Scalar::I64(i64::from(status)));
        if status >= 500 {
            self.record.status = Status::error("");
        }
        self.sink.end(self.record);
    }
}

#[cfg(test)]
mod tests {
    use super::spelled;
    use opentelemetry::KeyValue;

    #[test]
    fn names_and_attributes_are_spelled_once_per_combination() {
        let get = spelled("GET", "/v1/templates/{id}", "http", "1.1");
        assert_eq!(get.name, "GET /v1/templates/{id}");
        assert_eq!(
            get.fixed.attributes(),
            [
                KeyValue::new("http.request.method", "GET"),
                KeyValue::new("http.route", "/v1/templates/{id}"),
                KeyValue::new("url.scheme", "http"),
                KeyValue::new("network.protocol.version", "1.1"),
            ]
        );
        let again = spelled("GET", &String::from("/v1/templates/{id}"), "http", "1.1");
        assert!(std::ptr::eq(get, again), "the same spelling is reused");
        let h2 = spelled("GET", "/v1/templates/{id}", "https", "2");
        assert_eq!(h2.name, get.name);
        assert_eq!(
            h2.fixed.attributes()[2..],
            [
                KeyValue::new("url.scheme", "https"),
                KeyValue::new("network.protocol.version", "2"),
            ]
        );
        assert_eq!(
            spelled("DELETE", "/v1/templates/{id}", "http", "1.1").name,
            "DELETE /v1/templates/{id}"
        );
        assert_eq!(
            spelled("other", "unmatched", "http", "1.1").name,
            "other unmatched"
        );
    }
}
