//! How a span's fields become its OpenTelemetry name, kind, status and attributes (issue 32),
//! one way for the `tracing` spans of the [`SpanLayer`](super::span_layer::SpanLayer) and for
//! the use-case spans recorded without `tracing` ([`use_case_span`](super::use_case_span)), as
//! `tracing-opentelemetry` made them: `%` and `?` values as their text, integers, floats and
//! booleans as such (a `u64` past `i64` as its text), an `Option` as its value when `Some`, and
//! the special fields `otel.name`, `otel.kind`, `otel.status_code`, `otel.status_description`;
//! the log-correlation fields `trace_id` and `span_id` are no attributes. A value given apart
//! from a `tracing` field set (a use case's) goes through the same [`tracing::Value::record`]
//! and visitor, so it becomes the same.
use super::span_record::SpanRecord;
use super::span_sink::{Parent, SpanSink};
use opentelemetry::KeyValue;
use opentelemetry::trace::{SpanKind, Status};
use std::borrow::Cow;
use std::fmt;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Record};

/// Fields that are no attribute: the log lines' ids of the span itself.
fn is_log_id(name: &str) -> bool {
    matches!(name, "trace_id" | "span_id")
}

fn kind_of(s: &str) -> Option<SpanKind> {
    [
        ("server", SpanKind::Server),
        ("client", SpanKind::Client),
        ("producer", SpanKind::Producer),
        ("consumer", SpanKind::Consumer),
        ("internal", SpanKind::Internal),
    ]
    .into_iter()
    .find(|(n, _)| s.eq_ignore_ascii_case(n))
    .map(|(_, k)| k)
}

fn status_of(s: &str) -> Status {
    if s.eq_ignore_ascii_case("ok") {
        Status::Ok
    } else if s.eq_ignore_ascii_case("error") {
        Status::error("")
    } else {
        Status::Unset
    }
}

/// `value` written with `Debug` (for a `%` field, its `Display`), in a string of exactly its
/// length: the text is written into a buffer the thread keeps, then copied once. (Formatting
/// into a fresh string grows it on the way, and the attribute's `String` → `Box<str>` then
/// shrinks it: two reallocations per field.)
pub(super) fn text_of(value: &dyn fmt::Debug) -> String {
    use std::fmt::Write as _;
    thread_local! {
        static TEXT: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
    }
    TEXT.with(|text| match text.try_borrow_mut() {
        Ok(mut text) => {
            text.clear();
            let _ = write!(text, "{value:?}");
            String::from(text.as_str())
        }
        // A `Debug` that records a span field itself: its own string.
        Err(_) => format!("{value:?}"),
    })
}

/// What one field says of a span.
enum Said {
    Name(String),
    Kind(Option<SpanKind>),
    Status(Status),
    Attribute(KeyValue),
    Nothing,
}

/// What field `name` with text `text` says.
fn said_by_text(name: &'static str, text: String) -> Said {
    match name {
        "otel.name" => Said::Name(text),
        "otel.kind" => Said::Kind(kind_of(&text)),
        "otel.status_code" => Said::Status(status_of(&text)),
        "otel.status_description" => Said::Status(Status::error(text)),
        name if is_log_id(name) => Said::Nothing,
        name => Said::Attribute(KeyValue::new(name, text)),
    }
}

/// What field `name` with a non-text value says.
fn said_by_value(name: &'static str, value: opentelemetry::Value) -> Said {
    if is_log_id(name) || name.starts_with("otel.") {
        return Said::Nothing;
    }
    Said::Attribute(KeyValue::new(name, value))
}

/// Takes what fields say of a span.
trait Say {
    fn say(&mut self, said: Said);
}

/// `tracing`'s typed field callbacks as [`Said`] for `to`: the field's own name, or `key`
/// when given (a value recorded outside `tracing`'s field sets, [`SpanFields::value`]).
struct Saying<'a, S> {
    key: Option<&'static str>,
    to: &'a mut S,
}

impl<'a, S: Say> Saying<'a, S> {
    fn fields(to: &'a mut S) -> Self {
        Self { key: None, to }
    }

    /// Says what `value` says as the field `key`, as `tracing` would visit it in a span
    /// that declares `key`: through [`tracing::Value::record`] (a `None` option says nothing).
    fn value(to: &'a mut S, key: &'static str, value: &dyn tracing::Value) {
        if let Some(field) = any_field() {
            value.record(&field, &mut Self { key: Some(key), to });
        }
    }

    fn name(&self, field: &Field) -> &'static str {
        self.key.unwrap_or_else(|| field.name())
    }
}

