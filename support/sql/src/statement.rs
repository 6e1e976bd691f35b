//! [`build`]: the one parameterised `SELECT` a [`TableQuery`] becomes.
use crate::dialect::Dialect;
use crate::filter::Filter;
use crate::tables::Table;
use reporter_ports::ports::{DataSourceError, TableQuery};
use std::fmt::Write as _;

/// A statement ready to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Statement<P> {
    pub sql: String,
    pub params: Vec<P>,
    /// Requested field names, in projection order.
    pub fields: Vec<String>,
}

/// Builds the statement for `query` on `table` returning at most `fetch` rows.
///
/// Identifiers come only from the discovered `table` and are quoted by the dialect; every
/// filter value is a bound parameter. Fails with `UnknownField` for a projected or filtered
/// field the table lacks (projected fields first, then filters in field order), and with
/// `InvalidFilter` for a malformed condition, a value the column's type cannot take, or more
/// filter values than the dialect's `MAX_PARAMS`.
pub fn build<D: Dialect>(
    dialect: &D,
    query: &TableQuery,
    table: &Table<D::Column>,
    fetch: u64,
) -> Result<Statement<D::Param>, DataSourceError> {
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
    for field in &query.fields {
        projection.push(dialect.project(field, column(field)?));
    }
    let mut filter = Filter::new(dialect);
    for (field, condition) in &query.filters {
        filter.condition(field, column(field)?, condition)?;
    }
    if filter.params.len() >= D::MAX_PARAMS {
        return Err(DataSourceError::InvalidFilter(format!(
            "too many filter values (at most {})",
            D::MAX_PARAMS
        )));
    }
    let list = if projection.is_empty() {
        D::EMPTY_SELECT.to_owned()
    } else {
        projection.join(", ")
    };
    let from = format!(
        "{}.{}",
        dialect.quote_ident(&table.schema),
        dialect.quote_ident(&table.name)
    );
    let condition = (!filter.clauses.is_empty()).then(|| filter.clauses.join(" AND "));
    let mut params = filter.params;
    let sql = dialect.select(&mut params, &list, &from, condition.as_deref(), fetch);
    Ok(Statement {
        sql,
        params,
        fields: query.fields.clone(),
    })
}

/// `SELECT <list> FROM <from>[ WHERE <filter>]`, the body every dialect's
/// [`Dialect::select`] wraps with its row limit.
pub fn select_from(list: &str, from: &str, filter: Option<&str>) -> String {
    let mut sql = format!("SELECT {list} FROM {from}");
    if let Some(filter) = filter {
        let _ = write!(sql, " WHERE {filter}");
    }
    sql
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::{Bound, Mapped, bind_all, quote_with};
    use serde_json::{Value, json};
    use std::collections::BTreeMap;

    /// A toy dialect: `?` placeholders, numbers and strings only, strings never match `n`.
    struct Toy;

    impl Dialect for Toy {
        type Column = &'static str;
        type Value = Bound<String>;
        type Param = String;
        type Error = String;
        const NEVER: &'static str = "0 = 1";
        const EMPTY_SELECT: &'static str = "1";
        const MAX_PARAMS: usize = 7;

        fn quote_ident(&self, ident: &str) -> String {
            quote_with(ident, '"', '"')
        }

        fn convert(
            &self,
            _field: &str,
            _op: &str,
            column: &&'static str,
            value: &Value,
        ) -> Result<Option<Bound<String>>, DataSourceError> {
            Ok(match (*column, value) {
                ("n", Value::Number(n)) => Some(Bound::plain(n.to_string())),
                ("s", Value::String(s)) => Some(Bound::cast("TEXT", s.clone())),
                _ => None,
            })
        }

        fn operands(
            &self,
            params: &mut Vec<String>,
            _column: &&'static str,
            values: Vec<Bound<String>>,
        ) -> Vec<String> {
            bind_all(params, values, |_| "?".to_owned())
        }

        fn select(
            &self,
            params: &mut Vec<String>,
            list: &str,
            from: &str,
            filter: Option<&str>,
            fetch: u64,
        ) -> String {
            params.push(fetch.to_string());
            format!("{} LIMIT ?", select_from(list, from, filter))
        }

        fn map_error(error: &String) -> Mapped {
            Mapped::error(DataSourceError::Unavailable(error.clone()))
        }
    }

    fn table() -> Table<&'static str> {
        Table {
            schema: "s".into(),
            name: "t\"x".into(),
            columns: BTreeMap::from([("n".to_owned(), "n"), ("s".to_owned(), "s")]),
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
    fn each_operator_its_clause_and_parameters_in_order() {
        let s = build(
            &Toy,
            &query(
                &["n", "s"],
                json!({
                    "n": {"eq": [1, "x", null], "nin": [2], "gt": [0], "between": [1, 9]},
                    "s": {"in": ["a"], "nin": [null], "lte": [3]},
                }),
            ),
            &table(),
            11,
        );
        let s = s.expect("statement");
        assert_eq!(
            s.sql,
            "SELECT \"n\", \"s\" FROM \"s\".\"t\"\"x\" WHERE \
             (\"n\" IS NULL OR \"n\" IN (?)) AND (\"n\" IS NULL OR \"n\" NOT IN (?)) AND \
             \"n\" > ? AND (\"n\" >= ? AND \"n\" <= ?) AND \
             (\"s\" IN (CAST(? AS TEXT))) AND \"s\" IS NOT NULL AND 0 = 1 LIMIT ?"
        );
        assert_eq!(s.params, ["1", "2", "0", "1", "9", "a", "11"]);
        assert_eq!(s.fields, ["n", "s"]);
    }

    #[test]
    fn empty_projections_mismatches_and_refusals() {
        let s = build(
            &Toy,
            &query(&[], json!({"n": {"in": ["x"], "nin": ["y"]}})),
            &table(),
            1,
        )
        .expect("statement");
        assert_eq!(s.sql, "SELECT 1 FROM \"s\".\"t\"\"x\" WHERE 0 = 1 LIMIT ?");
        let unknown = build(&Toy, &query(&["n\" --"], json!({})), &table(), 1);
        assert!(
            matches!(unknown, Err(DataSourceError::UnknownField { field, .. }) if field == "n\" --")
        );
        for bad in [
            json!({"n": {"between": [1]}}),
            json!({"n": {"between": [1, "2"]}}),
            json!({"n": {"gt": [true]}}),
            json!({"n": {"eq": [[1]]}}),
            json!({"n": {"in": [1, 2, 3, 4, 5, 6, 7]}}),
        ] {
            let err = build(&Toy, &query(&["n"], bad.clone()), &table(), 1);
            assert!(
                matches!(err, Err(DataSourceError::InvalidFilter(_))),
                "{bad}: {err:?}"
            );
        }
    }
}
