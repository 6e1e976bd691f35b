//! The original's custom filters.
use super::{R, err};
use crate::decimal;
use crate::limits::Tracked;
use crate::render::Renderer;
use crate::value::{ListKind, MapV, OwnedMap, VALUE_SIZE, Value};
use rust_decimal::Decimal;
use std::rc::Rc;

/// `percent_of:"<denominator>"`: `value * 100 / denominator` with 2 decimals and `%`.
pub(super) fn percent_of<'a>(r: &mut Renderer<'a>, v: &Value<'a>, p: &Value<'a>) -> R<Value<'a>> {
    let (Some(num), Some(den)) = (decimal::of_value(v), decimal::of_value(p)) else {
        return Err(err(
            "percentOfFilter",
            "invalid input or denominator is zero",
        ));
    };
    if den.is_zero() {
        return Err(err(
            "percentOfFilter",
            "invalid input or denominator is zero",
        ));
    }
    let pct = num
        .checked_mul(Decimal::from(100))
        .and_then(|x| decimal::div16(x, den))
        .ok_or_else(|| err("percentOfFilter", "decimal overflow"))?;
    let out = format!("{}%", decimal::fixed(pct, 2));
    r.new_str(out, false)
}

/// `slice_str:"start:end"`: bytes `start..end` of the printed value, clamped (both bounds
/// required; cut points are moved back to character boundaries).
pub(super) fn slice_str<'a>(r: &mut Renderer<'a>, v: &Value<'a>, p: &Value<'a>) -> R<Value<'a>> {
    let s = v.to_go_string().into_owned();
    let param = p.to_go_string().into_owned();
    let parts: Vec<&str> = param.split(':').collect();
    let [a, b] = parts.as_slice() else {
        return Err(err("slice", "invalid slice format, expected 'start:end'"));
    };
    let (Some(start), Some(end)) = (go_atoi(a), go_atoi(b)) else {
        return Err(err("slice", "invalid start or end in slice"));
    };
    let len = i64::try_from(s.len()).unwrap_or(i64::MAX);
    let mut start = start.max(0);
    let end = end.min(len).max(0);
    if start > end {
        start = end;
    }
    let mut start = usize::try_from(start).unwrap_or(0);
    let mut end = usize::try_from(end).unwrap_or(0);
    while !s.is_char_boundary(start) {
        start -= 1;
    }
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let out = s.get(start..end).unwrap_or_default().to_owned();
    r.new_str(out, false)
}

/// Go's `strconv.Atoi`.
fn go_atoi(s: &str) -> Option<i64> {
    let t = s.strip_prefix('+').unwrap_or(s);
    if t.is_empty() || t.starts_with('+') {
        return None;
    }
    t.parse().ok()
}

/// `strip_zeros`: the value as a decimal without trailing zeros.
pub(super) fn strip_zeros<'a>(r: &mut Renderer<'a>, v: &Value<'a>) -> R<Value<'a>> {
    let out = match v {
        Value::Int(i) => i.to_string(),
        Value::Float(_) | Value::Str(..) => match decimal::of_value(v) {
            Some(d) => decimal::to_string(d),
            None => return Err(err("strip_zeros", "can't convert to decimal")),
        },
        other => {
            let s = other.to_go_v();
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        }
    };
    r.new_str(out, false)
}

/// `replace:"search:replacement"` (split at the first colon; every occurrence).
pub(super) fn replace<'a>(r: &mut Renderer<'a>, v: &Value<'a>, p: &Value<'a>) -> R<Value<'a>> {
    let input = v.to_go_string();
    let param = p.to_go_string();
    let Some((search, repl)) = param.split_once(':') else {
        return Err(err(
            "replace",
            format!("invalid format, expected 'search:replacement', got '{param}'"),
        ));
    };
    let n = if search.is_empty() {
        input.chars().count() + 1
    } else {
        input.matches(search).count()
    };
    r.reserve_str(input.len().saturating_add(n.saturating_mul(repl.len())))?;
    let out = input.replace(search, repl);
    r.new_str(out, false)
}

/// The original's `toMapSlice`: a list whose items are all maps.
fn map_slice<'a>(r: &mut Renderer<'a>, v: &Value<'a>, filter: &str) -> R<Vec<MapV<'a>>> {
    let Value::List(l) = v else {
        return Err(err(
            filter,
            format!("expected array of maps, got {}", go_type(v)),
        ));
    };
    r.reserve_list(l.len())?;
    let mut out = Vec::with_capacity(l.len());
    for item in l.iter() {
        match item {
            Value::Map(m) => out.push(m),
            _ => {
                return Err(err(
                    filter,
                    format!("expected array of maps, got {}", go_type(v)),
                ));
            }
        }
    }
    Ok(out)
}

fn go_type(v: &Value<'_>) -> &'static str {
    match v {
        Value::Nil => "<nil>",
        Value::List(l) => match l.kind() {
            ListKind::Rows => "[]map[string]interface {}",
            ListKind::Any => "[]interface {}",
            ListKind::Strings => "[]string",
        },
        Value::Map(_) => "map[string]interface {}",
        Value::Str(..) => "string",
        Value::Int(_) => "int",
        Value::Float(_) => "float64",
        Value::Bool(_) => "bool",
        Value::Time(_) => "time.Time",
        Value::Func(_) | Value::Loop(_) => "func",
    }
}

fn field_value<'a>(param: &Value<'a>, filter: &str) -> R<(String, String)> {
    let p = param.to_go_string();
    match p.split_once(':') {
        Some((f, v)) => Ok((f.to_owned(), v.to_owned())),
        None => Err(err(
            filter,
            format!("invalid format, expected 'field:value', got '{p}'"),
        )),
    }
}

