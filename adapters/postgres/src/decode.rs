//! PostgreSQL values → JSON, in the shapes the original's templates see (crate docs,
//! "Values"): times in Go's `time.Time` print form, JSON columns as nested values.
use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, Timelike, Utc};
use serde_json::{Number, Value};
use tokio_postgres::Row as PgRow;
use tokio_postgres::types::{FromSql, Type};

fn get<'a, T: FromSql<'a>>(row: &'a PgRow, i: usize) -> Result<Option<T>, String> {
    row.try_get::<_, Option<T>>(i).map_err(|e| e.to_string())
}

/// A float as JSON: a number when finite, else its name (`NaN`, `inf`, `-inf`).
fn float(value: f64) -> Value {
    Number::from_f64(value).map_or_else(|| Value::String(value.to_string()), Value::Number)
}

/// Writes `n` in decimal (`itoa`) with at least `width` digits (zeros in front), as
/// `{n:0width$}` does, without the formatting machinery (a timestamp column prints one per
/// row).
fn push_digits(s: &mut String, n: u32, width: usize) {
    let mut buf = itoa::Buffer::new();
    let digits = buf.format(n);
    s.extend(std::iter::repeat_n('0', width.saturating_sub(digits.len())));
    s.push_str(digits);
}

/// An instant as Go's `time.Time.String()` prints a UTC time, the form the original's
/// templates print timestamps in: `2025-06-01 10:00:00 +0000 UTC`, with the fraction of a
/// second only when there is one (`2025-06-01 10:00:00.5 +0000 UTC`).
pub fn go_time(t: DateTime<Utc>) -> String {
    let nanos = t.timestamp_subsec_nanos();
    // The common case written field by field: `format` would parse its pattern again for
    // every cell. Years outside 0..=9999 (chrono signs them) and leap seconds (nanos past a
    // second) take chrono's path, which prints them as before.
    let mut s = if (0..=9999).contains(&t.year()) && nanos < 1_000_000_000 {
        let mut s = String::with_capacity(40);
        push_digits(&mut s, t.year().unsigned_abs(), 4);
        s.push('-');
        push_digits(&mut s, t.month(), 2);
        s.push('-');
        push_digits(&mut s, t.day(), 2);
        s.push(' ');
        push_digits(&mut s, t.hour(), 2);
        s.push(':');
        push_digits(&mut s, t.minute(), 2);
        s.push(':');
        push_digits(&mut s, t.second(), 2);
        s
    } else {
        t.format("%Y-%m-%d %H:%M:%S").to_string()
    };
    if nanos != 0 {
        let mut frac = String::with_capacity(9);
        push_digits(&mut frac, nanos % 1_000_000_000, 9);
        s.push('.');
        s.push_str(frac.trim_end_matches('0'));
    }
    s.push_str(" +0000 UTC");
    s
}

/// The text of a `json`/`jsonb` column as a nested value (left as text if it does not parse).
pub(crate) fn json_text(v: Value) -> Value {
    match &v {
        Value::String(s) => serde_json::from_str(s).unwrap_or(v),
        _ => v,
    }
}

/// Column `i` of `row` as JSON, decoded by the column's wire type. Numeric and other types
/// arrive as `text` (the projection casts them), so every type reaching here is one of the
/// natively decoded ones or text-like.
pub(crate) fn value(row: &PgRow, i: usize) -> Result<Value, String> {
    let Some(column) = row.columns().get(i) else {
        return Err(format!("no column {i} in the result"));
    };
    let v = match *column.type_() {
        Type::BOOL => get::<bool>(row, i)?.map(Value::Bool),
        Type::INT2 => get::<i16>(row, i)?.map(Value::from),
        Type::INT4 => get::<i32>(row, i)?.map(Value::from),
        Type::INT8 => get::<i64>(row, i)?.map(Value::from),
        // Through the shortest decimal text, so 0.1::real reads 0.1, not 0.100000001490116.
        Type::FLOAT4 => {
            get::<f32>(row, i)?.map(|f| float(f.to_string().parse::<f64>().unwrap_or(f64::from(f))))
        }
        Type::FLOAT8 => get::<f64>(row, i)?.map(float),
        // Dates and timestamps are times in UTC, as the original's driver returns them.
        Type::DATE => get::<NaiveDate>(row, i)?
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .map(|t| Value::String(go_time(t.and_utc()))),
        Type::TIMESTAMP => {
            get::<NaiveDateTime>(row, i)?.map(|t| Value::String(go_time(t.and_utc())))
        }
        Type::TIMESTAMPTZ => get::<DateTime<Utc>>(row, i)?.map(|t| Value::String(go_time(t))),
        _ => get::<String>(row, i)?.map(Value::String),
    };
    Ok(v.unwrap_or(Value::Null))
}

