//! The reference's report helpers (filters and functions). See the crate README for the
//! syntax of each one.
use crate::context::{Table, field_of, rows_of};
use crate::decimal::{ROUND_DP, add, decimal_value, helper_error, round, to_decimal};
use chrono::{DateTime, NaiveDate, Utc};
use minijinja::Error;
use minijinja::value::{Rest, Value, ValueKind};
use rust_decimal::Decimal;
use std::collections::BTreeMap;

/// Loose equality used by `where`/`count`/`filter`: equal values, or equal printed forms
/// (so a CSV `"6"` matches `6`). Undefined never matches.
fn loose_eq(a: &Value, b: &Value) -> bool {
    if a.is_undefined() || b.is_undefined() {
        return false;
    }
    a == b || a.to_string() == b.to_string()
}

fn field_name(helper: &str, v: &Value) -> Result<String, Error> {
    v.as_str()
        .map(str::to_owned)
        .ok_or_else(|| helper_error(helper, "the field name must be a string"))
}

/// A (field, expected) condition from `("field:value")` or `("field", value)`.
fn condition(helper: &str, args: &[Value]) -> Result<(String, Value), Error> {
    match args {
        [spec] => {
            let spec = field_name(helper, spec)?;
            let (field, expected) = spec.split_once(':').ok_or_else(|| {
                helper_error(helper, format!("expected \"field:value\", got {spec:?}"))
            })?;
            Ok((field.to_owned(), Value::from(expected)))
        }
        [field, expected] => Ok((field_name(helper, field)?, expected.clone())),
        _ => Err(helper_error(
            helper,
            "expected (\"field\", value) or (\"field:value\")",
        )),
    }
}

fn matches(row: &Value, field: &str, expected: &Value) -> bool {
    field_of(row, field).is_some_and(|v| loose_eq(&v, expected))
}

/// `rows|where("field", value)` / `rows|where("field:value")`: the rows whose field equals
/// the value.
pub(crate) fn where_(rows: Value, args: Rest<Value>) -> Result<Value, Error> {
    let (field, expected) = condition("where", &args)?;
    let kept = rows_of("where", &rows)?
        .into_iter()
        .filter(|r| matches(r, &field, &expected))
        .collect();
    Ok(Table::value(kept))
}

/// `filter(rows, "field", value)`: the reference's context helper, same as `where`.
pub(crate) fn filter_fn(rows: Value, field: Value, expected: Value) -> Result<Value, Error> {
    where_(rows, Rest(vec![field, expected]))
}

/// `contains(haystack, needle)`: substring of a string, element of a list, key of a map.
pub(crate) fn contains(haystack: Value, needle: Value) -> Result<bool, Error> {
    Ok(match haystack.kind() {
        ValueKind::String => haystack
            .as_str()
            .is_some_and(|h| h.contains(&needle.to_string())),
        ValueKind::Map => haystack.get_item(&needle).is_ok_and(|v| !v.is_undefined()),
        ValueKind::Seq | ValueKind::Iterable => rows_of("contains", &haystack)?
            .iter()
            .any(|v| loose_eq(v, &needle)),
        _ => false,
    })
}

/// `rows|count`, `rows|count("field")` (non-null field), `rows|count("field", value)`,
/// `rows|count("field:value")`.
pub(crate) fn count(rows: Value, args: Rest<Value>) -> Result<Value, Error> {
    let rows = rows_of("count", &rows)?;
    let n = match args.as_slice() {
        [] => rows.len(),
        [spec] if spec.as_str().is_some_and(|s| !s.contains(':')) => {
            let field = field_name("count", spec)?;
            rows.iter().filter(|r| present(r, &field)).count()
        }
        other => {
            let (field, expected) = condition("count", other)?;
            rows.iter()
                .filter(|r| matches(r, &field, &expected))
                .count()
        }
    };
    Ok(Value::from(n))
}

fn present(row: &Value, field: &str) -> bool {
    field_of(row, field).is_some_and(|v| !v.is_none())
}

/// The numeric values of `field` (the items themselves without a field); values that are
/// missing or not numbers are skipped, as in the reference.
fn numbers(helper: &str, rows: &Value, field: Option<&str>) -> Result<Vec<Decimal>, Error> {
    Ok(rows_of(helper, rows)?
        .iter()
        .filter_map(|r| match field {
            Some(f) => field_of(r, f).and_then(|v| to_decimal(&v)),
            None => to_decimal(r),
        })
        .collect())
}

fn sum_of(helper: &str, values: &[Decimal]) -> Result<Decimal, Error> {
    values
        .iter()
        .try_fold(Decimal::ZERO, |acc, v| add(helper, acc, *v))
}

fn optional_field(helper: &str, args: &[Value]) -> Result<Option<String>, Error> {
    match args {
        [] => Ok(None),
        [f] => field_name(helper, f).map(Some),
        _ => Err(helper_error(helper, "expected at most one field name")),
    }
}

