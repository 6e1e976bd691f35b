//! A use case's span, recorded straight into the [`SpanSink`] when telemetry is on and no log
//! layer can want it (issue 32: telemetry's cost per request). A `tracing` span there would
//! only exist for the OpenTelemetry layer, and paid the registry for it: the per-layer
//! filters' lookups, the span's slot and extensions, the enter and exit of every poll, the
//! close. Recorded here, the span is the same OpenTelemetry span (name, attributes, kind
//! `internal`, parent, status) without any of that: its record is kept beside the use case's
//! future, and the span is the [`ambient`](super::ambient) context of the future's polls, so
//! the spans the use case opens are its children, and a carrier taken inside names it.
//!
//! When a log layer may want the span (its filter enables `info` for some target) or
//! telemetry is off, the use case runs in the `tracing` span as `#[tracing::instrument]`
//! made it: log lines inside list it, with its fields.
use super::ambient::{self, Ambient, InContext};
use super::span_record::SpanRecord;
use super::span_sink::{Parent, SpanSink};
use opentelemetry::KeyValue;
use opentelemetry::trace::SpanKind;
use std::borrow::Cow;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use tracing::Instrument as _;
use tracing::instrument::Instrumented;

/// The log layer's filter may enable an `info` span (true until [`set_logs_want_spans`]
/// says otherwise: the span then goes through `tracing`).
static LOGS_WANT_SPANS: AtomicBool = AtomicBool::new(true);

/// Says whether the log layer's filter may enable a use case's span (`info`); set when the
/// subscriber is installed.
pub fn set_logs_want_spans(want: bool) {
    LOGS_WANT_SPANS.store(want, Ordering::Relaxed);
}

/// The sink a use case's span is recorded into directly: telemetry on and no log wants it.
fn direct_sink() -> Option<&'static SpanSink> {
    if LOGS_WANT_SPANS.load(Ordering::Relaxed) {
        return None;
    }
    super::otel::spans()
}

/// `value`'s `Display` text as a string attribute `key` (as a `%` field of a `tracing` span
/// becomes one).
pub fn text_attribute(key: &'static str, value: &dyn std::fmt::Display) -> KeyValue {
    KeyValue::new(
        key,
        super::span_layer::text_of(&tracing::field::display(value)),
    )
}

/// A recorded span, ended when dropped (after the use case's future).
struct Open {
    record: Option<SpanRecord>,
    sink: &'static SpanSink,
}

impl Drop for Open {
    fn drop(&mut self) {
        if let Some(record) = self.record.take() {
            self.sink.end(record);
        }
    }
}

/// A use case's span before its future runs in it ([`UseCaseSpan::run`]). Built by
/// [`use_case_span!`](crate::use_case_span!).
pub struct UseCaseSpan {
    traced: tracing::Span,
    direct: Option<(Open, Ambient)>,
}

impl UseCaseSpan {
    /// The span `name` of a use case opened now: recorded directly with `attributes` when
    /// telemetry is on and no log layer can want it, else the `tracing` span `traced` makes
    /// (the same name and fields).
    pub fn new(
        name: &'static str,
        traced: impl FnOnce() -> tracing::Span,
        attributes: impl FnOnce() -> Vec<KeyValue>,
    ) -> Self {
        Self::in_sink(direct_sink(), name, traced, attributes)
    }

    /// [`Self::new`] recording into `sink` (`None`: through `tracing`).
    pub fn in_sink(
        sink: Option<&'static SpanSink>,
        name: &'static str,
        traced: impl FnOnce() -> tracing::Span,
        attributes: impl FnOnce() -> Vec<KeyValue>,
    ) -> Self {
        let Some(sink) = sink else {
            return Self {
                traced: traced(),
                direct: None,
            };
        };
        let (parent, above) = super::span_layer::current_parent();
        let parent = parent.as_ref().map_or(Parent::Root, Parent::Local);
        let record = sink.start(
            parent,
            Cow::Borrowed(name),
            SpanKind::Internal,
            attributes(),
        );
        let ambient = Ambient {
            context: record.context.clone(),
            above,
        };
        let open = Open {
            record: Some(record),
            sink,
        };
        Self {
            traced: tracing::Span::none(),
            direct: Some((open, ambient)),
        }
    }

    /// `future` in this span; the span ends when the returned future is dropped.
    pub fn run<F: Future>(self, future: F) -> InUseCase<F> {
        let (open, ambient) = self.direct.unzip();
        InUseCase {
            future: ambient::in_ambient(ambient, future).instrument(self.traced),
            _open: open,
        }
    }
}

pin_project_lite::pin_project! {
    /// A use case's future in its span ([`UseCaseSpan::run`]).
    pub struct InUseCase<F> {
        #[pin]
        future: Instrumented<InContext<F>>,
        // Dropped after the future: the span ends after everything in it.
        _open: Option<Open>,
    }
}

impl<F: Future> Future for InUseCase<F> {
    type Output = F::Output;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        self.project().future.poll(cx)
    }
}

