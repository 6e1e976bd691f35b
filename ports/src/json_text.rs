//! JSON strings appended to a buffer: exactly the bytes serde_json writes for a `&str`, with
//! the common case (nothing to escape: most text) copied in one piece instead of scanned and
//! written byte by byte. Used where a hot path writes JSON by hand (the stored template's
//! answer, a data source's rows).

/// Appends `s` as a JSON string to `out`: exactly the bytes `serde_json::to_writer(out, s)`
/// writes (serde_json itself writes any string that needs escaping).
pub fn write_json_str(s: &str, out: &mut Vec<u8>) -> serde_json::Result<()> {
    if needs_json_escape(s.as_bytes()) {
        return serde_json::to_writer(out, s);
    }
    out.reserve(s.len() + 2);
    out.push(b'"');
    out.extend_from_slice(s.as_bytes());
    out.push(b'"');
    Ok(())
}

/// Whether a byte of `b` is one serde_json escapes in a string (its `ESCAPE` table: below
/// 0x20, `"` or `\\`; it escapes nothing else). Checked sixteen bytes at a time without an
/// early exit inside a block, which the compiler turns into vector compares.
fn needs_json_escape(b: &[u8]) -> bool {
    let escaped = |c: u8| c < 0x20 || c == b'"' || c == b'\\';
    let mut blocks = b.chunks_exact(16);
    for block in blocks.by_ref() {
        if block.iter().fold(false, |any, &c| any | escaped(c)) {
            return true;
        }
    }
    blocks.remainder().iter().any(|&c| escaped(c))
}

#[cfg(test)]
mod tests {
    use super::write_json_str;
    use proptest::prelude::*;

    fn written(s: &str) -> Vec<u8> {
        let mut out = b"x".to_vec();
        write_json_str(s, &mut out).unwrap();
        out
    }

    fn serde(s: &str) -> Vec<u8> {
        let mut out = b"x".to_vec();
        serde_json::to_writer(&mut out, s).unwrap();
        out
    }

    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        for s in [
            "",
            "plain",
            "quote \" here",
            "back\\slash",
            "new\nline\ttab\r\u{8}\u{c}",
            "\u{0}\u{1f}\u{7f}",
            "ünïcode ✓ 𝄞",
            "</script>",
        ] {
            assert_eq!(written(s), serde(s), "{s:?}");
        }
        for b in 0u8..=127 {
            let s = format!("a{}b", char::from(b));
            assert_eq!(written(&s), serde(&s), "{b}");
        }
    }

    #[test]
    fn an_escaped_byte_is_found_at_any_place_of_a_block() {
        for len in [1usize, 15, 16, 17, 31, 32, 33, 50] {
            for at in 0..len {
                for c in (0u8..0x20).chain([b'"', b'\\', b'/', 0x7f, b'a']) {
                    let mut t = vec![b'a'; len];
                    t[at] = c;
                    let t = String::from_utf8(t).unwrap();
                    assert_eq!(written(&t), serde(&t), "{t:?}");
                }
            }
        }
    }

    proptest! {
        #[test]
        fn any_string_is_written_as_serde_json_writes_it(s in any::<String>()) {
            prop_assert_eq!(written(&s), serde(&s));
        }
    }
}
