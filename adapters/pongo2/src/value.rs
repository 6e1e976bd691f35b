//! Template values with Pongo2's semantics (Go reflection rules, as the original sees them).
//!
//! Data rows are *borrowed* from the JSON the port hands over (no copy of the data set);
//! values the template creates are reference-counted and counted against the memory budget
//! ([`crate::limits::Tracked`]). Every value read from a data row remembers where it came
//! from ([`Origin`]) so that field reads can be recorded (see `Renderer::reads`).
use crate::gofmt;
use crate::gotime::{self, GoTime};
use crate::limits::Tracked;
use crate::rows::{RowChunk, Span};
use std::borrow::Cow;
use std::rc::Rc;

pub use crate::json_tree::{Json, JsonMap};

/// Where a data value sits in the `{ds: {table: [rows]}}` tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin<'a> {
    /// Not data, or nested below a row's field.
    None,
    /// A data source (tables by name).
    Ds(&'a str),
    /// A table (a list of rows).
    Table(&'a str, &'a str),
    /// A row of a table: reading one of its fields is a data read.
    Row(&'a str, &'a str),
}

impl<'a> Origin<'a> {
    fn child(self, key: &'a str) -> Origin<'a> {
        match self {
            Origin::Ds(ds) => Origin::Table(ds, key),
            _ => Origin::None,
        }
    }

    fn item(self) -> Origin<'a> {
        match self {
            Origin::Table(ds, t) => Origin::Row(ds, t),
            _ => Origin::None,
        }
    }
}

/// What Go type a list has in the original (it matters to helpers that want
/// `[]map[string]any`, and to how a list prints).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    /// `[]map[string]any`: a table, or rows selected from one.
    Rows,
    /// `[]any`.
    Any,
    /// `[]string` (`split`, `make_list`).
    Strings,
}

/// A string: borrowed from the template or the data, or created by the template.
#[derive(Debug, Clone)]
pub enum Text<'a> {
    Borrowed(&'a str),
    Owned(Rc<Tracked<String>>),
    /// A string of a streamed row, in its chunk's text.
    Chunk(Rc<RowChunk<'a>>, Span),
}

impl Text<'_> {
    pub fn as_str(&self) -> &str {
        match self {
            Text::Borrowed(s) => s,
            Text::Owned(s) => s.as_str(),
            Text::Chunk(c, span) => c.str(*span),
        }
    }
}

/// A list value.
#[derive(Debug, Clone)]
pub enum ListV<'a> {
    Data {
        items: &'a [Json<'a>],
        origin: Origin<'a>,
    },
    Owned(Rc<Tracked<Vec<Value<'a>>>>, ListKind),
}

/// A map created by the template: entries (sorted by key) over an optional data map.
#[derive(Debug)]
pub struct OwnedMap<'a> {
    pub base: Option<&'a JsonMap<'a>>,
    pub entries: Vec<(Rc<str>, Value<'a>)>,
    pub origin: Origin<'a>,
    /// Field names the template adds to rows (`dia`, `signed`): never data reads.
    pub synthetic: Vec<&'static str>,
}

/// A map value.
#[derive(Debug, Clone)]
pub enum MapV<'a> {
    Data {
        map: &'a JsonMap<'a>,
        origin: Origin<'a>,
    },
    Owned(Rc<Tracked<OwnedMap<'a>>>),
    /// A row of a streamed table, in its chunk.
    Row {
        chunk: Rc<RowChunk<'a>>,
        row: usize,
        origin: Origin<'a>,
    },
}

/// The loop information of `{% for %}` (`forloop`).
#[derive(Debug)]
pub struct LoopInfo<'a> {
    pub index: std::cell::Cell<i64>,
    pub count: i64,
    pub parent: Option<Value<'a>>,
}

/// A callable: a context helper of the original or a macro.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    /// `filter(list, "field", value)`.
    Filter,
    /// `contains(a, b)`.
    Contains,
    /// A macro defined by the template: its index, and the scope frame it was defined in.
    Macro {
        id: usize,
        frame: usize,
        generation: u64,
    },
}

