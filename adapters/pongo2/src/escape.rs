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

/// Strings up to this length are checked eight bytes at a time ([`word_needs_escaping`]):
/// cheaper than setting up two vector searches for a table cell.
const SHORT: usize = 64;

/// `0x01` in every byte.
const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
/// `0x80` in every byte.
const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);

/// Nonzero when a byte of `word` equals `byte` (the classic zero-byte test on `word ^ byte…`:
/// exact as to whether such a byte exists, which is all that is asked).
#[inline(always)]
fn has_byte(word: u64, byte: u8) -> u64 {
    let x = word ^ ONES.wrapping_mul(u64::from(byte));
    x.wrapping_sub(ONES) & !x & HIGHS
}

/// Whether one of the eight bytes of `word` is one [`entity`] replaces: branch-free, so a
/// table cell is checked in a few instructions per eight bytes instead of a branch per byte.
#[inline(always)]
fn word_needs_escaping(word: u64) -> bool {
    (has_byte(word, b'&')
        | has_byte(word, b'<')
        | has_byte(word, b'>')
        | has_byte(word, b'"')
        | has_byte(word, b'\''))
        != 0
}

/// Whether `s` holds a byte to escape (most values hold none): up to [`SHORT`] bytes eight at
/// a time (the last word padded with zero bytes, which no entity replaces), longer ones with
/// SIMD searches.
fn needs_escaping(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() <= SHORT {
        let mut words = b.chunks_exact(8);
        for w in words.by_ref() {
            let mut word = [0u8; 8];
            word.copy_from_slice(w);
            if word_needs_escaping(u64::from_ne_bytes(word)) {
                return true;
            }
        }
        let rest = words.remainder();
        let mut word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        return word_needs_escaping(u64::from_ne_bytes(word));
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

    /// Every byte value at every place of strings around the word and SIMD sizes: the check
    /// agrees with a byte-by-byte one.
    #[test]
    fn needs_escaping_agrees_with_a_byte_scan() {
        for len in 0..=80usize {
            for at in 0..len {
                for b in 0u8..=127 {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = b;
                    let s = String::from_utf8(bytes).expect("ascii");
                    let want = s.bytes().any(|c| super::entity(c).is_some());
                    assert_eq!(super::needs_escaping(&s), want, "{len} {at} {b}");
                }
            }
        }
        assert!(!super::needs_escaping("é€ plain 0123456789"));
        assert!(super::needs_escaping("é€ <plain>"));
    }
}
