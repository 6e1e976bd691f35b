//! MySQL values → JSON (crate docs, "Values").
use crate::schema::ColumnKind;
use base64::Engine as _;
use mysql_async::Value as My;
use mysql_async::consts::ColumnType as T;
use serde_json::Value;

/// The `binary` character set: the bytes are not text.
const BINARY_CHARSET: u16 = 63;

/// What the result metadata and the discovered schema say about one projected column.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ColumnInfo {
    pub(crate) wire: T,
    pub(crate) binary: bool,
    pub(crate) kind: ColumnKind,
}

impl ColumnInfo {
    pub(crate) fn new(column: &mysql_async::Column, kind: ColumnKind) -> Self {
        Self {
            wire: column.column_type(),
            binary: column.character_set() == BINARY_CHARSET,
            kind,
        }
    }
}

// A float as JSON: a number when finite, else its name (`NaN`, `inf`, `-inf`).
use reporter_sql_support::json_float as float;

/// `.f` with trailing zeros dropped, empty for zero: how Go prints a time's fraction.
fn fraction(micros: u32) -> String {
    if micros == 0 {
        return String::new();
    }
    let digits = format!("{micros:06}");
    format!(".{}", digits.trim_end_matches('0'))
}

fn date_time(
    column: &ColumnInfo,
    (y, mo, d, h, mi, s, us): (u16, u8, u8, u8, u8, u8, u32),
) -> Value {
    let date = format!("{y:04}-{mo:02}-{d:02}");
    Value::String(match column.wire {
        // A DATE is midnight UTC, as the PostgreSQL adapter hands a `date` over (and as the
        // original's templates print a date from a typed source: a Go `time.Time`).
        T::MYSQL_TYPE_DATE | T::MYSQL_TYPE_NEWDATE => format!("{date} 00:00:00 +0000 UTC"),
        // The session runs in UTC, so both DATETIME and TIMESTAMP print as Go prints a UTC
        // time (the reference's `2025-06-01 10:00:00 +0000 UTC`).
        _ => format!("{date} {h:02}:{mi:02}:{s:02}{} +0000 UTC", fraction(us)),
    })
}

/// MySQL's own text for a TIME: `[-]HH:MM:SS[.ffffff]`, hours beyond 24 included.
fn time(negative: bool, days: u32, h: u8, m: u8, s: u8, us: u32) -> Value {
    let hours = u64::from(days) * 24 + u64::from(h);
    let sign = if negative { "-" } else { "" };
    let frac = if us == 0 {
        String::new()
    } else {
        format!(".{us:06}")
    };
    Value::String(format!("{sign}{hours:02}:{m:02}:{s:02}{frac}"))
}

/// A `BIT(n)` value (big-endian, at most 8 bytes) as an unsigned integer.
fn bits(bytes: &[u8]) -> Value {
    let n = bytes
        .iter()
        .fold(0u64, |acc, b| acc.wrapping_shl(8) | u64::from(*b));
    Value::from(n)
}

fn bytes(column: &ColumnInfo, raw: Vec<u8>) -> Value {
    let text = |raw: Vec<u8>| {
        String::from_utf8(raw)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    };
    if column.kind == ColumnKind::Json || column.wire == T::MYSQL_TYPE_JSON {
        return serde_json::from_slice(&raw).unwrap_or_else(|_| Value::String(text(raw)));
    }
    match column.wire {
        T::MYSQL_TYPE_BIT => bits(&raw),
        T::MYSQL_TYPE_DECIMAL | T::MYSQL_TYPE_NEWDECIMAL => Value::String(text(raw)),
        _ if column.binary => Value::String(base64::engine::general_purpose::STANDARD.encode(&raw)),
        _ => Value::String(text(raw)),
    }
}

/// One cell as JSON.
pub(crate) fn value(column: &ColumnInfo, cell: My) -> Value {
    match cell {
        My::NULL => Value::Null,
        My::Int(i) => Value::from(i),
        My::UInt(u) => Value::from(u),
        // Through the shortest decimal text, so FLOAT 0.1 reads 0.1, not 0.100000001490116.
        My::Float(f) => float(f.to_string().parse::<f64>().unwrap_or(f64::from(f))),
        My::Double(d) => float(d),
        My::Date(y, mo, d, h, mi, s, us) => date_time(column, (y, mo, d, h, mi, s, us)),
        My::Time(neg, days, h, m, s, us) => time(neg, days, h, m, s, us),
        My::Bytes(raw) => bytes(column, raw),
    }
}

/// Roughly the bytes a cell holds, for the per-query byte cap.
pub(crate) fn size(cell: &My) -> usize {
    match cell {
        My::Bytes(b) => b.len(),
        _ => 8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn info(wire: T, binary: bool, kind: ColumnKind) -> ColumnInfo {
        ColumnInfo { wire, binary, kind }
    }

    #[test]
    fn each_wire_type_maps_as_documented() {
        let text = info(T::MYSQL_TYPE_VAR_STRING, false, ColumnKind::Text);
        let dt = info(T::MYSQL_TYPE_DATETIME, false, ColumnKind::DateTime);
        let date = info(T::MYSQL_TYPE_DATE, false, ColumnKind::Date);
        let dec = info(T::MYSQL_TYPE_NEWDECIMAL, true, ColumnKind::Decimal);
        let blob = info(T::MYSQL_TYPE_BLOB, true, ColumnKind::Binary);
        let bit = info(T::MYSQL_TYPE_BIT, true, ColumnKind::Bit { boolean: false });
        let maria_json = info(T::MYSQL_TYPE_BLOB, false, ColumnKind::Json);
        let mysql_json = info(T::MYSQL_TYPE_JSON, true, ColumnKind::Json);
        let cases = [
            (text, My::Bytes(b"Ada".to_vec()), json!("Ada")),
            (text, My::NULL, json!(null)),
            (text, My::Int(-3), json!(-3)),
            (
                text,
                My::UInt(18_446_744_073_709_551_615),
                json!(18_446_744_073_709_551_615_u64),
            ),
            (text, My::Float(0.1), json!(0.1)),
            (text, My::Double(f64::INFINITY), json!("inf")),
            (dec, My::Bytes(b"1250.10".to_vec()), json!("1250.10")),
            (
                dt,
                My::Date(2025, 6, 1, 10, 0, 0, 0),
                json!("2025-06-01 10:00:00 +0000 UTC"),
            ),
            (
                dt,
                My::Date(2025, 6, 1, 10, 0, 0, 500_000),
                json!("2025-06-01 10:00:00.5 +0000 UTC"),
            ),
            (
                date,
                My::Date(2021, 3, 14, 0, 0, 0, 0),
                json!("2021-03-14 00:00:00 +0000 UTC"),
            ),
            (
                text,
                My::Time(true, 1, 2, 3, 4, 5),
                json!("-26:03:04.000005"),
            ),
            (text, My::Time(false, 0, 8, 30, 0, 0), json!("08:30:00")),
            (blob, My::Bytes(vec![0, 255, 1]), json!("AP8B")),
            (bit, My::Bytes(vec![1, 2]), json!(258)),
            (
                maria_json,
                My::Bytes(br#"{"a":[1,2]}"#.to_vec()),
                json!({"a": [1, 2]}),
            ),
            (mysql_json, My::Bytes(b"[true]".to_vec()), json!([true])),
            (
                mysql_json,
                My::Bytes(b"not json".to_vec()),
                json!("not json"),
            ),
        ];
        for (column, cell, want) in cases {
            let shown = format!("{cell:?}");
            assert_eq!(value(&column, cell), want, "{shown}");
        }
    }
}
