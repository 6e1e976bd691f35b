//! The common chunk read without serde: a list of flat rows (objects whose values are
//! strings without escapes, integers within `i64`, booleans or null), as the worker writes the
//! rows of most tables. Their strings are not copied: the chunk's text is the buffer its spans
//! point into.
//!
//! This reading only ever takes text that `serde_json` reads the same way: anything else (an
//! escape, a control character or a backslash in a string, a float, `-0`, an integer past
//! `i64`, a nested value, a row that is not an object, a repeated field name, a syntax error)
//! is declined, and the caller reads the chunk with serde from the start, which answers it,
//! errors included, as before. Declining costs one scan of the text at most.
use super::{Cell, RowAt, RowChunk, Shape, Span};
use std::rc::Rc;

/// Fields a row may have for its names to be checked for repeats pairwise; more are sorted.
const PAIRWISE: usize = 16;

/// The chunk of `text` when it is a list of flat rows; otherwise `text` back.
pub(super) fn parse<'a>(text: String) -> Result<RowChunk<'a>, String> {
    let mut chunk = RowChunk {
        serial: super::next_serial(),
        text: String::new(),
        cells: Vec::new(),
        shapes: Vec::new(),
        rows: Vec::new(),
    };
    if rows(
        &mut Scan {
            b: text.as_bytes(),
            i: 0,
        },
        &mut chunk,
        &text,
    )
    .is_none()
    {
        return Err(text);
    }
    chunk.text = text;
    Ok(chunk)
}

/// A position in the text.
struct Scan<'t> {
    b: &'t [u8],
    i: usize,
}

impl Scan<'_> {
    /// The next byte after JSON whitespace.
    fn peek(&mut self) -> Option<u8> {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
        self.b.get(self.i).copied()
    }

    /// Takes `c` as the next byte after whitespace.
    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// A string without escapes or control characters: its span in the text.
    fn string(&mut self) -> Option<Span> {
        self.eat(b'"')?;
        let start = self.i;
        let rest = self.b.get(start..)?;
        let len = memchr::memchr2(b'"', b'\\', rest)?;
        let body = rest.get(..len)?;
        if rest.get(len) != Some(&b'"') || has_control(body) {
            return None;
        }
        self.i = start + len + 1;
        // Spans are `u32`: a chunk past 4 GiB is declined (no child's memory bound allows one).
        u32::try_from(start + len).ok()?;
        Some(Span {
            start: u32::try_from(start).ok()?,
            len: u32::try_from(len).ok()?,
        })
    }

    /// An integer `serde_json` reads as one within `i64` (not `-0`, which it reads as a
    /// float; not one with a fraction or an exponent).
    fn int(&mut self) -> Option<i64> {
        let negative = self.b.get(self.i) == Some(&b'-');
        if negative {
            self.i += 1;
        }
        let digits = self
            .b
            .get(self.i..)?
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        let text = self.b.get(self.i..self.i + digits)?;
        if digits == 0 || (digits > 1 && text.first() == Some(&b'0')) {
            return None;
        }
        self.i += digits;
        if matches!(self.b.get(self.i), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        let mut n: i64 = 0;
        for d in text {
            n = n.checked_mul(10)?.checked_add(i64::from(d - b'0'))?;
        }
        match (negative, n) {
            (true, 0) => None,
            (true, n) => Some(-n),
            (false, n) => Some(n),
        }
    }

    /// `word` (the rest of `true`, `false` or `null`).
    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.i.checked_add(word.len())?;
        (self.b.get(self.i..end)? == word).then(|| self.i = end)
    }

    /// A flat value.
    fn cell<'a>(&mut self) -> Option<Cell<'a>> {
        Some(match self.peek()? {
            b'"' => Cell::Str(self.string()?),
            b't' => self.literal(b"true").map(|()| Cell::Bool(true))?,
            b'f' => self.literal(b"false").map(|()| Cell::Bool(false))?,
            b'n' => self.literal(b"null").map(|()| Cell::Null)?,
            b'-' | b'0'..=b'9' => Cell::Int(self.int()?),
            _ => return None,
        })
    }
}

/// Whether `b` holds a control character (below 0x20): sixteen bytes at a time without an
/// early exit, which the compiler turns into vector compares (a byte loop that stops at the
/// first one does not vectorize, and every string of a chunk is checked).
fn has_control(b: &[u8]) -> bool {
    let mut blocks = b.chunks_exact(16);
    for block in blocks.by_ref() {
        if block.iter().fold(false, |any, &c| any | (c < 0x20)) {
            return true;
        }
    }
    blocks.remainder().iter().any(|&c| c < 0x20)
}

