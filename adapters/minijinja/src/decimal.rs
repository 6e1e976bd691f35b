//! Exact decimal conversions shared by the helpers. Money never goes through `f64`.
use minijinja::value::{Value, ValueKind};
use minijinja::{Error, ErrorKind};
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::{Decimal, RoundingStrategy};

/// Decimal places kept by `calc` and by inexact averages (the reference's rounding).
pub(crate) const ROUND_DP: u32 = 10;

/// Parses a number or a numeric string exactly. Numbers are read through their shortest
/// printed form, so the float `0.1` becomes exactly `0.1`. Anything else is `None`.
pub(crate) fn to_decimal(value: &Value) -> Option<Decimal> {
    match value.kind() {
        ValueKind::String => parse(value.as_str()?.trim()),
        ValueKind::Number => parse(&value.to_string()),
        _ => None,
    }
}

fn parse(text: &str) -> Option<Decimal> {
    if text.is_empty() {
        return None;
    }
    Decimal::from_str_exact(text)
        .ok()
        .or_else(|| Decimal::from_scientific(text).ok())
}

/// A decimal result as a template value: an integer when it has no fractional digits and
/// fits `i64`, otherwise its exact decimal string (scale kept, e.g. `"1250.50"`).
pub(crate) fn decimal_value(d: Decimal) -> Value {
    if d.scale() == 0
        && let Some(i) = d.to_i64()
    {
        return Value::from(i);
    }
    Value::from(d.to_string())
}

/// Rounds half away from zero to `dp` places.
pub(crate) fn round(d: Decimal, dp: u32) -> Decimal {
    d.round_dp_with_strategy(dp, RoundingStrategy::MidpointAwayFromZero)
}

/// An evaluation error raised by a helper.
pub(crate) fn helper_error(helper: &str, msg: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::InvalidOperation, format!("{helper}: {msg}"))
}

/// `a + b`, an error on overflow.
pub(crate) fn add(helper: &str, a: Decimal, b: Decimal) -> Result<Decimal, Error> {
    a.checked_add(b)
        .ok_or_else(|| helper_error(helper, "decimal overflow"))
}

/// Parses a decimal the way `FromStr` does (tests).
#[cfg(test)]
pub(crate) fn parse_literal(text: &str) -> Option<Decimal> {
    use std::str::FromStr;
    Decimal::from_str(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_read_through_their_shortest_form() {
        assert_eq!(to_decimal(&Value::from(0.1)), parse_literal("0.1"));
        assert_eq!(to_decimal(&Value::from(7)), parse_literal("7"));
        assert_eq!(
            to_decimal(&Value::from("1250.00")).map(|d| d.to_string()),
            Some("1250.00".into())
        );
        assert_eq!(to_decimal(&Value::from("1e3")), parse_literal("1000"));
        assert_eq!(to_decimal(&Value::from("abc")), None);
        assert_eq!(to_decimal(&Value::from(())), None);
    }

    #[test]
    fn integral_results_are_integers() {
        assert_eq!(decimal_value(Decimal::from(3)), Value::from(3));
        assert_eq!(decimal_value(Decimal::new(300, 2)), Value::from("3.00"));
    }
}
