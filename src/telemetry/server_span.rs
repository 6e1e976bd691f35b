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

impl Spelled {
    /// The route's label (the name after the method).
    fn route(&self) -> &str {
        self.name.get(self.method.len() + 1..).unwrap_or_default()
    }
}

/// Per route, what its requests' server spans share (hashed with foldhash: SipHash cost a
/// request about 300 instructions here).
type Names = HashMap<Box<str>, Vec<&'static Spelled>, foldhash::fast::RandomState>;

/// The incoming trace context's headers, spelled once: a name given as text is parsed (and
/// checked) on every lookup.
static TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
static TRACESTATE: HeaderName = HeaderName::from_static("tracestate");

/// What names a request's server span.
#[derive(Debug, Clone, Copy)]
pub struct Spelling<'a> {
    /// The method's label (a closed set).
    pub method: &'static str,
    /// The route's label (a closed set: the contract's routes and a few others).
    pub route: &'a str,
    /// A number the caller gives each (method, route) pair: the same for the same pair, small
    /// for the contract's pairs (the places of the two labels in their sets).
    pub key: usize,
    /// `http` or `https`.
    pub scheme: &'static str,
    /// `1.0`, `1.1` or `2`.
    pub version: &'static str,
}

/// The spellings found once, by slot ([`slot`]): a request reads its slot without a lock
/// (a lock's counter, shared by every request thread, moved between the cores each request).
static SLOTS: [OnceLock<&'static Spelled>; SLOT_COUNT] = [const { OnceLock::new() }; SLOT_COUNT];

/// Room for 400 (method, route) pairs of each scheme and version (the contract has about 60
/// routes; the methods' labels are 10); a pair past it is looked up in the map.
const SLOT_COUNT: usize = 400 * 6;

/// The slot of `s`: its key, scheme and version.
fn slot(s: &Spelling<'_>) -> usize {
    let scheme = usize::from(s.scheme == "https");
    let version = match s.version {
        "1.0" => 0,
        "2" => 2,
        _ => 1,
    };
    s.key.saturating_mul(6).saturating_add(scheme * 3 + version)
}

/// The span name `"<method> <route>"` and the fixed attributes of a request spelled `s`,
/// spelled once per combination and kept for the process: all come from closed sets (the
/// method and route labels of the metrics, two schemes, three versions), so the combinations
/// are bounded, and no request allocates them (nor the exporter frees them). Read from the
/// combination's slot; its first request (or a pair past the slots) looks it up in a map.
fn spelled(s: &Spelling<'_>) -> &'static Spelled {
    let at = SLOTS.get(slot(s));
    if let Some(known) = at.and_then(OnceLock::get)
        && known.route() == s.route
        && known.method == s.method
    {
        return known;
    }
    let found = spelled_in_map(s.method, s.route, s.scheme, s.version);
    if let Some(at) = at {
        let _ = at.set(found);
    }
    found
}

/// [`spelled`] looked up by the route's text.
fn spelled_in_map(
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
        spelling: Spelling<'_>,
        header: impl Fn(&HeaderName) -> Option<&'a str>,
    ) -> Option<Self> {
        let sink = spans()?;
        let remote = trust_incoming()
            .then(|| header(&TRACEPARENT))
            .flatten()
            .and_then(|tp| TraceCarrier::new(tp, header(&TRACESTATE)))
            .map(|c| super::context::parent_of(&c));
        let parent = remote.as_ref().map_or(Parent::Root, Parent::Remote);
        let spelled = spelled(&spelling);
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
    use super::{SLOT_COUNT, Spelling, spelled};
    use opentelemetry::KeyValue;

    /// The spelling of `method` `route` of key `key` over `scheme` and `version`.
    fn spelling<'a>(
        method: &'static str,
        route: &'a str,
        key: usize,
        scheme: &'static str,
        version: &'static str,
    ) -> Spelling<'a> {
        Spelling {
            method,
            route,
            key,
            scheme,
            version,
        }
    }

    #[test]
    fn names_and_attributes_are_spelled_once_per_combination() {
        let get = spelled(&spelling("GET", "/v1/templates/{id}", 7, "http", "1.1"));
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
        let again = spelled(&spelling(
            "GET",
            &String::from("/v1/templates/{id}"),
            7,
            "http",
            "1.1",
        ));
        assert!(std::ptr::eq(get, again), "the same spelling is reused");
        let h2 = spelled(&spelling("GET", "/v1/templates/{id}", 7, "https", "2"));
        assert_eq!(h2.name, get.name);
        assert_eq!(
            h2.fixed.attributes()[2..],
            [
                KeyValue::new("url.scheme", "https"),
                KeyValue::new("network.protocol.version", "2"),
            ]
        );
        assert_eq!(
            spelled(&spelling("DELETE", "/v1/templates/{id}", 8, "http", "1.1")).name,
            "DELETE /v1/templates/{id}"
        );
        assert_eq!(
            spelled(&spelling("other", "unmatched", SLOT_COUNT, "http", "1.1")).name,
            "other unmatched",
            "a key past the slots"
        );
    }

    /// A key given to another pair than its slot holds (two contracts in one process) gives
    /// that pair's own spelling.
    #[test]
    fn a_slot_holding_another_pair_is_not_taken_for_it() {
        let first = spelled(&spelling("GET", "/a", 11, "http", "1.1"));
        assert_eq!(first.name, "GET /a");
        assert_eq!(
            spelled(&spelling("GET", "/b", 11, "http", "1.1")).name,
            "GET /b"
        );
        assert_eq!(
            spelled(&spelling("PUT", "/a", 11, "http", "1.1")).name,
            "PUT /a"
        );
        let again = spelled(&spelling("GET", "/a", 11, "http", "1.1"));
        assert!(std::ptr::eq(first, again));
    }
}
