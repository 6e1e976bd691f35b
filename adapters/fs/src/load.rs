//! Loading tables from `<table>.json` and `<table>.csv` files, including CSV cell typing.
//!
//! The typing rule is documented at the crate root ("CSV typing").
use reporter_ports::ports::{DataSourceError, Row};
use serde_json::{Number, Value};
use std::path::Path;

/// One table as loaded: rows in file order.
#[derive(Debug, Clone, Default)]
pub(crate) struct LoadedTable {
    /// Rows in file order; a CSV row has every header key, a JSON row only the keys it had.
    pub rows: Vec<Row>,
    /// Field names, sorted and unique (union of keys, or the CSV header).
    pub fields: Vec<String>,
}

/// Error naming the file.
fn bad(path: &Path, what: impl std::fmt::Display) -> DataSourceError {
    DataSourceError::Unavailable(format!("{}: {what}", path.display()))
}

/// True for names templates can address: `[A-Za-z_][A-Za-z0-9_]*`.
pub(crate) fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn sorted_fields<'a>(keys: impl Iterator<Item = &'a String>) -> Vec<String> {
    let set: std::collections::BTreeSet<&String> = keys.collect();
    set.into_iter().cloned().collect()
}

/// Parses a JSON table: an array of flat objects (values are scalars: string, number, boolean
/// or null).
pub(crate) fn parse_json_table(path: &Path, text: &str) -> Result<LoadedTable, DataSourceError> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| bad(path, format!("invalid JSON: {e}")))?;
    let Value::Array(items) = value else {
        return Err(bad(
            path,
            "expected a JSON array of objects at the top level",
        ));
    };
    let mut rows = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let Value::Object(row) = item else {
            return Err(bad(
                path,
                format!("row {index} is not a JSON object (rows must be flat objects)"),
            ));
        };
        if let Some((key, _)) = row.iter().find(|(_, v)| v.is_array() || v.is_object()) {
            return Err(bad(
                path,
                format!("row {index} field {key:?} is nested (rows must be flat objects)"),
            ));
        }
        rows.push(row);
    }
    let fields = sorted_fields(rows.iter().flat_map(|r| r.keys()));
    Ok(LoadedTable { rows, fields })
}

/// The type a CSV column was given (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ColumnKind {
    Boolean,
    Number,
    Text,
}

/// Parses a canonical integer (the text is exactly what the `i64` prints).
fn canonical_i64(cell: &str) -> Option<i64> {
    cell.parse::<i64>().ok().filter(|n| n.to_string() == cell)
}

/// Parses `-?digits.digits` when the `f64` prints back to exactly the same text.
fn round_trip_decimal(cell: &str) -> Option<Number> {
    let unsigned = cell.strip_prefix('-').unwrap_or(cell);
    let (int, frac) = unsigned.split_once('.')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(int) || !digits(frac) {
        return None;
    }
    let number = Number::from_f64(cell.parse::<f64>().ok()?)?;
    (number.to_string() == cell).then_some(number)
}

fn numeric_cell(cell: &str) -> Option<Number> {
    canonical_i64(cell)
        .map(Number::from)
        .or_else(|| round_trip_decimal(cell))
}

fn column_kind<'a>(cells: impl Iterator<Item = &'a str>) -> ColumnKind {
    let non_empty: Vec<&str> = cells.filter(|c| !c.is_empty()).collect();
    if non_empty.is_empty() {
        ColumnKind::Text
    } else if non_empty.iter().all(|c| *c == "true" || *c == "false") {
        ColumnKind::Boolean
    } else if non_empty.iter().all(|c| numeric_cell(c).is_some()) {
        ColumnKind::Number
    } else {
        ColumnKind::Text
    }
}

fn typed_cell(kind: ColumnKind, cell: &str) -> Value {
    if cell.is_empty() {
        return Value::Null;
    }
    match kind {
        ColumnKind::Boolean => Value::Bool(cell == "true"),
        ColumnKind::Number => {
            numeric_cell(cell).map_or_else(|| Value::String(cell.to_owned()), Value::Number)
        }
        ColumnKind::Text => Value::String(cell.to_owned()),
    }
}

