//! Trace context in and out of the places a report travels: the current span as a bounded
//! [`TraceCarrier`] (for a job or an event), and a carrier or incoming headers as a span's
//! parent. Every function is a no-op answering `None` while telemetry is off.
use super::otel::enabled;
use super::span_layer::context_of;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanContext, TraceContextExt as _, TraceFlags};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use reporter_ports::TraceCarrier;
use std::collections::HashMap;
use tracing::Span;

/// The current span's context as a carrier (`None` when off or outside any trace).
pub fn current() -> Option<TraceCarrier> {
    if !enabled() {
        return None;
    }
    carrier_of(&Span::current())
}

/// `span`'s context as a carrier: its own OpenTelemetry span's, the one it stands for (the
/// request's `tracing` span stands for its server span), else its nearest enclosing span's.
pub fn carrier_of(span: &Span) -> Option<TraceCarrier> {
    let cx = context_of(span).filter(SpanContext::is_valid)?;
    let traceparent = format!(
        "00-{}-{}-{:02x}",
        cx.trace_id(),
        cx.span_id(),
        (cx.trace_flags() & TraceFlags::SAMPLED).to_u8()
    );
    let tracestate = cx.trace_state().header();
    TraceCarrier::new(
        &traceparent,
        Some(tracestate.as_str()).filter(|s| !s.is_empty()),
    )
}

/// Makes `carrier` the parent of `span` (a job taken from the queue, an outbox row
/// replayed), then records the span's ids. No-op when off or without a carrier.
pub fn continue_from(span: &Span, carrier: Option<&TraceCarrier>) {
    if !enabled() {
        return;
    }
    if let Some(c) = carrier {
        let parent = parent_of(c);
        if parent.is_valid() {
            super::span_layer::continue_remote(span, &parent);
        }
    }
    record_ids(span);
}

/// The remote span `carrier` names (W3C trace context; invalid when it names none).
pub fn parent_of(carrier: &TraceCarrier) -> SpanContext {
    let mut map: HashMap<String, String> = HashMap::with_capacity(2);
    map.insert("traceparent".into(), carrier.traceparent().to_owned());
    if let Some(ts) = carrier.tracestate() {
        map.insert("tracestate".into(), ts.to_owned());
    }
    TraceContextPropagator::new()
        .extract(&map)
        .span()
        .span_context()
        .clone()
}

/// Records the span's `trace_id` / `span_id` fields (declared empty by the span), which JSON
/// logs then show with every line logged inside it.
pub fn record_ids(span: &Span) {
    if let Some(sc) = context_of(span).filter(SpanContext::is_valid) {
        span.record("trace_id", tracing::field::display(sc.trace_id()));
        span.record("span_id", tracing::field::display(sc.span_id()));
    }
}

/// `span`'s carrier, `None` when off (no work).
pub fn carrier_of_span(span: &Span) -> Option<TraceCarrier> {
    if !enabled() {
        return None;
    }
    carrier_of(span)
}

/// The producer span of queueing a report's job (telemetry on; `Span::none()` off).
pub fn job_publish_span(report_id: reporter_ports::ReportId) -> Span {
    if !enabled() {
        return Span::none();
    }
    tracing::info_span!(
        "job_publish",
        otel.name = "report.job publish",
        otel.kind = "producer",
        messaging.operation.type = "send",
        reporter.report_id = %report_id,
    )
}

/// The consumer span of one job taken from the queue (telemetry on), child of the carrier
/// the job brought (the request that queued it); `None` off.
pub fn job_process_span(
    job: &reporter_ports::ports::ReportJob,
    attempt: u32,
    request_id: &str,
) -> Option<Span> {
    if !enabled() {
        return None;
    }
    let span = tracing::info_span!(
        "report_job",
        otel.name = "report.job process",
        otel.kind = "consumer",
        messaging.operation.type = "process",
        reporter.report_id = %job.report_id,
        tenant = %job.tenant,
        report_id = %job.report_id,
        attempt,
        request_id = %request_id,
        trace_id = tracing::field::Empty,
        span_id = tracing::field::Empty,
    );
    continue_from(&span, job.trace.as_ref());
    Some(span)
}

