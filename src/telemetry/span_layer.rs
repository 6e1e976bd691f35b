//! The `tracing` layer that makes the service's `tracing` spans OpenTelemetry spans (telemetry
//! on), in place of `tracing-opentelemetry` (issue 32: telemetry's cost per request). A span
//! keeps one [`SpanRecord`] in its registry entry from creation to close: no span builder, no
//! OpenTelemetry context copied per span or attached per poll. Its parent is the nearest
//! enclosing span that has a record, else the [`ambient`](super::ambient) context (the
//! request's server span while the request's future is polled), else none (a new trace).
//!
//! Fields become attributes as `tracing-opentelemetry` made them
//! ([`span_fields`](super::span_fields): `%` and `?` values as their text, integers, floats and
//! booleans as such), with its special
//! fields: `otel.name` (the span's name), `otel.kind` (`server`, `client`, `producer`,
//! `consumer`, `internal`), `otel.status_code` (`ok`, `error`) and `otel.status_description`
//! (an error status with that description). The log-correlation fields `trace_id` and `span_id`
//! are not attributes (the span carries its ids anyway).
use super::span_fields::{SpanFields, record_values};
use super::span_record::SpanRecord;
use super::span_sink::{Parent, SpanSink};
use opentelemetry::trace::SpanContext;
use tracing::Subscriber;
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::{Extensions, LookupSpan, SpanRef};

/// A span's record while it runs, and where it goes when it ends.
struct Live {
    record: SpanRecord,
    sink: &'static SpanSink,
}

/// The layer (see the module's documentation).
#[derive(Debug, Clone, Copy)]
pub struct SpanLayer {
    sink: &'static SpanSink,
}

impl SpanLayer {
    /// A layer that makes every span it sees an OpenTelemetry span of `sink` (a per-layer
    /// filter says which spans it sees).
    pub fn new(sink: &'static SpanSink) -> Self {
        Self { sink }
    }
}

/// The context of the nearest span from `span` up that has a record, else the
/// [`ambient`](super::ambient) one's. The ambient span is the nearer when the walk reaches
/// the `tracing` span it was opened in ([`Ambient::above`](super::ambient::Ambient::above))
/// first: then it was opened inside every span the walk has not seen yet.
fn nearest<'a, S: LookupSpan<'a>>(span: Option<SpanRef<'a, S>>) -> Option<SpanContext> {
    super::ambient::with_current(|ambient| {
        let above = ambient.and_then(|a| a.above.as_ref());
        let own = span.into_iter().flat_map(|s| s.scope()).find_map(|s| {
            if above == Some(&s.id()) {
                Some(None)
            } else {
                context_in(&s.extensions()).map(Some)
            }
        });
        own.flatten().or_else(|| ambient.map(|a| a.context.clone()))
    })
}

fn context_in(ext: &Extensions<'_>) -> Option<SpanContext> {
    ext.get::<Live>().map(|live| live.record.context.clone())
}

impl<S> tracing_subscriber::Layer<S> for SpanLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        let parent = nearest(span.parent());
        let mut fields = SpanFields::new(attrs.metadata().name(), attrs.fields().len());
        fields.take_attributes(attrs);
        let parent = parent.as_ref().map_or(Parent::Root, Parent::Local);
        let record = fields.start(self.sink, parent);
        span.extensions_mut().insert(Live {
            record,
            sink: self.sink,
        });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        let mut ext = span.extensions_mut();
        if let Some(live) = ext.get_mut::<Live>() {
            record_values(&mut live.record, values);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let live = span.extensions_mut().remove::<Live>();
        if let Some(Live { record, sink }) = live {
            sink.end(record);
        }
    }
}

