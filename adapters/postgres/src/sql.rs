//! Builds the one parameterised `SELECT` a [`TableQuery`] becomes.
//!
//! Identifiers come only from the discovered schema and are always quoted; every filter
//! value is a bound parameter sent as `text` (or `text[]`) and cast on the server to the
//! column's type: `$n::text::<type>` / `$n::text[]::<type>[]`. See the crate docs,
//! "Filters", for the semantics.
use crate::schema::{Column, ColumnKind, Table, quote_ident};
use reporter_ports::ports::{DataSourceError, TableQuery};
use reporter_ports::report::FilterCondition;
use serde_json::Value;
use std::fmt::Write as _;

/// A bound parameter.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Param {
    Text(String),
    TextArray(Vec<String>),
    Int8(i64),
}

/// A statement ready to run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Statement {
    pub(crate) sql: String,
    pub(crate) params: Vec<Param>,
    /// Requested field names, in projection order.
    pub(crate) fields: Vec<String>,
    /// Per field: a `json`/`jsonb` column, whose text is decoded into a nested value.
    pub(crate) json: Vec<bool>,
}

fn invalid(field: &str, op: &str, why: &str) -> DataSourceError {
    DataSourceError::InvalidFilter(format!("{field}: {op} {why}"))
}

/// Builds the statement for `query` on `table` returning at most `fetch` rows.
///
/// Fails with `UnknownField` for a projected or filtered field the table lacks (projected
/// fields first, then filters in field order) and with `InvalidFilter` for a malformed
/// condition.
pub(crate) fn build(
    query: &TableQuery,
    table: &Table,
    fetch: i64,
) -> Result<Statement, DataSourceError> {
    let column = |field: &str| {
        table
            .columns
            .get(field)
            .ok_or_else(|| DataSourceError::UnknownField {
                table: query.table.clone(),
                field: field.to_owned(),
            })
    };
    let mut projection = Vec::with_capacity(query.fields.len());
    let mut json = Vec::with_capacity(query.fields.len());
    for field in &query.fields {
        let col = column(field)?;
        json.push(col.kind == crate::schema::ColumnKind::Json);
        let quoted = quote_ident(field);
        projection.push(if col.kind.read_as_text() {
            format!("{quoted}::text")
        } else {
            quoted
        });
    }
    let mut builder = Builder::default();
    for (field, condition) in &query.filters {
        let col = column(field)?;
        builder.condition(field, col, condition)?;
    }
    let mut sql = format!(
        "SELECT {} FROM {}.{}",
        projection.join(", "),
        quote_ident(&table.schema),
        quote_ident(&table.name)
    );
    if !builder.clauses.is_empty() {
        let _ = write!(sql, " WHERE {}", builder.clauses.join(" AND "));
    }
    builder.params.push(Param::Int8(fetch));
    let _ = write!(sql, " LIMIT ${}::int8", builder.params.len());
    Ok(Statement {
        sql,
        params: builder.params,
        fields: query.fields.clone(),
        json,
    })
}

#[derive(Debug, Default)]
struct Builder {
    clauses: Vec<String>,
    params: Vec<Param>,
}

/// The text sent for a scalar, when it can ever match a column of `kind`; `None` when the
/// JSON type can never match (mixed types never match) or the value is null.
fn compatible(kind: ColumnKind, value: &Value) -> Option<String> {
    match (kind, value) {
        (_, Value::Null | Value::Array(_) | Value::Object(_)) => None,
        (ColumnKind::Integer | ColumnKind::Float | ColumnKind::Numeric, Value::Number(n)) => {
            Some(n.to_string())
        }
        (
            ColumnKind::Numeric
            | ColumnKind::Text
            | ColumnKind::Date
            | ColumnKind::Timestamp
            | ColumnKind::TimestampTz,
            Value::String(s),
        ) => Some(s.clone()),
        (ColumnKind::Bool, Value::Bool(b)) => Some(b.to_string()),
        (ColumnKind::Other | ColumnKind::Json, Value::String(s)) => Some(s.clone()),
        (ColumnKind::Other | ColumnKind::Json, Value::Number(n)) => Some(n.to_string()),
        (ColumnKind::Other | ColumnKind::Json, Value::Bool(b)) => Some(b.to_string()),
        _ => None,
    }
}

