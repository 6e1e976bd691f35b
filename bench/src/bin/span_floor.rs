//! `span-floor`: the CPU the OpenTelemetry SDK itself takes per request of `telemetry-cost`
//! (issue 32), without HTTP, `tracing` or the service: one thread starts and ends the request's
//! two spans as Reporter does (the server span with its four attributes and the status code,
//! built in an OpenTelemetry context; the use-case span with its two string attributes,
//! child of it), through the batch span processor (batches of 2048, queue of 8192) into an
//! exporter that (a) drops each batch, (b) encodes it as the stock OTLP exporter does (the
//! generated message types, then prost), (c) encodes it with Reporter's direct encoder
//! (`reporter::telemetry::otlp_body`); and (d) through Reporter's own OTLP/HTTP span processor
//! instead (`reporter::telemetry::encoding_processor`: encoded on the ending thread, the
//! requests written and dropped). The figure is the process's CPU time (every thread, the
//! processors' included) per request: (a) is the SDK's floor, (b) − (a) and (c) − (a) the
//! encodings', (d) − (a) what the service's path costs over the floor. Usage:
//! `span-floor [requests]` (default 400,000).
//! Since 2026-12-06 the service no longer builds its spans through the SDK's tracer (its own
//! `tracing` layer, `reporter::telemetry::span_layer`, hands finished span data to the
//! processor), so (a) is the floor of the SDK path it replaced, kept for comparison.
use opentelemetry::trace::{SpanKind, TraceContextExt as _, Tracer as _, TracerProvider as _};
use opentelemetry::{Context, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, SpanData, SpanExporter,
};
use prost::Message as _;
use reporter::telemetry::encoding_processor::{EncodingProcessor, Export, Limits};
use reporter::telemetry::export_body::Body;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// What the exporter does with a batch; `Processor`: Reporter's OTLP/HTTP span processor
/// (`reporter::telemetry::encoding_processor`, spans encoded on the thread that ends them) in
/// place of the batch span processor, its requests counted and dropped.
#[derive(Debug, Clone, Copy)]
enum Mode {
    Drop,
    Stock,
    Direct,
    Processor,
}

/// Counts the processor's requests' bytes.
struct Counted {
    bytes: Arc<AtomicU64>,
}

impl Export for Counted {
    type Error = std::convert::Infallible;
    fn export(&mut self, body: Body) -> Result<(), Self::Error> {
        self.bytes
            .fetch_add(black_box(body).len() as u64, Ordering::Relaxed);
        Ok(())
    }
}

#[derive(Debug)]
struct Sink {
    mode: Mode,
    exported: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
    stock: ResourceAttributesWithSchema,
    direct: reporter::telemetry::otlp_body::EncodedResource,
}

impl SpanExporter for Sink {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.exported
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
        let len = match self.mode {
            Mode::Drop | Mode::Processor => 0,
            Mode::Stock => {
                let req = ExportTraceServiceRequest {
                    resource_spans: group_spans_by_resource_and_scope(batch, &self.stock),
                };
                black_box(req.encode_to_vec()).len()
            }
            Mode::Direct => black_box(reporter::telemetry::otlp_body::export_request(
                &batch,
                &self.direct,
            ))
            .len(),
        };
        self.bytes.fetch_add(len as u64, Ordering::Relaxed);
        Ok(())
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.stock = resource.into();
        self.direct = reporter::telemetry::otlp_body::resource(resource);
    }
}

/// The process's CPU time, every thread.
fn cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a pointer to a live timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Requests between two flushes: two spans each, half the queue.
const BURST: usize = 2048;

/// CPU ns per request, spans exported, bytes per span.
fn run(mode: Mode, requests: usize) -> (f64, u64, f64) {
    let exported = Arc::new(AtomicU64::new(0));
    let bytes = Arc::new(AtomicU64::new(0));
    let sink = Sink {
        mode,
        exported: exported.clone(),
        bytes: bytes.clone(),
        stock: ResourceAttributesWithSchema::default(),
        direct: Default::default(),
    };
    let provider = SdkTracerProvider::builder();
    let provider = if let Mode::Processor = mode {
        let processor = EncodingProcessor::start(
            Counted {
                bytes: bytes.clone(),
            },
            Limits::new(8192, 2048, Duration::from_secs(5)),
        )
        .expect("the export thread starts");
        provider.with_span_processor(processor)
    } else {
        provider.with_span_processor(
            BatchSpanProcessor::builder(sink)
                .with_batch_config(
                    BatchConfigBuilder::default()
                        .with_max_export_batch_size(2048)
                        .with_max_queue_size(8192)
                        .build(),
                )
                .build(),
        )
    };
    let provider = provider
        .with_resource(
            Resource::builder()
                .with_service_name("reporter")
                .with_attributes([
                    KeyValue::new("service.version", "0.1.0"),
                    KeyValue::new("deployment.environment.name", "bench"),
                ])
                .build(),
        )
        .build();
    let tracer = provider.tracer_with_scope(
        InstrumentationScope::builder("reporter")
            .with_version("0.1.0")
            .build(),
    );
    let one = |i: usize| {
        let server = tracer
            .span_builder("GET /v1/templates/{id}")
            .with_kind(SpanKind::Server)
            .with_attributes([
                KeyValue::new("http.request.method", "GET"),
                KeyValue::new("http.route", "/v1/templates/{id}"),
                KeyValue::new("url.scheme", "http"),
                KeyValue::new("network.protocol.version", "1.1"),
            ])
            .start_with_context(&tracer, &Context::new());
        let cx = Context::new().with_span(server);
        let mut child = tracer
            .span_builder("get_template")
            .with_attributes([
                KeyValue::new("tenant", "default".to_string()),
                KeyValue::new("template_id", format!("019826f4-6a9c-7b31-9d40-{:012x}", i)),
            ])
            .start_with_context(&tracer, &cx);
        opentelemetry::trace::Span::end(&mut child);
        let span = cx.span();
        span.set_attribute(KeyValue::new("http.response.status_code", 200_i64));
        span.end();
    };
    for i in 0..BURST {
        one(i);
    }
    let _ = provider.force_flush();
    exported.store(0, Ordering::Relaxed);
    bytes.store(0, Ordering::Relaxed);
    let start = cpu();
    let mut done = 0;
    while done < requests {
        for i in 0..BURST {
            one(done + i);
        }
        done += BURST;
        let _ = provider.force_flush();
    }
    let spent = cpu() - start;
    let _ = provider.shutdown();
    let n = match mode {
        Mode::Processor => 2 * done as u64,
        _ => exported.load(Ordering::Relaxed),
    };
    (
        spent.as_nanos() as f64 / done as f64,
        n,
        bytes.load(Ordering::Relaxed) as f64 / n.max(1) as f64,
    )
}

fn main() {
    let requests: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(400_000);
    println!("CPU per request (two spans), {requests} requests, median of 3 runs:");
    let mut floor = 0.0;
    for mode in [
        Mode::Drop,
        Mode::Stock,
        Mode::Direct,
        Mode::Processor,
        Mode::Drop,
    ] {
        let mut runs: Vec<(f64, u64, f64)> = (0..3).map(|_| run(mode, requests)).collect();
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (ns, n, b) = runs[1];
        if matches!(mode, Mode::Drop) {
            floor = ns;
        }
        println!(
            "  {mode:?}: {ns:.0} ns per request ({:.0} ns per span; {n} spans exported, {b:.0} bytes each; {:+.0} ns per request over the SDK floor)",
            ns / 2.0,
            ns - floor
        );
    }
}
