//! The rows of one chunk of a streamed table, parsed once into a block that the row values
//! share.
//!
//! A chunk is a JSON list of rows. Parsing it makes one allocation per kind of part, not
//! one per cell: every string of the chunk goes into one text buffer, every cell into one
//! list, and the rows of one shape (the same field names in the same order) share their
//! names. A row read from the chunk is a reference to the block and the row's index, and a
//! string read from a row is a reference to the block and the string's place in the buffer
//! ([`crate::value::Text::Chunk`]), so a row costs no copy and dropping it frees nothing. The
//! block is freed when the last value read from it is dropped.
//!
//! What a row reads as is what the same row reads as in the context (`Value::from_json` of
//! the row with the table's origin): numbers as `serde_json` gives them, strings of a field
//! that Go prints a time as become times when read, a repeated field name keeps its first
//! place and its last value, fields are listed sorted by name.
use crate::gotime;
use crate::json_tree::{Json, JsonArena};
use crate::value::{MapV, Origin, Text, Value};
use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::collections::HashMap;
use std::fmt;
use std::rc::Rc;

mod flat;

/// Shapes with at most this many fields are searched by comparing names in order; larger
/// ones by binary search over their names sorted.
const SCAN_FIELDS: usize = 8;

/// A string's place in a chunk's text buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    start: u32,
    len: u32,
}

/// One cell of a row (or a row that is not an object).
#[derive(Debug)]
enum Cell<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Span),
    /// A list or an object: copied into values of its own (rare in a table's cells).
    Nested(Value<'a>),
}

/// The field names of the rows of one shape, in their order.
#[derive(Debug)]
struct Shape {
    names: Vec<Rc<str>>,
    /// Indices of `names` sorted by name; empty up to [`SCAN_FIELDS`] names.
    sorted: Vec<usize>,
}

impl Shape {
    fn new(names: Vec<Rc<str>>) -> Self {
        let mut sorted = Vec::new();
        if names.len() > SCAN_FIELDS {
            sorted = (0..names.len()).collect();
            sorted.sort_by(|&a, &b| names[a].cmp(&names[b]));
        }
        Self { names, sorted }
    }

    /// The position of the field `key`.
    fn position(&self, key: &str) -> Option<usize> {
        if self.sorted.is_empty() {
            return self.names.iter().position(|n| &**n == key);
        }
        let at = self
            .sorted
            .binary_search_by(|&i| (*self.names[i]).cmp(key))
            .ok()?;
        self.sorted.get(at).copied()
    }
}

/// A field of a streamed row as [`RowChunk::plain_field`] reads it.
#[derive(Debug)]
pub(crate) enum PlainCell<'c> {
    /// A string that is not a time.
    Str(&'c str),
    /// A string Go prints a time as: that time.
    Time(gotime::GoTime),
    /// An integer.
    Int(i64),
}

/// Where a row's cells are.
#[derive(Debug, Clone, Copy)]
enum RowAt {
    /// An object: its shape and its first cell (one cell per name of the shape).
    Object { shape: usize, start: usize },
    /// Anything else: the one cell that is the row.
    Other(usize),
}

/// Where a printed field was found last ([`RowChunk::plain_field_hinted`]): the chunk (by its
/// serial), the shape, the field's position in that shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FieldHint {
    serial: u64,
    shape: usize,
    pos: usize,
}

/// The serial of the next chunk parsed in this process: chunks are told apart by it, never by
/// their address (a freed chunk's address is reused by the next).
static NEXT_SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A serial no other chunk of this process has.
fn next_serial() -> u64 {
    NEXT_SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The parsed rows of one chunk.
pub struct RowChunk<'a> {
    /// Unique per chunk in the process (see [`FieldHint`]).
    serial: u64,
    text: String,
    cells: Vec<Cell<'a>>,
    shapes: Vec<Shape>,
    rows: Vec<RowAt>,
}

impl fmt::Debug for RowChunk<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RowChunk")
            .field("rows", &self.rows.len())
            .field("text_bytes", &self.text.len())
            .finish_non_exhaustive()
    }
}

