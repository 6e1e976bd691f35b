//! Column types of a golden case's tables: a case's `columns.json` hints
//! (`{"<ds>": {"<table>": {"<column>": "<type>"}}}`), otherwise inferred from the JSON values
//! (text, bigint, double precision, boolean, timestamptz for Go-time strings, jsonb for
//! objects and arrays). A hint says which database type a column has; the case's
//! `data.json` holds the values as that type reaches templates (NUMERIC and UUID as text,
//! `date` and `timestamp` as Go times at UTC), so loading through the hinted type and
//! reading back must give the same output.
use chrono::{DateTime, NaiveDateTime, Utc};
use serde_json::Value;
use std::collections::BTreeMap;

/// A column's database type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColType {
    Text,
    Bigint,
    Double,
    Boolean,
    Numeric,
    Uuid,
    Date,
    Timestamp,
    TimestampTz,
    Jsonb,
}

impl ColType {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "text" => Self::Text,
            "bigint" => Self::Bigint,
            "double precision" => Self::Double,
            "boolean" => Self::Boolean,
            "numeric" => Self::Numeric,
            "uuid" => Self::Uuid,
            "date" => Self::Date,
            "timestamp" => Self::Timestamp,
            "timestamptz" => Self::TimestampTz,
            "jsonb" => Self::Jsonb,
            _ => return None,
        })
    }

    /// The PostgreSQL type name.
    pub fn sql(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Bigint => "bigint",
            Self::Double => "double precision",
            Self::Boolean => "boolean",
            Self::Numeric => "numeric",
            Self::Uuid => "uuid",
            Self::Date => "date",
            Self::Timestamp => "timestamp",
            Self::TimestampTz => "timestamptz",
            Self::Jsonb => "jsonb",
        }
    }
}

/// Hints by data source, table, column.
pub type Hints = BTreeMap<String, BTreeMap<String, BTreeMap<String, String>>>;

/// Types of one table's columns: `None` for a column whose values share no type (possible
/// in MongoDB and JSON files, not in PostgreSQL).
pub type TableTypes = BTreeMap<String, Option<ColType>>;

/// The types of `columns` (each with its values) of `ds.table`.
pub fn table_types(
    hints: &Hints,
    ds: &str,
    table: &str,
    columns: &BTreeMap<String, Vec<&Value>>,
) -> Result<TableTypes, String> {
    let mine = hints.get(ds).and_then(|t| t.get(table));
    let mut out = TableTypes::new();
    for (column, values) in columns {
        let ty = match mine.and_then(|m| m.get(column)) {
            Some(h) => Some(
                ColType::parse(h)
                    .ok_or_else(|| format!("columns.json: unknown type {h:?} of {column}"))?,
            ),
            None => inferred(values),
        };
        out.insert(column.clone(), ty);
    }
    Ok(out)
}

fn inferred(values: &[&Value]) -> Option<ColType> {
    let mut ty: Option<ColType> = None;
    for v in values {
        let t = match v {
            Value::Null => continue,
            Value::Bool(_) => ColType::Boolean,
            Value::Number(n) if n.is_i64() => ColType::Bigint,
            Value::Number(_) => ColType::Double,
            Value::String(s) if go_time(s).is_some() => ColType::TimestampTz,
            Value::String(_) => ColType::Text,
            Value::Object(_) | Value::Array(_) => ColType::Jsonb,
        };
        match ty {
            None => ty = Some(t),
            Some(prev) if prev == t => {}
            Some(_) => return None,
        }
    }
    Some(ty.unwrap_or(ColType::Text))
}

/// A Go-time string at UTC (`2025-06-01 10:00:00[.f] +0000 UTC`) as an instant.
pub fn go_time(s: &str) -> Option<DateTime<Utc>> {
    let naive = s.strip_suffix(" +0000 UTC")?;
    NaiveDateTime::parse_from_str(naive, "%Y-%m-%d %H:%M:%S%.f")
        .ok()
        .map(|t| t.and_utc())
}

/// The values of every column of `rows`, by column, with `extra` columns (mapped fields no
/// row has) holding nulls.
pub fn columns_of<'a>(
    rows: &'a [serde_json::Map<String, Value>],
    extra: impl IntoIterator<Item = &'a String>,
) -> BTreeMap<String, Vec<&'a Value>> {
    let mut out: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for r in rows {
        for (k, v) in r {
            out.entry(k.clone()).or_default().push(v);
        }
    }
    for e in extra {
        out.entry(e.clone()).or_default();
    }
    out
}
