//! The render context as a JSON tree that borrows from the text it was parsed from.
//!
//! A string or member name without escapes is a slice of the text, an object is one vector of
//! members in the text's order: parsing a table row costs one allocation (its members), where
//! `serde_json::Value` makes one per cell, one per member name and a hashed map per row. The
//! tree reads like `serde_json::Value` with `preserve_order` (the order the service sees):
//! members in order of first appearance, a repeated name keeping its last value.
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Number;
use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;

/// Objects with at most this many members are searched by comparing names in order (a data
/// row's few columns: faster than any index); larger ones by binary search over their
/// members sorted by name.
const SCAN_MEMBERS: usize = 8;

/// A JSON value borrowed from its text where it can be.
#[derive(Debug, Clone, PartialEq)]
pub enum Json<'a> {
    Null,
    Bool(bool),
    Number(Number),
    String(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    Object(JsonMap<'a>),
}

/// A JSON object: members in order of first appearance, names unique.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JsonMap<'a> {
    members: Vec<(Cow<'a, str>, Json<'a>)>,
    /// Indices of `members` sorted by name; empty up to [`SCAN_MEMBERS`] members.
    sorted: Vec<usize>,
}

impl<'a> JsonMap<'a> {
    /// The object of `members` in their order; a repeated name keeps its first place and its
    /// last value (as `serde_json::Map` with `preserve_order`).
    pub fn from_members(mut members: Vec<(Cow<'a, str>, Json<'a>)>) -> Self {
        if members.len() <= SCAN_MEMBERS {
            merge_repeats_small(&mut members);
            return Self {
                members,
                sorted: Vec::new(),
            };
        }
        let mut sorted = sorted_indices(&members);
        if sorted
            .windows(2)
            .any(|w| members[w[0]].0 == members[w[1]].0)
        {
            merge_repeats(&mut members, &sorted);
            sorted = sorted_indices(&members);
        }
        if members.len() <= SCAN_MEMBERS {
            sorted.clear();
        }
        Self { members, sorted }
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// The member named `key`, with its name borrowed from the map.
    pub fn get_key_value(&self, key: &str) -> Option<(&str, &Json<'a>)> {
        let i = if self.sorted.is_empty() {
            self.members.iter().position(|(k, _)| k == key)?
        } else {
            let at = self
                .sorted
                .binary_search_by(|&i| self.members[i].0.as_ref().cmp(key))
                .ok()?;
            self.sorted[at]
        };
        self.members.get(i).map(|(k, v)| (k.as_ref(), v))
    }

    #[cfg(test)]
    pub fn get(&self, key: &str) -> Option<&Json<'a>> {
        self.get_key_value(key).map(|(_, v)| v)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.get_key_value(key).is_some()
    }

    /// The members in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Json<'a>)> {
        self.members.iter().map(|(k, v)| (k.as_ref(), v))
    }
}

fn sorted_indices(members: &[(Cow<'_, str>, Json<'_>)]) -> Vec<usize> {
    let mut sorted: Vec<usize> = (0..members.len()).collect();
    // Stable: equal names stay in the order they appeared.
    sorted.sort_by(|&a, &b| members[a].0.cmp(&members[b].0));
    sorted
}

/// Merges repeated names of a few members in place (first place, last value).
fn merge_repeats_small(members: &mut Vec<(Cow<'_, str>, Json<'_>)>) {
    let mut i = 1;
    while i < members.len() {
        let (before, rest) = members.split_at_mut(i);
        match before.iter_mut().find(|(k, _)| *k == rest[0].0) {
            Some(first) => {
                first.1 = std::mem::replace(&mut rest[0].1, Json::Null);
                members.remove(i);
            }
            None => i += 1,
        }
    }
}

/// Merges repeated names in place (first place, last value), given the indices sorted by name
/// (stably: a name's first place comes first in its group, its last last).
fn merge_repeats(members: &mut Vec<(Cow<'_, str>, Json<'_>)>, sorted: &[usize]) {
    let mut dropped = vec![false; members.len()];
    let mut moves = Vec::new();
    for group in sorted.chunk_by(|&a, &b| members[a].0 == members[b].0) {
        if let [first, .., last] = *group {
            moves.push((first, last));
            for &d in &group[1..] {
                dropped[d] = true;
            }
        }
    }
    for (first, last) in moves {
        members[first].1 = std::mem::replace(&mut members[last].1, Json::Null);
    }
    let mut at = 0;
    members.retain(|_| {
        at += 1;
        !dropped[at - 1]
    });
}