/// Parses a CSV table: a header row of unique, non-empty names, then rows of exactly as many
/// cells. Cells are typed per column (see the module docs).
pub(crate) fn parse_csv_table(path: &Path, text: &str) -> Result<LoadedTable, DataSourceError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .from_reader(text.as_bytes());
    let headers: Vec<String> = reader
        .headers()
        .map_err(|e| bad(path, format!("invalid CSV header: {e}")))?
        .iter()
        .map(|h| h.trim().to_owned())
        .collect();
    if headers.is_empty() || headers.iter().all(String::is_empty) {
        return Err(bad(path, "missing CSV header row"));
    }
    let mut seen = std::collections::BTreeSet::new();
    for (index, name) in headers.iter().enumerate() {
        if name.is_empty() {
            return Err(bad(
                path,
                format!("CSV header column {} is empty", index + 1),
            ));
        }
        if !seen.insert(name.as_str()) {
            return Err(bad(path, format!("CSV header repeats column {name:?}")));
        }
    }
    let mut records: Vec<Vec<String>> = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| bad(path, format!("invalid CSV: {e}")))?;
        records.push(record.iter().map(str::to_owned).collect());
    }
    let kinds: Vec<ColumnKind> = (0..headers.len())
        .map(|col| {
            column_kind(
                records
                    .iter()
                    .map(move |r| r.get(col).map_or("", String::as_str)),
            )
        })
        .collect();
    let rows = records
        .iter()
        .map(|record| {
            headers
                .iter()
                .zip(&kinds)
                .zip(record)
                .map(|((name, kind), cell)| (name.clone(), typed_cell(*kind, cell)))
                .collect::<Row>()
        })
        .collect();
    let fields = sorted_fields(headers.iter());
    Ok(LoadedTable { rows, fields })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn csv(text: &str) -> LoadedTable {
        parse_csv_table(Path::new("t.csv"), text).expect("valid csv")
    }

    #[test]
    fn integers_must_be_canonical() {
        assert_eq!(canonical_i64("42"), Some(42));
        assert_eq!(canonical_i64("-7"), Some(-7));
        for s in [
            "007",
            "+5",
            "-0",
            "1_000",
            " 1",
            "1.0",
            "99999999999999999999",
        ] {
            assert_eq!(canonical_i64(s), None, "{s}");
        }
    }

    #[test]
    fn decimals_must_round_trip() {
        for s in ["12.5", "0.1", "-3.25", "78.25"] {
            assert!(round_trip_decimal(s).is_some(), "{s}");
        }
        for s in [
            "1250.00",
            "0.50",
            "1e3",
            ".5",
            "5.",
            "NaN",
            "inf",
            "1.0000000000000000001",
        ] {
            assert!(round_trip_decimal(s).is_none(), "{s}");
        }
    }

    #[test]
    fn columns_are_typed_as_a_whole() {
        let t = csv("a,b,c,d,e\n1,12.5,true,0042,1250.00\n2,3,false,7,12.34\n,,,,\n");
        assert_eq!(t.fields, ["a", "b", "c", "d", "e"]);
        assert_eq!(
            Value::Object(t.rows[0].clone()),
            json!({"a": 1, "b": 12.5, "c": true, "d": "0042", "e": "1250.00"})
        );
        assert_eq!(
            Value::Object(t.rows[1].clone()),
            json!({"a": 2, "b": 3, "c": false, "d": "7", "e": "12.34"})
        );
        assert_eq!(
            Value::Object(t.rows[2].clone()),
            json!({"a": null, "b": null, "c": null, "d": null, "e": null})
        );
    }

    #[test]
    fn identifiers() {
        assert!(is_identifier("accounts"));
        assert!(is_identifier("_x1"));
        assert!(!is_identifier("1x"));
        assert!(!is_identifier("my table"));
        assert!(!is_identifier(""));
    }
}