/// The SQL type the bound texts are cast to. Integer columns compare with `int8` (or
/// `numeric` when a value is fractional or beyond `i64`) so that `2.5` or `2^40` are valid
/// bounds for an `integer` column.
fn cast_type(column: &Column, texts: &[String]) -> String {
    if column.kind == ColumnKind::Integer {
        if texts.iter().all(|t| t.parse::<i64>().is_ok()) {
            "int8".to_owned()
        } else {
            "numeric".to_owned()
        }
    } else {
        column.sql_type.clone()
    }
}

/// Order operators need a number or a string.
fn bound<'v>(field: &str, op: &str, value: &'v Value) -> Result<&'v Value, DataSourceError> {
    match value {
        Value::Number(_) | Value::String(_) => Ok(value),
        _ => Err(invalid(field, op, "needs a number or a string")),
    }
}

impl Builder {
    fn bind(&mut self, param: Param) -> usize {
        self.params.push(param);
        self.params.len()
    }

    fn condition(
        &mut self,
        field: &str,
        column: &Column,
        cond: &FilterCondition,
    ) -> Result<(), DataSourceError> {
        let all = cond.operators();
        for (op, values) in all {
            if values.iter().any(|v| v.is_array() || v.is_object()) {
                return Err(invalid(field, op, "values must be scalars"));
            }
        }
        let col = quote_ident(field);
        if !cond.eq.is_empty() {
            let clause = self.any_of(&col, column, &cond.eq);
            self.clauses.push(clause);
        }
        if !cond.in_.is_empty() {
            let clause = self.any_of(&col, column, &cond.in_);
            self.clauses.push(clause);
        }
        if !cond.nin.is_empty()
            && let Some(clause) = self.none_of(&col, column, &cond.nin)
        {
            self.clauses.push(clause);
        }
        for (op, values, sql_op) in [
            ("gt", &cond.gt, ">"),
            ("gte", &cond.gte, ">="),
            ("lt", &cond.lt, "<"),
            ("lte", &cond.lte, "<="),
        ] {
            if let Some(first) = values.first() {
                let value = bound(field, op, first)?;
                let clause = match compatible(column.kind, value) {
                    Some(text) => {
                        let ty = cast_type(column, std::slice::from_ref(&text));
                        let n = self.bind(Param::Text(text));
                        format!("{col} {sql_op} ${n}::text::{ty}")
                    }
                    None => "FALSE".to_owned(),
                };
                self.clauses.push(clause);
            }
        }
        match cond.between.as_slice() {
            [] => {}
            [low, high] => {
                let (low, high) = (
                    bound(field, "between", low)?,
                    bound(field, "between", high)?,
                );
                if std::mem::discriminant(low) != std::mem::discriminant(high) {
                    return Err(invalid(field, "between", "bounds must have the same type"));
                }
                let clause = match (compatible(column.kind, low), compatible(column.kind, high)) {
                    (Some(low), Some(high)) => {
                        let ty = cast_type(column, &[low.clone(), high.clone()]);
                        let a = self.bind(Param::Text(low));
                        let b = self.bind(Param::Text(high));
                        format!("({col} >= ${a}::text::{ty} AND {col} <= ${b}::text::{ty})")
                    }
                    _ => "FALSE".to_owned(),
                };
                self.clauses.push(clause);
            }
            _ => return Err(invalid(field, "between", "takes exactly two values")),
        }
        Ok(())
    }

    /// The texts of the values that can match, and whether `null` is among the values.
    fn partition(column: &Column, values: &[Value]) -> (Vec<String>, bool) {
        let has_null = values.iter().any(Value::is_null);
        let texts = values
            .iter()
            .filter_map(|v| compatible(column.kind, v))
            .collect();
        (texts, has_null)
    }

    /// Equal to any value; `null` matches a NULL column.
    fn any_of(&mut self, col: &str, column: &Column, values: &[Value]) -> String {
        let (texts, has_null) = Self::partition(column, values);
        let mut parts = Vec::new();
        if has_null {
            parts.push(format!("{col} IS NULL"));
        }
        if !texts.is_empty() {
            let ty = cast_type(column, &texts);
            let n = self.bind(Param::TextArray(texts));
            parts.push(format!("{col} = ANY(${n}::text[]::{ty}[])"));
        }
        if parts.is_empty() {
            "FALSE".to_owned()
        } else {
            format!("({})", parts.join(" OR "))
        }
    }

