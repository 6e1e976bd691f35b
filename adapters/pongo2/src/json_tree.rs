//! The render context as a JSON tree that borrows from the text it was parsed from.
//!
//! A string or member name without escapes is a slice of the text; arrays, the members of an
//! object and the few strings that had escapes live in a [`JsonArena`] that is freed at once
//! with the tree. Parsing a table row costs no allocation of its own (its members are moved
//! from a shared stack into the arena), and dropping the tree costs no walk over it, where
//! `serde_json::Value` makes one allocation per cell, one per member name and a hashed map per
//! row, and frees each. The tree reads like `serde_json::Value` with `preserve_order` (the
//! order the service sees): members in order of first appearance, a repeated name keeping its
//! last value.
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Number;
use std::cell::{Cell, RefCell};
use std::fmt;
use typed_arena::Arena;

/// Objects with at most this many members are searched by comparing names in order (a data
/// row's few columns: faster than any index); larger ones by binary search over their
/// members sorted by name.
const SCAN_MEMBERS: usize = 8;

/// A JSON value borrowed from its text and its arena.
#[derive(Debug, Clone, PartialEq)]
pub enum Json<'a> {
    Null,
    Bool(bool),
    Number(Number),
    String(&'a str),
    Array(&'a [Json<'a>]),
    Object(JsonMap<'a>),
}

/// An object member: its name and value.
pub type Member<'a> = (&'a str, Json<'a>);

/// A JSON object: members in order of first appearance, names unique.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct JsonMap<'a> {
    members: &'a [Member<'a>],
    /// Indices of `members` sorted by name; empty up to [`SCAN_MEMBERS`] members.
    sorted: &'a [usize],
}

/// Where a tree's arrays, object members, name indices and the strings that had escapes live. Nothing in
/// a tree needs dropping but those strings, so dropping the arena frees its few chunks and
/// walks nothing else. Its memory comes from the global allocator: a context too large for a
/// sandbox child's memory bound fails there as any other allocation does.
#[derive(Default)]
pub struct JsonArena<'a> {
    items: Arena<Json<'a>>,
    members: Arena<Member<'a>>,
    indices: Arena<usize>,
    strings: Arena<String>,
}

impl<'a> JsonArena<'a> {
    pub fn new() -> Self {
        Self::default()
    }