/// The client span of one data source's queries for a report (telemetry on; `Span::none()`
/// off). Names the data source only: never its filters or rows.
pub fn datasource_span(data_source: &str) -> Span {
    if !enabled() {
        return Span::none();
    }
    tracing::info_span!(
        "datasource_query",
        otel.name = %format_args!("datasource query {data_source}"),
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
        reporter.data_source = %data_source,
    )
}

/// The span of one render in the template sandbox (telemetry on; `Span::none()` off); the
/// caller records `reporter.render.sandbox_ms` (the sandbox's time) when it answered, and
/// `reporter.render.context_bytes` when it knows the context's size.
pub fn render_span() -> Span {
    if !enabled() {
        return Span::none();
    }
    tracing::info_span!(
        "render",
        otel.name = "report render",
        otel.status_code = tracing::field::Empty,
        reporter.render.context_bytes = tracing::field::Empty,
        reporter.render.sandbox_ms = tracing::field::Empty,
    )
}

/// The span of committing a report's artifact to object storage (telemetry on;
/// `Span::none()` off).
pub fn artifact_span() -> Span {
    if !enabled() {
        return Span::none();
    }
    tracing::info_span!(
        "artifact_write",
        otel.name = "report artifact write",
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sampled span's carrier names it (W3C version 00, sampled flag), and the carrier read
    /// back is that span as a remote parent; an unsampled one says so in its flags.
    #[test]
    fn a_span_s_carrier_names_it_and_reads_back_as_its_remote_parent() {
        use crate::telemetry::span_layer::{SpanLayer, context_of};
        use crate::telemetry::span_sink::collect::sink;
        use opentelemetry_sdk::trace::Sampler;
        use tracing_subscriber::layer::SubscriberExt as _;
        let carried = |sampler: Sampler| {
            let (sink, _) = sink(sampler);
            let sink: &'static _ = Box::leak(Box::new(sink));
            let subscriber = tracing_subscriber::registry().with(SpanLayer::new(sink));
            tracing::subscriber::with_default(subscriber, || {
                let span = tracing::info_span!("job_publish");
                (carrier_of(&span), context_of(&span))
            })
        };
        let (carrier, cx) = carried(Sampler::ParentBased(Box::new(Sampler::AlwaysOn)));
        let (carrier, cx) = (carrier.expect("a carrier"), cx.expect("a context"));
        assert_eq!(
            carrier.traceparent(),
            format!("00-{}-{}-01", cx.trace_id(), cx.span_id())
        );
        assert_eq!(carrier.tracestate(), None);
        let parent = parent_of(&carrier);
        assert_eq!(
            (parent.trace_id(), parent.span_id()),
            (cx.trace_id(), cx.span_id())
        );
        assert!(parent.is_remote() && parent.is_sampled());
        let (unsampled, _) = carried(Sampler::AlwaysOff);
        assert!(unsampled.expect("a carrier").traceparent().ends_with("-00"));
    }

    /// Off (no `otel::start` in this process): nothing is read or written.
    #[test]
    fn off_does_no_propagation_work() {
        let carrier = TraceCarrier::new(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            None,
        );
        let span = tracing::info_span!("x", trace_id = tracing::field::Empty);
        assert_eq!(current(), None);
        assert_eq!(carrier_of_span(&span), None);
        continue_from(&span, carrier.as_ref());
        assert!(
            crate::telemetry::server_span::ServerSpan::start(
                crate::telemetry::server_span::Spelling {
                    method: "GET",
                    route: "/x",
                    key: 0,
                    scheme: "http",
                    version: "1.1",
                },
                |_| { Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01") }
            )
            .is_none()
        );
        assert!(job_publish_span(reporter_ports::ReportId::new()).is_none());
        assert!(datasource_span("ledger").is_none());
        assert!(render_span().is_none());
        assert!(artifact_span().is_none());
    }
}