/// Writes column `i` of `row` as JSON into `out`: exactly the bytes serde_json writes for
/// [`value`] (for [`json_text`] of it when `json_column`), without building the value for the
/// common types: integers, booleans, text and times are written from the wire row.
pub(crate) fn write_value(
    row: &PgRow,
    i: usize,
    json_column: bool,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let Some(column) = row.columns().get(i) else {
        return Err(format!("no column {i} in the result"));
    };
    let time = |t: Option<NaiveDateTime>| t.map(|t| go_time(t.and_utc()));
    match *column.type_() {
        _ if json_column => write(out, &json_text(value(row, i)?)),
        Type::BOOL => write(out, &get::<bool>(row, i)?),
        Type::INT2 => write(out, &get::<i16>(row, i)?),
        Type::INT4 => write(out, &get::<i32>(row, i)?),
        Type::INT8 => write(out, &get::<i64>(row, i)?),
        Type::FLOAT4 | Type::FLOAT8 => write(out, &value(row, i)?),
        Type::DATE => write(
            out,
            &time(get::<NaiveDate>(row, i)?.and_then(|d| d.and_hms_opt(0, 0, 0))),
        ),
        Type::TIMESTAMP => write(out, &time(get::<NaiveDateTime>(row, i)?)),
        Type::TIMESTAMPTZ => write(out, &get::<DateTime<Utc>>(row, i)?.map(go_time)),
        _ => write(out, &get::<&str>(row, i)?),
    }
}

fn write<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) -> Result<(), String> {
    serde_json::to_writer(out, v).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    #[test]
    fn digits_are_padded_as_format_pads_them() {
        for n in [
            0u32,
            5,
            9,
            10,
            59,
            99,
            100,
            999,
            1000,
            9999,
            10_000,
            999_999_999,
            u32::MAX,
        ] {
            for width in [2usize, 4, 9] {
                let mut s = String::new();
                super::push_digits(&mut s, n, width);
                assert_eq!(s, format!("{n:0width$}"));
            }
        }
    }

    #[test]
    fn go_time_form() {
        let t = chrono::Utc.with_ymd_and_hms(2025, 6, 1, 10, 0, 0).unwrap();
        assert_eq!(super::go_time(t), "2025-06-01 10:00:00 +0000 UTC");
        let t = t + chrono::Duration::milliseconds(500);
        assert_eq!(super::go_time(t), "2025-06-01 10:00:00.5 +0000 UTC");
        let t = t + chrono::Duration::nanoseconds(7);
        assert_eq!(super::go_time(t), "2025-06-01 10:00:00.500000007 +0000 UTC");
    }

    /// The field-by-field form prints what chrono's pattern printed, at the edges of the
    /// fast path and beyond it.
    #[test]
    fn go_time_matches_chronos_pattern() {
        for (y, mo, d, h, mi, s) in [
            (1, 1, 1, 0, 0, 0),
            (999, 12, 31, 23, 59, 59),
            (1970, 1, 1, 0, 0, 0),
            (9999, 12, 31, 23, 59, 59),
            (10_000, 1, 1, 0, 0, 0),
            (-44, 3, 15, 12, 0, 0),
            (0, 2, 29, 1, 2, 3),
        ] {
            let t = chrono::Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap();
            let expected = format!("{} +0000 UTC", t.format("%Y-%m-%d %H:%M:%S"));
            assert_eq!(super::go_time(t), expected, "year {y}");
        }
    }
}