impl<S: Say> Visit for Saying<'_, S> {
    fn record_str(&mut self, field: &Field, value: &str) {
        let said = said_by_text(self.name(field), value.to_owned());
        self.to.say(said);
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let said = said_by_text(self.name(field), text_of(value));
        self.to.say(said);
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        let said = said_by_text(self.name(field), value.to_string());
        self.to.say(said);
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        let said = said_by_value(self.name(field), value.into());
        self.to.say(said);
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        let name = self.name(field);
        let said = match i64::try_from(value) {
            Ok(v) => said_by_value(name, v.into()),
            Err(_) => said_by_text(name, value.to_string()),
        };
        self.to.say(said);
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        let said = said_by_value(self.name(field), value.into());
        self.to.say(said);
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        let said = said_by_value(self.name(field), value.into());
        self.to.say(said);
    }
}

/// The callsite of [`any_field`]: no span or event is ever made there.
struct KeyedCallsite;

static KEYED_CALLSITE: KeyedCallsite = KeyedCallsite;

static KEYED_METADATA: tracing::Metadata<'static> = tracing::Metadata::new(
    "keyed value",
    module_path!(),
    tracing::Level::INFO,
    None,
    None,
    None,
    tracing::field::FieldSet::new(
        &["value"],
        tracing_core::identify_callsite!(&KEYED_CALLSITE),
    ),
    tracing::metadata::Kind::SPAN,
);

impl tracing_core::Callsite for KeyedCallsite {
    fn set_interest(&self, _: tracing_core::Interest) {}

    fn metadata(&self) -> &tracing::Metadata<'_> {
        &KEYED_METADATA
    }
}

/// A field to hand [`tracing::Value::record`] when the key is known apart ([`Saying::value`]).
fn any_field() -> Option<Field> {
    KEYED_METADATA.fields().iter().next()
}

/// A new span's name, kind, status and attributes, from a `tracing` span's fields
/// ([`SpanLayer`](super::span_layer::SpanLayer)) or its values one by one
/// ([`use_case_span`](super::use_case_span)): the same for the same fields.
pub struct SpanFields {
    name: Cow<'static, str>,
    kind: SpanKind,
    status: Status,
    attributes: Vec<KeyValue>,
}

impl SpanFields {
    /// The span `name` of up to `fields` fields.
    pub fn new(name: &'static str, fields: usize) -> Self {
        Self {
            name: Cow::Borrowed(name),
            kind: SpanKind::Internal,
            status: Status::Unset,
            attributes: Vec::with_capacity(fields),
        }
    }

    /// Takes the field `key` of value `value` as `tracing` gives it to the layer: `%`
    /// values (`tracing::field::display`) as text, integers, floats and booleans as such, an
    /// option's value when `Some`, and `otel.*` fields as the span's name, kind or status.
    pub fn value(&mut self, key: &'static str, value: &dyn tracing::Value) {
        Saying::value(self, key, value);
    }

    /// Takes the fields of a new `tracing` span.
    pub(super) fn take_attributes(&mut self, attrs: &Attributes<'_>) {
        attrs.record(&mut Saying::fields(self));
    }

    /// The span started in `sink` under `parent`.
    pub(super) fn start(self, sink: &SpanSink, parent: Parent<'_>) -> SpanRecord {
        let mut record = sink.start(parent, self.name, self.kind, self.attributes);
        record.status = self.status;
        record
    }
}

impl Say for SpanFields {
    fn say(&mut self, said: Said) {
        match said {
            Said::Name(n) => self.name = n.into(),
            Said::Kind(Some(k)) => self.kind = k,
            Said::Status(s) => self.status = s,
            Said::Attribute(kv) => self.attributes.push(kv),
            Said::Kind(None) | Said::Nothing => {}
        }
    }
}

/// Fields recorded on a running span.
struct Update<'a>(&'a mut SpanRecord);

impl Say for Update<'_> {
    fn say(&mut self, said: Said) {
        match said {
            Said::Name(n) => self.0.name = n.into(),
            Said::Kind(Some(k)) => self.0.kind = k,
            Said::Status(s) => self.0.status = s,
            Said::Attribute(kv) => self.0.set_attribute(kv),
            Said::Kind(None) | Said::Nothing => {}
        }
    }
}

/// Records `values` on the running span `record` (a `tracing` span's recorded fields).
pub(super) fn record_values(record: &mut SpanRecord, values: &Record<'_>) {
    values.record(&mut Saying::fields(&mut Update(record)));
}