    /// `s` as a string of the arena's lifetime (one that had escapes in the text).
    fn string(&'a self, s: String) -> &'a str {
        self.strings.alloc(s).as_str()
    }
}

impl<'a> JsonMap<'a> {
    /// The object of `members` in their order; a repeated name keeps its first place and its
    /// last value (as `serde_json::Map` with `preserve_order`).
    pub fn from_members(mut members: Vec<Member<'a>>, arena: &'a JsonArena<'a>) -> Self {
        if members.len() <= SCAN_MEMBERS {
            merge_repeats_small(&mut members);
            return Self {
                members: arena.members.alloc_extend(members),
                sorted: &[],
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
        Self {
            members: arena.members.alloc_extend(members),
            sorted: arena.indices.alloc_extend(sorted),
        }
    }

    /// The object of the members of `stack` from `start` on (taken off the stack): a row's
    /// few members with distinct names go straight into the arena.
    fn from_stack(stack: &mut Vec<Member<'a>>, start: usize, arena: &'a JsonArena<'a>) -> Self {
        let Some(new) = stack.get(start..) else {
            return Self::default();
        };
        if new.len() > SCAN_MEMBERS || has_repeats(new) {
            return Self::from_members(stack.drain(start..).collect(), arena);
        }
        Self {
            members: arena.members.alloc_extend(stack.drain(start..)),
            sorted: &[],
        }
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// The member named `key`, with its name borrowed from the map.
    pub fn get_key_value(&self, key: &str) -> Option<(&'a str, &'a Json<'a>)> {
        let members: &'a [Member<'a>] = self.members;
        let i = if self.sorted.is_empty() {
            members.iter().position(|(k, _)| *k == key)?
        } else {
            let at = self
                .sorted
                .binary_search_by(|&i| members[i].0.cmp(key))
                .ok()?;
            self.sorted[at]
        };
        members.get(i).map(|(k, v)| (*k, v))
    }

    #[cfg(test)]
    pub fn get(&self, key: &str) -> Option<&'a Json<'a>> {
        self.get_key_value(key).map(|(_, v)| v)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.get_key_value(key).is_some()
    }

    /// The members in order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, &'a Json<'a>)> + use<'a> {
        let members: &'a [Member<'a>] = self.members;
        members.iter().map(|(k, v)| (*k, v))
    }
}

/// Whether a few members repeat a name.
fn has_repeats(members: &[Member<'_>]) -> bool {
    members
        .iter()
        .enumerate()
        .any(|(i, (k, _))| members[..i].iter().any(|(seen, _)| seen == k))
}

fn sorted_indices(members: &[Member<'_>]) -> Vec<usize> {
    let mut sorted: Vec<usize> = (0..members.len()).collect();
    // Stable: equal names stay in the order they appeared.
    sorted.sort_by(|&a, &b| members[a].0.cmp(members[b].0));
    sorted
}

/// Merges repeated names of a few members in place (first place, last value).
fn merge_repeats_small(members: &mut Vec<Member<'_>>) {
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
fn merge_repeats(members: &mut Vec<Member<'_>>, sorted: &[usize]) {
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
    pub fn from_value(root: &'a serde_json::Value, arena: &'a JsonArena<'a>) -> Self {
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
                done = open.pop().map(|o| o.finish(arena));
            }
        }
    }

    /// A scalar of a `serde_json::Value` (a container becomes `Null`).
    fn scalar(v: &'a serde_json::Value) -> Self {
        match v {
            serde_json::Value::Bool(b) => Json::Bool(*b),
            serde_json::Value::Number(n) => Json::Number(n.clone()),
            serde_json::Value::String(s) => Json::String(s),
            _ => Json::Null,
        }
    }

    /// Parses one JSON value (whitespace around it allowed) with serde_json's grammar and
    /// nesting limit, into `arena`. MUST give the tree [`Json::from_value`] gives of
    /// `serde_json::from_slice(text)`, and refuse what it refuses.
    pub fn parse(text: &'a [u8], arena: &'a JsonArena<'a>) -> serde_json::Result<Self> {
        // Validated once as a whole (a JSON text with a byte sequence that is not UTF-8 is
        // refused either way): the parser then skips the check of every string it reads.
        let text = std::str::from_utf8(text).map_err(serde::de::Error::custom)?;
        let mut de = serde_json::Deserializer::from_str(text);
        let build = Build {
            arena,
            items: RefCell::default(),
            members: RefCell::default(),
        };
        let hint = Cell::new(0);
        let value = Shaped(&hint, &build).deserialize(&mut de)?;
        de.end()?;
        Ok(value)
    }
}

/// A container of [`Json::from_value`] being converted: its members still to convert and
/// those done.
enum Open<'a> {
    Array(std::slice::Iter<'a, serde_json::Value>, Vec<Json<'a>>),
    Object(serde_json::map::Iter<'a>, Option<&'a str>, Vec<Member<'a>>),
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
                    out.push((k, v));
                }
                let (k, v) = rest.next()?;
                *name = Some(k.as_str());
                Some(v)
            }
        }
    }

    fn finish(self, arena: &'a JsonArena<'a>) -> Json<'a> {
        match self {
            Open::Array(_, items) => Json::Array(arena.items.alloc_extend(items)),
            Open::Object(_, _, members) => Json::Object(JsonMap::from_members(members, arena)),
        }
    }
}

/// The state of one parse: the arena, and the stacks that hold the elements of the arrays
/// and the members of the objects still open (each container takes its own off the top when
/// it closes, in one move into the arena).
struct Build<'a> {
    arena: &'a JsonArena<'a>,
    items: RefCell<Vec<Json<'a>>>,
    members: RefCell<Vec<Member<'a>>>,
}