impl<'a> RowChunk<'a> {
    /// Parses a chunk: a JSON list of rows, with serde_json's grammar and nesting limit.
    /// MUST refuse what `serde_json::from_slice` refuses, and anything but a list.
    pub fn parse(text: &[u8]) -> Result<Self, serde_json::Error> {
        let text = std::str::from_utf8(text).map_err(serde::de::Error::custom)?;
        let mut de = serde_json::Deserializer::from_str(text);
        let mut chunk = RowChunk {
            serial: next_serial(),
            text: String::new(),
            cells: Vec::new(),
            shapes: Vec::new(),
            rows: Vec::new(),
        };
        de.deserialize_seq(Rows(&mut chunk))?;
        de.end()?;
        Ok(chunk)
    }

    /// Parses a chunk as [`Self::parse`] does, keeping `text` as the buffer of its strings
    /// when it is a list of flat rows (no copy of them; see [`flat`]).
    pub fn parse_owned(text: Vec<u8>) -> Result<Self, serde_json::Error> {
        let text = String::from_utf8(text).map_err(|e| serde::de::Error::custom(e.utf8_error()))?;
        flat::parse(text).or_else(|text| Self::parse(text.as_bytes()))
    }

    /// Rows in the chunk.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// The `i`-th row as the context reads a row of the table `origin` names.
    pub fn row(self: &Rc<Self>, i: usize, origin: Origin<'a>) -> Option<Value<'a>> {
        Some(match *self.rows.get(i)? {
            RowAt::Object { .. } => Value::Map(MapV::Row {
                chunk: self.clone(),
                row: i,
                origin,
            }),
            // A row that is a string stays one (read from a table, it is never a time).
            RowAt::Other(cell) => match self.cells.get(cell)? {
                Cell::Str(span) => Value::Str(Text::Chunk(self.clone(), *span), false),
                other => self.cell_value(other),
            },
        })
    }

    /// The text of a span.
    pub fn str(&self, span: Span) -> &str {
        let start = span.start as usize;
        self.text
            .get(start..start.saturating_add(span.len as usize))
            .unwrap_or_default()
    }

    /// The shape and the cells of the `row`-th row when it is an object.
    fn object(&self, row: usize) -> Option<(&Shape, &[Cell<'a>])> {
        let RowAt::Object { shape, start } = *self.rows.get(row)? else {
            return None;
        };
        let shape = self.shapes.get(shape)?;
        let cells = self
            .cells
            .get(start..start.checked_add(shape.names.len())?)?;
        Some((shape, cells))
    }

    /// Fields of the `row`-th row.
    pub fn row_len(&self, row: usize) -> usize {
        self.object(row).map_or(0, |(s, _)| s.names.len())
    }

    /// The field `key` of the `row`-th row, as `Value::from_json` reads it below a row.
    pub fn field(self: &Rc<Self>, row: usize, key: &str) -> Option<Value<'a>> {
        let (shape, cells) = self.object(row)?;
        let cell = cells.get(shape.position(key)?)?;
        Some(self.cell_value(cell))
    }

    /// The field `key` of the `row`-th row as a template prints it, read without making a
    /// value: a string (a time when Go prints one as it, as [`Self::field`] reads it) or an
    /// integer. `None` for anything else (no such row or field, another kind of cell): the
    /// caller then reads it with [`Self::field`].
    ///
    /// The field's position is taken from `hint` when it was found in this chunk's shape of
    /// the row (the same names, so the same position of `key`), else
    /// looked up by name and kept in `hint`. The caller MUST keep one hint per `key` (one
    /// per printed expression): a hint only says where `key` was.
    pub(crate) fn plain_field_hinted(
        &self,
        row: usize,
        key: &str,
        hint: &mut Option<FieldHint>,
    ) -> Option<PlainCell<'_>> {
        let RowAt::Object { shape, start } = *self.rows.get(row)? else {
            return None;
        };
        let pos = match *hint {
            Some(h) if h.serial == self.serial && h.shape == shape => h.pos,
            _ => {
                let pos = self.shapes.get(shape)?.position(key)?;
                *hint = Some(FieldHint {
                    serial: self.serial,
                    shape,
                    pos,
                });
                pos
            }
        };
        match self.cells.get(start.checked_add(pos)?)? {
            Cell::Int(i) => Some(PlainCell::Int(*i)),
            Cell::Str(span) => {
                let s = self.str(*span);
                Some(match gotime::parse_go_string(s) {
                    Some(t) => PlainCell::Time(t),
                    None => PlainCell::Str(s),
                })
            }
            _ => None,
        }
    }

