//! The one rule for text people type into Reporter (deadline names and descriptions, template
//! descriptions): no control characters and no bidirectional formatting characters.
//!
//! Control characters (NUL, ESC, CR, LF, TAB, DEL, the C1 range) break logs, CSV exports and
//! terminals; bidi formatting characters (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F,
//! U+061C) make a name display differently from what it is ("Trojan Source"). Both are refused
//! everywhere a person enters text, with one check, so every field behaves the same.

/// True for a character human-entered text must not contain.
pub fn is_forbidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
        )
}

/// The first forbidden character of `s`, if any.
pub fn first_forbidden(s: &str) -> Option<char> {
    s.chars().find(|c| is_forbidden(*c))
}

/// An ECMA-262 regular expression (as OpenAPI `pattern` takes it) matching exactly the strings
/// without a forbidden character. Kept beside [`is_forbidden`] so the spec and the check
/// cannot disagree (a test compares them).
pub const ALLOWED_PATTERN: &str =
    "^[^\\u0000-\\u001F\\u007F-\\u009F\\u061C\\u200E\\u200F\\u202A-\\u202E\\u2066-\\u2069]*$";

/// Like [`ALLOWED_PATTERN`], and the text also contains a character that is not white space
/// (for required names, which must not be blank).
pub const NON_BLANK_PATTERN: &str = "^[^\\u0000-\\u001F\\u007F-\\u009F\\u061C\\u200E\\u200F\\u202A-\\u202E\\u2066-\\u2069]*[^\\s\\u0000-\\u001F\\u007F-\\u009F\\u061C\\u200E\\u200F\\u202A-\\u202E\\u2066-\\u2069][^\\u0000-\\u001F\\u007F-\\u009F\\u061C\\u200E\\u200F\\u202A-\\u202E\\u2066-\\u2069]*$";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_bidi_overrides_are_forbidden() {
        for c in [
            '\0', '\u{1b}', '\r', '\n', '\t', '\u{7f}', '\u{85}', '\u{9f}', '\u{202E}', '\u{2066}',
            '\u{2069}', '\u{200F}', '\u{061C}',
        ] {
            assert!(is_forbidden(c), "{c:?}");
        }
        for c in ['a', ' ', 'é', '—', '你', '🙂', '\u{a0}', '\u{200B}'] {
            assert!(!is_forbidden(c), "{c:?}");
        }
        assert_eq!(first_forbidden("ok\u{202E}gnp.exe"), Some('\u{202E}'));
        assert_eq!(first_forbidden("Relatório — 2026"), None);
    }

    /// The spec's pattern names exactly the ranges [`is_forbidden`] refuses: every code point
    /// of the pattern's excluded ranges is forbidden, and every forbidden code point below
    /// U+3000 is inside one of them.
    #[test]
    fn the_pattern_names_exactly_the_forbidden_characters() {
        let ranges = [
            (0x00, 0x1F),
            (0x7F, 0x9F),
            (0x61C, 0x61C),
            (0x200E, 0x200F),
            (0x202A, 0x202E),
            (0x2066, 0x2069),
        ];
        for (lo, hi) in ranges {
            for bound in [lo, hi] {
                let escaped = format!("\\u{bound:04X}");
                assert!(ALLOWED_PATTERN.contains(&escaped), "{escaped}");
            }
        }
        for cp in 0..0x3000u32 {
            let Some(c) = char::from_u32(cp) else {
                continue;
            };
            let in_pattern = ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&cp));
            assert_eq!(in_pattern, is_forbidden(c), "U+{cp:04X}");
        }
    }
}