impl<'a> Json<'a> {
    /// Borrows a `serde_json::Value` (contexts handed over as a value: tests, in-process
    /// renders). Iterative: a value nested thousands deep does not exhaust the stack.
    pub fn from_value(root: &'a serde_json::Value) -> Self {
        let mut open: Vec<Open<'a>> = Vec::new();
        let mut next = root;
        loop {
            let mut done = match next {
                serde_json::Value::Array(items) => {
                    open.push(Open::Array(items.iter(), Vec::with_capacity(items.len())));
                    None
                }
                serde_json::Value::Object(map) => {
                    open.push(Open::Object(
                        map.iter(),
                        None,
                        Vec::with_capacity(map.len()),
                    ));
                    None
                }
                scalar => Some(Json::scalar(scalar)),
            };
            // Hands each finished value to the container it belongs to, up to the next child
            // still to convert.
            loop {
                let Some(top) = open.last_mut() else {
                    return done.unwrap_or(Json::Null);
                };
                if let Some(child) = top.accept(done.take()) {
                    next = child;
                    break;
                }
                done = open.pop().map(Open::finish);
            }
        }
    }

    /// A scalar of a `serde_json::Value` (a container becomes `Null`).
    fn scalar(v: &'a serde_json::Value) -> Self {
        match v {
            serde_json::Value::Bool(b) => Json::Bool(*b),
            serde_json::Value::Number(n) => Json::Number(n.clone()),
            serde_json::Value::String(s) => Json::String(Cow::Borrowed(s)),
            _ => Json::Null,
        }
    }

    /// Parses one JSON value (whitespace around it allowed) with serde_json's grammar and
    /// nesting limit. MUST give the tree [`Json::from_value`] gives of
    /// `serde_json::from_slice(text)`, and refuse what it refuses.
    pub fn parse(text: &'a [u8]) -> serde_json::Result<Self> {
        let mut de = serde_json::Deserializer::from_slice(text);
        let hint = Cell::new(0);
        let value = Shaped(&hint).deserialize(&mut de)?;
        de.end()?;
        Ok(value)
    }
}

/// A container of [`Json::from_value`] being converted: its members still to convert and
/// those done.
enum Open<'a> {
    Array(std::slice::Iter<'a, serde_json::Value>, Vec<Json<'a>>),
    Object(
        serde_json::map::Iter<'a>,
        Option<&'a str>,
        Vec<(Cow<'a, str>, Json<'a>)>,
    ),
}

impl<'a> Open<'a> {
    /// Takes the converted value of the member asked for last, and returns the next member
    /// to convert (`None`: all are done).
    fn accept(&mut self, done: Option<Json<'a>>) -> Option<&'a serde_json::Value> {
        match self {
            Open::Array(rest, out) => {
                out.extend(done);
                rest.next()
            }
            Open::Object(rest, name, out) => {
                if let (Some(v), Some(k)) = (done, name.take()) {
                    out.push((Cow::Borrowed(k), v));
                }
                let (k, v) = rest.next()?;
                *name = Some(k.as_str());
                Some(v)
            }
        }
    }

    fn finish(self) -> Json<'a> {
        match self {
            Open::Array(_, items) => Json::Array(items),
            Open::Object(_, _, members) => Json::Object(JsonMap::from_members(members)),
        }
    }
}

/// A value whose object (if it is one) is made with room for `.0` members, and records its
/// member count there for the next sibling (the rows of a table share their columns).
struct Shaped<'h>(&'h Cell<usize>);

impl<'de> DeserializeSeed<'de> for Shaped<'_> {
    type Value = Json<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Json<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Shaped<'_> {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Json<'de>, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Json<'de>, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Json<'de>, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Json<'de>, E> {
        Ok(Number::from_f64(v).map_or(Json::Null, Json::Number))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(v)))
    }

    fn visit_unit<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }

    fn visit_none<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Json<'de>, D::Error> {
        self.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        // The siblings of this array share one hint.
        let hint = Cell::new(0);
        while let Some(v) = seq.next_element_seed(Shaped(&hint))? {
            items.push(v);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        let mut members = Vec::with_capacity(self.0.get());
        while let Some(key) = map.next_key_seed(Name)? {
            // The values of this object are not siblings of one shape: each starts from none.
            let none = Cell::new(0);
            members.push((key, map.next_value_seed(Shaped(&none))?));
        }
        self.0.set(members.len());
        Ok(Json::Object(JsonMap::from_members(members)))
    }
}

/// A member name, borrowed when it has no escapes.
struct Name;

impl<'de> DeserializeSeed<'de> for Name {
    type Value = Cow<'de, str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Name {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v))
    }
}

#[cfg(test)]
mod tests {
    use super::{Json, SCAN_MEMBERS};
    use proptest::prelude::*;
    use std::borrow::Cow;

    /// The tree of `text` as serde_json reads it.
    fn theirs(text: &str) -> serde_json::Value {
        serde_json::from_str(text).expect(text)
    }

