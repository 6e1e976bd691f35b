//! The render context's JSON text parsed into a `serde_json::Value`, as
//! `serde_json::from_slice` would, but with every object of an array created at the size of
//! the object before it: the rows of a table share their columns, so building a row never
//! regrows its map (half of a large context's parse was spent regrowing row maps).
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::cell::Cell;
use std::fmt;

/// Parses `bytes` (one JSON value, whitespace around it allowed) with serde_json's bounds
/// (its nesting limit included). MUST give the same value as `serde_json::from_slice`.
pub fn parse(bytes: &[u8]) -> serde_json::Result<Value> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let hint = Cell::new(0);
    let value = Shaped(&hint).deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// A value whose object (if it is one) is created with `.0` members of room, and records
/// its member count there for the next sibling.
struct Shaped<'h>(&'h Cell<usize>);

impl<'de> DeserializeSeed<'de> for Shaped<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Shaped<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        // The siblings of this array share one hint.
        let hint = Cell::new(0);
        while let Some(v) = seq.next_element_seed(Shaped(&hint))? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::with_capacity(self.0.get());
        // The values of this object are not siblings of one shape: each starts from none.
        while let Some(key) = map.next_key::<String>()? {
            let none = Cell::new(0);
            let value = map.next_value_seed(Shaped(&none))?;
            // A duplicate key keeps the last value, as serde_json's own parse does.
            members.insert(key, value);
        }
        self.0.set(members.len());
        Ok(Value::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn the_value_is_serde_jsons() {
        for text in [
            r#"{"bench":{"ledger":[{"id":1,"amount":"79.19","label":"entry 1","booked_on":"2020-01-02 00:00:00 +0000 UTC"},{"id":2,"amount":null,"label":"x","booked_on":"y"},{"b":[1,2,{"c":true}],"a":-1.5e300}]}}"#,
            r#"[[],{},[{}],{"a":{"b":{"c":[]}}},"s\u00e9\n",0,-0,18446744073709551615,-9223372036854775808,1e-7,true,false,null]"#,
            r#" {"dup":1,"dup":2} "#,
            "[]",
            "\"\"",
            "3",
        ] {
            let ours = parse(text.as_bytes()).expect(text);
            let theirs: serde_json::Value = serde_json::from_str(text).expect(text);
            assert_eq!(ours, theirs, "{text}");
            assert_eq!(
                ours.to_string(),
                theirs.to_string(),
                "same member order: {text}"
            );
        }
    }

    #[test]
    fn what_serde_json_refuses_is_refused() {
        for text in ["", "{", "[1,]", "{\"a\":1} x", "{\"a\" 1}", "nul", "01"] {
            assert!(parse(text.as_bytes()).is_err(), "{text:?}");
            assert!(
                serde_json::from_str::<serde_json::Value>(text).is_err(),
                "{text:?}"
            );
        }
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(
            parse(deep.as_bytes()).is_err(),
            serde_json::from_str::<serde_json::Value>(&deep).is_err(),
            "the same nesting limit"
        );
    }
}
