//! Builds the one parameterised `SELECT` a [`TableQuery`] becomes.
//!
//! Identifiers come only from the discovered schema and are always quoted; every filter
//! value is a bound parameter sent as `text` (or `text[]`) and cast on the server to the
//! column's type: `$n::text::<type>` / `$n::text[]::<type>[]`. See the crate docs,
//! "Filters", for the semantics.
use crate::schema::{Column, ColumnKind, Table, quote_ident};
use reporter_ports::ports::{DataSourceError, TableQuery};
use reporter_sql_support::{Dialect, Mapped, select_from};
use serde_json::Value;

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

/// PostgreSQL's syntax: `"quoted"` identifiers, `$n` parameters sent as `text` and cast on
/// the server, `= ANY` / `<> ALL` over one `text[]` parameter, `LIMIT $n::int8`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Postgres;

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
    let fetch = u64::try_from(fetch).unwrap_or(0);
    let statement = reporter_sql_support::build(&Postgres, query, table, fetch)?;
    let json = statement
        .fields
        .iter()
        .map(|f| {
            table
                .columns
                .get(f)
                .is_some_and(|c| c.kind == ColumnKind::Json)
        })
        .collect();
    Ok(Statement {
        sql: statement.sql,
        params: statement.params,
        fields: statement.fields,
        json,
    })
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

impl Dialect for Postgres {
    type Column = Column;
    /// The value's text, cast on the server to the column's type.
    type Value = String;
    type Param = Param;
    type Error = tokio_postgres::Error;

    const NEVER: &'static str = "FALSE";
    const EMPTY_SELECT: &'static str = "";

    fn quote_ident(&self, ident: &str) -> String {
        quote_ident(ident)
    }

    /// Types without an exact native decoding are read as their text.
    fn project(&self, field: &str, column: &Column) -> String {
        let quoted = quote_ident(field);
        if column.kind.read_as_text() {
            format!("{quoted}::text")
        } else {
            quoted
        }
    }

    fn convert(
        &self,
        _field: &str,
        _op: &str,
        column: &Column,
        value: &Value,
    ) -> Result<Option<String>, DataSourceError> {
        Ok(compatible(column.kind, value))
    }

    fn operands(
        &self,
        params: &mut Vec<Param>,
        column: &Column,
        texts: Vec<String>,
    ) -> Vec<String> {
        let ty = cast_type(column, &texts);
        texts
            .into_iter()
            .map(|text| {
                params.push(Param::Text(text));
                format!("${}::text::{ty}", params.len())
            })
            .collect()
    }

    fn membership(
        &self,
        params: &mut Vec<Param>,
        col: &str,
        column: &Column,
        texts: Vec<String>,
        negated: bool,
    ) -> String {
        let ty = cast_type(column, &texts);
        params.push(Param::TextArray(texts));
        let n = params.len();
        if negated {
            format!("{col} <> ALL(${n}::text[]::{ty}[])")
        } else {
            format!("{col} = ANY(${n}::text[]::{ty}[])")
        }
    }

    fn select(
        &self,
        params: &mut Vec<Param>,
        list: &str,
        from: &str,
        filter: Option<&str>,
        fetch: u64,
    ) -> String {
        params.push(Param::Int8(i64::try_from(fetch).unwrap_or(i64::MAX)));
        format!(
            "{} LIMIT ${}::int8",
            select_from(list, from, filter),
            params.len()
        )
    }

    /// Data exceptions (a filter value the column type cannot take: bad date, out of range,
    /// …), an undefined function (no comparison operator for the column's type) and a
    /// datatype mismatch are `InvalidFilter`; a cancelled statement is `Timeout`; an
    /// undefined table or column shows the schema stale.
    fn map_error(error: &tokio_postgres::Error) -> Mapped {
        use tokio_postgres::error::SqlState;
        let Some(db) = error.as_db_error() else {
            return Mapped::error(DataSourceError::Unavailable(error.to_string()));
        };
        let code = db.code();
        let text = format!("{} ({})", db.message(), code.code());
        if *code == SqlState::QUERY_CANCELED {
            Mapped::error(DataSourceError::Timeout)
        } else if code.code().starts_with("22")
            || *code == SqlState::UNDEFINED_FUNCTION
            || *code == SqlState::DATATYPE_MISMATCH
        {
            Mapped::error(DataSourceError::InvalidFilter(text))
        } else if *code == SqlState::UNDEFINED_TABLE || *code == SqlState::UNDEFINED_COLUMN {
            Mapped::stale(text)
        } else {
            Mapped::error(DataSourceError::Unavailable(text))
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
        reporter_contract::fixtures::table_query("t", fields, filters, 10)
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
