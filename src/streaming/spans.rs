//! Producer spans of event publication (telemetry on): one span per event that carries a
//! trace context, child of that context (the request or job that emitted it, even when an
//! outbox replay publishes it after an outage), and the event then carries the span's own
//! context on the wire (`traceparent` / `tracestate`). Off: no span, no work.
use reporter_ports::events::EventEnvelope;
use reporter_ports::ports::PublishError;
use tracing::Span;

/// Which path publishes.
#[derive(Debug, Clone, Copy)]
pub enum Path {
    /// Straight after the commit (the direct lane).
    Direct,
    /// The outbox dispatcher (a replay, possibly after an outage).
    Outbox,
}

/// Opens the spans for `events` and points each event's carrier at its span. Answers one
/// entry per event (`None` for an event without trace context), for [`finish`].
pub fn open(events: &mut [EventEnvelope], path: Path) -> Vec<Option<Span>> {
    if !crate::telemetry::otel::enabled() {
        return Vec::new();
    }
    events
        .iter_mut()
        .map(|e| {
            let carrier = e.trace.as_ref()?;
            let key = e.key.key();
            let (verb, label) = match path {
                Path::Direct => ("publish", "direct"),
                Path::Outbox => ("outbox dispatch", "outbox"),
            };
            let span = tracing::info_span!(
                "event_publish",
                otel.name = %format_args!("{key} {verb}"),
                otel.kind = "producer",
                otel.status_code = tracing::field::Empty,
                messaging.system = "rabbitmq",
                messaging.operation.type = "send",
                messaging.message.id = %e.id,
                cloudevents.event_type = %e.key.ce_type(),
                reporter.event.path = label,
                error.type = tracing::field::Empty,
                trace_id = tracing::field::Empty,
                span_id = tracing::field::Empty,
            );
            crate::telemetry::context::continue_from(&span, Some(carrier));
            if let Some(own) = crate::telemetry::context::carrier_of(&span) {
                e.trace = Some(own);
            }
            Some(span)
        })
        .collect()
}

/// Closes the spans with each publish's outcome (an error marks the span failed and names
/// its kind in `error.type`, never the broker's text).
pub fn finish(spans: Vec<Option<Span>>, results: &[Result<(), PublishError>]) {
    for (span, result) in spans.into_iter().zip(results) {
        if let (Some(span), Err(e)) = (span, result) {
            span.record("otel.status_code", "ERROR");
            span.record("error.type", error_type(e));
        }
    }
}

/// The kind of a publish error, from a closed set.
fn error_type(e: &PublishError) -> &'static str {
    match e {
        PublishError::Unroutable(_) => "unroutable",
        PublishError::Timeout => "timeout",
        PublishError::WindowFull => "window_full",
        PublishError::Nacked => "nacked",
        PublishError::Unavailable(_) => "unavailable",
    }
}
