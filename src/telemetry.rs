//! Logging and Prometheus metrics.
use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry, TextEncoder,
};

/// lapin logs every `basic.return` as a warning; the publisher returns its own confirm
/// barriers on purpose (adapters/rabbitmq `confirms`) and logs the returned events itself, so
/// lapin's line is kept out unless a filter names the target.
const QUIET_LAPIN_RETURNS: &str = "lapin::returned_messages=error";

/// Installs the global tracing subscriber. Safe to call more than once (later calls are no-ops).
pub fn init_tracing(filter: &str, json: bool) {
    let directives = if filter.contains("lapin::returned_messages") {
        filter.to_owned()
    } else {
        format!("{filter},{QUIET_LAPIN_RETURNS}")
    };
    let filter = tracing_subscriber::EnvFilter::try_new(directives)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}

/// HTTP request metrics.
pub struct HttpMetrics {
    requests: IntCounterVec,
    latency: HistogramVec,
}

impl HttpMetrics {
    /// Registers the metrics in `registry`.
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
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
        Ok(Self { requests, latency })
    }

    /// Records one request.
    pub fn observe(&self, method: &str, route: &str, status: &str, seconds: f64) {
        self.requests
            .with_label_values(&[method, route, status])
            .inc();
        self.latency
            .with_label_values(&[method, route])
            .observe(seconds);
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
