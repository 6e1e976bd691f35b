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
        Type::DATE => match get::<NaiveDate>(row, i)? {
            Some(d) => write_date(out, d),
            None => write(out, &None::<&str>),
        },
        Type::TIMESTAMP => write(out, &time(get::<NaiveDateTime>(row, i)?)),
        Type::TIMESTAMPTZ => write(out, &get::<DateTime<Utc>>(row, i)?.map(go_time)),
        _ => match get::<&str>(row, i)? {
            Some(text) => write_str(out, text),
            None => write(out, &None::<&str>),
        },
    }
}

/// Writes `text` as a JSON string: the bytes serde_json writes for it
/// ([`reporter_ports::json_text`]: text with nothing to escape, most text, is copied whole).
fn write_str(out: &mut Vec<u8>, text: &str) -> Result<(), String> {
    reporter_ports::json_text::write_json_str(text, out).map_err(|e| e.to_string())
}

/// Writes a date as the JSON string of [`go_time`] of its midnight in UTC (what [`value`]
/// holds for it) without making the string: `"2020-01-05 00:00:00 +0000 UTC"`. Years
/// outside 0..=9999 take [`go_time`]'s own path.
fn write_date(out: &mut Vec<u8>, d: NaiveDate) -> Result<(), String> {
    let Ok(year) = u32::try_from(d.year()) else {
        return write_go_time(out, d);
    };
    if year > 9999 {
        return write_go_time(out, d);
    }
    // Each value is below 10^width here, so `% 10` leaves one decimal digit.
    let digit = |n: u32| b'0' + (n % 10) as u8;
    let (month, day) = (d.month(), d.day());
    out.extend_from_slice(&[
        b'"',
        digit(year / 1000),
        digit(year / 100),
        digit(year / 10),
        digit(year),
        b'-',
        digit(month / 10),
        digit(month),
        b'-',
        digit(day / 10),
        digit(day),
    ]);
    out.extend_from_slice(b" 00:00:00 +0000 UTC\"");
    Ok(())
}

/// [`go_time`] of the midnight of `d`, written as a JSON string.
fn write_go_time(out: &mut Vec<u8>, d: NaiveDate) -> Result<(), String> {
    write(out, &d.and_hms_opt(0, 0, 0).map(|t| go_time(t.and_utc())))
}

fn write<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) -> Result<(), String> {
    serde_json::to_writer(out, v).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use chrono::{Datelike, TimeZone};

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

    /// A date is written as serde_json writes the `go_time` string of its midnight: every
    /// day of some years at the edges and beyond the four-digit years.
    #[test]
    fn dates_are_written_as_their_go_time_string() {
        for year in [
            -44, 0, 1, 9, 10, 99, 100, 999, 1000, 1969, 2020, 2024, 9999, 10_000,
        ] {
            let mut d = chrono::NaiveDate::from_ymd_opt(year, 1, 1).unwrap();
            while d.year() == year {
                let mut fast = Vec::new();
                super::write_date(&mut fast, d).unwrap();
                let general =
                    serde_json::to_vec(&super::go_time(d.and_hms_opt(0, 0, 0).unwrap().and_utc()))
                        .unwrap();
                assert_eq!(
                    String::from_utf8(fast).unwrap(),
                    String::from_utf8(general).unwrap(),
                    "{d}"
                );
                d = d.succ_opt().unwrap();
            }
        }
    }

    /// Text is written as serde_json writes it: every byte it escapes, at every place of
    /// blocks of sixteen, and text it leaves alone (non-ASCII, DEL, `/`).
    #[test]
    fn text_is_written_as_serde_json_writes_it() {
        let mut texts: Vec<String> = vec![
            String::new(),
            "entry 1".into(),
            "Zoë / ünï \u{7f} 日本".into(),
            "x".repeat(50),
        ];
        for len in [1usize, 15, 16, 17, 31, 32, 33, 50] {
            for at in 0..len {
                for c in (0u8..0x20).chain([b'"', b'\\', b'/', 0x7f, b'a']) {
                    let mut t = vec![b'a'; len];
                    t[at] = c;
                    texts.push(String::from_utf8(t).unwrap());
                }
            }
        }
        for t in &texts {
            let mut fast = Vec::new();
            super::write_str(&mut fast, t).unwrap();
            assert_eq!(fast, serde_json::to_vec(t).unwrap(), "{t:?}");
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
