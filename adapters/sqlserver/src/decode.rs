//! SQL Server values → JSON (crate docs, "Values").
use base64::Engine as _;
use chrono::{NaiveDate, NaiveDateTime, NaiveTime, Timelike};
use serde_json::Value;
use tiberius::{ColumnData, FromSql};

// A float as JSON: a number when finite, else its name (`NaN`, `inf`, `-inf`).
use reporter_sql_support::json_float as float;

/// Go's printing of a UTC time (`2025-06-01 10:00:00.5 +0000 UTC`), as the original prints
/// timestamps.
pub(crate) fn utc(t: NaiveDateTime) -> Value {
    let nanos = t.nanosecond() % 1_000_000_000;
    let frac = if nanos == 0 {
        String::new()
    } else {
        format!(".{}", format!("{nanos:09}").trim_end_matches('0'))
    };
    Value::String(format!("{}{frac} +0000 UTC", t.format("%Y-%m-%d %H:%M:%S")))
}

/// One cell as JSON; a value chrono cannot represent reads as its debug text.
pub(crate) fn value(cell: &ColumnData<'static>) -> Value {
    let chrono_value = |r: tiberius::Result<Option<Value>>| {
        r.unwrap_or_else(|e| Some(Value::String(e.to_string())))
            .unwrap_or(Value::Null)
    };
    match cell {
        ColumnData::U8(v) => v.map_or(Value::Null, Value::from),
        ColumnData::I16(v) => v.map_or(Value::Null, Value::from),
        ColumnData::I32(v) => v.map_or(Value::Null, Value::from),
        ColumnData::I64(v) => v.map_or(Value::Null, Value::from),
        ColumnData::F32(v) => v.map_or(Value::Null, |f| {
            float(f.to_string().parse::<f64>().unwrap_or(f64::from(f)))
        }),
        ColumnData::F64(v) => v.map_or(Value::Null, float),
        ColumnData::Bit(v) => v.map_or(Value::Null, Value::Bool),
        ColumnData::String(v) => v
            .as_ref()
            .map_or(Value::Null, |s| Value::String(s.to_string())),
        ColumnData::Guid(v) => v.map_or(Value::Null, |g| Value::String(g.to_string())),
        ColumnData::Binary(v) => v.as_ref().map_or(Value::Null, |b| {
            Value::String(base64::engine::general_purpose::STANDARD.encode(b))
        }),
        // Exact digits and scale, never through a float.
        ColumnData::Numeric(v) => v.map_or(Value::Null, |n| Value::String(n.to_string())),
        ColumnData::Xml(v) => v
            .as_ref()
            .map_or(Value::Null, |x| Value::String(x.to_string())),
        // A date is midnight UTC, as the PostgreSQL and MySQL adapters hand one over.
        ColumnData::Date(_) => chrono_value(
            NaiveDate::from_sql(cell).map(|d| d.map(|d| utc(d.and_time(NaiveTime::MIN)))),
        ),
        ColumnData::Time(_) => chrono_value(
            NaiveTime::from_sql(cell)
                .map(|t| t.map(|t| Value::String(t.format("%H:%M:%S%.f").to_string()))),
        ),
        ColumnData::DateTimeOffset(_) => chrono_value(
            chrono::DateTime::<chrono::Utc>::from_sql(cell).map(|t| t.map(|t| utc(t.naive_utc()))),
        ),
        ColumnData::DateTime(_) | ColumnData::SmallDateTime(_) | ColumnData::DateTime2(_) => {
            chrono_value(NaiveDateTime::from_sql(cell).map(|t| t.map(utc)))
        }
    }
}

/// Roughly the bytes a cell holds, for the per-query byte cap.
pub(crate) fn size(cell: &ColumnData<'static>) -> usize {
    match cell {
        ColumnData::String(Some(s)) => s.len(),
        ColumnData::Binary(Some(b)) => b.len(),
        ColumnData::Xml(Some(x)) => x.to_string().len(),
        _ => 8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tiberius::numeric::Numeric;

    #[test]
    fn cells_map_as_documented() {
        let t = NaiveDate::from_ymd_opt(2025, 6, 1)
            .and_then(|d| d.and_hms_milli_opt(10, 0, 0, 500))
            .expect("time");
        assert_eq!(utc(t), json!("2025-06-01 10:00:00.5 +0000 UTC"));
        let cases = [
            (ColumnData::I32(Some(-3)), json!(-3)),
            (ColumnData::I64(None), json!(null)),
            (ColumnData::Bit(Some(true)), json!(true)),
            (ColumnData::F32(Some(0.1)), json!(0.1)),
            (ColumnData::String(Some("Ada".into())), json!("Ada")),
            (
                ColumnData::Binary(Some(vec![0, 255, 1].into())),
                json!("AP8B"),
            ),
            (
                ColumnData::Numeric(Some(Numeric::new_with_scale(125010, 2))),
                json!("1250.10"),
            ),
            (
                ColumnData::Date(Some(tiberius::time::Date::new(738_975))),
                json!("2024-03-31 00:00:00 +0000 UTC"),
            ),
        ];
        for (cell, want) in cases {
            assert_eq!(value(&cell), want, "{cell:?}");
        }
    }
}
