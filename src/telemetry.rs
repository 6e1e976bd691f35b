//! Logging and Prometheus metrics, and OpenTelemetry export when ENABLE_TELEMETRY is on
//! (`otel`, `context`, `bridge`).
pub mod ambient;
pub mod bridge;
pub mod context;
pub mod encoded_attributes;
pub mod encoding_processor;
pub mod export_body;
pub mod fixed_attributes;
pub mod otel;
pub mod otlp_body;
pub mod otlp_http;
pub mod server_span;
pub mod span_export;
pub mod span_fields;
pub mod span_layer;
pub mod span_record;
pub mod span_sink;
pub mod use_case_span;

use poem::http::StatusCode;
use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, Opts, Registry,
    TextEncoder,
};
use std::sync::OnceLock;

/// lapin logs every `basic.return` as a warning; the publisher returns its own confirm
/// barriers on purpose (adapters/rabbitmq `confirms`) and logs the returned events itself, so
/// lapin's line is kept out unless a filter names the target.
const QUIET_LAPIN_RETURNS: &str = "lapin::returned_messages=error";

/// Installs the global tracing subscriber without telemetry (see [`init_observability`]).
pub fn init_tracing(filter: &str, json: bool) {
    let _ = init_observability(filter, json, &crate::config::TelemetrySettings::off());
}

/// Installs the global tracing subscriber. Safe to call more than once (later calls are no-ops).
/// With telemetry on it also starts the OTLP export (inside the tokio runtime) and joins the
/// OpenTelemetry layer to the subscriber; JSON logs then list their spans' fields (`spans`),
/// among them the `trace_id` and `span_id` of the request or job span they were logged in.
/// Off: nothing of OpenTelemetry runs.
pub fn init_observability(
    filter: &str,
    json: bool,
    telemetry: &crate::config::TelemetrySettings,
) -> Option<otel::OtelGuard> {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let directives = if filter.contains("lapin::returned_messages") {
        filter.to_owned()
    } else {
        format!("{filter},{QUIET_LAPIN_RETURNS}")
    };
    let filter = tracing_subscriber::EnvFilter::try_new(directives)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colours only on a terminal: a log file or a collector gets plain text (escape codes
    // there are noise), and no request pays for writing them into its spans' fields.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    if !telemetry.enabled {
        let builder = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(ansi)
            .with_writer(std::io::stderr);
        let _ = if json {
            builder.json().try_init()
        } else {
            builder.try_init()
        };
        return None;
    }
    let (sink, guard) = match otel::start(telemetry) {
        Ok(started) => started,
        Err(e) => {
            eprintln!("telemetry: {e}; continuing without export");
            return init_observability(
                &filter.to_string(),
                json,
                &crate::config::TelemetrySettings::off(),
            );
        }
    };
    use tracing_subscriber::Layer;
    // Spans go to OpenTelemetry whatever LOG_LEVEL says (it filters the log lines only), and
    // only Reporter's own: the exporters' HTTP/gRPC clients would otherwise trace themselves.
    // Spans only: a log line is not turned into a span event, so what a span carries is its
    // own fields (closed sets and ids), never a driver's error text or anything a log names.
    use tracing_subscriber::filter::FilterExt;
    // The request's `tracing` span only carries the log lines' fields: its server span is
    // built by the edge (`server_span`) and is the ambient context of the request's polls
    // (`ambient`), so it is no OpenTelemetry span here (nor, while no log wants it, a span at
    // all).
    let spans = tracing_subscriber::filter::Targets::new()
        .with_target("reporter", tracing::Level::INFO)
        .and(tracing_subscriber::filter::filter_fn(|meta| {
            meta.is_span()
                && !(meta.name() == crate::http::middleware::REQUEST_SPAN
                    && meta.target() == crate::http::middleware::REQUEST_SPAN_TARGET)
        }));
    // Per span, only what the span says: no source location, thread, target or busy/idle
    // timing attributes.
    let otel_layer = span_layer::SpanLayer::new(sink).with_filter(spans);
    // A use case's span (`info`) is recorded without `tracing` when the log filter cannot
    // enable it (`use_case_span`); said once this subscriber is the one installed.
    let logs_want_spans = may_enable_info_spans(&filter);
    let fmt = tracing_subscriber::fmt::layer()
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    let registry = tracing_subscriber::registry().with(otel_layer);
    let installed = if json {
        registry
            .with(
                fmt.json()
                    .with_current_span(true)
                    .with_span_list(true)
                    .with_filter(filter),
            )
            .try_init()
    } else {
        registry.with(fmt.with_filter(filter)).try_init()
    };
    if installed.is_ok() {
        use_case_span::set_logs_want_spans(logs_want_spans);
    }
    Some(guard)
}

/// True when `filter` may enable an `info` span of some target (or says nothing of its
/// levels).
fn may_enable_info_spans(filter: &tracing_subscriber::EnvFilter) -> bool {
    filter
        .max_level_hint()
        .is_none_or(|max| max >= tracing::level_filters::LevelFilter::INFO)
}

/// HTTP request metrics: `reporter_http_requests_total` (method, route, status) and
/// `reporter_http_request_duration_seconds` (method, route).
///
/// A request's series are found through a slot its caller names (a dense index of its method
/// and route, see [`Self::observe`]) instead of hashing the label strings on every request:
/// each slot resolves its histogram once, and its counters once per status, on first use. A
/// series appears in `/metrics` when its first request is observed, as with
/// `with_label_values` alone.
pub struct HttpMetrics {
    requests: IntCounterVec,
    latency: HistogramVec,
    /// The resolved series of each slot (`None` until the slot's first request).
    slots: Box<[OnceLock<SlotSeries>]>,
}

