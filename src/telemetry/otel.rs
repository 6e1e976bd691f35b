//! OpenTelemetry export (ENABLE_TELEMETRY): the tracer and meter providers, their OTLP
//! exporters (gRPC or HTTP/protobuf), and the switch every instrumented place reads.
//!
//! Off (the default) installs nothing: [`enabled`] answers `false`, no layer joins the
//! subscriber and no trace context is read or written anywhere.
use super::encoding_processor::{EncodingProcessor, Limits};
use super::span_sink::{Processor, SpanSink};
use crate::config::{OtlpProtocol, TelemetrySettings};
use opentelemetry::KeyValue;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig, WithTonicConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use std::sync::OnceLock;
use std::time::Duration;

/// The running export, once [`start`] succeeded.
struct State {
    trust_incoming: bool,
    spans: SpanSink,
    meter: SdkMeterProvider,
    scope: String,
    metric_interval: Duration,
}

static STATE: OnceLock<State> = OnceLock::new();

/// True when telemetry is on: instrumented places MUST do no propagation work otherwise.
#[inline]
pub fn enabled() -> bool {
    STATE.get().is_some()
}

/// Where the service's spans start and end; `None` off.
pub fn spans() -> Option<&'static SpanSink> {
    STATE.get().map(|s| &s.spans)
}

/// True when an incoming `traceparent` continues the trace (`OTEL_TRUST_INCOMING_TRACEPARENT`).
pub fn trust_incoming() -> bool {
    STATE.get().is_some_and(|s| s.trust_incoming)
}

/// Exports `registry` over OTLP too (see `bridge`); nothing when telemetry is off. MUST run
/// inside the tokio runtime.
pub fn export_registry(registry: &prometheus::Registry) {
    if let Some(s) = STATE.get() {
        super::bridge::start(&s.meter, &s.scope, registry.clone(), s.metric_interval);
    }
}

/// Why the export could not start.
#[derive(Debug, thiserror::Error)]
pub enum OtelError {
    /// An exporter could not be built (bad endpoint, TLS setup).
    #[error("OTLP exporter: {0}")]
    Exporter(String),
}

/// Keeps the export alive; dropping it flushes and shuts it down (pending spans and a last
/// metrics export leave before the process exits).
pub struct OtelGuard {
    spans: &'static SpanSink,
    meter: SdkMeterProvider,
}

impl OtelGuard {
    /// The meter provider (the Prometheus bridge registers its instruments on it).
    pub fn meter_provider(&self) -> &SdkMeterProvider {
        &self.meter
    }
}

impl Drop for OtelGuard {
    fn drop(&mut self) {
        if let Err(e) = self.spans.shutdown(SHUTDOWN_TIMEOUT) {
            eprintln!("telemetry: span export shutdown: {e}");
        }
        if let Err(e) = self.meter.shutdown() {
            eprintln!("telemetry: metric export shutdown: {e}");
        }
    }
}

/// How long the span export's shutdown waits for the pending spans (the SDK's default).
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// Telemetry was started already in this process.
fn started_twice() -> OtelError {
    OtelError::Exporter("telemetry is already started in this process".into())
}

