//! An event's JSON payload, serialized once.
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::sync::Arc;

/// An event's JSON payload (snake_case keys), serialized once when the event is made and
/// shared from then on: cloning it (into a claim, a publish call, a delivery log) copies a
/// pointer, and storing or publishing it writes these exact bytes, so a replay is
/// byte-identical and nothing is ever serialized twice.
///
/// Invariant: the text is one valid JSON value (every constructor checks or guarantees it).
#[derive(Clone, PartialEq, Eq)]
pub struct Payload(Arc<str>);

impl Payload {
    /// The payload of `value`'s serde form. MUST fail only when `value` does not serialize
    /// (the payload types are plain structs: they always do).
    pub fn of<T: Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        serde_json::to_string(value).map(|text| Self(text.into()))
    }

    /// A payload read back from storage. MUST fail when `text` is not one JSON value.
    pub fn from_json_text(text: String) -> Result<Self, serde_json::Error> {
        serde_json::from_str::<serde::de::IgnoredAny>(&text)?;
        Ok(Self(text.into()))
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The JSON text's bytes (a message body).
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }

    /// The payload as a JSON tree (parsed on each call: for checks and tests, not hot paths).
    pub fn value(&self) -> serde_json::Value {
        serde_json::from_str(&self.0).unwrap_or(serde_json::Value::Null)
    }
}

impl From<serde_json::Value> for Payload {
    fn from(value: serde_json::Value) -> Self {
        // A `Value` always serializes (its map keys are strings).
        Self(value.to_string().into())
    }
}

impl std::fmt::Debug for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::fmt::Display for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Written as the JSON value it holds (not as a string), whatever the format.
impl Serialize for Payload {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(s)
    }
}

/// Read from any JSON value.
impl<'de> Deserialize<'de> for Payload {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde_json::Value::deserialize(d).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fields in alphabetical order: a `Value` map keeps either order (with or without
    /// serde_json's `preserve_order`, which this crate alone does not enable).
    #[derive(Serialize)]
    struct Changed<'a> {
        count: u64,
        gone: Option<u8>,
        id: &'a str,
        name: &'a str,
        ratio: f64,
        tags: Vec<&'a str>,
    }

    #[test]
    fn the_text_is_what_the_value_tree_would_have_written() {
        let c = Changed {
            id: "0198",
            name: "Liquidité \"Q1\" ✓\n",
            count: u64::MAX,
            ratio: 0.1,
            tags: vec!["a", "b"],
            gone: None,
        };
        let p = Payload::of(&c).unwrap();
        let tree = serde_json::to_value(&c).unwrap();
        assert_eq!(p.as_str(), tree.to_string(), "same bytes, same key order");
        assert_eq!(p.value(), tree);
        assert_eq!(Payload::from(tree.clone()), p);
        assert_eq!(p.as_bytes(), serde_json::to_vec(&tree).unwrap().as_slice());
    }

    #[test]
    fn stored_text_is_checked_and_kept_verbatim() {
        let p = Payload::from_json_text(r#"{"b":1,"a":[true,null]}"#.into()).unwrap();
        assert_eq!(p.as_str(), r#"{"b":1,"a":[true,null]}"#);
        assert!(Payload::from_json_text("{\"a\":".into()).is_err());
        assert!(Payload::from_json_text("{} {}".into()).is_err());
        assert!(Payload::from_json_text(String::new()).is_err());
    }

    #[test]
    fn serde_writes_and_reads_the_json_value_not_a_string() {
        let p = Payload::from(serde_json::json!({"n": 2, "status": "Finished"}));
        let written = serde_json::to_value(&p).unwrap();
        assert_eq!(written, serde_json::json!({"n": 2, "status": "Finished"}));
        let back: Payload = serde_json::from_value(written).unwrap();
        assert_eq!(back, p);
        assert_eq!(format!("{p:?}"), r#"{"n":2,"status":"Finished"}"#);
    }
}