/// `where:"field:value"`: the rows whose (dotted) field prints as `value`.
pub(super) fn where_<'a>(r: &mut Renderer<'a>, v: &Value<'a>, p: &Value<'a>) -> R<Value<'a>> {
    let rows = map_slice(r, v, "where")?;
    let (field, want) = field_value(p, "where")?;
    let mut out = Vec::new();
    for m in rows {
        r.budget.fuel(1)?;
        if let Some(val) = r.nested_field(&m, &field)
            && val.to_go_v() == want
        {
            out.push(Value::Map(m));
        }
    }
    r.new_list(out, ListKind::Rows)
}

/// `sum:"field"`: exact decimal sum of the field over the rows.
pub(super) fn sum<'a>(r: &mut Renderer<'a>, v: &Value<'a>, p: &Value<'a>) -> R<Value<'a>> {
    let rows = map_slice(r, v, "sum")?;
    let field = p.to_go_string().trim_matches('"').to_owned();
    let mut total = Decimal::ZERO;
    for m in rows {
        r.budget.fuel(1)?;
        if let Some(d) = r
            .nested_field(&m, &field)
            .as_ref()
            .and_then(decimal::of_value)
        {
            total = total
                .checked_add(d)
                .ok_or_else(|| err("sum", "decimal overflow"))?;
        }
    }
    r.new_str(decimal::to_string(total), false)
}

/// `count:"field:value"`: how many rows have the field printing as `value`.
pub(super) fn count<'a>(r: &mut Renderer<'a>, v: &Value<'a>, p: &Value<'a>) -> R<Value<'a>> {
    let rows = map_slice(r, v, "count")?;
    let (field, want) = field_value(p, "count")?;
    let mut n: i64 = 0;
    for m in rows {
        r.budget.fuel(1)?;
        if let Some(val) = r.nested_field(&m, &field)
            && val.to_go_v() == want
        {
            n = n.wrapping_add(1);
        }
    }
    Ok(Value::Int(n))
}

/// A copy of `m` with the synthetic field `key` set to `val` (or only declared, when
/// `val` is `None`): an overlay over the data row; the data is not copied.
fn with_entry<'a>(
    r: &mut Renderer<'a>,
    m: &MapV<'a>,
    key: &'static str,
    val: Option<Value<'a>>,
) -> R<MapV<'a>> {
    let (base, mut entries, origin, mut synthetic) = match m {
        MapV::Data { map, origin } => (Some(*map), Vec::new(), *origin, Vec::new()),
        MapV::Owned(o) => (o.base, o.entries.clone(), o.origin, o.synthetic.clone()),
        MapV::Row { chunk, row, origin } => (None, chunk.entries(*row), *origin, Vec::new()),
    };
    if !synthetic.contains(&key) {
        synthetic.push(key);
    }
    if let Some(val) = val {
        match entries.binary_search_by(|(k, _)| (**k).cmp(key)) {
            Ok(i) => {
                if let Some(slot) = entries.get_mut(i) {
                    slot.1 = val;
                }
            }
            Err(i) => entries.insert(i, (Rc::from(key), val)),
        }
    }
    let bytes = entries.len().saturating_mul(VALUE_SIZE + 24) + 64;
    r.budget.reserve(bytes)?;
    Ok(MapV::Owned(Rc::new(Tracked::adopt(
        OwnedMap {
            base,
            entries,
            origin,
            synthetic,
        },
        bytes,
    ))))
}

/// `add_day:"<time field>"`: adds to each row an integer field `dia` (`YYYYMMDD` of that
/// time); rows without a parseable time are left as they are.
pub(super) fn add_day<'a>(r: &mut Renderer<'a>, v: &Value<'a>, p: &Value<'a>) -> R<Value<'a>> {
    let rows = map_slice(r, v, "add_day")?;
    let field = p.to_go_string().trim().to_owned();
    if field.is_empty() {
        return Err(err(
            "add_day",
            "add_day requires a date field name, e.g. add_day:\"created_at\"",
        ));
    }
    let mut out = Vec::with_capacity(rows.len());
    for m in rows {
        r.budget.fuel(1)?;
        let day = r
            .nested_field(&m, &field)
            .and_then(|val| crate::render::time_of(&val))
            .and_then(|t| t.format("20060102").parse::<i64>().ok());
        out.push(Value::Map(with_entry(r, &m, "dia", day.map(Value::Int))?));
    }
    r.new_list(out, ListKind::Rows)
}

/// `add_signed:"<amount field>"`: adds a decimal-string field `signed`, the amount negated
/// when the row's `direction` is `debit` (any case).
pub(super) fn add_signed<'a>(r: &mut Renderer<'a>, v: &Value<'a>, p: &Value<'a>) -> R<Value<'a>> {
    let rows = map_slice(r, v, "add_signed")?;
    let field = p.to_go_string().trim().to_owned();
    if field.is_empty() {
        return Err(err(
            "add_signed",
            "add_signed requires an amount field name, e.g. add_signed:\"amount\"",
        ));
    }
    let mut out = Vec::with_capacity(rows.len());
    for m in rows {
        r.budget.fuel(1)?;
        let Some(mut amount) = r
            .nested_field(&m, &field)
            .as_ref()
            .and_then(decimal::of_value)
        else {
            out.push(Value::Map(with_entry(r, &m, "signed", None)?));
            continue;
        };
        if let Some(dir) = r.nested_field(&m, "direction")
            && dir.to_go_v().eq_ignore_ascii_case("debit")
        {
            amount = -amount;
        }
        let s = r.new_str(decimal::to_string(amount), false)?;
        out.push(Value::Map(with_entry(r, &m, "signed", Some(s))?));
    }
    r.new_list(out, ListKind::Rows)
}