/// Builds the exporters, the span sink and the meter provider. MUST run inside the tokio
/// runtime (the exporters' connections live on it). Marks telemetry on for the whole
/// process; a second start is refused.
pub fn start(s: &TelemetrySettings) -> Result<(&'static SpanSink, OtelGuard), OtelError> {
    if enabled() {
        return Err(started_twice());
    }
    let resource = Resource::builder()
        .with_service_name(s.service_name.clone())
        .with_attributes([
            KeyValue::new("service.version", s.service_version.clone()),
            KeyValue::new("deployment.environment.name", s.environment.clone()),
        ])
        .build();
    let err = |e: opentelemetry_otlp::ExporterBuildError| OtelError::Exporter(e.to_string());
    // The span processor of the protocol: over gRPC the SDK's batch span processor and the
    // stock exporter; over HTTP/protobuf the service's own (spans encoded where they end).
    let (mut processor, metrics) = match s.protocol {
        OtlpProtocol::Grpc => {
            let tls = || {
                opentelemetry_otlp::tonic_types::transport::ClientTlsConfig::new()
                    .with_webpki_roots()
            };
            let mut span = opentelemetry_otlp::SpanExporter::builder()
                .with_tonic()
                .with_endpoint(s.endpoint.clone());
            let mut metric = opentelemetry_otlp::MetricExporter::builder()
                .with_tonic()
                .with_endpoint(s.endpoint.clone());
            if !s.plaintext() {
                span = span.with_tls_config(tls());
                metric = metric.with_tls_config(tls());
            }
            (
                Processor::Sdk(Box::new(batch(span.build().map_err(err)?))),
                metric.build().map_err(err)?,
            )
        }
        OtlpProtocol::HttpProtobuf => {
            let client =
                super::otlp_http::Client::new().map_err(|e| OtelError::Exporter(e.to_string()))?;
            let span = EncodingProcessor::start(
                super::span_export::HttpSpanExport::new(
                    client.clone(),
                    format!("{}/v1/traces", s.endpoint),
                ),
                Limits::from_env(EXPORT_QUEUE, EXPORT_BATCH),
            )
            .map_err(|e| OtelError::Exporter(e.to_string()))?;
            let metric = opentelemetry_otlp::MetricExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_http_client(client)
                .with_endpoint(format!("{}/v1/metrics", s.endpoint))
                .build()
                .map_err(err)?;
            (Processor::Encoding(span), metric)
        }
    };
    processor.set_resource(&resource);
    let meter_provider = SdkMeterProvider::builder()
        .with_resource(resource)
        .with_reader(
            PeriodicReader::builder(metrics)
                .with_interval(s.metric_interval)
                .build(),
        )
        .build();
    // Every span carries a copy of its scope: spelled once for the process (`start` runs
    // once), the copy allocates nothing per span (and the exporter frees nothing).
    let library: &'static str = Box::leak(s.library_name.clone().into_boxed_str());
    let version: &'static str = Box::leak(s.service_version.clone().into_boxed_str());
    let scope = opentelemetry::InstrumentationScope::builder(library)
        .with_version(version)
        .build();
    // The sampler the standard variables configure (`OTEL_TRACES_SAMPLER`, `_ARG`), read by
    // the SDK's configuration.
    let config = opentelemetry_sdk::trace::Config::default();
    let spans = SpanSink::new(processor, config.sampler, scope)
        .with_max_attributes(config.span_limits.max_attributes_per_span);
    STATE
        .set(State {
            trust_incoming: s.trust_incoming_traceparent,
            spans,
            meter: meter_provider.clone(),
            scope: s.library_name.clone(),
            metric_interval: s.metric_interval,
        })
        .map_err(|_| started_twice())?;
    let spans = &STATE.get().ok_or_else(started_twice)?.spans;
    Ok((
        spans,
        OtelGuard {
            spans,
            meter: meter_provider,
        },
    ))
}

/// Spans per export unless `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` says otherwise (the SDK's
/// default is 512), over either protocol. Measured with `reporter-bench --only telemetry-cost` (P3, two spans a
/// request): 2048 cut the service's CPU per request by about a quarter against 512, and 8192
/// did no better.
pub const EXPORT_BATCH: usize = 2048;

/// Spans waiting for export unless `OTEL_BSP_MAX_QUEUE_SIZE` says otherwise (the SDK's
/// default is 2048): four batches, so that spans keep queueing while one is exported. Past it
/// new spans are dropped; at most a few MiB are held.
pub const EXPORT_QUEUE: usize = 4 * EXPORT_BATCH;

/// The (gRPC) batch span processor's settings: the standard `OTEL_BSP_*` variables (read by the
/// SDK), else [`EXPORT_BATCH`] and [`EXPORT_QUEUE`] and the SDK's defaults (an export every
/// 5 s when no batch fills up, 30 s per export at most).
fn batch_config() -> opentelemetry_sdk::trace::BatchConfig {
    let set = |var: &str| std::env::var_os(var).is_some();
    let mut config = opentelemetry_sdk::trace::BatchConfigBuilder::default();
    if !set("OTEL_BSP_MAX_EXPORT_BATCH_SIZE") {
        config = config.with_max_export_batch_size(EXPORT_BATCH);
    }
    if !set("OTEL_BSP_MAX_QUEUE_SIZE") {
        config = config.with_max_queue_size(EXPORT_QUEUE);
    }
    config.build()
}

/// The batch span processor of `exporter`, with [`batch_config`].
fn batch<E>(exporter: E) -> opentelemetry_sdk::trace::BatchSpanProcessor
where
    E: opentelemetry_sdk::trace::SpanExporter + 'static,
{
    opentelemetry_sdk::trace::BatchSpanProcessor::builder(exporter)
        .with_batch_config(batch_config())
        .build()
}

/// How long the exporters wait for their collector per export.
pub const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
