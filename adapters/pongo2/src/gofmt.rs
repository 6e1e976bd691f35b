//! Go's number formatting and parsing, as Pongo2 and the original's helpers use them.

/// Go's `strconv.ParseFloat(s, 64)`: `None` where Go returns an error (including out of
/// range, where Go returns ±Inf with an error).
pub fn parse_float(s: &str) -> Option<f64> {
    if s.is_empty() || s.bytes().any(|b| b.is_ascii_whitespace() || b == b'_') {
        return None;
    }
    let f: f64 = s.parse().ok()?;
    if f.is_infinite() {
        let t = s.trim_start_matches(['+', '-']).to_ascii_lowercase();
        if t != "inf" && t != "infinity" {
            return None;
        }
    }
    Some(f)
}

/// Go's `int(f)` on amd64: truncation toward zero; NaN and out-of-range give `MinInt64`.
pub fn float_to_int(f: f64) -> i64 {
    if f.is_nan() || !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) {
        i64::MIN
    } else {
        f as i64
    }
}

fn special(f: f64) -> Option<&'static str> {
    if f.is_nan() {
        Some("NaN")
    } else if f == f64::INFINITY {
        Some("+Inf")
    } else if f == f64::NEG_INFINITY {
        Some("-Inf")
    } else {
        None
    }
}

/// Go's `fmt.Sprintf("%.Nf", f)` (`%f` is `prec = 6`).
pub fn fixed(f: f64, prec: usize) -> String {
    if let Some(s) = special(f) {
        return s.to_owned();
    }
    format!("{f:.prec$}")
}

/// Go's `fmt.Sprint(f)` / `%v` for a float64: shortest representation, exponent form when
/// the decimal exponent is below -4 or at least 6 (`1e+06`).
pub fn shortest_v(f: f64) -> String {
    shortest_g(f, 6)
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)`: shortest representation, exponent form when
/// the decimal exponent is below -4 or at least `eprec`.
pub fn shortest_g(f: f64, eprec: i32) -> String {
    if let Some(s) = special(f) {
        return s.to_owned();
    }
    // Rust's `{:e}` gives the shortest round-trip digits: "-1.2345e-7".
    let sci = format!("{f:e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if exp < -4 || exp >= eprec {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", exp.unsigned_abs()));
    } else if exp < 0 {
        out.push_str("0.");
        for _ in 0..(-exp - 1) {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let int_len = (exp + 1) as usize;
        if digits.len() <= int_len {
            out.push_str(&digits);
            for _ in digits.len()..int_len {
                out.push('0');
            }
        } else {
            let (a, b) = digits.split_at(int_len);
            out.push_str(a);
            out.push('.');
            out.push_str(b);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_float_forms() {
        assert_eq!(fixed(1.5, 6), "1.500000");
        assert_eq!(fixed(f64::INFINITY, 6), "+Inf");
        assert_eq!(shortest_v(1.5), "1.5");
        assert_eq!(shortest_v(100.0), "100");
        assert_eq!(shortest_v(1e6), "1e+06");
        assert_eq!(shortest_v(123456.0), "123456");
        assert_eq!(shortest_v(1234567.0), "1.234567e+06");
        assert_eq!(shortest_v(0.0001), "0.0001");
        assert_eq!(shortest_v(0.00001), "1e-05");
        assert_eq!(shortest_v(-0.0), "-0");
        assert_eq!(shortest_v(0.0), "0");
        assert_eq!(shortest_g(1e21, 21), "1e+21");
    }

    #[test]
    fn go_parse() {
        assert_eq!(parse_float("0.50"), Some(0.5));
        assert_eq!(parse_float("1e400"), None);
        assert_eq!(parse_float("Inf"), Some(f64::INFINITY));
        assert_eq!(parse_float(" 1"), None);
        assert_eq!(parse_float("abc"), None);
        assert_eq!(float_to_int(2.9), 2);
        assert_eq!(float_to_int(-2.9), -2);
        assert_eq!(float_to_int(f64::NAN), i64::MIN);
    }
}