/// A template value.
#[derive(Debug, Clone)]
pub enum Value<'a> {
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    /// A string and whether it is marked safe (never auto-escaped).
    Str(Text<'a>, bool),
    Time(Rc<GoTime>),
    List(ListV<'a>),
    Map(MapV<'a>),
    Func(Func),
    Loop(Rc<LoopInfo<'a>>),
}

impl<'a> Value<'a> {
    pub fn str(s: &'a str) -> Self {
        Value::Str(Text::Borrowed(s), false)
    }

    /// Wraps a JSON value of the data.
    pub fn from_json(j: &'a Json<'a>, origin: Origin<'a>) -> Self {
        match j {
            Json::Null => Value::Nil,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Value::Int(i)
                } else if let Some(u) = n.as_u64() {
                    Value::Int(i64::try_from(u).unwrap_or(i64::MAX))
                } else {
                    Value::Float(n.as_f64().unwrap_or(0.0))
                }
            }
            Json::String(s) => match gotime::parse_go_string(s) {
                Some(t) if origin == Origin::None => Value::Time(Rc::new(t)),
                _ => Value::str(s),
            },
            Json::Array(items) => Value::List(ListV::Data { items, origin }),
            Json::Object(map) => Value::Map(MapV::Data { map, origin }),
        }
    }

    pub fn is_nil(&self) -> bool {
        matches!(self, Value::Nil)
    }
    pub fn is_string(&self) -> bool {
        matches!(self, Value::Str(..))
    }
    pub fn is_float(&self) -> bool {
        matches!(self, Value::Float(_))
    }
    pub fn is_integer(&self) -> bool {
        matches!(self, Value::Int(_))
    }
    pub fn is_number(&self) -> bool {
        matches!(self, Value::Int(_) | Value::Float(_))
    }
    pub fn is_bool(&self) -> bool {
        matches!(self, Value::Bool(_))
    }
    pub fn is_safe(&self) -> bool {
        matches!(self, Value::Str(_, true))
    }

    /// The string of a string value.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(t, _) => Some(t.as_str()),
            _ => None,
        }
    }

    /// Pongo2's `Value.String()`.
    pub fn to_go_string(&self) -> Cow<'_, str> {
        match self {
            Value::Nil => Cow::Borrowed(""),
            Value::Bool(true) => Cow::Borrowed("True"),
            Value::Bool(false) => Cow::Borrowed("False"),
            Value::Int(i) => Cow::Owned(i.to_string()),
            Value::Float(f) => Cow::Owned(gofmt::fixed(*f, 6)),
            Value::Str(t, _) => Cow::Borrowed(t.as_str()),
            Value::Time(t) => Cow::Owned(t.go_string()),
            Value::List(l) => Cow::Borrowed(match l.kind() {
                ListKind::Rows => "<[]map[string]interface {} Value>",
                ListKind::Any => "<[]interface {} Value>",
                ListKind::Strings => "<[]string Value>",
            }),
            Value::Map(_) => Cow::Borrowed("<map[string]interface {} Value>"),
            Value::Func(_) => Cow::Borrowed("<func Value>"),
            Value::Loop(_) => Cow::Borrowed("<pongo2.tagForLoopInformation Value>"),
        }
    }

    /// Go's `fmt.Sprintf("%v", v)` of the underlying value.
    pub fn to_go_v(&self) -> String {
        let mut out = String::new();
        self.push_go_v(&mut out, 0);
        out
    }

    fn push_go_v(&self, out: &mut String, depth: usize) {
        if depth > 16 || out.len() > 1 << 20 {
            return;
        }
        match self {
            Value::Nil => out.push_str("<nil>"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Int(i) => out.push_str(&i.to_string()),
            Value::Float(f) => out.push_str(&gofmt::shortest_v(*f)),
            Value::Str(t, _) => out.push_str(t.as_str()),
            Value::Time(t) => out.push_str(&t.go_string()),
            Value::List(l) => {
                out.push('[');
                for (i, v) in l.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    v.push_go_v(out, depth + 1);
                }
                out.push(']');
            }
            Value::Map(m) => {
                out.push_str("map[");
                for (i, (k, v)) in m.entries().into_iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    out.push_str(&k);
                    out.push(':');
                    v.push_go_v(out, depth + 1);
                }
                out.push(']');
            }
            Value::Func(_) => out.push_str("0x0"),
            Value::Loop(_) => out.push_str("&{}"),
        }
    }

    /// Pongo2's `Value.Integer()`.
    pub fn integer(&self) -> i64 {
        match self {
            Value::Int(i) => *i,
            Value::Float(f) => gofmt::float_to_int(*f),
            Value::Str(t, _) => gofmt::parse_float(t.as_str()).map_or(0, gofmt::float_to_int),
            _ => 0,
        }
    }

    /// Pongo2's `Value.Float()`.
    pub fn float(&self) -> f64 {
        match self {
            Value::Int(i) => *i as f64,
            Value::Float(f) => *f,
            Value::Str(t, _) => gofmt::parse_float(t.as_str()).unwrap_or(0.0),
            _ => 0.0,
        }
    }

    /// Pongo2's `Value.Len()`: runes of a string, items of a list or map, else 0.
    pub fn len(&self) -> usize {
        match self {
            Value::Str(t, _) => t.as_str().chars().count(),
            Value::List(l) => l.len(),
            Value::Map(m) => m.len(),
            _ => 0,
        }
    }

    /// Pongo2's `Value.IsTrue()`.
    pub fn is_true(&self) -> bool {
        match self {
            Value::Nil | Value::Func(_) => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(t, _) => !t.as_str().is_empty(),
            Value::List(l) => l.len() > 0,
            Value::Map(m) => m.len() > 0,
            Value::Time(_) | Value::Loop(_) => true,
        }
    }

    /// Pongo2's `Value.Negate()` (the `not` operator).
    pub fn negate(&self) -> Value<'a> {
        match self {
            Value::Int(i) => Value::Int(i64::from(*i == 0)),
            Value::Float(f) => Value::Float(if *f != 0.0 { 0.0 } else { 1.1 }),
            Value::Str(..) | Value::List(_) | Value::Map(_) => Value::Bool(self.len() == 0),
            Value::Bool(b) => Value::Bool(!b),
            Value::Time(_) | Value::Loop(_) => Value::Bool(false),
            Value::Nil | Value::Func(_) => Value::Bool(true),
        }
    }

    /// Pongo2's `Value.EqualValueTo()`: integers by value, times by instant, otherwise Go's
    /// interface equality (same type and value; lists and maps are never equal).
    pub fn equals(&self, other: &Value<'_>) -> bool {
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Time(a), Value::Time(b)) => a.sort_key() == b.sort_key(),
            (Value::Nil, Value::Nil) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => a == b,
            (Value::Str(a, _), Value::Str(b, _)) => a.as_str() == b.as_str(),
            (Value::Func(a), Value::Func(b)) => a == b,
            _ => false,
        }
    }

    /// Whether the value can be sliced (`CanSlice`): a string or a list.
    pub fn can_slice(&self) -> bool {
        matches!(self, Value::Str(..) | Value::List(_))
    }

    /// `Value.Index(i)` of a list or a string (rune), else `None`.
    pub fn index(&self, i: usize) -> Option<Value<'a>> {
        match self {
            Value::List(l) => l.get(i),
            Value::Str(t, _) => t.as_str().chars().nth(i).map(|c| {
                Value::Str(
                    Text::Owned(Rc::new(Tracked::untracked(c.to_string()))),
                    false,
                )
            }),
            _ => None,
        }
    }
}