/// `rows|sum("field")` (or `numbers|sum`): exact decimal sum keeping the largest scale.
pub(crate) fn sum(rows: Value, args: Rest<Value>) -> Result<Value, Error> {
    let field = optional_field("sum", &args)?;
    let values = numbers("sum", &rows, field.as_deref())?;
    Ok(decimal_value(sum_of("sum", &values)?))
}

/// `sum_by(rows, "field")`.
pub(crate) fn sum_by(rows: Value, field: String) -> Result<Value, Error> {
    let values = numbers("sum_by", &rows, Some(&field))?;
    Ok(decimal_value(sum_of("sum_by", &values)?))
}

/// `count_by(rows)` (rows) / `count_by(rows, "field")` (rows whose field is not null).
pub(crate) fn count_by(rows: Value, field: Option<String>) -> Result<Value, Error> {
    let rows = rows_of("count_by", &rows)?;
    Ok(Value::from(match field {
        None => rows.len(),
        Some(f) => rows.iter().filter(|r| present(r, &f)).count(),
    }))
}

/// `avg_by(rows, "field")`: mean of the numeric values, `0` when there are none. Kept at the
/// inputs' largest scale when exact there (`"15.00"`), else rounded to 10 decimals.
pub(crate) fn avg_by(rows: Value, field: String) -> Result<Value, Error> {
    let values = numbers("avg_by", &rows, Some(&field))?;
    if values.is_empty() {
        return Ok(Value::from(0));
    }
    let total = sum_of("avg_by", &values)?;
    let avg = total
        .checked_div(Decimal::from(values.len()))
        .ok_or_else(|| helper_error("avg_by", "decimal overflow"))?;
    let scale = values.iter().map(Decimal::scale).max().unwrap_or(0);
    let mut at_scale = round(avg, scale);
    if at_scale == avg {
        at_scale.rescale(scale);
        Ok(decimal_value(at_scale))
    } else {
        Ok(decimal_value(round(avg, ROUND_DP).normalize()))
    }
}

/// `min_by(rows, "field")`: the smallest numeric value (its scale kept), `0` when none.
pub(crate) fn min_by(rows: Value, field: String) -> Result<Value, Error> {
    let values = numbers("min_by", &rows, Some(&field))?;
    Ok(decimal_value(
        values
            .into_iter()
            .reduce(|a, b| if b < a { b } else { a })
            .unwrap_or_default(),
    ))
}

/// `max_by(rows, "field")`: the largest numeric value (its scale kept), `0` when none.
pub(crate) fn max_by(rows: Value, field: String) -> Result<Value, Error> {
    let values = numbers("max_by", &rows, Some(&field))?;
    Ok(decimal_value(
        values
            .into_iter()
            .reduce(|a, b| if b > a { b } else { a })
            .unwrap_or_default(),
    ))
}

/// Parses an order-by value as an instant: RFC 3339 or `YYYY-MM-DD` (midnight UTC).
fn instant(v: &Value) -> Option<DateTime<Utc>> {
    let s = v.as_str()?.trim();
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .ok()
        .or_else(|| {
            NaiveDate::parse_from_str(s, "%Y-%m-%d")
                .ok()
                .and_then(|d| d.and_hms_opt(0, 0, 0))
                .map(|t| t.and_utc())
        })
}

/// `last_item_by_group(rows, "group_field[,field2…]", "order_field")`: per group, the row
/// with the latest order instant (later rows win ties; rows whose order value is not a
/// date count as the earliest), sorted by group key. Rows missing a group field are dropped.
pub(crate) fn last_item_by_group(
    rows: Value,
    group: String,
    order: String,
) -> Result<Value, Error> {
    let fields: Vec<&str> = group.split(',').map(str::trim).collect();
    let mut groups: BTreeMap<String, (Option<DateTime<Utc>>, Value)> = BTreeMap::new();
    for row in rows_of("last_item_by_group", &rows)? {
        let mut parts = Vec::with_capacity(fields.len());
        for f in &fields {
            match field_of(&row, f) {
                Some(v) => parts.push(v.to_string()),
                None => break,
            }
        }
        if parts.len() != fields.len() {
            continue;
        }
        let at = field_of(&row, &order).and_then(|v| instant(&v));
        let key = parts.join("|");
        match groups.get(&key) {
            Some((best, _)) if at < *best => {}
            _ => {
                groups.insert(key, (at, row));
            }
        }
    }
    Ok(Table::value(
        groups.into_values().map(|(_, row)| row).collect(),
    ))
}