    /// The fields of the `row`-th row, sorted by name.
    pub fn entries(self: &Rc<Self>, row: usize) -> Vec<(Rc<str>, Value<'a>)> {
        let Some((shape, cells)) = self.object(row) else {
            return Vec::new();
        };
        let mut out: Vec<(Rc<str>, Value<'a>)> = shape
            .names
            .iter()
            .zip(cells)
            .map(|(n, c)| (n.clone(), self.cell_value(c)))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// A cell's value below a row: a string Go prints a time as is a time.
    fn cell_value(self: &Rc<Self>, cell: &Cell<'a>) -> Value<'a> {
        match cell {
            Cell::Null => Value::Nil,
            Cell::Bool(b) => Value::Bool(*b),
            Cell::Int(i) => Value::Int(*i),
            Cell::Float(f) => Value::Float(*f),
            Cell::Str(span) => match gotime::parse_go_string(self.str(*span)) {
                Some(t) => Value::Time(Rc::new(t)),
                None => Value::Str(Text::Chunk(self.clone(), *span), false),
            },
            Cell::Nested(v) => v.clone(),
        }
    }

    /// Appends a string to the text buffer: its span. MUST fail when the buffer would pass
    /// 4 GiB (no render child's memory bound allows that much in one chunk).
    fn push_str<E: serde::de::Error>(&mut self, s: &str) -> Result<Span, E> {
        let start = u32::try_from(self.text.len()).map_err(|_| E::custom("chunk too large"))?;
        let len = u32::try_from(s.len()).map_err(|_| E::custom("chunk too large"))?;
        start
            .checked_add(len)
            .ok_or_else(|| E::custom("chunk too large"))?;
        self.text.push_str(s);
        Ok(Span { start, len })
    }

    /// Ends an object row whose names matched `shape`'s so far: `matched` names.
    fn end_row(&mut self, shape: usize, start: usize, matched: usize) {
        if self
            .shapes
            .get(shape)
            .is_some_and(|s| s.names.len() == matched)
        {
            self.rows.push(RowAt::Object { shape, start });
            return;
        }
        // Fewer fields than the shape: a shape of its own.
        let names = self.prefix(shape, matched);
        self.push_shaped(names, start);
    }

    /// The first `n` names of `shape`.
    fn prefix(&self, shape: usize, n: usize) -> Vec<Rc<str>> {
        self.shapes
            .get(shape)
            .map(|s| s.names.iter().take(n).cloned().collect())
            .unwrap_or_default()
    }

    /// Adds a row of new `names` whose cells start at `start`.
    fn push_shaped(&mut self, names: Vec<Rc<str>>, start: usize) {
        let shape = self.shapes.len();
        self.shapes.push(Shape::new(names));
        self.rows.push(RowAt::Object { shape, start });
    }
}

/// The chunk's list.
struct Rows<'c, 'a>(&'c mut RowChunk<'a>);

impl<'de, 'a> Visitor<'de> for Rows<'_, 'a> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of rows")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(RowSeed(&mut *self.0))?.is_some() {}
        Ok(())
    }
}

/// One row.
struct RowSeed<'c, 'a>(&'c mut RowChunk<'a>);

impl<'de, 'a> DeserializeSeed<'de> for RowSeed<'_, 'a> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'a> RowSeed<'_, 'a> {
    /// A row that is not an object: one cell.
    fn other<E: serde::de::Error>(self, cell: Result<Cell<'a>, E>) -> Result<(), E> {
        let at = self.0.cells.len();
        self.0.cells.push(cell?);
        self.0.rows.push(RowAt::Other(at));
        Ok(())
    }
}

impl<'de, 'a> Visitor<'de> for RowSeed<'_, 'a> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a row")
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<(), E> {
        self.other(Ok(Cell::Bool(v)))
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<(), E> {
        self.other(Ok(Cell::Int(v)))
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<(), E> {
        self.other(Ok(u64_cell(v)))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<(), E> {
        self.other(Ok(f64_cell(v)))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(), E> {
        let cell = CellSeed(&mut *self.0).visit_str(v);
        self.other(cell)
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        self.other(Ok(Cell::Null))
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<(), E> {
        self.other(Ok(Cell::Null))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        let v = serde_json::Value::deserialize(SeqAccessDeserializer::new(seq))
            .map_err(serde::de::Error::custom)?;
        self.other(Ok(Cell::Nested(owned(&v))))
    }

    /// An object row: its cells go straight into the chunk while its names match the shape
    /// of the row before; anything else (other names, more names, a repeated name) takes
    /// the slow path.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let chunk = self.0;
        let start = chunk.cells.len();
        let Some(shape) = chunk.shapes.len().checked_sub(1) else {
            return slow_row(chunk, map, Vec::new(), start);
        };
        let mut matched = 0;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let expected = chunk
                .shapes
                .get(shape)
                .and_then(|s| s.names.get(matched))
                .filter(|n| ***n == *key)
                .is_some();
            if !expected {
                let mut names = chunk.prefix(shape, matched);
                names.push(Rc::from(&*key));
                let cell = map.next_value_seed(CellSeed(&mut *chunk))?;
                chunk.cells.push(cell);
                return slow_row(chunk, map, names, start);
            }
            let cell = map.next_value_seed(CellSeed(&mut *chunk))?;
            chunk.cells.push(cell);
            matched += 1;
        }
        chunk.end_row(shape, start, matched);
        Ok(())
    }
}

/// The rest of an object row whose first `names` have their cells from `start` on: names
/// collected, repeats merged (first place, last value), a shape of their own. Linear in the
/// row's fields.
fn slow_row<'de, 'a, A: MapAccess<'de>>(
    chunk: &mut RowChunk<'a>,
    mut map: A,
    mut names: Vec<Rc<str>>,
    start: usize,
) -> Result<(), A::Error> {
    while let Some(key) = map.next_key_seed(KeySeed)? {
        names.push(Rc::from(&*key));
        let cell = map.next_value_seed(CellSeed(&mut *chunk))?;
        chunk.cells.push(cell);
    }
    let cells: Vec<Cell<'a>> = chunk.cells.drain(start.min(chunk.cells.len())..).collect();
    let mut at: HashMap<Rc<str>, usize> = HashMap::with_capacity(names.len());
    let mut unique: Vec<Rc<str>> = Vec::with_capacity(names.len());
    for (name, cell) in names.into_iter().zip(cells) {
        match at.get(&name) {
            Some(&i) => {
                if let Some(slot) = chunk.cells.get_mut(start + i) {
                    *slot = cell;
                }
            }
            None => {
                at.insert(name.clone(), unique.len());
                unique.push(name);
                chunk.cells.push(cell);
            }
        }
    }
    chunk.push_shaped(unique, start);
    Ok(())
}

/// A field name: borrowed from the text when it has no escapes.
enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl std::ops::Deref for Key<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        match self {
            Key::Borrowed(s) => s,
            Key::Owned(s) => s,
        }
    }
}

struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key<'de>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Key<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
        Ok(Key::Borrowed(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
        Ok(Key::Owned(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
        Ok(Key::Owned(v))
    }
}

/// One cell.
struct CellSeed<'c, 'a>(&'c mut RowChunk<'a>);

impl<'de, 'a> DeserializeSeed<'de> for CellSeed<'_, 'a> {
    type Value = Cell<'a>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Cell<'a>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 'a> Visitor<'de> for CellSeed<'_, 'a> {
    type Value = Cell<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Cell<'a>, E> {
        Ok(Cell::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Cell<'a>, E> {
        Ok(Cell::Int(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Cell<'a>, E> {
        Ok(u64_cell(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Cell<'a>, E> {
        Ok(f64_cell(v))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Cell<'a>, E> {
        self.0.push_str(v).map(Cell::Str)
    }

    fn visit_unit<E>(self) -> Result<Cell<'a>, E> {
        Ok(Cell::Null)
    }

    fn visit_none<E>(self) -> Result<Cell<'a>, E> {
        Ok(Cell::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Cell<'a>, A::Error> {
        let v = serde_json::Value::deserialize(SeqAccessDeserializer::new(seq))
            .map_err(serde::de::Error::custom)?;
        Ok(Cell::Nested(owned(&v)))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Cell<'a>, A::Error> {
        let v = serde_json::Value::deserialize(MapAccessDeserializer::new(map))
            .map_err(serde::de::Error::custom)?;
        Ok(Cell::Nested(owned(&v)))
    }
}

/// A number past `i64` as `Value::from_json` reads it: the largest `i64`.
fn u64_cell<'a>(v: u64) -> Cell<'a> {
    Cell::Int(i64::try_from(v).unwrap_or(i64::MAX))
}

/// A float as the context holds it (a JSON number is always finite; `Null` otherwise, as
/// `serde_json::Number::from_f64`).
fn f64_cell<'a>(v: f64) -> Cell<'a> {
    if v.is_finite() {
        Cell::Float(v)
    } else {
        Cell::Null
    }
}

/// A nested list or object as values of its own, as `Value::from_json` reads it below a
/// row.
fn owned<'a>(v: &serde_json::Value) -> Value<'a> {
    let arena = JsonArena::new();
    let json = Json::from_value(v, &arena);
    crate::value::own_json(&json)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json_tree::JsonArena;

    /// Each row of `text` as the context reads it: its fields sorted, printed as Go's `%v`.
    fn context_rows(text: &str) -> Vec<String> {
        let arena = JsonArena::new();
        let Ok(Json::Array(rows)) = Json::parse(text.as_bytes(), &arena) else {
            panic!("a list: {text}")
        };
        rows.iter()
            .map(|r| Value::from_json(r, Origin::Row("d", "t")).to_go_v())
            .collect()
    }

    fn chunk_rows(text: &str) -> Vec<String> {
        let chunk = Rc::new(RowChunk::parse(text.as_bytes()).expect(text));
        (0..chunk.len())
            .map(|i| {
                chunk
                    .row(i, Origin::Row("d", "t"))
                    .expect("a row")
                    .to_go_v()
            })
            .collect()
    }

    #[test]
    fn rows_read_as_the_context_reads_them() {
        let wide: Vec<String> = (0..12).map(|i| format!("\"f{}\":{i}", 11 - i)).collect();
        let wide = format!("{{{}}}", wide.join(","));
        for text in [
            r#"[{"a":1,"b":"x"},{"a":2,"b":"y"},{"b":"z","a":3},{"a":4},{"a":5,"b":"w","c":null}]"#,
            r#"[{"dup":1,"x":0,"dup":2},{"dup":3,"dup":4},{"a\"b":"q\n","a\"b":{"c":[1,2]}}]"#,
            r#"[{"t":"2024-01-02 03:04:05 +0000 UTC","n":18446744073709551615,"f":-1.5e300,"z":-0,"b":true}]"#,
            r#"["2024-01-02 03:04:05 +0000 UTC",7,null,[1,"x"],{"k":{"n":[{}]}},true,1.5]"#,
            r#"[{"e\u0041":"\u00e9\t"},{"eA":"same name, written plainly"}]"#,
            &format!("[{wide},{wide}]"),
            &format!("[{wide},{{\"a\":1}},{wide},{{\"a\":2,\"b\":3}},{{\"b\":4,\"a\":5}}]"),
            &format!(
                "[{}]",
                wide.replacen("\"f3\"", "\"f9\"", 1)
                    .replacen("\"f0\"", "\"f11\"", 1)
            ),
            "[]",
        ] {
            assert_eq!(chunk_rows(text), context_rows(text), "{text}");
        }
    }

    #[test]
    fn field_reads_match_and_strings_stay_in_the_chunk() {
        let text = r#"[{"label":"entry 1","when":"2020-01-05 00:00:00 +0000 UTC","gone":null}]"#;
        let chunk = Rc::new(RowChunk::parse(text.as_bytes()).expect("parses"));
        let Some(Value::Map(row)) = chunk.row(0, Origin::Row("d", "t")) else {
            panic!("an object row")
        };
        assert!(matches!(
            row.get("label"),
            Some(Value::Str(Text::Chunk(..), false))
        ));
        assert!(matches!(row.get("when"), Some(Value::Time(_))));
        assert!(matches!(row.get("gone"), Some(Value::Nil)));
        assert!(row.get("missing").is_none());
        assert_eq!(row.len(), 3);
        assert_eq!(row.origin(), Origin::Row("d", "t"));
        // The block lives as long as a value read from it.
        let label = row.get("label");
        drop(row);
        drop(chunk);
        assert_eq!(
            label.and_then(|v| v.as_str().map(str::to_owned)).as_deref(),
            Some("entry 1")
        );
    }

    #[test]
    fn what_is_not_a_list_of_json_values_is_refused() {
        for text in [
            "",
            "{}",
            "[1,]",
            "[{\"a\":1}] x",
            "[{\"a\" 1}]",
            "\"rows\"",
            "[\u{0}]",
        ] {
            assert!(RowChunk::parse(text.as_bytes()).is_err(), "{text:?}");
        }
        assert!(RowChunk::parse(b"[\xff]").is_err());
    }
}
