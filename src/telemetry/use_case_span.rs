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
//!
//! Every use case of [`App`](crate::app::App) opens its span with [`use_case_span!`]
//! (`crate::use_case_span!`): async ones run in it with [`UseCaseSpan::run`], sync ones with
//! [`UseCaseSpan::in_scope`]. A field's value is given when the span opens: nothing records
//! into a use case's span later (a way to would cost every poll of every use case a swap of
//! its record through a thread-local, for no caller).
use super::ambient::{self, Ambient, InContext};
use super::span_fields::SpanFields;
use super::span_record::SpanRecord;
use super::span_sink::{Parent, SpanSink};
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

/// The sink a use case's span is recorded into directly: telemetry on and no log wants it
/// (`None`: through `tracing`). [`use_case_span!`] records there.
pub fn direct_sink() -> Option<&'static SpanSink> {
    if LOGS_WANT_SPANS.load(Ordering::Relaxed) {
        return None;
    }
    super::otel::spans()
}

/// The attributes a use case's span makes room for at once (its fields: two or three); more
/// grow its buffer.
const USE_CASE_FIELDS: usize = 3;

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

/// A use case's span before the use case runs in it ([`UseCaseSpan::run`],
/// [`UseCaseSpan::in_scope`]). Built by [`use_case_span!`](crate::use_case_span!).
pub struct UseCaseSpan {
    traced: tracing::Span,
    direct: Option<(Open, Ambient)>,
}