impl<'a> ListV<'a> {
    pub fn len(&self) -> usize {
        match self {
            ListV::Data { items, .. } => items.len(),
            ListV::Owned(v, _) => v.len(),
        }
    }

    pub fn kind(&self) -> ListKind {
        match self {
            ListV::Data {
                origin: Origin::Table(..),
                ..
            } => ListKind::Rows,
            ListV::Data { .. } => ListKind::Any,
            ListV::Owned(_, k) => *k,
        }
    }

    pub fn get(&self, i: usize) -> Option<Value<'a>> {
        match self {
            ListV::Data { items, origin } => {
                items.get(i).map(|j| Value::from_json(j, origin.item()))
            }
            ListV::Owned(v, _) => v.get(i).cloned(),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = Value<'a>> + '_ {
        (0..self.len()).filter_map(move |i| self.get(i))
    }
}

impl<'a> MapV<'a> {
    pub fn len(&self) -> usize {
        match self {
            MapV::Data { map, .. } => map.len(),
            MapV::Owned(m) => {
                let extra = match m.base {
                    Some(b) => {
                        m.entries.iter().filter(|(k, _)| !b.contains_key(k)).count() + b.len()
                    }
                    None => 0,
                };
                if m.base.is_some() {
                    extra
                } else {
                    m.entries.len()
                }
            }
            MapV::Row { chunk, row, .. } => chunk.row_len(*row),
        }
    }

    pub fn origin(&self) -> Origin<'a> {
        match self {
            MapV::Data { origin, .. } => *origin,
            MapV::Owned(m) => m.origin,
            MapV::Row { origin, .. } => *origin,
        }
    }