    #[test]
    fn the_tree_is_serde_jsons() {
        let many: String = (0..40)
            .map(|i| format!("\"k{}\":{i}", (i * 7) % 23))
            .collect::<Vec<_>>()
            .join(",");
        let many = format!("{{{many}}}");
        for text in [
            r#"{"bench":{"ledger":[{"id":1,"amount":"79.19","label":"entry 1","booked_on":"2020-01-02 00:00:00 +0000 UTC"},{"id":2,"amount":null,"label":"x","booked_on":"y"},{"b":[1,2,{"c":true}],"a":-1.5e300}]}}"#,
            r#"[[],{},[{}],{"a":{"b":{"c":[]}}},"s\u00e9\n",0,-0,18446744073709551615,-9223372036854775808,1e-7,true,false,null]"#,
            r#" {"dup":1,"x":0,"dup":2} "#,
            r#"{"a\"b":1,"a\"b":{"c":2}}"#,
            many.as_str(),
            "[]",
            "\"\"",
            "3",
        ] {
            let value = theirs(text);
            let ours = Json::parse(text.as_bytes()).expect(text);
            assert_eq!(ours, Json::from_value(&value), "{text}");
            if let (Json::Object(o), serde_json::Value::Object(v)) = (&ours, &value) {
                assert!(
                    o.iter().map(|(k, _)| k).eq(v.keys().map(String::as_str)),
                    "{text}"
                );
            }
        }
    }

    #[test]
    fn a_value_nested_thousands_deep_is_borrowed_without_recursion() {
        let mut v = serde_json::Value::from("leaf");
        for i in 0..3000 {
            v = if i % 2 == 0 {
                serde_json::Value::Array(vec![v])
            } else {
                serde_json::Value::Object(std::iter::once(("a".to_owned(), v)).collect())
            };
        }
        let mut at = &Json::from_value(&v);
        let mut depth = 0;
        loop {
            at = match at {
                Json::Array(items) if items.len() == 1 => &items[0],
                Json::Object(map) if map.len() == 1 => map.iter().next().expect("one").1,
                Json::String(s) => {
                    assert_eq!(s, "leaf");
                    break;
                }
                other => panic!("unexpected {other:?} at {depth}"),
            };
            depth += 1;
        }
        assert_eq!(depth, 3000);
    }

    #[test]
    fn unescaped_text_is_borrowed() {
        let text = br#"{"plain":"abc","esc\u0041":"x\ny"}"#;
        let Json::Object(map) = Json::parse(text).expect("parses") else {
            panic!("an object")
        };
        assert!(matches!(
            map.get("plain"),
            Some(Json::String(Cow::Borrowed("abc")))
        ));
        assert!(matches!(map.get("escA"), Some(Json::String(Cow::Owned(s))) if s == "x\ny"));
    }

    #[test]
    fn what_serde_json_refuses_is_refused() {
        for text in [
            "",
            "{",
            "[1,]",
            "{\"a\":1} x",
            "{\"a\" 1}",
            "nul",
            "01",
            "{1:2}",
        ] {
            assert!(Json::parse(text.as_bytes()).is_err(), "{text:?}");
            assert!(
                serde_json::from_str::<serde_json::Value>(text).is_err(),
                "{text:?}"
            );
        }
        for depth in [100, 200] {
            let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            assert_eq!(
                Json::parse(deep.as_bytes()).is_err(),
                serde_json::from_str::<serde_json::Value>(&deep).is_err(),
                "the same nesting limit at {depth}"
            );
        }
    }

    proptest! {
        /// Objects of any size with repeated names: lookups, order and values are serde_json's.
        #[test]
        fn objects_read_as_serde_json_maps(
            names in prop::collection::vec(0u8..(2 * SCAN_MEMBERS as u8 + 4), 0..40),
        ) {
            let members: Vec<String> = names
                .iter()
                .enumerate()
                .map(|(i, n)| format!("\"n{n}\":{i}"))
                .collect();
            let text = format!("{{{}}}", members.join(","));
            let value = theirs(&text);
            let Json::Object(ours) = Json::parse(text.as_bytes()).expect("parses") else {
                panic!("an object")
            };
            let serde_json::Value::Object(map) = &value else { panic!("an object") };
            prop_assert_eq!(ours.len(), map.len());
            prop_assert!(ours.iter().map(|(k, _)| k).eq(map.keys().map(String::as_str)));
            for n in 0..(2 * SCAN_MEMBERS as u8 + 6) {
                let key = format!("n{n}");
                prop_assert_eq!(ours.get(&key).cloned(), map.get(&key).map(Json::from_value));
                prop_assert_eq!(ours.contains_key(&key), map.contains_key(&key));
            }
        }
    }
}