    /// Equal to none of the values: a NULL column qualifies unless `null` is listed.
    fn none_of(&mut self, col: &str, column: &Column, values: &[Value]) -> Option<String> {
        let (texts, has_null) = Self::partition(column, values);
        let differs = (!texts.is_empty()).then(|| {
            let ty = cast_type(column, &texts);
            let n = self.bind(Param::TextArray(texts));
            format!("{col} <> ALL(${n}::text[]::{ty}[])")
        });
        match (differs, has_null) {
            (None, false) => None,
            (None, true) => Some(format!("{col} IS NOT NULL")),
            (Some(d), false) => Some(format!("({col} IS NULL OR {d})")),
            (Some(d), true) => Some(format!("({col} IS NOT NULL AND {d})")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn table() -> Table {
        let col = |kind, ty: &str| Column {
            kind,
            sql_type: format!("\"pg_catalog\".\"{ty}\""),
        };
        Table {
            schema: "s".into(),
            name: "t".into(),
            columns: BTreeMap::from([
                ("id".to_owned(), col(ColumnKind::Integer, "int4")),
                ("amount".to_owned(), col(ColumnKind::Numeric, "numeric")),
                ("name".to_owned(), col(ColumnKind::Text, "text")),
                ("we\"ird".to_owned(), col(ColumnKind::Text, "text")),
            ]),
        }
    }

    fn query(fields: &[&str], filters: Value) -> TableQuery {
        TableQuery {
            table: "t".into(),
            fields: fields.iter().map(|f| (*f).to_owned()).collect(),
            filters: serde_json::from_value(filters).expect("filters"),
            max_rows: 10,
        }
    }

    #[test]
    fn projection_quotes_and_casts_numeric_to_text() {
        let s = build(
            &query(&["id", "amount", "we\"ird"], json!({})),
            &table(),
            11,
        )
        .expect("statement");
        assert_eq!(
            s.sql,
            r#"SELECT "id", "amount"::text, "we""ird" FROM "s"."t" LIMIT $1::int8"#
        );
        assert_eq!(s.params, [Param::Int8(11)]);
    }

    #[test]
    fn every_value_is_bound_and_cast() {
        let s = build(
            &query(
                &["id"],
                json!({
                    "id": {"eq": [1, 2.5, "x", null], "gt": [0], "between": [1, 9]},
                    "name": {"nin": ["'; DROP TABLE t; --"], "lt": [5]},
                }),
            ),
            &table(),
            3,
        )
        .expect("statement");
        assert_eq!(
            s.sql,
            "SELECT \"id\" FROM \"s\".\"t\" WHERE \
             (\"id\" IS NULL OR \"id\" = ANY($1::text[]::numeric[])) AND \
             \"id\" > $2::text::int8 AND \
             (\"id\" >= $3::text::int8 AND \"id\" <= $4::text::int8) AND \
             (\"name\" IS NULL OR \"name\" <> ALL($5::text[]::\"pg_catalog\".\"text\"[])) AND \
             FALSE \
             LIMIT $6::int8"
        );
        assert_eq!(
            s.params,
            [
                Param::TextArray(vec!["1".into(), "2.5".into()]),
                Param::Text("0".into()),
                Param::Text("1".into()),
                Param::Text("9".into()),
                Param::TextArray(vec!["'; DROP TABLE t; --".into()]),
                Param::Int8(3),
            ]
        );
    }

    #[test]
    fn mismatched_and_null_lists() {
        let s = build(
            &query(&[], json!({"name": {"eq": [1], "nin": [null]}})),
            &table(),
            1,
        )
        .expect("statement");
        assert_eq!(
            s.sql,
            "SELECT  FROM \"s\".\"t\" WHERE FALSE AND \"name\" IS NOT NULL LIMIT $1::int8"
        );
    }

    #[test]
    fn unknown_fields_and_invalid_conditions() {
        let unknown = |f: &str| DataSourceError::UnknownField {
            table: "t".into(),
            field: f.into(),
        };
        assert_eq!(
            build(&query(&["id", "x\"y"], json!({})), &table(), 1),
            Err(unknown("x\"y"))
        );
        assert_eq!(
            build(
                &query(&["id"], json!({"id; drop": {"eq": [1]}})),
                &table(),
                1
            ),
            Err(unknown("id; drop"))
        );
        for bad in [
            json!({"between": [1]}),
            json!({"between": [1, 2, 3]}),
            json!({"between": [1, "2"]}),
            json!({"gt": [true]}),
            json!({"lte": [null]}),
            json!({"eq": [[1]]}),
            json!({"nin": [{"a": 1}]}),
        ] {
            let err = build(&query(&["id"], json!({"id": bad.clone()})), &table(), 1);
            assert!(
                matches!(err, Err(DataSourceError::InvalidFilter(_))),
                "{bad}: {err:?}"
            );
        }
    }
}