/// `[row, …]` and nothing after it but whitespace.
fn rows(s: &mut Scan<'_>, chunk: &mut RowChunk<'_>, text: &str) -> Option<()> {
    s.eat(b'[')?;
    if s.peek()? == b']' {
        s.i += 1;
    } else {
        loop {
            row(s, chunk, text)?;
            match s.peek()? {
                b',' => s.i += 1,
                b']' => {
                    s.i += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    (s.peek().is_none()).then_some(())
}

/// One `{"name": value, …}` row: its cells appended, its shape the last one while its names
/// match it, else a new one.
fn row(s: &mut Scan<'_>, chunk: &mut RowChunk<'_>, text: &str) -> Option<()> {
    s.eat(b'{')?;
    let start = chunk.cells.len();
    let last = chunk.shapes.len().checked_sub(1);
    // The names, once they no longer follow the last shape's.
    let mut names: Option<Vec<Rc<str>>> = None;
    let mut n = 0;
    if s.peek()? == b'}' {
        s.i += 1;
    } else {
        loop {
            let key = s.string()?;
            s.eat(b':')?;
            let cell = s.cell()?;
            chunk.cells.push(cell);
            let key = text.get(key.start as usize..key.start as usize + key.len as usize)?;
            match &mut names {
                Some(names) => names.push(Rc::from(key)),
                None => {
                    let same = last
                        .and_then(|l| chunk.shapes.get(l)?.names.get(n))
                        .is_some_and(|name| **name == *key);
                    if !same {
                        let mut fresh = prefix(chunk, last, n);
                        fresh.push(Rc::from(key));
                        names = Some(fresh);
                    }
                }
            }
            n += 1;
            match s.peek()? {
                b',' => s.i += 1,
                b'}' => {
                    s.i += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    let names = match (names, last) {
        (None, Some(l)) if chunk.shapes.get(l).is_some_and(|sh| sh.names.len() == n) => {
            chunk.rows.push(RowAt::Object { shape: l, start });
            return Some(());
        }
        (None, _) => prefix(chunk, last, n),
        (Some(names), _) => names,
    };
    if repeats(&names) {
        return None;
    }
    chunk.push_shaped(names, start);
    Some(())
}

/// The first `n` names of shape `shape`.
fn prefix(chunk: &RowChunk<'_>, shape: Option<usize>, n: usize) -> Vec<Rc<str>> {
    shape
        .and_then(|s| chunk.shapes.get(s))
        .map(|s: &Shape| s.names.iter().take(n).cloned().collect())
        .unwrap_or_default()
}

/// Whether a name repeats (serde's reading merges such a row: it is declined here).
fn repeats(names: &[Rc<str>]) -> bool {
    if names.len() <= PAIRWISE {
        return names
            .iter()
            .enumerate()
            .any(|(i, a)| names.iter().skip(i + 1).any(|b| a == b));
    }
    let mut sorted: Vec<&str> = names.iter().map(|n| &**n).collect();
    sorted.sort_unstable();
    sorted.windows(2).any(|w| w.first() == w.get(1))
}

#[cfg(test)]
mod tests {
    use super::super::RowChunk;
    use crate::value::{Origin, Value};
    use std::rc::Rc;

    /// Everything a template can read of a chunk's rows.
    fn reads(chunk: RowChunk<'_>) -> Vec<String> {
        let chunk = Rc::new(chunk);
        let mut out = Vec::new();
        for i in 0..chunk.len() {
            let row = chunk.row(i, Origin::Row("d", "t")).map(|v| v.to_go_v());
            out.push(format!("{i}: {row:?} ({} fields)", chunk.row_len(i)));
            for (name, value) in chunk.entries(i) {
                let field = chunk.field(i, &name).map(|v: Value<'_>| v.to_go_v());
                out.push(format!("{name}={} {field:?}", value.to_go_v()));
            }
        }
        out
    }

    /// Whether `text` is taken here, after checking that serde reads what is taken the same.
    fn check(text: &str) -> bool {
        let serde = RowChunk::parse(text.as_bytes());
        match super::parse(text.to_owned()) {
            Ok(fast) => {
                let serde = serde.unwrap_or_else(|e| panic!("{text}: taken, serde refuses: {e}"));
                assert_eq!(reads(fast), reads(serde), "{text}");
                true
            }
            Err(back) => {
                assert_eq!(back, text, "the text comes back whole");
                false
            }
        }
    }

    #[test]
    fn flat_rows_are_taken_and_read_as_serde_reads_them() {
        for text in [
            "[]",
            " [ ] ",
            r#"[{"id":1,"label":"entry 1","when":"2020-01-05 00:00:00 +0000 UTC","gone":null,"ok":true,"no":false}]"#,
            r#"[{"a":1,"b":"x"},{"a":2,"b":"y"},{"b":"z","a":3},{"a":4},{"a":5,"b":"w","c":null},{}]"#,
            "[{},{}]",
            "[ {\"a\" : -9223372036854775807 ,\n\"b\":\t9223372036854775807 } , {\"a\":0}\r\n]",
            r#"[{"é":"ünï","":""}]"#,
        ] {
            assert!(check(text), "{text} is taken");
        }
    }

    /// A control character anywhere in a string, at every place of blocks of sixteen, is
    /// declined; the same string without it is taken.
    #[test]
    fn control_characters_are_found_wherever_they_are() {
        for len in [1usize, 15, 16, 17, 31, 32, 33, 50] {
            assert!(check(&format!(r#"[{{"a":"{}"}}]"#, "x".repeat(len))));
            for at in 0..len {
                for c in ['\u{0}', '\u{1f}', '\t'] {
                    let mut s: Vec<char> = "x".repeat(len).chars().collect();
                    s[at] = c;
                    let s: String = s.into_iter().collect();
                    assert!(!check(&format!("[{{\"a\":\"{s}\"}}]")), "{s:?}");
                }
            }
        }
    }

    #[test]
    fn what_serde_reads_otherwise_is_declined() {
        for text in [
            r#"[{"a":"x\"y"}]"#,
            r#"[{"a\u0041":1}]"#,
            "[{\"a\":\"\u{1}\"}]",
            r#"[{"a":-0}]"#,
            r#"[{"a":1.5}]"#,
            r#"[{"a":1e3}]"#,
            r#"[{"a":9223372036854775808}]"#,
            r#"[{"a":-9223372036854775808}]"#,
            r#"[{"a":01}]"#,
            r#"[{"a":[1]}]"#,
            r#"[{"a":{}}]"#,
            r#"[{"a":1,"a":2}]"#,
            r#"[{"a":1},{"b":1,"b":2}]"#,
            r#"[1,{"a":1}]"#,
            r#"["x"]"#,
            r#"[{"a":1}] x"#,
            r#"[{"a":1},]"#,
            r#"[{"a" 1}]"#,
            r#"[{"a":tru}]"#,
            r#"[{"a":truex}]"#,
            r#"{"a":1}"#,
            "",
            "[",
        ] {
            assert!(!check(text), "{text} is declined");
        }
    }

    /// Generated chunks of tokens, well-formed or not: whatever is taken reads as serde
    /// reads it (and serde accepts it).
    #[test]
    fn generated_chunks_read_as_serde_reads_them() {
        const VALUES: [&str; 22] = [
            "\"abc\"",
            "\"\"",
            "\"a\\\"b\"",
            "\"é\"",
            "\"2024-01-02 03:04:05 +0000 UTC\"",
            "0",
            "-0",
            "1",
            "-1",
            "01",
            "9223372036854775807",
            "9223372036854775808",
            "1.5",
            "true",
            "false",
            "null",
            "[1]",
            "{}",
            "tru",
            "\"\u{1}\"",
            "-",
            "12",
        ];
        const KEYS: [&str; 5] = ["\"a\"", "\"b\"", "\"c\"", "\"a b\"", "\"\""];
        const SPACES: [&str; 5] = ["", "", " ", "\n", "\t "];
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as usize
        };
        let (mut taken, mut declined) = (0, 0);
        for _ in 0..4000 {
            let mut text = String::from(SPACES[next(5)]);
            text.push('[');
            let rows = next(4);
            for r in 0..rows {
                if r > 0 {
                    text.push(if next(50) == 0 { ';' } else { ',' });
                }
                text.push_str(SPACES[next(5)]);
                text.push('{');
                let fields = next(4);
                for f in 0..fields {
                    if f > 0 {
                        text.push(',');
                    }
                    let keys = if next(4) == 0 { 5 } else { 2 };
                    text.push_str(KEYS[next(keys)]);
                    text.push_str(SPACES[next(5)]);
                    text.push(':');
                    let values = if next(3) == 0 { 22 } else { 6 };
                    text.push_str(VALUES[next(values)]);
                }
                text.push('}');
            }
            text.push(']');
            text.push_str(SPACES[next(5)]);
            if check(&text) {
                taken += 1;
            } else {
                declined += 1;
            }
        }
        assert!(
            taken > 500 && declined > 500,
            "{taken} taken, {declined} declined"
        );
    }
}