/// `x|percent_of(total)` / `percent_of(x, total)`: `x * 100 / total` with 2 decimals and `%`.
pub(crate) fn percent_of(value: Value, denominator: Value) -> Result<String, Error> {
    let (Some(num), Some(den)) = (to_decimal(&value), to_decimal(&denominator)) else {
        return Err(helper_error(
            "percent_of",
            "invalid input or denominator is zero",
        ));
    };
    if den.is_zero() {
        return Err(helper_error(
            "percent_of",
            "invalid input or denominator is zero",
        ));
    }
    let mut pct = num
        .checked_mul(Decimal::ONE_HUNDRED)
        .and_then(|n| n.checked_div(den))
        .map(|p| round(p, 2))
        .ok_or_else(|| helper_error("percent_of", "decimal overflow"))?;
    pct.rescale(2);
    Ok(format!("{pct}%"))
}

/// `s|slice_str("start:end")`: characters `start..end`, clamped to the string; an empty bound
/// means the start / end.
pub(crate) fn slice_str(value: Value, spec: String) -> Result<String, Error> {
    let s = value.to_string();
    let chars: Vec<char> = s.chars().collect();
    let (a, b) = spec
        .split_once(':')
        .ok_or_else(|| helper_error("slice_str", "invalid slice format, expected 'start:end'"))?;
    let bound = |t: &str, default: usize| -> Result<i64, Error> {
        if t.trim().is_empty() {
            return Ok(i64::try_from(default).unwrap_or(i64::MAX));
        }
        t.trim()
            .parse::<i64>()
            .map_err(|_| helper_error("slice_str", "invalid start or end in slice"))
    };
    let len = i64::try_from(chars.len()).unwrap_or(i64::MAX);
    let end = bound(b, chars.len())?.min(len);
    let start = bound(a, 0)?.max(0).min(end.max(0));
    let (start, end) = (
        usize::try_from(start).unwrap_or(0),
        usize::try_from(end.max(0)).unwrap_or(0),
    );
    Ok(chars[start..end].iter().collect())
}

/// `x|strip_zeros`: the number without trailing fractional zeros (`"1250.00"` → `1250`).
pub(crate) fn strip_zeros(value: Value) -> Result<Value, Error> {
    let d = to_decimal(&value)
        .ok_or_else(|| helper_error("strip_zeros", format!("not a number: {value}")))?;
    Ok(Value::from(d.normalize().to_string()))
}

/// `s|replace("search:replacement")` (reference form, split at the first `:`), or the
/// builtin form `s|replace(from, to[, count])`.
pub(crate) fn replace(value: Value, args: Rest<Value>) -> Result<Value, Error> {
    let s = value.to_string();
    let out = match args.as_slice() {
        [spec] => {
            let spec = spec.to_string();
            let (from, to) = spec.split_once(':').ok_or_else(|| {
                helper_error(
                    "replace",
                    format!("invalid format, expected 'search:replacement', got {spec:?}"),
                )
            })?;
            s.replace(from, to)
        }
        [from, to] => s.replace(&from.to_string(), &to.to_string()),
        [from, to, n] => {
            let n = usize::try_from(n.clone())
                .map_err(|_| helper_error("replace", "count must be a non-negative integer"))?;
            s.replacen(&from.to_string(), &to.to_string(), n)
        }
        _ => {
            return Err(helper_error(
                "replace",
                "expected (\"a:b\"), (from, to) or (from, to, count)",
            ));
        }
    };
    Ok(if value.is_safe() {
        Value::from_safe_string(out)
    } else {
        Value::from(out)
    })
}

/// `x|floatformat(n)` with Django's rules: `n > 0` exactly n decimals, `n < 0` |n| decimals
/// only when not integral, no argument = `-1`; rounding half away from zero. Non-numbers
/// render as `""`.
pub(crate) fn floatformat(value: Value, places: Option<i64>) -> Result<String, Error> {
    let Some(d) = to_decimal(&value) else {
        return Ok(String::new());
    };
    let places = places.unwrap_or(-1);
    let dp = u32::try_from(places.unsigned_abs().min(28)).unwrap_or(28);
    let mut r = round(d, dp);
    if places < 0 && r.fract().is_zero() {
        r.rescale(0);
    } else {
        r.rescale(dp);
    }
    Ok(r.to_string())
}

/// Formats `now` with the reference's layout tokens `YYYY MM dd HH mm ss`; other text is
/// copied as is.
pub(crate) fn format_date_time(now: DateTime<Utc>, layout: &str) -> String {
    const TOKENS: [(&str, &str); 6] = [
        ("YYYY", "%Y"),
        ("MM", "%m"),
        ("dd", "%d"),
        ("HH", "%H"),
        ("mm", "%M"),
        ("ss", "%S"),
    ];
    let mut out = String::new();
    let mut rest = layout;
    'outer: while let Some(c) = rest.chars().next() {
        for (token, spec) in TOKENS {
            if let Some(tail) = rest.strip_prefix(token) {
                out.push_str(&now.format(spec).to_string());
                rest = tail;
                continue 'outer;
            }
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}