    /// The value at `key`, without recording the read.
    pub fn get(&self, key: &str) -> Option<Value<'a>> {
        match self {
            MapV::Data { map, origin } => {
                let (k, j) = map.get_key_value(key)?;
                Some(Value::from_json(j, origin.child(k)))
            }
            MapV::Owned(m) => {
                if let Ok(i) = m.entries.binary_search_by(|(k, _)| (**k).cmp(key)) {
                    return m.entries.get(i).map(|(_, v)| v.clone());
                }
                let (k, j) = m.base?.get_key_value(key)?;
                Some(Value::from_json(j, m.origin.child(k)))
            }
            MapV::Row { chunk, row, .. } => chunk.field(*row, key),
        }
    }

    /// All entries, sorted by key.
    pub fn entries(&self) -> Vec<(Cow<'a, str>, Value<'a>)> {
        match self {
            MapV::Data { map, origin } => {
                let mut v: Vec<(Cow<'a, str>, Value<'a>)> = map
                    .iter()
                    .map(|(k, j)| (Cow::Borrowed(k), Value::from_json(j, origin.child(k))))
                    .collect();
                v.sort_by(|a, b| a.0.cmp(&b.0));
                v
            }
            MapV::Owned(m) => {
                let mut v: Vec<(Cow<'a, str>, Value<'a>)> = m
                    .entries
                    .iter()
                    .map(|(k, val)| (Cow::Owned(k.to_string()), val.clone()))
                    .collect();
                if let Some(base) = m.base {
                    for (k, j) in base.iter() {
                        if m.entries.binary_search_by(|(e, _)| (**e).cmp(k)).is_err() {
                            v.push((Cow::Borrowed(k), Value::from_json(j, m.origin.child(k))));
                        }
                    }
                }
                v.sort_by(|a, b| a.0.cmp(&b.0));
                v
            }
            MapV::Row { chunk, row, .. } => chunk
                .entries(*row)
                .into_iter()
                .map(|(k, v)| (Cow::Owned(k.to_string()), v))
                .collect(),
        }
    }
}

/// A JSON value as `Value::from_json` reads it below a row, with nothing borrowed: strings,
/// lists and objects copied into values of their own (not charged: they are data).
pub fn own_json<'a>(json: &Json<'_>) -> Value<'a> {
    match json {
        Json::Array(items) => Value::List(ListV::Owned(
            Rc::new(Tracked::adopt(items.iter().map(own_json).collect(), 0)),
            ListKind::Any,
        )),
        Json::Object(map) => {
            let mut entries: Vec<(Rc<str>, Value<'a>)> = map
                .iter()
                .map(|(name, v)| (Rc::from(name), own_json(v)))
                .collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Map(MapV::Owned(Rc::new(Tracked::adopt(
                OwnedMap {
                    base: None,
                    entries,
                    origin: Origin::None,
                    synthetic: Vec::new(),
                },
                0,
            ))))
        }
        Json::String(s) => match gotime::parse_go_string(s) {
            Some(t) => Value::Time(Rc::new(t)),
            None => Value::Str(
                Text::Owned(Rc::new(Tracked::adopt((*s).to_owned(), 0))),
                false,
            ),
        },
        Json::Null => Value::Nil,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(_) => match Value::from_json(json, Origin::None) {
            Value::Int(i) => Value::Int(i),
            Value::Float(f) => Value::Float(f),
            _ => Value::Nil,
        },
    }
}

/// Rough size of a value for memory accounting (the value itself, not shared data).
pub const VALUE_SIZE: usize = std::mem::size_of::<Value<'static>>();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pongo2_conversions() {
        assert_eq!(Value::str("0.50").integer(), 0);
        assert_eq!(Value::str("12.9").integer(), 12);
        assert_eq!(Value::str("x").float(), 0.0);
        assert_eq!(Value::Float(1.5).to_go_string(), "1.500000");
        assert_eq!(Value::Bool(true).to_go_string(), "True");
        assert_eq!(Value::Bool(true).to_go_v(), "true");
        assert!(!Value::Int(1).equals(&Value::Float(1.0)));
        assert!(!Value::str("1").equals(&Value::Int(1)));
        assert!(Value::Float(0.0).negate().is_true());
    }

    #[test]
    fn data_times_become_times() {
        let text = br#"{"d": {"t": [{"at": "2025-06-01 10:00:00 +0000 UTC"}]}}"#;
        let arena = crate::json_tree::JsonArena::new();
        let Ok(Json::Object(j)) = Json::parse(text, &arena) else {
            panic!()
        };
        let Some(Json::Object(ds)) = j.get("d") else {
            panic!()
        };
        let ds = MapV::Data {
            map: ds,
            origin: Origin::Ds("d"),
        };
        let Some(Value::List(t)) = ds.get("t") else {
            panic!()
        };
        assert_eq!(t.kind(), ListKind::Rows);
        let Some(Value::Map(row)) = t.get(0) else {
            panic!()
        };
        assert_eq!(row.origin(), Origin::Row("d", "t"));
        assert!(matches!(row.get("at"), Some(Value::Time(_))));
    }
}
