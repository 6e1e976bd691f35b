//! How a span's fields become its OpenTelemetry name, kind, status and attributes (issue 32),
//! one way for the `tracing` spans of the [`SpanLayer`](super::span_layer::SpanLayer) and for
//! the use-case spans recorded without `tracing` ([`use_case_span`](super::use_case_span)), as
//! `tracing-opentelemetry` made them: `%` and `?` values as their text, integers, floats and
//! booleans as such (a `u64` past `i64` as its text), an `Option` as its value when `Some`, and
//! the special fields `otel.name`, `otel.kind`, `otel.status_code`, `otel.status_description`;
//! the log-correlation fields `trace_id` and `span_id` are no attributes. A value given apart
//! from a `tracing` field set (a use case's) goes through the same [`tracing::Value::record`]
//! and visitor, so it becomes the same. A new span's attributes are encoded as they are
//! taken ([`EncodedAttributes`]: a text is formatted straight into the span's buffer); a
//! field recorded on a running span sets a value.
use super::encoded_attributes::EncodedAttributes;
use super::otlp_body::Scalar;
use super::span_record::SpanRecord;
use super::span_sink::{Parent, SpanSink};
use opentelemetry::KeyValue;
use opentelemetry::trace::{SpanKind, Status};
use std::borrow::Cow;
use std::fmt;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Record};

/// The room an encoded attribute takes at first: a short key, a UUID's text and their headers.
const BYTES_PER_FIELD: usize = 56;

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

/// One field's value as `tracing` gives it, borrowed.
#[derive(Clone, Copy)]
enum Told<'a> {
    /// Text written with `Debug` (a `%` field's `Display` through it).
    Debug(&'a dyn fmt::Debug),
    /// Text written with `Display` (an error, a `u64` past `i64`).
    Display(&'a dyn fmt::Display),
    /// A string, an integer, a float or a boolean.
    Scalar(Scalar<'a>),
}

impl fmt::Display for Told<'_> {
    /// The value's text (a scalar's as `tracing-opentelemetry` spelled it: only strings are
    /// ever read as text here).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Debug(v) => write!(f, "{v:?}"),
            Self::Display(v) => write!(f, "{v}"),
            Self::Scalar(Scalar::Str(s)) => f.write_str(s),
            Self::Scalar(Scalar::I64(i)) => write!(f, "{i}"),
            Self::Scalar(Scalar::F64(x)) => write!(f, "{x}"),
            Self::Scalar(Scalar::Bool(b)) => write!(f, "{b}"),
        }
    }
}

impl Told<'_> {
    /// The attribute value it gives.
    fn value(self) -> opentelemetry::Value {
        match self {
            Self::Scalar(Scalar::I64(i)) => i.into(),
            Self::Scalar(Scalar::F64(x)) => x.into(),
            Self::Scalar(Scalar::Bool(b)) => b.into(),
            Self::Scalar(Scalar::Str(s)) => s.to_owned().into(),
            text => text.to_string().into(),
        }
    }
}

/// What an `otel.*` field says of the span itself.
enum Said {
    Name(String),
    Kind(Option<SpanKind>),
    Status(Status),
}

/// What the text field `name` says of the span itself, when it is one of the `otel.*` fields
/// that do.
fn said_by(name: &str, text: Told<'_>) -> Option<Said> {
    Some(match name {
        "otel.name" => Said::Name(text.to_string()),
        "otel.kind" => Said::Kind(kind_of(&text.to_string())),
        "otel.status_code" => Said::Status(status_of(&text.to_string())),
        "otel.status_description" => Said::Status(Status::error(text.to_string())),
        _ => return None,
    })
}

/// Takes what fields say of a span: of the span itself, or an attribute.
trait Say {
    fn say(&mut self, said: Said);
    fn attribute(&mut self, key: &'static str, value: Told<'_>);
}

/// `tracing`'s typed field callbacks as what they say to `to`: the field's own name, or `key`
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

    /// A field given as text: an `otel.*` field that names, kinds or ends the span, no
    /// attribute for the log ids, else an attribute.
    fn text(&mut self, field: &Field, text: Told<'_>) {
        let name = self.name(field);
        match said_by(name, text) {
            Some(said) => self.to.say(said),
            None if is_log_id(name) => {}
            None => self.to.attribute(name, text),
        }
    }

    /// A field given as a number or boolean: an attribute unless a log id or `otel.*`.
    fn scalar(&mut self, field: &Field, value: Scalar<'_>) {
        let name = self.name(field);
        if !is_log_id(name) && !name.starts_with("otel.") {
            self.to.attribute(name, Told::Scalar(value));
        }
    }
}

impl<S: Say> Visit for Saying<'_, S> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.text(field, Told::Scalar(Scalar::Str(value)));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.text(field, Told::Debug(value));
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.text(field, Told::Display(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.scalar(field, Scalar::I64(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        match i64::try_from(value) {
            Ok(v) => self.scalar(field, Scalar::I64(v)),
            Err(_) => self.text(field, Told::Display(&value)),
        }
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.scalar(field, Scalar::F64(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.scalar(field, Scalar::Bool(value));
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
    attributes: EncodedAttributes,
}

impl SpanFields {
    /// The span `name`, with room for about `fields` attributes (more grow the buffer).
    pub fn new(name: &'static str, fields: usize) -> Self {
        Self {
            name: Cow::Borrowed(name),
            kind: SpanKind::Internal,
            status: Status::Unset,
            attributes: EncodedAttributes::with_capacity(fields * BYTES_PER_FIELD),
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
            Said::Kind(None) => {}
        }
    }

    /// Encoded at once: a text is formatted straight into the span's attributes.
    fn attribute(&mut self, key: &'static str, value: Told<'_>) {
        match value {
            Told::Scalar(s) => self.attributes.push_scalar(key, s),
            Told::Debug(v) => self.attributes.push_text(key, format_args!("{v:?}")),
            Told::Display(v) => self.attributes.push_text(key, format_args!("{v}")),
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
            Said::Kind(None) => {}
        }
    }

    fn attribute(&mut self, key: &'static str, value: Told<'_>) {
        self.0.set_attribute(KeyValue::new(key, value.value()));
    }
}

/// Records `values` on the running span `record` (a `tracing` span's recorded fields).
pub(super) fn record_values(record: &mut SpanRecord, values: &Record<'_>) {
    values.record(&mut Saying::fields(&mut Update(record)));
}
