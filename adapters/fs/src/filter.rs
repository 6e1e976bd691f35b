//! Filter evaluation over in-memory rows.
//! The semantics are documented at the crate root ("Filter semantics").
use reporter_ports::ports::{DataSourceError, Row};
use reporter_ports::report::FilterCondition;
use serde_json::{Number, Value};
use std::cmp::Ordering;

/// A bound an ordered operator compares with.
#[derive(Debug, Clone, PartialEq)]
enum Bound {
    Number(Number),
    Text(String),
}

#[derive(Debug, Clone, PartialEq)]
enum Check {
    AnyOf(Vec<Value>),
    NoneOf(Vec<Value>),
    /// Holds when `value.cmp(bound)` is one of the listed orderings.
    Compare(Bound, &'static [Ordering]),
    Between(Bound, Bound),
}

/// The checks for one field, all of which must hold.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FieldFilter {
    field: String,
    checks: Vec<Check>,
}

fn invalid(field: &str, op: &str, why: &str) -> DataSourceError {
    DataSourceError::InvalidFilter(format!("{field}: {op} {why}"))
}

fn bound(field: &str, op: &str, value: &Value) -> Result<Bound, DataSourceError> {
    match value {
        Value::Number(n) => Ok(Bound::Number(n.clone())),
        Value::String(s) => Ok(Bound::Text(s.clone())),
        _ => Err(invalid(field, op, "needs a number or a string")),
    }
}

impl FieldFilter {
    /// Validates a condition on `field`. Fails with `InvalidFilter` on a non-scalar value, an
    /// ordered operator whose first value is not a number or string, or a `between` that is
    /// not exactly two numbers or two strings.
    pub(crate) fn compile(field: &str, cond: &FilterCondition) -> Result<Self, DataSourceError> {
        let all = cond.operators();
        for (op, values) in all {
            if values.iter().any(|v| v.is_array() || v.is_object()) {
                return Err(invalid(field, op, "values must be scalars"));
            }
        }
        let mut checks = Vec::new();
        if !cond.eq.is_empty() {
            checks.push(Check::AnyOf(cond.eq.clone()));
        }
        if !cond.in_.is_empty() {
            checks.push(Check::AnyOf(cond.in_.clone()));
        }
        if !cond.nin.is_empty() {
            checks.push(Check::NoneOf(cond.nin.clone()));
        }
        let ordered: [(&str, &Vec<Value>, &'static [Ordering]); 4] = [
            ("gt", &cond.gt, &[Ordering::Greater]),
            ("gte", &cond.gte, &[Ordering::Greater, Ordering::Equal]),
            ("lt", &cond.lt, &[Ordering::Less]),
            ("lte", &cond.lte, &[Ordering::Less, Ordering::Equal]),
        ];
        for (op, values, accept) in ordered {
            if let Some(first) = values.first() {
                checks.push(Check::Compare(bound(field, op, first)?, accept));
            }
        }
        match cond.between.as_slice() {
            [] => {}
            [low, high] => {
                let (low, high) = (
                    bound(field, "between", low)?,
                    bound(field, "between", high)?,
                );
                if std::mem::discriminant(&low) != std::mem::discriminant(&high) {
                    return Err(invalid(field, "between", "bounds must have the same type"));
                }
                checks.push(Check::Between(low, high));
            }
            _ => return Err(invalid(field, "between", "takes exactly two values")),
        }
        Ok(Self {
            field: field.to_owned(),
            checks,
        })
    }

    /// True when every check holds for the row.
    pub(crate) fn matches(&self, row: &Row) -> bool {
        let value = row.get(&self.field).unwrap_or(&Value::Null);
        self.checks.iter().all(|check| match check {
            Check::AnyOf(values) => values.iter().any(|v| scalar_eq(value, v)),
            Check::NoneOf(values) => !values.iter().any(|v| scalar_eq(value, v)),
            Check::Compare(bound, accept) => {
                compare(value, bound).is_some_and(|ord| accept.contains(&ord))
            }
            Check::Between(low, high) => {
                compare(value, low).is_some_and(Ordering::is_ge)
                    && compare(value, high).is_some_and(Ordering::is_le)
            }
        })
    }
}

/// Numeric comparison of two JSON numbers (exact for integers, `f64` otherwise).
fn compare_numbers(a: &Number, b: &Number) -> Option<Ordering> {
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        return Some(x.cmp(&y));
    }
    if let (Some(x), Some(y)) = (a.as_u64(), b.as_u64()) {
        return Some(x.cmp(&y));
    }
    a.as_f64()?.partial_cmp(&b.as_f64()?)
}

/// Equality of scalars; different types are never equal.
fn scalar_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y) == Some(Ordering::Equal),
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Null, Value::Null) => true,
        _ => false,
    }
}

/// Order of a value relative to a bound; `None` when the types differ.
fn compare(value: &Value, bound: &Bound) -> Option<Ordering> {
    match (value, bound) {
        (Value::Number(x), Bound::Number(y)) => compare_numbers(x, y),
        (Value::String(x), Bound::Text(y)) => Some(x.as_str().cmp(y.as_str())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(v: Value) -> Row {
        match v {
            Value::Object(map) => map,
            _ => Row::new(),
        }
    }

    fn cond(v: Value) -> FilterCondition {
        serde_json::from_value(v).expect("condition")
    }

    fn check(c: Value, r: Value) -> bool {
        FieldFilter::compile("x", &cond(c))
            .expect("valid")
            .matches(&row(r))
    }

    #[test]
    fn numbers_compare_numerically_across_representations() {
        assert!(check(json!({"eq": [2.0]}), json!({"x": 2})));
        assert!(check(json!({"gt": [1]}), json!({"x": 1.5})));
        assert!(check(json!({"lt": [u64::MAX]}), json!({"x": -1})));
        assert!(!check(json!({"gt": [10]}), json!({"x": 9})));
    }

    #[test]
    fn mixed_types_never_match() {
        assert!(!check(json!({"eq": ["2"]}), json!({"x": 2})));
        assert!(!check(json!({"gt": ["1"]}), json!({"x": 2})));
        assert!(!check(json!({"gte": [0]}), json!({"x": null})));
        assert!(!check(json!({"gte": [0]}), json!({})));
        assert!(check(json!({"nin": ["2"]}), json!({"x": 2})));
        assert!(check(json!({"eq": [null]}), json!({})));
    }

    #[test]
    fn iso_dates_compare_as_strings() {
        let c = json!({"between": ["2024-01-01", "2024-01-31"]});
        assert!(check(c.clone(), json!({"x": "2024-01-01"})));
        assert!(check(c.clone(), json!({"x": "2024-01-31"})));
        assert!(!check(c, json!({"x": "2024-02-01"})));
    }

    #[test]
    fn empty_condition_matches_everything() {
        assert!(check(json!({}), json!({"x": 1})));
        assert!(check(json!({}), json!({})));
    }

    #[test]
    fn invalid_conditions_are_rejected() {
        for c in [
            json!({"between": [1]}),
            json!({"between": [1, 2, 3]}),
            json!({"between": [1, "2"]}),
            json!({"between": [true, false]}),
            json!({"gt": [true]}),
            json!({"lte": [null]}),
            json!({"eq": [[1]]}),
            json!({"nin": [{"a": 1}]}),
        ] {
            let err = FieldFilter::compile("x", &cond(c.clone())).expect_err("invalid");
            assert!(matches!(err, DataSourceError::InvalidFilter(_)), "{c}");
        }
    }
}
