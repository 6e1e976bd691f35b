//! Small value rules the SQL sources share.
use serde_json::{Number, Value};

/// `[+-]digits[.digits][e[+-]digits]` (exponent at most 4 digits): what a SQL server reads
/// exactly as a DECIMAL. Surrounding blanks are ignored.
pub fn is_decimal_text(s: &str) -> bool {
    let s = s.trim();
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (mantissa, exponent) = match s.split_once(['e', 'E']) {
        Some((m, e)) => (m, Some(e)),
        None => (s, None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |d: &str| d.chars().all(|c| c.is_ascii_digit());
    let mantissa_ok = (!int.is_empty() || !frac.is_empty()) && digits(int) && digits(frac);
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && e.len() <= 4 && digits(e)
    });
    mantissa_ok && exponent_ok
}

/// A float as JSON: a number when finite, else its name (`NaN`, `inf`, `-inf`).
pub fn json_float(value: f64) -> Value {
    Number::from_f64(value).map_or_else(|| Value::String(value.to_string()), Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_that_json_cannot_hold_are_named() {
        assert_eq!(json_float(1.5), serde_json::json!(1.5));
        assert_eq!(json_float(f64::NAN), Value::String("NaN".into()));
        assert_eq!(json_float(f64::NEG_INFINITY), Value::String("-inf".into()));
    }
}
