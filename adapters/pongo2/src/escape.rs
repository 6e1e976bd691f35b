//! HTML escaping exactly as Pongo2's `escape` filter and autoescape do it:
//! `&` `<` `>` `"` `'` become `&amp;` `&lt;` `&gt;` `&quot;` `&#39;` (no other character is
//! touched). Hand-written because the escaping crates differ in the quote forms (`&#x27;`,
//! `&#x2F;`), and the output must be byte-identical to the original's.
use std::borrow::Cow;

fn entity(b: u8) -> Option<&'static str> {
    match b {
        b'&' => Some("&amp;"),
        b'<' => Some("&lt;"),
        b'>' => Some("&gt;"),
        b'"' => Some("&quot;"),
        b'\'' => Some("&#39;"),
        _ => None,
    }
}

/// The escaped length of `s`.
pub fn escaped_len(s: &str) -> usize {
    s.bytes().map(|b| entity(b).map_or(1, str::len)).sum()
}

/// Strings up to this length are checked byte by byte: cheaper than setting up two vector
/// searches for a table cell.
const SHORT: usize = 64;

/// Whether `s` holds a byte to escape (SIMD search: most values hold none).
fn needs_escaping(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() <= SHORT {
        return b.iter().any(|&c| entity(c).is_some());
    }
    memchr::memchr3(b'&', b'<', b'>', b).is_some() || memchr::memchr2(b'"', b'\'', b).is_some()
}

/// Escapes `s` (borrowed when nothing needs escaping).
pub fn html_escape(s: &str) -> Cow<'_, str> {
    if !needs_escaping(s) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(escaped_len(s));
    let mut last = 0;
    for (i, b) in s.bytes().enumerate() {
        if let Some(e) = entity(b) {
            out.push_str(s.get(last..i).unwrap_or_default());
            out.push_str(e);
            last = i + 1;
        }
    }
    out.push_str(s.get(last..).unwrap_or_default());
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn pongo2_entities() {
        assert_eq!(
            super::html_escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(super::html_escape("plain é"), "plain é");
        assert_eq!(super::escaped_len("<&"), 9);
        for c in ['&', '<', '>', '"', '\'', 'x'] {
            let s = format!("{}{c}", "a".repeat(40));
            assert_eq!(super::needs_escaping(&s), c != 'x', "{s}");
        }
    }
}
