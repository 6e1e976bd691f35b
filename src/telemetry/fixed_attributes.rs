//! Attributes that many spans share from their start, encoded once (issue 32: telemetry's
//! cost per request): a route's server spans all carry the same `http.request.method`,
//! `http.route`, `url.scheme` and `network.protocol.version`. A span refers to them
//! ([`SpanRecord::fixed`](super::span_record::SpanRecord::fixed)) instead of building,
//! encoding and freeing them each time; its encoding copies their bytes, the same bytes
//! [`otlp_body`](super::otlp_body) writes from the attributes themselves.
use super::encoded_attributes::EncodedAttributes;
use opentelemetry::KeyValue;

/// A span's first attributes, with their encoding as `Span.attributes` fields.
#[derive(Debug, Clone, PartialEq)]
pub struct FixedAttributes {
    attributes: Box<[KeyValue]>,
    encoded: EncodedAttributes,
}

impl FixedAttributes {
    /// `attributes`, encoded now.
    pub fn new(attributes: Vec<KeyValue>) -> Self {
        Self {
            encoded: EncodedAttributes::of(&attributes),
            attributes: attributes.into_boxed_slice(),
        }
    }

    /// The attributes.
    pub fn attributes(&self) -> &[KeyValue] {
        &self.attributes
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.attributes.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.attributes.is_empty()
    }

    /// The encoded fields of the first `n` attributes (all of them past their number).
    pub fn encoded(&self, n: usize) -> &[u8] {
        self.encoded.encoded(n)
    }

    /// True when one of them has key `key`.
    pub fn has_key(&self, key: &opentelemetry::Key) -> bool {
        self.attributes.iter().any(|kv| kv.key == *key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::otlp_body::put_span_attribute;

    #[test]
    fn each_prefix_is_the_encoding_of_those_attributes() {
        let all = vec![
            KeyValue::new("http.request.method", "GET"),
            KeyValue::new("n", 3),
            KeyValue::new("ok", true),
        ];
        let fixed = FixedAttributes::new(all.clone());
        for n in 0..=all.len() + 1 {
            let mut one_by_one = Vec::new();
            for kv in all.iter().take(n) {
                put_span_attribute(kv, &mut one_by_one);
            }
            assert_eq!(fixed.encoded(n), one_by_one.as_slice(), "{n}");
        }
        assert!(fixed.has_key(&"n".into()) && !fixed.has_key(&"m".into()));
        assert!(FixedAttributes::new(vec![]).is_empty());
    }
}