/// Runs `f` on the registry entry of `span` (`None` for a disabled span, or when the global
/// subscriber is not built on `tracing_subscriber`'s registry).
fn with_entry<R>(
    span: &tracing::Span,
    f: impl FnOnce(SpanRef<'_, tracing_subscriber::Registry>) -> R,
) -> Option<R> {
    let mut out = None;
    span.with_subscriber(|(id, dispatch)| {
        if let Some(registry) = dispatch.downcast_ref::<tracing_subscriber::Registry>()
            && let Some(entry) = registry.span(id)
        {
            out = Some(f(entry));
        }
    });
    out
}

/// The OpenTelemetry context of `span`: its own span's, else its nearest enclosing span's,
/// else the [`ambient`](super::ambient) one. `None` when there is none (telemetry off,
/// outside any trace).
pub fn context_of(span: &tracing::Span) -> Option<SpanContext> {
    with_entry(span, |entry| nearest(Some(entry))).unwrap_or_else(super::ambient::current)
}

/// The parent of a span opened now outside `tracing`
/// ([`use_case_span`](super::use_case_span)): the current `tracing` span's context as
/// [`context_of`] finds it, and that span's id (the new span's
/// [`Ambient::above`](super::ambient::Ambient::above)). Looks the current span up without
/// taking a handle to it.
pub fn current_parent() -> (Option<SpanContext>, Option<Id>) {
    tracing::dispatcher::get_default(|dispatch| {
        let current = dispatch.current_span();
        let id = current.id().cloned();
        let entry = id.as_ref().and_then(|id| {
            dispatch
                .downcast_ref::<tracing_subscriber::Registry>()?
                .span(id)
        });
        (nearest(entry), id)
    })
}

/// Moves `span`'s OpenTelemetry span under the remote parent `remote` (see
/// [`SpanSink::continue_remote`](super::span_sink::SpanSink::continue_remote)). MUST be called
/// before any span is opened inside it (those keep the trace they started in).
pub fn continue_remote(span: &tracing::Span, remote: &SpanContext) {
    with_entry(span, |entry| {
        if let Some(live) = entry.extensions_mut().get_mut::<Live>() {
            live.sink.continue_remote(&mut live.record, remote);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::span_sink::collect::{Collect, sink};
    use opentelemetry::KeyValue;
    use opentelemetry::Value;
    use opentelemetry::trace::{SpanId, TraceFlags, TraceId, TraceState};
    use opentelemetry::trace::{SpanKind, Status};
    use opentelemetry_sdk::trace::{Sampler, SpanData};
    use tracing_subscriber::layer::SubscriberExt as _;

    /// Runs `f` with the layer as the subscriber, and answers the spans it ended.
    fn traced(f: impl FnOnce()) -> Vec<SpanData> {
        let (sink, Collect(ended)) = sink(Sampler::ParentBased(Box::new(Sampler::AlwaysOn)));
        let sink: &'static SpanSink = Box::leak(Box::new(sink));
        let subscriber = tracing_subscriber::registry().with(SpanLayer::new(sink));
        tracing::subscriber::with_default(subscriber, f);
        ended.lock().unwrap().clone()
    }

    /// A sampled span context of trace `trace` and span `span`.
    fn sampled(trace: u128, span: u64, remote: bool) -> SpanContext {
        SpanContext::new(
            TraceId::from(trace),
            SpanId::from(span),
            TraceFlags::SAMPLED,
            remote,
            TraceState::default(),
        )
    }

    fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
        span.attributes
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| &kv.value)
    }

    fn named<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
        spans
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no span {name}"))
    }

    #[test]
    fn spans_nest_and_carry_their_fields_as_attributes() {
        let spans = traced(|| {
            let outer = tracing::info_span!("outer", tenant = %"acme", n = 3u32, ok = true);
            let _o = outer.enter();
            let inner = tracing::info_span!(
                "inner",
                otel.name = %format_args!("datasource query {}", "ledger"),
                otel.kind = "client",
                otel.status_code = tracing::field::Empty,
                trace_id = tracing::field::Empty,
                ratio = 0.5,
            );
            inner.record("otel.status_code", "ERROR");
            inner.record("trace_id", "not an attribute");
            drop(inner);
        });
        assert_eq!(spans.len(), 2);
        let outer = named(&spans, "outer");
        let inner = named(&spans, "datasource query ledger");
        assert_eq!(inner.parent_span_id, outer.span_context.span_id());
        assert_eq!(inner.span_context.trace_id(), outer.span_context.trace_id());
        assert_eq!(outer.parent_span_id, SpanId::INVALID);
        assert_eq!(inner.span_kind, SpanKind::Client);
        assert_eq!(outer.span_kind, SpanKind::Internal);
        assert_eq!(inner.status, Status::error(""));
        assert_eq!(attribute(outer, "tenant"), Some(&Value::from("acme")));
        assert_eq!(attribute(outer, "n"), Some(&Value::I64(3)));
        assert_eq!(attribute(outer, "ok"), Some(&Value::Bool(true)));
        assert_eq!(attribute(inner, "ratio"), Some(&Value::F64(0.5)));
        for span in &spans {
            assert!(
                span.attributes.iter().all(
                    |kv| !kv.key.as_str().starts_with("otel.") && kv.key.as_str() != "trace_id"
                ),
                "{:?}",
                span.attributes
            );
        }
    }

    #[test]
    fn a_recorded_field_replaces_the_attribute() {
        let spans = traced(|| {
            let s = tracing::info_span!("render", bytes = tracing::field::Empty);
            s.record("bytes", 10);
            s.record("bytes", 12);
        });
        let render = named(&spans, "render");
        assert_eq!(render.attributes, vec![KeyValue::new("bytes", 12)]);
    }

    #[test]
    fn outside_any_span_the_ambient_context_is_the_parent() {
        let server = sampled(5, 6, false);
        let mut seen = None;
        let spans = traced(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            rt.block_on(crate::telemetry::ambient::in_context(
                Some(server.clone()),
                async {
                    seen = context_of(&tracing::Span::current());
                    let _ = tracing::info_span!("get_template").entered();
                },
            ));
        });
        assert_eq!(seen.as_ref(), Some(&server));
        assert_eq!(spans.len(), 1);
        assert_eq!(spans[0].span_context.trace_id(), TraceId::from(5));
        assert_eq!(spans[0].parent_span_id, SpanId::from(6));
    }

    #[test]
    fn a_span_continues_a_remote_parent_and_its_children_follow() {
        let remote = sampled(9, 10, true);
        let mut own = None;
        let spans = traced(|| {
            let job = tracing::info_span!("job");
            continue_remote(&job, &remote);
            own = context_of(&job);
            let _j = job.enter();
            let _ = tracing::info_span!("render").entered();
        });
        let job = named(&spans, "job");
        let render = named(&spans, "render");
        assert_eq!(job.parent_span_id, SpanId::from(10));
        assert!(job.parent_span_is_remote);
        assert_eq!(job.span_context.trace_id(), TraceId::from(9));
        assert_eq!(own.map(|c| c.span_id()), Some(job.span_context.span_id()));
        assert_eq!(render.parent_span_id, job.span_context.span_id());
        assert_eq!(render.span_context.trace_id(), TraceId::from(9));
    }

    #[test]
    fn outside_the_layer_nothing_is_found_or_changed() {
        let span = tracing::Span::none();
        assert_eq!(context_of(&span), None);
        continue_remote(&span, &SpanContext::empty_context());
    }
}