impl UseCaseSpan {
    /// The span `name` of a use case opened now, recorded into `sink` with the values
    /// `fields` gives, or
    /// when `sink` is `None` (see [`direct_sink`]) the `tracing` span `traced` makes (the
    /// same name and fields).
    pub fn in_sink(
        sink: Option<&'static SpanSink>,
        name: &'static str,
        traced: impl FnOnce() -> tracing::Span,
        fields: impl FnOnce(&mut SpanFields),
    ) -> Self {
        let Some(sink) = sink else {
            return Self {
                traced: traced(),
                direct: None,
            };
        };
        let (parent, above) = super::span_layer::current_parent();
        let parent = parent.as_ref().map_or(Parent::Root, Parent::Local);
        let mut values = SpanFields::new(name, USE_CASE_FIELDS);
        fields(&mut values);
        let record = values.start(sink, parent);
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

    /// `f` called in this span (the sync form of [`Self::run`]): the span is the current one
    /// while `f` runs, and ends when it returns.
    pub fn in_scope<R>(self, f: impl FnOnce() -> R) -> R {
        let Some((open, ambient)) = self.direct else {
            return self.traced.in_scope(f);
        };
        let answer = ambient::scoped(ambient, f);
        drop(open);
        answer
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
/// whose `tracing` form is `info_span!("name", key = %value, ...)` and whose recorded form is
/// the OpenTelemetry span that `tracing` span becomes (see
/// [`SpanFields::value`](crate::telemetry::span_fields::SpanFields::value)).
/// `#[tracing::instrument(skip_all, fields(...))]` on `fn name` is
/// `use_case_span!("name", ...)` with the same fields; every field gets its value here, as
/// nothing records into the span later (a bare `key` is `key = key`, as in `info_span!`).
/// Field forms: `key = %display`, `key = ?debug`,
/// `key = value` (any [`tracing::Value`]: text, integers, floats, booleans, an `Option` of
/// one, absent when `None`, `tracing::field::Empty`), `key`. Keys may be dotted
/// (`otel.kind`).
#[macro_export]
macro_rules! use_case_span {
    // Each field's value given to the `SpanFields` `$f`, as `info_span!` would record it.
    (@values $f:ident;) => {};
    (@values $f:ident; $($k:ident).+ = %$v:expr $(, $($rest:tt)*)?) => {
        $f.value(::std::stringify!($($k).+), &::tracing::field::display(&$v));
        $crate::use_case_span!(@values $f; $($($rest)*)?);
    };
    (@values $f:ident; $($k:ident).+ = ?$v:expr $(, $($rest:tt)*)?) => {
        $f.value(::std::stringify!($($k).+), &::tracing::field::debug(&$v));
        $crate::use_case_span!(@values $f; $($($rest)*)?);
    };
    (@values $f:ident; $($k:ident).+ = $v:expr $(, $($rest:tt)*)?) => {
        $f.value(::std::stringify!($($k).+), &$v);
        $crate::use_case_span!(@values $f; $($($rest)*)?);
    };
    (@values $f:ident; $k:ident $(, $($rest:tt)*)?) => {
        $f.value(::std::stringify!($k), &$k);
        $crate::use_case_span!(@values $f; $($($rest)*)?);
    };
    // Recorded into `$sink` (an `Option<&'static SpanSink>`; `None`: through `tracing`).
    (@in $sink:expr; $name:literal $(, $($fields:tt)*)?) => {
        $crate::telemetry::use_case_span::UseCaseSpan::in_sink(
            $sink,
            $name,
            || ::tracing::info_span!($name $(, $($fields)*)?),
            |_fields: &mut $crate::telemetry::span_fields::SpanFields| {
                $crate::use_case_span!(@values _fields; $($($fields)*)?);
            },
        )
    };
    ($name:literal $(, $($fields:tt)*)?) => {
        $crate::use_case_span!(
            @in $crate::telemetry::use_case_span::direct_sink();
            $name $(, $($fields)*)?
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::span_layer::{SpanLayer, context_of};
    use crate::telemetry::span_sink::collect::{Collect, sink};
    use opentelemetry::KeyValue;
    use opentelemetry::trace::{SpanContext, SpanId, SpanKind, TraceFlags, TraceId, TraceState};
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
        crate::use_case_span!(@in sink; "get_template", tenant = %tenant, template_id = %7)
    }

    /// What must match between the recorded and the traced span: all but ids and times.
    fn shape(
        span: &SpanData,
    ) -> (
        String,
        SpanKind,
        Vec<KeyValue>,
        opentelemetry::trace::Status,
    ) {
        (
            span.name.to_string(),
            span.span_kind.clone(),
            span.attributes.clone(),
            span.status.clone(),
        )
    }

    /// The spans `uc` (made with the sink, or `None`: through `tracing`) ends as, with a
    /// `child` span opened inside, directly and through `tracing`: the use case's span
    /// (`name`) of both must have the same shape, the server span as parent and the child as
    /// child. Answers the directly recorded one.
    fn same_both_ways(
        name: &str,
        uc: impl Fn(Option<&'static SpanSink>) -> UseCaseSpan + Copy + 'static,
        body: impl Fn() + Copy + 'static,
    ) -> SpanData {
        let [direct, traced] = [true, false].map(|direct| {
            let spans = traced(move |sink| async move {
                uc(direct.then_some(sink))
                    .run(async {
                        tokio::task::yield_now().await;
                        body();
                        let _child = tracing::info_span!("child").entered();
                    })
                    .await;
            });
            let span = named(&spans, name).clone();
            let child = named(&spans, "child");
            assert_eq!(span.parent_span_id, SpanId::from(6), "direct: {direct}");
            assert_eq!(span.span_context.trace_id(), TraceId::from(5));
            assert_eq!(child.parent_span_id, span.span_context.span_id());
            span
        });
        assert_eq!(shape(&direct), shape(&traced));
        direct
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

    /// Every field form of the use cases gives the same attribute both ways: `%` as text,
    /// `?` as its `Debug`, a `&str`, integers, a boolean, an `Option` (absent when `None`),
    /// an empty field (absent), a bare local.
    #[test]
    fn every_field_form_is_the_same_both_ways() {
        struct Locale;
        impl Locale {
            fn tag(&self) -> &'static str {
                "fr-FR"
            }
        }
        let span = same_both_ways(
            "forms",
            |sink| {
                let (tenant, raw_id, locale) = ("acme", "ledger", Locale);
                let some: Option<String> = Some("t1".into());
                let none: Option<&str> = None;
                let count = 3u32;
                crate::use_case_span!(
                    @in sink; "forms",
                    tenant = %tenant,
                    data_source = raw_id,
                    locale = locale.tag(),
                    some = some.as_deref(),
                    none = none,
                    debug = ?"q",
                    n = -4i64,
                    big = u64::MAX,
                    ok = true,
                    ratio = 0.5,
                    period_days = tracing::field::Empty,
                    count,
                )
            },
            || {},
        );
        assert_eq!(
            span.attributes,
            vec![
                KeyValue::new("tenant", "acme"),
                KeyValue::new("data_source", "ledger"),
                KeyValue::new("locale", "fr-FR"),
                KeyValue::new("some", "t1"),
                KeyValue::new("debug", "\"q\""),
                KeyValue::new("n", -4),
                KeyValue::new("big", u64::MAX.to_string()),
                KeyValue::new("ok", true),
                KeyValue::new("ratio", 0.5),
                KeyValue::new("count", 3),
            ]
        );
    }

    /// A span without fields (`skip_all` alone) and `otel.*` fields (name, kind, status) are
    /// the same both ways.
    #[test]
    fn no_fields_and_otel_fields_are_the_same_both_ways() {
        let bare = same_both_ways(
            "sweep",
            |sink| crate::use_case_span!(@in sink; "sweep"),
            || {},
        );
        assert!(bare.attributes.is_empty());
        let renamed = same_both_ways(
            "renamed",
            |sink| {
                crate::use_case_span!(
                    @in sink; "otel",
                    otel.name = "renamed",
                    otel.kind = "client",
                    otel.status_code = "ERROR",
                )
            },
            || {},
        );
        assert_eq!(renamed.span_kind, SpanKind::Client);
        assert_eq!(renamed.status, opentelemetry::trace::Status::error(""));
    }

    /// A sync use case ([`UseCaseSpan::in_scope`]): the same span both ways, current while
    /// the closure runs (a span opened inside is its child, a carrier names it), ended when it
    /// returns.
    #[test]
    fn a_sync_use_case_is_the_same_both_ways() {
        let [direct, traced] = [true, false].map(|direct| {
            let inside = std::rc::Rc::new(std::cell::RefCell::new(None));
            let seen = inside.clone();
            let spans = traced(move |sink| async move {
                let span = crate::use_case_span!(
                    @in direct.then_some(sink); "list_data_sources",
                    tenant = %"acme",
                    count = 2,
                );
                let answer = span.in_scope(|| {
                    *seen.borrow_mut() = context_of(&tracing::Span::current());
                    let _child = tracing::info_span!("child").entered();
                    2
                });
                assert_eq!(answer, 2);
                assert_eq!(ambient::current(), Some(server()), "restored after");
            });
            let uc = named(&spans, "list_data_sources").clone();
            let child = named(&spans, "child");
            assert_eq!(uc.parent_span_id, SpanId::from(6), "direct: {direct}");
            assert_eq!(child.parent_span_id, uc.span_context.span_id());
            assert_eq!(
                inside.take().map(|c| c.span_id()),
                Some(uc.span_context.span_id())
            );
            uc
        });
        assert_eq!(shape(&direct), shape(&traced));
        assert_eq!(
            direct.attributes,
            vec![KeyValue::new("tenant", "acme"), KeyValue::new("count", 2)]
        );
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
