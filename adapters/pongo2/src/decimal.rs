//! Exact decimals as the original's helpers use them (shopspring/decimal semantics on
//! `rust_decimal`).
use crate::value::Value;
use rust_decimal::prelude::*;

/// shopspring's `NewFromString`: `[+-]digits[.digits][e[+-]digits]`, nothing else.
pub fn parse(s: &str) -> Option<Decimal> {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let mut digits = 0;
    let mut dot = false;
    let mut exp_at = None;
    while let Some(&c) = b.get(i) {
        match c {
            b'0'..=b'9' => digits += 1,
            b'.' if !dot && exp_at.is_none() => dot = true,
            b'e' | b'E' if exp_at.is_none() && digits > 0 => {
                exp_at = Some(i);
                if matches!(b.get(i + 1), Some(b'+' | b'-')) {
                    i += 1;
                }
                if !b.get(i + 1).is_some_and(u8::is_ascii_digit) {
                    return None;
                }
            }
            _ => return None,
        }
        i += 1;
    }
    if digits == 0 {
        return None;
    }
    let d = match exp_at {
        Some(_) => Decimal::from_scientific(s).ok()?,
        None => {
            let t = s.strip_prefix('+').unwrap_or(s);
            let t = if t.ends_with('.') {
                t.trim_end_matches('.')
            } else {
                t
            };
            Decimal::from_str(t).ok()?
        }
    };
    Some(d)
}

/// shopspring's `NewFromFloat`: the shortest decimal that reads back as `f`.
pub fn from_float(f: f64) -> Option<Decimal> {
    if !f.is_finite() {
        return None;
    }
    Decimal::from_str(&format!("{f}")).ok()
}

/// The original's `toDecimal`: integers, floats and decimal strings; anything else is not
/// a number.
pub fn of_value(v: &Value<'_>) -> Option<Decimal> {
    match v {
        Value::Int(i) => Some(Decimal::from(*i)),
        Value::Float(f) => from_float(*f),
        Value::Str(t, _) => parse(t.as_str()),
        _ => None,
    }
}

/// shopspring's `Decimal.String()`: no exponent, trailing zeros removed.
pub fn to_string(d: Decimal) -> String {
    if d.is_zero() {
        return "0".to_owned();
    }
    d.normalize().to_string()
}

/// shopspring's `Div` (16 digits after the point, half away from zero).
pub fn div16(a: Decimal, b: Decimal) -> Option<Decimal> {
    let q = a.checked_div(b)?;
    Some(q.round_dp_with_strategy(16, RoundingStrategy::MidpointAwayFromZero))
}

/// shopspring's `StringFixed(n)`.
pub fn fixed(d: Decimal, places: u32) -> String {
    let r = d.round_dp_with_strategy(places, RoundingStrategy::MidpointAwayFromZero);
    let mut r = r;
    r.rescale(places);
    if r.is_zero() {
        // No "-0.00".
        r = Decimal::ZERO;
        r.rescale(places);
    }
    r.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shopspring_forms() {
        assert_eq!(to_string(parse("1250.50").unwrap()), "1250.5");
        assert_eq!(to_string(parse("007.50").unwrap()), "7.5");
        assert_eq!(to_string(parse("-0.00").unwrap()), "0");
        assert_eq!(to_string(parse("1.5e2").unwrap()), "150");
        assert!(parse("1_000").is_none());
        assert!(parse(" 1").is_none());
        assert!(parse("abc").is_none());
        assert!(parse("").is_none());
        assert_eq!(to_string(from_float(0.1).unwrap()), "0.1");
        assert_eq!(fixed(parse("12.345").unwrap(), 2), "12.35");
        assert_eq!(fixed(parse("25").unwrap(), 2), "25.00");
        let third = div16(Decimal::from(1), Decimal::from(3)).unwrap();
        assert_eq!(to_string(third), "0.3333333333333333");
    }
}
