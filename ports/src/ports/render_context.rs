//! [`RenderContext`]: the data a render reads, as JSON text written once.
use super::Row;
use bytes::Bytes;

/// The data a render reads, `{ "<data source>": { "<table>": [ {row}, … ] } }`, as JSON text
/// kept in the pieces it was written in. A section's rows are serialized once, as they arrive
/// from the data source ([`SectionJson`]); the sandbox sends the pieces to the render process
/// one after the other, so a large context is never joined, copied or serialized again.
///
/// Every value of this type is one valid JSON document: it can only be built from a
/// `serde_json::Value` or from finished sections (then an object).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RenderContext {
    parts: Vec<Bytes>,
}

impl RenderContext {
    /// The context of an already built JSON value (small contexts and tests).
    pub fn from_value(value: &serde_json::Value) -> Self {
        // Serializing a `Value` into a Vec cannot fail (its keys are strings).
        let bytes = serde_json::to_vec(value).unwrap_or_else(|_| b"null".to_vec());
        Self {
            parts: vec![Bytes::from(bytes)],
        }
    }

    /// The object `{ "<name>": <section>, … }`, its members in the order given. Names MUST be
    /// distinct (the data sources of one report are).
    pub fn from_sections(sections: impl IntoIterator<Item = (String, JsonSection)>) -> Self {
        let mut parts = Vec::new();
        let mut key = b"{".to_vec();
        for (i, (name, section)) in sections.into_iter().enumerate() {
            if i > 0 {
                key.push(b',');
            }
            write_key(&mut key, &name);
            parts.push(Bytes::from(std::mem::take(&mut key)));
            parts.push(section.0);
        }
        key.push(b'}');
        parts.push(Bytes::from(key));
        Self { parts }
    }

    /// The pieces, to be sent in order; together they are the JSON text.
    pub fn parts(&self) -> &[Bytes] {
        &self.parts
    }

    /// Total bytes of the JSON text.
    pub fn len(&self) -> usize {
        self.parts.iter().map(Bytes::len).sum()
    }

    /// True when the text is empty (never: the smallest context is `{}`).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The JSON text joined (tests and diagnostics; renders never join it).
    pub fn to_vec(&self) -> Vec<u8> {
        self.parts.concat()
    }
}

/// Writes `"name":` (the name JSON-escaped).
fn write_key(out: &mut Vec<u8>, name: &str) {
    // Serializing a &str into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, name);
    out.push(b':');
}

/// One finished section, `{ "<table>": [ {row}, … ], … }`, as JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonSection(Bytes);

impl JsonSection {
    /// Bytes of its JSON text.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Never true (the smallest section is `{}`).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Writes one section's tables, row by row, as JSON text. Rows are written as they are
/// pushed, so nothing but the text is kept.
#[derive(Debug)]
pub struct SectionJson {
    buf: Vec<u8>,
    /// A table is open (its `]` is still to be written).
    open_table: bool,
    /// The open table has no row yet.
    first_row: bool,
}

impl Default for SectionJson {
    fn default() -> Self {
        Self::new()
    }
}

impl SectionJson {
    /// An empty section.
    pub fn new() -> Self {
        Self {
            buf: b"{".to_vec(),
            open_table: false,
            first_row: true,
        }
    }

    /// Starts the table `name` (closing the previous one); its rows follow. Names MUST be
    /// distinct within a section.
    pub fn table(&mut self, name: &str) -> TableJson<'_> {
        if self.open_table {
            self.buf.extend_from_slice(b"],");
        }
        write_key(&mut self.buf, name);
        self.buf.push(b'[');
        self.open_table = true;
        self.first_row = true;
        TableJson { section: self }
    }

    /// The finished section.
    pub fn finish(mut self) -> JsonSection {
        if self.open_table {
            self.buf.push(b']');
        }
        self.buf.push(b'}');
        JsonSection(Bytes::from(self.buf))
    }
}

/// The rows of the table a [`SectionJson`] has open.
#[derive(Debug)]
pub struct TableJson<'a> {
    section: &'a mut SectionJson,
}

impl TableJson<'_> {
    /// Appends `row` and answers the bytes of its JSON text.
    pub fn push(&mut self, row: &Row) -> usize {
        let buf = self.next_row();
        let before = buf.len();
        // Serializing a JSON map into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *buf, row);
        buf.len() - before
    }

    /// Appends a row given as its JSON text (one object, see `RowSink::push_json`) and
    /// answers its bytes.
    pub fn push_json(&mut self, json: &[u8]) -> usize {
        self.next_row().extend_from_slice(json);
        json.len()
    }

    /// The buffer, with the separator before the next row written.
    fn next_row(&mut self) -> &mut Vec<u8> {
        let s = &mut *self.section;
        if !s.first_row {
            s.buf.push(b',');
        }
        s.first_row = false;
        &mut s.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn row(v: Value) -> Row {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    fn parsed(c: &RenderContext) -> Value {
        serde_json::from_slice(&c.to_vec()).expect("valid JSON")
    }

    #[test]
    fn a_row_given_as_json_is_written_as_its_map_would_be() {
        let r = row(json!({"id": 1, "name": "Zoë \"q\""}));
        let text = serde_json::to_vec(&r).unwrap();
        let (mut a, mut b) = (SectionJson::new(), SectionJson::new());
        let (mut ta, mut tb) = (a.table("t"), b.table("t"));
        for _ in 0..3 {
            assert_eq!(ta.push(&r), tb.push_json(&text));
        }
        assert_eq!(a.finish(), b.finish());
    }

    #[test]
    fn sections_write_the_document_the_value_would() {
        let mut a = SectionJson::new();
        let mut t = a.table("people");
        let n = t.push(&row(json!({"id": 1, "name": "Zoë \"q\""})));
        assert_eq!(n, r#"{"id":1,"name":"Zoë \"q\""}"#.len());
        t.push(&row(json!({"id": 2, "name": null})));
        a.table("empty");
        let mut b = SectionJson::new();
        b.table("t\"x");
        let c = RenderContext::from_sections([
            ("a".to_owned(), a.finish()),
            ("b\n".to_owned(), b.finish()),
            ("none".to_owned(), SectionJson::new().finish()),
        ]);
        let want = json!({
            "a": {"people": [{"id": 1, "name": "Zoë \"q\""}, {"id": 2, "name": null}], "empty": []},
            "b\n": {"t\"x": []},
            "none": {},
        });
        assert_eq!(parsed(&c), want);
        assert_eq!(c.len(), c.to_vec().len());
        assert_eq!(parsed(&RenderContext::from_value(&want)), want);
    }

    #[test]
    fn no_section_is_an_empty_object() {
        let c = RenderContext::from_sections([]);
        assert_eq!(c.to_vec(), b"{}");
        assert!(!c.is_empty());
    }
}