/// The span of a use case: `use_case_span!("name", key = %value, ...)` is a [`UseCaseSpan`]
/// whose `tracing` form is `info_span!("name", key = %value, ...)` (as
/// `#[tracing::instrument(name = "name", skip_all, fields(key = %value, ...))]` makes it) and
/// whose recorded form carries each field as a string attribute. Run the use case in it with
/// [`UseCaseSpan::run`].
#[macro_export]
macro_rules! use_case_span {
    ($name:literal $(, $key:ident = %$value:expr)* $(,)?) => {
        $crate::telemetry::use_case_span::UseCaseSpan::new(
            $name,
            || ::tracing::info_span!($name $(, $key = %$value)*),
            || ::std::vec![
                $($crate::telemetry::use_case_span::text_attribute(stringify!($key), &$value)),*
            ],
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::span_layer::{SpanLayer, context_of};
    use crate::telemetry::span_sink::collect::{Collect, sink};
    use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};
    use opentelemetry_sdk::trace::{Sampler, SpanData};
    use tracing_subscriber::layer::SubscriberExt as _;

    fn server() -> SpanContext {
        SpanContext::new(
            TraceId::from(5),
            SpanId::from(6),
            TraceFlags::SAMPLED,
            false,
            TraceState::default(),
        )
    }

    /// Runs `f` (given the sink) on a current-thread runtime with the layer as the
    /// subscriber, inside the server span `server()`; answers the spans ended.
    fn traced<Fut: Future<Output = ()>>(f: impl FnOnce(&'static SpanSink) -> Fut) -> Vec<SpanData> {
        let (sink, Collect(ended)) = sink(Sampler::ParentBased(Box::new(Sampler::AlwaysOn)));
        let sink: &'static SpanSink = Box::leak(Box::new(sink));
        let subscriber = tracing_subscriber::registry().with(SpanLayer::new(sink));
        tracing::subscriber::with_default(subscriber, || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            rt.block_on(ambient::in_context(Some(server()), f(sink)));
        });
        ended.lock().unwrap().clone()
    }

    fn named<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
        spans
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no span {name}: {spans:?}"))
    }

    fn use_case(sink: Option<&'static SpanSink>) -> UseCaseSpan {
        let tenant = "acme";
        UseCaseSpan::in_sink(
            sink,
            "get_template",
            || tracing::info_span!("get_template", tenant = %tenant, template_id = %7),
            || {
                vec![
                    text_attribute("tenant", &tenant),
                    text_attribute("template_id", &7),
                ]
            },
        )
    }

    /// Recorded directly or through `tracing`, the span and its children are the same.
    #[test]
    fn the_recorded_span_is_the_traced_one() {
        for direct in [true, false] {
            let inside = std::rc::Rc::new(std::cell::RefCell::new(None));
            let seen = inside.clone();
            let spans = traced(|sink| async move {
                let span = use_case(direct.then_some(sink));
                span.run(async {
                    tokio::task::yield_now().await;
                    let _child = tracing::info_span!("child").entered();
                    *seen.borrow_mut() = context_of(&tracing::Span::current());
                })
                .await;
            });
            let uc = named(&spans, "get_template");
            let child = named(&spans, "child");
            assert_eq!(uc.parent_span_id, SpanId::from(6), "direct: {direct}");
            assert_eq!(uc.span_context.trace_id(), TraceId::from(5));
            assert_eq!(uc.span_kind, SpanKind::Internal);
            assert_eq!(
                uc.attributes,
                vec![
                    KeyValue::new("tenant", "acme"),
                    KeyValue::new("template_id", "7")
                ]
            );
            assert_eq!(child.parent_span_id, uc.span_context.span_id());
            assert_eq!(
                inside.take().map(|c| c.span_id()),
                Some(child.span_context.span_id())
            );
        }
    }

    /// Inside a `tracing` span with a record, the recorded span is its child, and a `tracing`
    /// span opened inside the recorded one (the outer span still current) its child in turn;
    /// a carrier taken inside names the recorded span.
    #[test]
    fn within_traced_spans_the_recorded_span_keeps_its_place() {
        let carried = std::rc::Rc::new(std::cell::RefCell::new(None));
        let seen = carried.clone();
        let spans = traced(|sink| async move {
            let outer = tracing::info_span!("create_report");
            async {
                use_case(Some(sink))
                    .run(async {
                        *seen.borrow_mut() = context_of(&tracing::Span::current());
                        let inner = tracing::info_span!("inner");
                        async {
                            let _leaf = tracing::info_span!("leaf").entered();
                        }
                        .instrument(inner)
                        .await;
                    })
                    .await;
            }
            .instrument(outer)
            .await;
        });
        let outer = named(&spans, "create_report");
        let uc = named(&spans, "get_template");
        let inner = named(&spans, "inner");
        let leaf = named(&spans, "leaf");
        assert_eq!(outer.parent_span_id, SpanId::from(6));
        assert_eq!(uc.parent_span_id, outer.span_context.span_id());
        assert_eq!(inner.parent_span_id, uc.span_context.span_id());
        assert_eq!(leaf.parent_span_id, inner.span_context.span_id());
        assert_eq!(
            carried.take().map(|c| c.span_id()),
            Some(uc.span_context.span_id())
        );
    }

    /// The recorded span ends when its future is dropped, also unfinished.
    #[test]
    fn a_dropped_use_case_ends_its_span() {
        let spans = traced(|sink| async move {
            let run = use_case(Some(sink)).run(std::future::pending::<()>());
            drop(run);
        });
        assert_eq!(spans.len(), 1);
    }
}
