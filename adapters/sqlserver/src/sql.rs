//! Builds the one parameterised `SELECT TOP` a [`TableQuery`] becomes.
//!
//! Identifiers come only from the discovered schema and are always bracket-quoted; every
//! filter value is a bound parameter (`@Pn`), typed for the column it is compared with and
//! checked here first, so that SQL Server's implicit conversions never decide a match. See
//! the crate docs, "Filters", for the semantics.
use crate::schema::{ColumnKind, Table, quote_ident};
use reporter_ports::ports::{DataSourceError, TableQuery};
use reporter_sql_support::{
    Bound, Dialect, Mapped, Moment, bind_all, invalid_filter, is_decimal_text, parse_moment,
    select_from,
};
use serde_json::Value;
use tiberius::ColumnData;

/// A bound parameter.
pub(crate) type Param = ColumnData<'static>;

/// SQL Server refuses a request with more than 2 100 parameters.
pub(crate) const MAX_PARAMS: usize = 2_000;

/// Invalid object name / invalid column name: the cached schema is stale.
const STALE: [u32; 2] = [208, 207];

/// A statement ready to run.
pub(crate) type Statement = reporter_sql_support::Statement<Param>;

/// SQL Server's syntax: `[quoted]` identifiers, numbered `@Pn` parameters typed for their
/// column (`CAST(@Pn AS …)` for decimals and dates), `SELECT TOP (@Pn)`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SqlServer;

/// Builds the statement for `query` on `table` returning at most `fetch` rows.
///
/// Fails with `UnknownField` for a projected or filtered field the table lacks (projected
/// fields first, then filters in field order) and with `InvalidFilter` for a malformed
/// condition or a value the column's type cannot take.
pub(crate) fn build(
    query: &TableQuery,
    table: &Table,
    fetch: i64,
) -> Result<Statement, DataSourceError> {
    let fetch = u64::try_from(fetch).unwrap_or(0);
    reporter_sql_support::build(&SqlServer, query, table, fetch)
}

/// A JSON number as a `bigint` when it is one, else a `float`.
fn number(n: &serde_json::Number) -> Param {
    match n.as_i64() {
        Some(i) => ColumnData::I64(Some(i)),
        None => ColumnData::F64(Some(n.as_f64().unwrap_or(f64::NAN))),
    }
}

fn text(s: &str) -> Param {
    ColumnData::String(Some(s.to_owned().into()))
}

fn cast(to: &'static str, value: String) -> Bound<Param> {
    Bound::cast(to, ColumnData::String(Some(value.into())))
}

fn moment_param(kind: ColumnKind, moment: Moment) -> Bound<Param> {
    let t = match (kind, moment) {
        (ColumnKind::Date, Moment::Date(d)) => {
            return cast("DATE", d.format("%Y-%m-%d").to_string());
        }
        (_, Moment::Date(d)) => d.and_time(Default::default()),
        (_, Moment::DateTime(t)) => t,
    };
    let iso = t.format("%Y-%m-%dT%H:%M:%S%.6f").to_string();
    match kind {
        ColumnKind::DateTimeOffset => cast("DATETIMEOFFSET(7)", format!("{iso}+00:00")),
        _ => cast("DATETIME2(7)", iso),
    }
}

impl Dialect for SqlServer {
    type Column = ColumnKind;
    type Value = Bound<Param>;
    type Param = Param;
    type Error = tiberius::error::Error;

    const NEVER: &'static str = "1 = 0";
    const EMPTY_SELECT: &'static str = "1 AS [_]";
    const MAX_PARAMS: usize = MAX_PARAMS;

    fn quote_ident(&self, ident: &str) -> String {
        quote_ident(ident)
    }

    /// Decimals are compared exactly (`DECIMAL(38,18)`), dates as `DATE`, `DATETIME2(7)` or
    /// `DATETIMEOFFSET(7)`; `bit` takes booleans and 0/1.
    fn convert(
        &self,
        field: &str,
        op: &str,
        kind: &ColumnKind,
        value: &Value,
    ) -> Result<Option<Bound<Param>>, DataSourceError> {
        use ColumnKind as K;
        let kind = *kind;
        let bound = match (kind, value) {
            (_, Value::Null | Value::Array(_) | Value::Object(_)) => None,
            (K::Integer | K::Float | K::Other, Value::Number(n)) => Some(Bound::plain(number(n))),
            (K::Bit | K::Other, Value::Bool(b)) => Some(Bound::plain(ColumnData::Bit(Some(*b)))),
            (K::Bit, Value::Number(n)) if n.as_i64().is_some_and(|i| i == 0 || i == 1) => {
                Some(Bound::plain(ColumnData::Bit(Some(n.as_i64() == Some(1)))))
            }
            (K::Decimal, Value::Number(n)) => Some(cast("DECIMAL(38,18)", n.to_string())),
            (K::Decimal, Value::String(s)) => {
                if !is_decimal_text(s) {
                    return Err(invalid_filter(
                        field,
                        op,
                        format!("{s:?} is not a decimal number"),
                    ));
                }
                Some(cast("DECIMAL(38,18)", s.trim().to_owned()))
            }
            (K::Text | K::Other, Value::String(s)) => Some(Bound::plain(text(s))),
            (K::Date | K::DateTime | K::DateTimeOffset, Value::String(s)) => {
                match parse_moment(s) {
                    Some(moment) => Some(moment_param(kind, moment)),
                    None => {
                        return Err(invalid_filter(
                            field,
                            op,
                            format!("{s:?} is not a date or date-time"),
                        ));
                    }
                }
            }
            _ => None,
        };
        Ok(bound)
    }