/// A value; the member count of an object is recorded in `.0` (the rows of a table share
/// their columns), which sizes the next sibling's room on the stack.
struct Shaped<'h, 'a>(&'h Cell<usize>, &'h Build<'a>);

impl<'de: 'a, 'a> DeserializeSeed<'de> for Shaped<'_, 'a> {
    type Value = Json<'a>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Json<'a>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for Shaped<'_, 'a> {
    type Value = Json<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Json<'a>, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Json<'a>, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Json<'a>, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Json<'a>, E> {
        Ok(Number::from_f64(v).map_or(Json::Null, Json::Number))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Json<'a>, E> {
        Ok(Json::String(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Json<'a>, E> {
        Ok(Json::String(self.1.arena.string(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Json<'a>, E> {
        Ok(Json::String(self.1.arena.string(v)))
    }

    fn visit_unit<E>(self) -> Result<Json<'a>, E> {
        Ok(Json::Null)
    }

    fn visit_none<E>(self) -> Result<Json<'a>, E> {
        Ok(Json::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Json<'a>, D::Error> {
        self.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'a>, A::Error> {
        let build = self.1;
        let start = build.items.borrow().len();
        // The siblings of this array share one hint.
        let hint = Cell::new(0);
        while let Some(v) = seq.next_element_seed(Shaped(&hint, build))? {
            build.items.borrow_mut().push(v);
        }
        let mut items = build.items.borrow_mut();
        let at = start.min(items.len());
        Ok(Json::Array(
            build.arena.items.alloc_extend(items.drain(at..)),
        ))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'a>, A::Error> {
        let build = self.1;
        let start = {
            let mut members = build.members.borrow_mut();
            members.reserve(self.0.get());
            members.len()
        };
        while let Some(key) = map.next_key_seed(Name(build.arena))? {
            // The values of this object are not siblings of one shape: each starts from none.
            let none = Cell::new(0);
            let value = map.next_value_seed(Shaped(&none, build))?;
            // Pushed after its value: the value's own members are off the stack by then.
            build.members.borrow_mut().push((key, value));
        }
        let mut members = build.members.borrow_mut();
        self.0.set(members.len().saturating_sub(start));
        Ok(Json::Object(JsonMap::from_stack(
            &mut members,
            start,
            build.arena,
        )))
    }
}

/// A member name, borrowed from the text when it has no escapes, else kept in the arena.
struct Name<'a>(&'a JsonArena<'a>);

impl<'de: 'a, 'a> DeserializeSeed<'de> for Name<'a> {
    type Value = &'a str;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<&'a str, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for Name<'a> {
    type Value = &'a str;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<&'a str, E> {
        Ok(v)
    }

    fn visit_str<E>(self, v: &str) -> Result<&'a str, E> {
        Ok(self.0.string(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<&'a str, E> {
        Ok(self.0.string(v))
    }
}

#[cfg(test)]
mod tests {
    use super::{Json, JsonArena, SCAN_MEMBERS};
    use proptest::prelude::*;

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
            let (arena, theirs_arena) = (JsonArena::new(), JsonArena::new());
            let ours = Json::parse(text.as_bytes(), &arena).expect(text);
            assert_eq!(ours, Json::from_value(&value, &theirs_arena), "{text}");
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
        let arena = JsonArena::new();
        let mut at = &Json::from_value(&v, &arena);
        let mut depth = 0;
        loop {
            at = match at {
                Json::Array(items) if items.len() == 1 => &items[0],
                Json::Object(map) if map.len() == 1 => map.iter().next().expect("one").1,
                Json::String(s) => {
                    assert_eq!(*s, "leaf");
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
        let arena = JsonArena::new();
        let Json::Object(map) = Json::parse(text, &arena).expect("parses") else {
            panic!("an object")
        };
        let Some(Json::String(plain)) = map.get("plain") else {
            panic!("a string")
        };
        assert_eq!(*plain, "abc");
        assert!(
            text.as_ptr_range().contains(&plain.as_ptr()),
            "borrowed from the text"
        );
        assert!(matches!(map.get("escA"), Some(Json::String(s)) if *s == "x\ny"));
        assert_eq!(
            arena.strings.len(),
            2,
            "the name and the value with escapes"
        );
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
            assert!(
                Json::parse(text.as_bytes(), &JsonArena::new()).is_err(),
                "{text:?}"
            );
            assert!(
                serde_json::from_str::<serde_json::Value>(text).is_err(),
                "{text:?}"
            );
        }
        for depth in [100, 200] {
            let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            assert_eq!(
                Json::parse(deep.as_bytes(), &JsonArena::new()).is_err(),
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
            let (arena, theirs_arena) = (JsonArena::new(), JsonArena::new());
            let Json::Object(ours) = Json::parse(text.as_bytes(), &arena).expect("parses") else {
                panic!("an object")
            };
            let serde_json::Value::Object(map) = &value else { panic!("an object") };
            prop_assert_eq!(ours.len(), map.len());
            prop_assert!(ours.iter().map(|(k, _)| k).eq(map.keys().map(String::as_str)));
            for n in 0..(2 * SCAN_MEMBERS as u8 + 6) {
                let key = format!("n{n}");
                prop_assert_eq!(
                    ours.get(&key).cloned(),
                    map.get(&key).map(|v| Json::from_value(v, &theirs_arena))
                );
                prop_assert_eq!(ours.contains_key(&key), map.contains_key(&key));
            }
        }
    }
}
