//! JSON strings appended to a buffer: the bytes serde_json writes for a `&str`, with the
//! common case (nothing to escape) copied in one piece instead of scanned byte by byte.

/// Appends `s` as a JSON string to `out`: exactly the bytes `serde_json::to_writer(out, s)`
/// writes (serde_json itself writes any string that needs escaping).
pub fn write_str(s: &str, out: &mut Vec<u8>) -> serde_json::Result<()> {
    if needs_escape(s.as_bytes()) {
        return serde_json::to_writer(out, s);
    }
    out.reserve(s.len() + 2);
    out.push(b'"');
    out.extend_from_slice(s.as_bytes());
    out.push(b'"');
    Ok(())
}

/// Whether serde_json escapes any byte of `bytes` (its `ESCAPE` table: a quote, a backslash,
/// a control character below 0x20). Every byte is looked at, without an early exit, so the
/// loop runs on whole vectors.
fn needs_escape(bytes: &[u8]) -> bool {
    bytes.iter().fold(false, |any, &b| {
        any | (b < 0x20) | (b == b'"') | (b == b'\\')
    })
}

#[cfg(test)]
mod tests {
    use super::write_str;
    use proptest::prelude::*;

    fn written(s: &str) -> Vec<u8> {
        let mut out = b"x".to_vec();
        write_str(s, &mut out).unwrap();
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

    proptest! {
        #[test]
        fn any_string_is_written_as_serde_json_writes_it(s in any::<String>()) {
            prop_assert_eq!(written(&s), serde(&s));
        }
    }
}
