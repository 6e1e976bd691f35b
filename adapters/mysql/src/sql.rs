//! Builds the one parameterised `SELECT` a [`TableQuery`] becomes.
//!
//! Identifiers come only from the discovered schema and are always quoted with backticks;
//! every filter value is a bound parameter (`?`), typed for the column it is compared with
//! and checked here first, so that MySQL's lenient conversions (`'abc' = 0` is true) never
//! decide a match. See the crate docs, "Filters", for the semantics.
use crate::schema::{Column, ColumnKind, Flavor, Table, quote_ident};
use mysql_async::Value as Param;
use reporter_ports::ports::{DataSourceError, TableQuery};
use reporter_sql_support::{
    Bound, Dialect, Mapped, Moment, bind_all, invalid_filter, is_decimal_text, parse_moment,
    select_from,
};
use serde_json::Value;
use std::time::Duration;

/// MySQL refuses a statement with more placeholders than 65 535.
pub(crate) const MAX_PARAMS: usize = 65_000;

/// MySQL error codes that mean the statement was stopped: KILL QUERY, MariaDB's
/// `max_statement_time`, MySQL's `MAX_EXECUTION_TIME`.
const INTERRUPTED: [u16; 3] = [1317, 1969, 3024];
/// No such table / column: the cached schema is stale.
const STALE: [u16; 2] = [1146, 1054];

/// A statement ready to run.
pub(crate) type Statement = reporter_sql_support::Statement<Param>;

/// MySQL's and MariaDB's syntax: `` `quoted` `` identifiers, `?` parameters typed for their
/// column (`CAST(? AS …)` for decimals and dates), `LIMIT ?`, and the server-side time limit
/// of the flavor (MariaDB `SET STATEMENT max_statement_time=… FOR`, MySQL
/// `MAX_EXECUTION_TIME`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct MySql {
    pub(crate) flavor: Flavor,
    /// The server stops a statement after this long.
    pub(crate) backstop: Duration,
}

/// Builds the statement for `query` on `table` returning at most `fetch` rows; the server
/// stops it after `backstop` (MariaDB `max_statement_time`, MySQL `MAX_EXECUTION_TIME`).
///
/// Fails with `UnknownField` for a projected or filtered field the table lacks (projected
/// fields first, then filters in field order) and with `InvalidFilter` for a malformed
/// condition or a value the column's type cannot take.
pub(crate) fn build(
    query: &TableQuery,
    table: &Table,
    fetch: u64,
    flavor: Flavor,
    backstop: Duration,
) -> Result<Statement, DataSourceError> {
    reporter_sql_support::build(&MySql { flavor, backstop }, query, table, fetch)
}

/// A JSON number as the narrowest parameter that keeps it exact.
fn number(n: &serde_json::Number) -> Param {
    if let Some(i) = n.as_i64() {
        Param::Int(i)
    } else if let Some(u) = n.as_u64() {
        Param::UInt(u)
    } else {
        Param::Double(n.as_f64().unwrap_or(f64::NAN))
    }
}

fn bytes(s: impl Into<String>) -> Param {
    Param::Bytes(s.into().into_bytes())
}

fn date_time_param(t: chrono::NaiveDateTime) -> Bound<Param> {
    Bound::cast(
        "DATETIME(6)",
        bytes(t.format("%Y-%m-%d %H:%M:%S%.6f").to_string()),
    )
}

impl Dialect for MySql {
    type Column = Column;
    type Value = Bound<Param>;
    type Param = Param;
    type Error = mysql_async::Error;

    const NEVER: &'static str = "FALSE";
    const EMPTY_SELECT: &'static str = "1";
    const MAX_PARAMS: usize = MAX_PARAMS;

    fn quote_ident(&self, ident: &str) -> String {
        quote_ident(ident)
    }

