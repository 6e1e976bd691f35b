//! A span's own attributes, written as `Span.attributes` fields when they are recorded
//! (issue 32: telemetry's cost per request). A use case's `%` field used to be formatted into a
//! `String`, wrapped in a `KeyValue`, encoded when the span ended and freed there: per field an
//! allocation, a free and an encoding. Recorded here, the text is formatted straight into the
//! span's one buffer with its field header, and the span's encoding copies the bytes. Where the
//! attributes are wanted as values (the SDK's `SpanData` for the gRPC exporter, a value replaced
//! on a running span), they are decoded back ([`EncodedAttributes::values`]): the same
//! attributes that were recorded.
use super::otlp_body::{
    Scalar, leading_attributes, put_scalar_attribute, put_span_attribute, put_text_attribute,
};
use opentelemetry::{Array, KeyValue, StringValue, Value};
use opentelemetry_proto::tonic::common::v1::{AnyValue, any_value};
use std::fmt;

/// `Span.attributes` fields, in the order they were recorded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EncodedAttributes {
    bytes: Vec<u8>,
    count: usize,
}

impl EncodedAttributes {
    /// None yet, with room for `bytes` bytes of fields.
    pub fn with_capacity(bytes: usize) -> Self {
        Self {
            bytes: Vec::with_capacity(bytes),
            count: 0,
        }
    }

    /// `attributes`, encoded in order.
    pub fn of(attributes: &[KeyValue]) -> Self {
        let mut encoded = Self::default();
        for kv in attributes {
            put_span_attribute(kv, &mut encoded.bytes);
            encoded.count += 1;
        }
        encoded
    }

    /// Appends the attribute `key` = `value`.
    pub fn push_scalar(&mut self, key: &str, value: Scalar<'_>) {
        put_scalar_attribute(key, &value, &mut self.bytes);
        self.count += 1;
    }

    /// Appends the attribute `key` whose string value is `text`, formatted in place.
    pub fn push_text(&mut self, key: &str, text: fmt::Arguments<'_>) {
        put_text_attribute(
            key,
            |buf| {
                // Writing into a `Vec` cannot fail; a `Display` that fails leaves its text cut.
                let _ = fmt::write(&mut Tail(buf), text);
            },
            &mut self.bytes,
        );
        self.count += 1;
    }

    /// How many attributes there are.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The fields of the first `n` attributes (all of them past their number).
    pub fn encoded(&self, n: usize) -> &[u8] {
        if n >= self.count {
            return &self.bytes;
        }
        &self.bytes[..leading_attributes(&self.bytes, n).1]
    }

    /// The attributes as values, in order (`[]` for bytes that are no such fields, which
    /// nothing here writes).
    pub fn values(&self) -> Vec<KeyValue> {
        use prost::Message as _;
        let Ok(span) = opentelemetry_proto::tonic::trace::v1::Span::decode(self.bytes.as_slice())
        else {
            debug_assert!(false, "attributes that do not decode");
            return Vec::new();
        };
        span.attributes
            .into_iter()
            .map(|kv| KeyValue::new(kv.key, value_of(kv.value)))
            .collect()
    }
}

/// The decoded `AnyValue` as the value that was encoded: a scalar, or an array of scalars of
/// one type (an empty array comes back as an empty array of strings).
fn value_of(any: Option<AnyValue>) -> Value {
    use any_value::Value as Any;
    match any.and_then(|a| a.value) {
        Some(Any::BoolValue(b)) => Value::Bool(b),
        Some(Any::IntValue(i)) => Value::I64(i),
        Some(Any::DoubleValue(f)) => Value::F64(f),
        Some(Any::StringValue(s)) => Value::String(s.into()),
        Some(Any::ArrayValue(a)) => Value::Array(array_of(a.values)),
        _ => Value::String(StringValue::from("")),
    }
}

fn array_of(members: Vec<AnyValue>) -> Array {
    use any_value::Value as Any;
    let values: Vec<Option<Any>> = members.into_iter().map(|m| m.value).collect();
    if let Some(b) = each(&values, |v| match v {
        Any::BoolValue(b) => Some(*b),
        _ => None,
    }) {
        return Array::Bool(b);
    }
    if let Some(i) = each(&values, |v| match v {
        Any::IntValue(i) => Some(*i),
        _ => None,
    }) {
        return Array::I64(i);
    }
    if let Some(f) = each(&values, |v| match v {
        Any::DoubleValue(f) => Some(*f),
        _ => None,
    }) {
        return Array::F64(f);
    }
    let text = |v: Option<Any>| match v {
        Some(Any::StringValue(s)) => StringValue::from(s),
        _ => StringValue::from(""),
    };
    Array::String(values.into_iter().map(text).collect())
}

/// Every member as `f` reads it, when there are members and `f` reads each.
fn each<T>(
    values: &[Option<any_value::Value>],
    f: impl Fn(&any_value::Value) -> Option<T>,
) -> Option<Vec<T>> {
    if values.is_empty() {
        return None;
    }
    values.iter().map(|v| v.as_ref().and_then(&f)).collect()
}

/// `fmt::Write` appending to a byte buffer.
struct Tail<'a>(&'a mut Vec<u8>);

impl fmt::Write for Tail<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Vec<KeyValue> {
        vec![
            KeyValue::new("tenant", "acme"),
            KeyValue::new("empty", ""),
            KeyValue::new("n", -4),
            KeyValue::new("ok", true),
            KeyValue::new("off", false),
            KeyValue::new("ratio", 0.5),
            KeyValue::new("long", "x".repeat(300)),
            KeyValue::new("", "no key"),
            KeyValue::new(
                "names",
                Value::Array(vec![StringValue::from("a"), "b".into()].into()),
            ),
            KeyValue::new("ints", Value::Array(vec![1i64, 2].into())),
            KeyValue::new("floats", Value::Array(vec![1.5f64].into())),
            KeyValue::new("flags", Value::Array(vec![true, false].into())),
        ]
    }

    /// Each way of recording gives the bytes `put_span_attribute` writes for the value, and
    /// the values come back as recorded.
    #[test]
    fn recorded_attributes_are_their_encoding_and_decode_back() {
        let mut recorded = EncodedAttributes::default();
        recorded.push_text("tenant", format_args!("{}", "acme"));
        recorded.push_text("empty", format_args!(""));
        recorded.push_scalar("n", Scalar::I64(-4));
        recorded.push_scalar("ok", Scalar::Bool(true));
        recorded.push_scalar("off", Scalar::Bool(false));
        recorded.push_scalar("ratio", Scalar::F64(0.5));
        recorded.push_text("long", format_args!("{}", "x".repeat(300)));
        recorded.push_scalar("", Scalar::Str("no key"));
        let scalars = &all()[..8];
        assert_eq!(recorded, EncodedAttributes::of(scalars));
        assert_eq!(recorded.len(), 8);
        assert_eq!(recorded.values(), scalars);
        let every = EncodedAttributes::of(&all());
        assert_eq!(every.values(), all());
    }

    #[test]
    fn each_prefix_is_the_encoding_of_those_attributes() {
        let all = all();
        let encoded = EncodedAttributes::of(&all);
        for n in 0..=all.len() + 1 {
            let prefix = EncodedAttributes::of(&all[..n.min(all.len())]);
            assert_eq!(encoded.encoded(n), prefix.encoded(usize::MAX), "{n}");
        }
        assert!(EncodedAttributes::default().is_empty());
        assert!(EncodedAttributes::default().values().is_empty());
    }
}
