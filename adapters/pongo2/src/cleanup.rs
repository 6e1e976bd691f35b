//! The original's clean-up of the rendered text: decimal numbers lose their trailing zeros
//! (`150000.00` → `150000`, `25.00%` → `25%`, `007.50` → `7.5`), except inside the XML
//! declaration and in multi-dot codes (`1.1.2.00.000`, `v1.10.0`).
//!
//! The original applies the pattern `(^|[^.\d])(\d+\.\d*0+)` and keeps a match verbatim when
//! the character after it is a dot or a digit. This is the same scan, by hand, in one pass.
use regex::Regex;
use std::sync::OnceLock;

fn xml_declaration() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r#"<\?xml[^>]*version="[^"]*"[^>]*\?>"#).ok())
        .as_ref()
}

/// Cleans the whole output.
pub fn clean(output: &str) -> String {
    let mut out = String::with_capacity(output.len());
    let mut last = 0;
    if let Some(re) = xml_declaration() {
        for m in re.find_iter(output) {
            clean_segment(output.get(last..m.start()).unwrap_or_default(), &mut out);
            out.push_str(m.as_str());
            last = m.end();
        }
    }
    clean_segment(output.get(last..).unwrap_or_default(), &mut out);
    out
}

/// The number clean-up of one segment, driven by its dots: every match of the pattern holds
/// exactly one dot, right after the maximal digit run that starts it, so the scan jumps from
/// dot to dot (`memchr`) instead of visiting every byte. The same matches as the left-to-right
/// scan of the pattern (`tests::dot_driven_scan_is_the_byte_scan` checks both on generated
/// text).
fn clean_segment(s: &str, out: &mut String) {
    let b = s.as_bytes();
    let mut copied = 0; // bytes of `s` already in `out`
    for dot in memchr::memchr_iter(b'.', b) {
        if dot < copied {
            continue;
        }
        let Some((start, end)) = number_at(b, dot) else {
            continue;
        };
        out.push_str(s.get(copied..start).unwrap_or_default());
        out.push_str(&clean_number(s.get(start..end).unwrap_or_default()));
        copied = end;
    }
    out.push_str(s.get(copied..).unwrap_or_default());
}

/// The match `(^|[^.\d])(\d+\.\d*0+)` whose dot is at `dot`, as `start..end`, when it is
/// one to clean: at least one digit before the dot, not preceded by a dot, at least one `0`
/// among the digits after it, and not followed by a dot or a digit (a longer code).
fn number_at(b: &[u8], dot: usize) -> Option<(usize, usize)> {
    let digits_before = b[..dot]
        .iter()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .count();
    let start = dot - digits_before;
    if digits_before == 0 || (start > 0 && b[start - 1] == b'.') {
        return None;
    }
    let frac_start = dot + 1;
    let frac_len = b[frac_start..]
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count();
    let last_zero = b[frac_start..frac_start + frac_len]
        .iter()
        .rposition(|c| *c == b'0')?;
    let end = frac_start + last_zero + 1;
    (!matches!(b.get(end), Some(b'.' | b'0'..=b'9'))).then_some((start, end))
}

/// `007.500` → `7.5`, `150000.00` → `150000`, `0.0` → `0`.
fn clean_number(n: &str) -> String {
    let (int, frac) = n.split_once('.').unwrap_or((n, ""));
    let int = int.trim_start_matches('0');
    let frac = frac.trim_end_matches('0');
    let int = if int.is_empty() { "0" } else { int };
    if frac.is_empty() {
        int.to_owned()
    } else {
        format!("{int}.{frac}")
    }
}

#[cfg(test)]
mod tests {
    use super::{clean, clean_number, clean_segment};
    use proptest::prelude::*;

    /// The byte-by-byte scan this module used before the dot-driven one, kept as the oracle.
    fn byte_scan(s: &str, out: &mut String) {
        let b = s.as_bytes();
        let mut i = 0;
        let mut copied = 0;
        while i < b.len() {
            let starts = b.get(i).is_some_and(u8::is_ascii_digit)
                && (i == 0 || !matches!(b.get(i - 1), Some(b'.' | b'0'..=b'9')));
            if !starts {
                i += 1;
                continue;
            }
            let int_end = i + b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
            if b.get(int_end) != Some(&b'.') {
                i = int_end;
                continue;
            }
            let frac_start = int_end + 1;
            let frac_end = frac_start
                + b[frac_start..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .count();
            let Some(last_zero) = b[frac_start..frac_end].iter().rposition(|c| *c == b'0') else {
                i = frac_end.max(i + 1);
                continue;
            };
            let end = frac_start + last_zero + 1;
            if matches!(b.get(end), Some(b'.' | b'0'..=b'9')) {
                i = end;
                continue;
            }
            out.push_str(s.get(copied..i).unwrap_or_default());
            out.push_str(&clean_number(s.get(i..end).unwrap_or_default()));
            copied = end;
            i = end;
        }
        out.push_str(s.get(copied..).unwrap_or_default());
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4096, failure_persistence: None, ..ProptestConfig::default() })]
        #[test]
        fn dot_driven_scan_is_the_byte_scan(s in "[0-9.a-z%é -]{0,40}") {
            let (mut fast, mut oracle) = (String::new(), String::new());
            clean_segment(&s, &mut fast);
            byte_scan(&s, &mut oracle);
            prop_assert_eq!(fast, oracle);
        }
    }

    #[test]
    fn reference_examples() {
        assert_eq!(clean("150000.00"), "150000");
        assert_eq!(clean("25.00%"), "25%");
        assert_eq!(clean("007.50"), "7.5");
        assert_eq!(clean("1000.00 and 12.305"), "1000 and 12.305");
        assert_eq!(
            clean("code 1.1.2.00.000 v1.10.0"),
            "code 1.1.2.00.000 v1.10.0"
        );
        assert_eq!(
            clean("<?xml version=\"1.0\" encoding=\"UTF-8\"?><a>2.50</a>"),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><a>2.5</a>"
        );
        assert_eq!(clean("-0.00 x1.50 é3.10"), "-0 x1.5 é3.1");
        assert_eq!(clean("1.500000"), "1.5");
        assert_eq!(clean("3.14"), "3.14");
        assert_eq!(clean("1.05"), "1.05");
        assert_eq!(clean("10"), "10");
        assert_eq!(clean("0.0"), "0");
    }
}