    /// Decimals are compared exactly (`DECIMAL(65,30)`), dates as `DATE` or `DATETIME(6)`;
    /// booleans match `tinyint(1)` and `bit(1)` as 1/0; a JSON column is never compared.
    fn convert(
        &self,
        field: &str,
        op: &str,
        column: &Column,
        value: &Value,
    ) -> Result<Option<Bound<Param>>, DataSourceError> {
        use ColumnKind as K;
        let kind = column.kind;
        let bound = match (kind, value) {
            (K::Json, _) => return Err(invalid_filter(field, op, "cannot compare a JSON column")),
            (_, Value::Null | Value::Array(_) | Value::Object(_)) => None,
            (K::Integer { .. } | K::Bit { .. } | K::Float, Value::Number(n)) => {
                Some(Bound::plain(number(n)))
            }
            (K::Integer { boolean: true } | K::Bit { boolean: true }, Value::Bool(b)) => {
                Some(Bound::plain(Param::Int(i64::from(*b))))
            }
            (K::Decimal, Value::Number(n)) => {
                Some(Bound::cast("DECIMAL(65,30)", bytes(n.to_string())))
            }
            (K::Decimal, Value::String(s)) => {
                if !is_decimal_text(s) {
                    return Err(invalid_filter(
                        field,
                        op,
                        format!("{s:?} is not a decimal number"),
                    ));
                }
                Some(Bound::cast("DECIMAL(65,30)", bytes(s.trim())))
            }
            (K::Text | K::Binary, Value::String(s)) => Some(Bound::plain(bytes(s.as_str()))),
            (K::Date | K::DateTime, Value::String(s)) => match (kind, parse_moment(s)) {
                (_, None) => {
                    return Err(invalid_filter(
                        field,
                        op,
                        format!("{s:?} is not a date or date-time"),
                    ));
                }
                (K::Date, Some(Moment::Date(d))) => {
                    Some(Bound::cast("DATE", bytes(d.format("%Y-%m-%d").to_string())))
                }
                (_, Some(Moment::Date(d))) => Some(date_time_param(d.and_time(Default::default()))),
                (_, Some(Moment::DateTime(t))) => Some(date_time_param(t)),
            },
            (K::Other, Value::String(s)) => Some(Bound::plain(bytes(s.as_str()))),
            (K::Other, Value::Number(n)) => Some(Bound::plain(number(n))),
            (K::Other, Value::Bool(b)) => Some(Bound::plain(Param::Int(i64::from(*b)))),
            _ => None,
        };
        Ok(bound)
    }

    fn operands(
        &self,
        params: &mut Vec<Param>,
        _column: &Column,
        values: Vec<Bound<Param>>,
    ) -> Vec<String> {
        bind_all(params, values, |_| "?".to_owned())
    }

    fn select(
        &self,
        params: &mut Vec<Param>,
        list: &str,
        from: &str,
        filter: Option<&str>,
        fetch: u64,
    ) -> String {
        let hint = match self.flavor {
            Flavor::MySql => format!(
                "/*+ MAX_EXECUTION_TIME({}) */ ",
                self.backstop.as_millis().max(1)
            ),
            Flavor::MariaDb => String::new(),
        };
        params.push(Param::UInt(fetch));
        let sql = format!(
            "{} LIMIT ?",
            select_from(&format!("{hint}{list}"), from, filter)
        );
        match self.flavor {
            Flavor::MariaDb => format!(
                "SET STATEMENT max_statement_time={:.3} FOR {sql}",
                self.backstop.as_secs_f64().max(0.001)
            ),
            Flavor::MySql => sql,
        }
    }