    fn operands(
        &self,
        params: &mut Vec<Param>,
        _kind: &ColumnKind,
        values: Vec<Bound<Param>>,
    ) -> Vec<String> {
        bind_all(params, values, |n| format!("@P{n}"))
    }

    fn select(
        &self,
        params: &mut Vec<Param>,
        list: &str,
        from: &str,
        filter: Option<&str>,
        fetch: u64,
    ) -> String {
        params.push(ColumnData::I64(Some(
            i64::try_from(fetch).unwrap_or(i64::MAX),
        )));
        let top = format!("TOP (@P{}) {list}", params.len());
        select_from(&top, from, filter)
    }

    /// Invalid object or column name shows the schema stale; anything else is `Unavailable`.
    fn map_error(error: &tiberius::error::Error) -> Mapped {
        match error {
            tiberius::error::Error::Server(e) if STALE.contains(&e.code()) => {
                Mapped::stale(format!("{} ({})", e.message(), e.code()))
            }
            other => Mapped::error(DataSourceError::Unavailable(other.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn table() -> Table {
        Table {
            schema: "s".into(),
            name: "t".into(),
            columns: BTreeMap::from([
                ("id".to_owned(), ColumnKind::Integer),
                ("ok".to_owned(), ColumnKind::Bit),
                ("amount".to_owned(), ColumnKind::Decimal),
                ("name".to_owned(), ColumnKind::Text),
                ("day".to_owned(), ColumnKind::Date),
                ("at".to_owned(), ColumnKind::DateTimeOffset),
                ("we]ird".to_owned(), ColumnKind::Text),
            ]),
        }
    }

    fn query(fields: &[&str], filters: Value) -> TableQuery {
        reporter_contract::fixtures::table_query("t", fields, filters, 10)
    }

    #[test]
    fn projection_top_and_typed_parameters() {
        let s = build(&query(&["id", "we]ird"], json!({})), &table(), 11).expect("statement");
        assert_eq!(s.sql, "SELECT TOP (@P1) [id], [we]]ird] FROM [s].[t]");
        assert_eq!(s.params, [ColumnData::I64(Some(11))]);
        let s = build(
            &query(
                &["id"],
                json!({
                    "id": {"eq": [1, 2.5, "x", null], "between": [1, 9]},
                    "name": {"nin": ["'; DROP TABLE t; --"], "lt": [5]},
                    "amount": {"gte": ["10.50"]},
                    "day": {"in": ["2024-01-31", "2024-02-01T10:00:00Z"]},
                    "at": {"lte": ["2024-02-01T12:00:00+02:00"]},
                    "ok": {"eq": [true, 0]},
                }),
            ),
            &table(),
            3,
        )
        .expect("statement");
        assert_eq!(
            s.sql,
            "SELECT TOP (@P12) [id] FROM [s].[t] WHERE \
             [amount] >= CAST(@P1 AS DECIMAL(38,18)) AND \
             [at] <= CAST(@P2 AS DATETIMEOFFSET(7)) AND \
             ([day] IN (CAST(@P3 AS DATE), CAST(@P4 AS DATETIME2(7)))) AND \
             ([id] IS NULL OR [id] IN (@P5, @P6)) AND ([id] >= @P7 AND [id] <= @P8) AND \
             ([name] IS NULL OR [name] NOT IN (@P9)) AND FALSE AND \
             ([ok] IN (@P10, @P11))"
                .replace("FALSE", "1 = 0")
        );
        assert_eq!(s.params[1], text("2024-02-01T10:00:00.000000+00:00"));
        assert_eq!(s.params[9], ColumnData::Bit(Some(true)));
        assert_eq!(s.params[10], ColumnData::Bit(Some(false)));
    }

    #[test]
    fn unknown_fields_and_invalid_conditions() {
        assert!(matches!(
            build(&query(&["x]y"], json!({})), &table(), 1),
            Err(DataSourceError::UnknownField { .. })
        ));
        for bad in [
            json!({"id": {"between": [1]}}),
            json!({"id": {"between": [1, "2"]}}),
            json!({"id": {"gt": [true]}}),
            json!({"day": {"eq": ["2021-13-45"]}}),
            json!({"amount": {"eq": ["ten"]}}),
            json!({"id": {"eq": [[1]]}}),
        ] {
            let err = build(&query(&["id"], bad.clone()), &table(), 1);
            assert!(
                matches!(err, Err(DataSourceError::InvalidFilter(_))),
                "{bad}: {err:?}"
            );
        }
        let many: Vec<i64> = (0..MAX_PARAMS as i64).collect();
        assert!(matches!(
            build(&query(&["id"], json!({"id": {"in": many}})), &table(), 1),
            Err(DataSourceError::InvalidFilter(m)) if m.contains("too many")
        ));
    }
}
