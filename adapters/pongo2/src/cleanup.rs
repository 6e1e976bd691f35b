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

fn clean_segment(s: &str, out: &mut String) {
    let b = s.as_bytes();
    let mut i = 0; // scan position
    let mut copied = 0; // bytes of `s` already in `out`
    while i < b.len() {
        // A candidate starts at a digit preceded by the start or by a non-dot non-digit.
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
        // The match ends after the last '0' of the fraction digits.
        let Some(last_zero) = b[frac_start..frac_end].iter().rposition(|c| *c == b'0') else {
            i = frac_end.max(i + 1);
            continue;
        };
        let end = frac_start + last_zero + 1;
        if matches!(b.get(end), Some(b'.' | b'0'..=b'9')) {
            // Part of a longer code: keep verbatim, continue after the match.
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
    use super::clean;

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