    /// A stopped statement is `Timeout`; no such table or column shows the schema stale.
    fn map_error(error: &mysql_async::Error) -> Mapped {
        match error {
            mysql_async::Error::Server(e) if INTERRUPTED.contains(&e.code) => {
                Mapped::error(DataSourceError::Timeout)
            }
            mysql_async::Error::Server(e) if STALE.contains(&e.code) => {
                Mapped::stale(format!("{} ({})", e.message, e.code))
            }
            mysql_async::Error::Server(e) => Mapped::error(DataSourceError::Unavailable(format!(
                "{} ({})",
                e.message, e.code
            ))),
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
        let col = |kind| Column { kind };
        Table {
            schema: "s".into(),
            name: "t".into(),
            columns: BTreeMap::from([
                ("id".to_owned(), col(ColumnKind::Integer { boolean: false })),
                ("ok".to_owned(), col(ColumnKind::Integer { boolean: true })),
                ("amount".to_owned(), col(ColumnKind::Decimal)),
                ("name".to_owned(), col(ColumnKind::Text)),
                ("day".to_owned(), col(ColumnKind::Date)),
                ("at".to_owned(), col(ColumnKind::DateTime)),
                ("meta".to_owned(), col(ColumnKind::Json)),
                ("we`ird".to_owned(), col(ColumnKind::Text)),
            ]),
        }
    }

    fn query(fields: &[&str], filters: Value) -> TableQuery {
        reporter_contract::fixtures::table_query("t", fields, filters, 10)
    }

    fn mysql(q: &TableQuery) -> Result<Statement, DataSourceError> {
        build(q, &table(), 11, Flavor::MySql, Duration::from_millis(2500))
    }

    fn bytes(s: &str) -> Param {
        Param::Bytes(s.as_bytes().to_vec())
    }

    #[test]
    fn projection_quotes_and_the_time_limit_follows_the_flavor() {
        let q = query(&["id", "we`ird"], json!({}));
        let s = mysql(&q).expect("statement");
        assert_eq!(
            s.sql,
            "SELECT /*+ MAX_EXECUTION_TIME(2500) */ `id`, `we``ird` FROM `s`.`t` LIMIT ?"
        );
        assert_eq!(s.params, [Param::UInt(11)]);
        let s = build(
            &q,
            &table(),
            11,
            Flavor::MariaDb,
            Duration::from_millis(2500),
        )
        .expect("statement");
        assert_eq!(
            s.sql,
            "SET STATEMENT max_statement_time=2.500 FOR SELECT `id`, `we``ird` FROM `s`.`t` LIMIT ?"
        );
        let s = mysql(&query(&[], json!({}))).expect("statement");
        assert!(s.sql.contains(" 1 FROM"), "{}", s.sql);
    }

    #[test]
    fn every_value_is_bound_and_typed() {
        let s = mysql(&query(
            &["id"],
            json!({
                "id": {"eq": [1, 2.5, "x", null], "gt": [0], "between": [1, 9]},
                "name": {"nin": ["'; DROP TABLE t; --"], "lt": [5]},
                "amount": {"gte": ["10.50"], "lt": [99]},
                "day": {"in": ["2024-01-31", "2024-02-01T10:00:00Z"]},
                "at": {"lte": ["2024-02-01T12:00:00+02:00"]},
                "ok": {"eq": [true]},
            }),
        ))
        .expect("statement");
        assert_eq!(
            s.sql,
            "SELECT /*+ MAX_EXECUTION_TIME(2500) */ `id` FROM `s`.`t` WHERE \
             `amount` >= CAST(? AS DECIMAL(65,30)) AND `amount` < CAST(? AS DECIMAL(65,30)) AND \
             `at` <= CAST(? AS DATETIME(6)) AND \
             (`day` IN (CAST(? AS DATE), CAST(? AS DATETIME(6)))) AND \
             (`id` IS NULL OR `id` IN (?, ?)) AND `id` > ? AND (`id` >= ? AND `id` <= ?) AND \
             (`name` IS NULL OR `name` NOT IN (?)) AND FALSE AND \
             (`ok` IN (?)) \
             LIMIT ?"
        );
        assert_eq!(
            s.params,
            [
                bytes("10.50"),
                bytes("99"),
                bytes("2024-02-01 10:00:00.000000"),
                bytes("2024-01-31"),
                bytes("2024-02-01 10:00:00.000000"),
                Param::Int(1),
                Param::Double(2.5),
                Param::Int(0),
                Param::Int(1),
                Param::Int(9),
                bytes("'; DROP TABLE t; --"),
                Param::Int(1),
                Param::UInt(11),
            ]
        );
    }

    #[test]
    fn mismatched_and_null_lists() {
        let s =
            mysql(&query(&["id"], json!({"name": {"eq": [1], "nin": [null]}}))).expect("statement");
        assert!(
            s.sql
                .ends_with("WHERE FALSE AND `name` IS NOT NULL LIMIT ?"),
            "{}",
            s.sql
        );
        let s = mysql(&query(&["id"], json!({"id": {"eq": [true]}}))).expect("statement");
        assert!(
            s.sql.contains("WHERE FALSE"),
            "booleans only match tinyint(1)"
        );
    }

    #[test]
    fn unknown_fields_and_invalid_conditions() {
        let unknown = |f: &str| DataSourceError::UnknownField {
            table: "t".into(),
            field: f.into(),
        };
        assert_eq!(
            mysql(&query(&["id", "x`y"], json!({}))),
            Err(unknown("x`y"))
        );
        assert_eq!(
            mysql(&query(&["id"], json!({"id; drop": {"eq": [1]}}))),
            Err(unknown("id; drop"))
        );
        for bad in [
            json!({"id": {"between": [1]}}),
            json!({"id": {"between": [1, 2, 3]}}),
            json!({"id": {"between": [1, "2"]}}),
            json!({"id": {"gt": [true]}}),
            json!({"id": {"lte": [null]}}),
            json!({"id": {"eq": [[1]]}}),
            json!({"id": {"nin": [{"a": 1}]}}),
            json!({"day": {"eq": ["2021-13-45"]}}),
            json!({"at": {"gt": ["yesterday"]}}),
            json!({"amount": {"eq": ["ten"]}}),
            json!({"amount": {"eq": ["1e99999"]}}),
            json!({"meta": {"eq": ["x"]}}),
        ] {
            let err = mysql(&query(&["id"], bad.clone()));
            assert!(
                matches!(err, Err(DataSourceError::InvalidFilter(_))),
                "{bad}: {err:?}"
            );
        }
        let many: Vec<i64> = (0..MAX_PARAMS as i64).collect();
        assert!(matches!(
            mysql(&query(&["id"], json!({"id": {"in": many}}))),
            Err(DataSourceError::InvalidFilter(m)) if m.contains("too many")
        ));
    }
}