/// Statuses whose counter a slot keeps resolved; a slot that sees more statuses looks the
/// others up by their labels (correct, only slower).
const STATUSES_PER_SLOT: usize = 6;

/// The series of one (method, route) slot.
struct SlotSeries {
    latency: Histogram,
    /// Claimed in order, each by the first status that finds it empty.
    statuses: [OnceLock<(StatusCode, IntCounter)>; STATUSES_PER_SLOT],
}

impl HttpMetrics {
    /// Registers the metrics in `registry`, with `slots` slots for [`Self::observe`].
    pub fn register(registry: &Registry, slots: usize) -> Result<Self, prometheus::Error> {
        let requests = IntCounterVec::new(
            Opts::new(
                "reporter_http_requests_total",
                "HTTP requests by method, route and status",
            ),
            &["method", "route", "status"],
        )?;
        let latency = HistogramVec::new(
            HistogramOpts::new(
                "reporter_http_request_duration_seconds",
                "HTTP request latency by method and route",
            )
            .buckets(vec![
                0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
            ]),
            &["method", "route"],
        )?;
        registry.register(Box::new(requests.clone()))?;
        registry.register(Box::new(latency.clone()))?;
        Ok(Self {
            requests,
            latency,
            slots: (0..slots).map(|_| OnceLock::new()).collect(),
        })
    }

    /// Records one request of `method` on `route` answered `status` after `seconds`.
    /// `slot` MUST name the same (`method`, `route`) pair on every call (one slot per pair);
    /// a slot beyond those registered is recorded by its labels alone.
    pub fn observe(
        &self,
        slot: usize,
        method: &str,
        route: &str,
        status: StatusCode,
        seconds: f64,
    ) {
        let Some(cell) = self.slots.get(slot) else {
            self.requests
                .with_label_values(&[method, route, status.as_str()])
                .inc();
            self.latency
                .with_label_values(&[method, route])
                .observe(seconds);
            return;
        };
        let series = cell.get_or_init(|| SlotSeries {
            latency: self.latency.with_label_values(&[method, route]),
            statuses: Default::default(),
        });
        series.latency.observe(seconds);
        let resolved = series.statuses.iter().find_map(|claim| {
            let (claimed, counter) = claim.get_or_init(|| {
                let counter = self
                    .requests
                    .with_label_values(&[method, route, status.as_str()]);
                (status, counter)
            });
            (*claimed == status).then_some(counter)
        });
        match resolved {
            Some(counter) => counter.inc(),
            None => self
                .requests
                .with_label_values(&[method, route, status.as_str()])
                .inc(),
        }
    }
}

/// Renders a registry in the Prometheus text format.
pub fn render(registry: &Registry) -> String {
    let mut buf = Vec::new();
    if let Err(e) = TextEncoder::new().encode(&registry.gather(), &mut buf) {
        tracing::error!(error = %e, "metrics encoding failed");
    }
    String::from_utf8(buf).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::{HttpMetrics, STATUSES_PER_SLOT, render};
    use poem::http::StatusCode;
    use prometheus::Registry;

    /// What `/metrics` shows after the same requests are observed through `slots` slots.
    fn shown(slots: usize) -> String {
        let registry = Registry::new();
        let metrics = HttpMetrics::register(&registry, slots).expect("registered");
        let statuses = (0..STATUSES_PER_SLOT as u16 + 3)
            .map(|i| StatusCode::from_u16(200 + i).expect("a status"))
            .collect::<Vec<_>>();
        for (i, status) in statuses.iter().enumerate() {
            for _ in 0..=i {
                metrics.observe(0, "GET", "/v1/templates/{id}", *status, 0.003);
            }
            metrics.observe(1, "POST", "/v1/templates", StatusCode::CREATED, 0.02);
        }
        // A slot beyond those registered is recorded by its labels.
        metrics.observe(
            slots + 7,
            "other",
            "unmatched",
            StatusCode::NOT_FOUND,
            0.0001,
        );
        render(&registry)
    }

    #[test]
    fn slots_show_what_the_labels_alone_show() {
        let by_labels = shown(0);
        assert_eq!(shown(4), by_labels);
        assert!(
            by_labels.contains(
                r#"reporter_http_requests_total{method="GET",route="/v1/templates/{id}",status="208"} 9"#
            ),
            "{by_labels}"
        );
        assert!(by_labels.contains(r#"reporter_http_request_duration_seconds_count{method="POST",route="/v1/templates"} 9"#), "{by_labels}");
    }

    #[test]
    fn only_a_filter_below_info_everywhere_wants_no_info_span() {
        let wants = |d: &str| super::may_enable_info_spans(&tracing_subscriber::EnvFilter::new(d));
        assert!(!wants("error,lapin::returned_messages=error"));
        assert!(!wants("warn"));
        assert!(wants("info"));
        assert!(wants("debug"));
        assert!(wants("error,reporter::app=info"));
        assert!(wants("error,[get_template]=info"));
    }

    #[test]
    fn a_series_shows_once_its_first_request_is_observed() {
        let registry = Registry::new();
        let _metrics = HttpMetrics::register(&registry, 100).expect("registered");
        assert!(!render(&registry).contains("method="));
    }
}
