//! Builds the one parameterised `SELECT` a [`TableQuery`] becomes.
//!
//! Identifiers come only from the discovered schema and are always quoted with backticks;
//! every filter value is a bound parameter (`?`), typed for the column it is compared with
//! and checked here first, so that MySQL's lenient conversions (`'abc' = 0` is true) never
//! decide a match. See the crate docs, "Filters", for the semantics.
use crate::schema::{Column, ColumnKind, Flavor, Table, quote_ident};
use chrono::{DateTime, NaiveDate, NaiveDateTime};
use mysql_async::Value as Param;
use reporter_ports::ports::{DataSourceError, TableQuery};
use reporter_ports::report::FilterCondition;
use serde_json::Value;
use std::fmt::Write as _;
use std::time::Duration;

/// MySQL refuses a statement with more placeholders than 65 535.
pub(crate) const MAX_PARAMS: usize = 65_000;

/// A statement ready to run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Statement {
    pub(crate) sql: String,
    pub(crate) params: Vec<Param>,
    /// Requested field names, in projection order.
    pub(crate) fields: Vec<String>,
}

fn invalid(field: &str, op: &str, why: impl std::fmt::Display) -> DataSourceError {
    DataSourceError::InvalidFilter(format!("{field}: {op} {why}"))
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
        column(field)?;
        projection.push(quote_ident(field));
    }
    let mut builder = Builder::default();
    for (field, condition) in &query.filters {
        let col = column(field)?;
        builder.condition(field, *col, condition)?;
    }
    if builder.params.len() >= MAX_PARAMS {
        return Err(DataSourceError::InvalidFilter(format!(
            "too many filter values (at most {MAX_PARAMS})"
        )));
    }
    // An empty projection still needs a select list: one constant, dropped when reading.
    let select_list = if projection.is_empty() {
        "1".to_owned()
    } else {
        projection.join(", ")
    };
    let hint = match flavor {
        Flavor::MySql => format!(
            "/*+ MAX_EXECUTION_TIME({}) */ ",
            backstop.as_millis().max(1)
        ),
        Flavor::MariaDb => String::new(),
    };
    let mut sql = format!(
        "SELECT {hint}{select_list} FROM {}.{}",
        quote_ident(&table.schema),
        quote_ident(&table.name)
    );
    if !builder.clauses.is_empty() {
        let _ = write!(sql, " WHERE {}", builder.clauses.join(" AND "));
    }
    builder.params.push(Param::UInt(fetch));
    sql.push_str(" LIMIT ?");
    if flavor == Flavor::MariaDb {
        sql = format!(
            "SET STATEMENT max_statement_time={:.3} FOR {sql}",
            backstop.as_secs_f64().max(0.001)
        );
    }
    Ok(Statement {
        sql,
        params: builder.params,
        fields: query.fields.clone(),
    })
}

#[derive(Debug, Default)]
struct Builder {
    clauses: Vec<String>,
    params: Vec<Param>,
}

/// A filter value ready to bind: the SQL that stands for it and the parameter.
#[derive(Debug, Clone, PartialEq)]
struct Bound {
    placeholder: &'static str,
    param: Param,
}

impl Bound {
    fn plain(param: Param) -> Self {
        Self {
            placeholder: "?",
            param,
        }
    }
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

/// `[+-]digits[.digits][e[+-]digits]`: what MySQL reads exactly as a DECIMAL.
fn is_decimal_text(s: &str) -> bool {
    let s = s.trim();
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (mantissa, exponent) = match s.split_once(['e', 'E']) {
        Some((m, e)) => (m, Some(e)),
        None => (s, None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |d: &str| d.chars().all(|c| c.is_ascii_digit());
    let mantissa_ok = (!int.is_empty() || !frac.is_empty()) && digits(int) && digits(frac);
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && e.len() <= 4 && digits(e)
    });
    mantissa_ok && exponent_ok
}

/// A date or date-time filter string: `YYYY-MM-DD`, `YYYY-MM-DD[T ]HH:MM[:SS[.f]]`, RFC 3339
/// with an offset (converted to UTC), or the printed form `YYYY-MM-DD HH:MM:SS[.f] +0000 UTC`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Moment {
    Date(NaiveDate),
    DateTime(NaiveDateTime),
}

pub(crate) fn parse_moment(s: &str) -> Option<Moment> {
    let s = s.trim();
    if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return Some(Moment::Date(d));
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(Moment::DateTime(t.naive_utc()));
    }
    let printed = s.strip_suffix(" UTC").unwrap_or(s);
    if let Ok(t) = DateTime::parse_from_str(printed, "%Y-%m-%d %H:%M:%S%.f %z") {
        return Some(Moment::DateTime(t.naive_utc()));
    }
    [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M",
    ]
    .iter()
    .find_map(|f| NaiveDateTime::parse_from_str(s, f).ok())
    .map(Moment::DateTime)
}

fn date_time_param(t: NaiveDateTime) -> Bound {
    Bound {
        placeholder: "CAST(? AS DATETIME(6))",
        param: Param::Bytes(t.format("%Y-%m-%d %H:%M:%S%.6f").to_string().into_bytes()),
    }
}

/// The bound form of `value` for a column of `kind`: `Ok(None)` when the JSON type can never
/// match the column (mixed types never match), `Err` when it could but the column's type
/// cannot take this value (a bad date or decimal).
fn bind(
    field: &str,
    op: &str,
    kind: ColumnKind,
    value: &Value,
) -> Result<Option<Bound>, DataSourceError> {
    use ColumnKind as K;
    let bound = match (kind, value) {
        (K::Json, _) => return Err(invalid(field, op, "cannot compare a JSON column")),
        (_, Value::Null | Value::Array(_) | Value::Object(_)) => None,
        (K::Integer { .. } | K::Bit { .. } | K::Float, Value::Number(n)) => {
            Some(Bound::plain(number(n)))
        }
        (K::Integer { boolean: true } | K::Bit { boolean: true }, Value::Bool(b)) => {
            Some(Bound::plain(Param::Int(i64::from(*b))))
        }
        (K::Decimal, Value::Number(n)) => Some(Bound {
            placeholder: "CAST(? AS DECIMAL(65,30))",
            param: Param::Bytes(n.to_string().into_bytes()),
        }),
        (K::Decimal, Value::String(s)) => {
            if !is_decimal_text(s) {
                return Err(invalid(field, op, format!("{s:?} is not a decimal number")));
            }
            Some(Bound {
                placeholder: "CAST(? AS DECIMAL(65,30))",
                param: Param::Bytes(s.trim().as_bytes().to_vec()),
            })
        }
        (K::Text | K::Binary, Value::String(s)) => {
            Some(Bound::plain(Param::Bytes(s.as_bytes().to_vec())))
        }
        (K::Date | K::DateTime, Value::String(s)) => match (kind, parse_moment(s)) {
            (_, None) => {
                return Err(invalid(
                    field,
                    op,
                    format!("{s:?} is not a date or date-time"),
                ));
            }
            (K::Date, Some(Moment::Date(d))) => Some(Bound {
                placeholder: "CAST(? AS DATE)",
                param: Param::Bytes(d.format("%Y-%m-%d").to_string().into_bytes()),
            }),
            (_, Some(Moment::Date(d))) => Some(date_time_param(d.and_time(Default::default()))),
            (_, Some(Moment::DateTime(t))) => Some(date_time_param(t)),
        },
        (K::Other, Value::String(s)) => Some(Bound::plain(Param::Bytes(s.as_bytes().to_vec()))),
        (K::Other, Value::Number(n)) => Some(Bound::plain(number(n))),
        (K::Other, Value::Bool(b)) => Some(Bound::plain(Param::Int(i64::from(*b)))),
        _ => None,
    };
    Ok(bound)
}

/// Order operators need a number or a string.
fn ordered<'v>(field: &str, op: &str, value: &'v Value) -> Result<&'v Value, DataSourceError> {
    match value {
        Value::Number(_) | Value::String(_) => Ok(value),
        _ => Err(invalid(field, op, "needs a number or a string")),
    }
}

impl Builder {
    fn push(&mut self, bound: Bound) -> &'static str {
        self.params.push(bound.param);
        bound.placeholder
    }

    fn condition(
        &mut self,
        field: &str,
        column: Column,
        cond: &FilterCondition,
    ) -> Result<(), DataSourceError> {
        for (op, values) in cond.operators() {
            if values.iter().any(|v| v.is_array() || v.is_object()) {
                return Err(invalid(field, op, "values must be scalars"));
            }
        }
        let col = quote_ident(field);
        let kind = column.kind;
        if !cond.eq.is_empty() {
            let clause = self.any_of(field, "eq", &col, kind, &cond.eq)?;
            self.clauses.push(clause);
        }
        if !cond.in_.is_empty() {
            let clause = self.any_of(field, "in", &col, kind, &cond.in_)?;
            self.clauses.push(clause);
        }
        if !cond.nin.is_empty()
            && let Some(clause) = self.none_of(field, &col, kind, &cond.nin)?
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
                let value = ordered(field, op, first)?;
                let clause = match bind(field, op, kind, value)? {
                    Some(b) => format!("{col} {sql_op} {}", self.push(b)),
                    None => "FALSE".to_owned(),
                };
                self.clauses.push(clause);
            }
        }
        match cond.between.as_slice() {
            [] => {}
            [low, high] => {
                let (low, high) = (
                    ordered(field, "between", low)?,
                    ordered(field, "between", high)?,
                );
                if std::mem::discriminant(low) != std::mem::discriminant(high) {
                    return Err(invalid(field, "between", "bounds must have the same type"));
                }
                let clause = match (
                    bind(field, "between", kind, low)?,
                    bind(field, "between", kind, high)?,
                ) {
                    (Some(a), Some(b)) => {
                        let a = self.push(a);
                        let b = self.push(b);
                        format!("({col} >= {a} AND {col} <= {b})")
                    }
                    _ => "FALSE".to_owned(),
                };
                self.clauses.push(clause);
            }
            _ => return Err(invalid(field, "between", "takes exactly two values")),
        }
        Ok(())
    }

    /// The placeholders of the values that can match, and whether `null` is among them.
    fn placeholders(
        &mut self,
        field: &str,
        op: &str,
        kind: ColumnKind,
        values: &[Value],
    ) -> Result<(Vec<&'static str>, bool), DataSourceError> {
        let mut placeholders = Vec::new();
        for value in values {
            if let Some(b) = bind(field, op, kind, value)? {
                placeholders.push(self.push(b));
            }
        }
        Ok((placeholders, values.iter().any(Value::is_null)))
    }

    /// Equal to any value; `null` matches a NULL column.
    fn any_of(
        &mut self,
        field: &str,
        op: &str,
        col: &str,
        kind: ColumnKind,
        values: &[Value],
    ) -> Result<String, DataSourceError> {
        let (placeholders, has_null) = self.placeholders(field, op, kind, values)?;
        let mut parts = Vec::new();
        if has_null {
            parts.push(format!("{col} IS NULL"));
        }
        if !placeholders.is_empty() {
            parts.push(format!("{col} IN ({})", placeholders.join(", ")));
        }
        Ok(if parts.is_empty() {
            "FALSE".to_owned()
        } else {
            format!("({})", parts.join(" OR "))
        })
    }

    /// Equal to none of the values: a NULL column qualifies unless `null` is listed.
    fn none_of(
        &mut self,
        field: &str,
        col: &str,
        kind: ColumnKind,
        values: &[Value],
    ) -> Result<Option<String>, DataSourceError> {
        let (placeholders, has_null) = self.placeholders(field, "nin", kind, values)?;
        let differs = (!placeholders.is_empty())
            .then(|| format!("{col} NOT IN ({})", placeholders.join(", ")));
        Ok(match (differs, has_null) {
            (None, false) => None,
            (None, true) => Some(format!("{col} IS NOT NULL")),
            (Some(d), false) => Some(format!("({col} IS NULL OR {d})")),
            (Some(d), true) => Some(format!("({col} IS NOT NULL AND {d})")),
        })
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
        TableQuery {
            table: "t".into(),
            fields: fields.iter().map(|f| (*f).to_owned()).collect(),
            filters: serde_json::from_value(filters).expect("filters"),
            max_rows: 10,
        }
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

    #[test]
    fn moments_and_decimals() {
        let dt = |s: &str| match parse_moment(s) {
            Some(Moment::DateTime(t)) => t.format("%Y-%m-%d %H:%M:%S%.f").to_string(),
            other => panic!("{s}: {other:?}"),
        };
        assert_eq!(dt("2025-06-01 10:00:00 +0000 UTC"), "2025-06-01 10:00:00");
        assert_eq!(dt("2025-06-01T12:00:00+02:00"), "2025-06-01 10:00:00");
        assert_eq!(dt("2025-06-01 10:00:00.5"), "2025-06-01 10:00:00.500");
        assert_eq!(dt("2025-06-01T10:00"), "2025-06-01 10:00:00");
        assert!(matches!(parse_moment("2025-06-01"), Some(Moment::Date(_))));
        assert_eq!(parse_moment("2025-02-30"), None);
        for ok in ["1", "-1.50", "+.5", "3.", "1e5", "2.5E-3"] {
            assert!(is_decimal_text(ok), "{ok}");
        }
        for bad in ["", ".", "1.2.3", "1e", "0x10", "1,5", "ten", "1e99999"] {
            assert!(!is_decimal_text(bad), "{bad}");
        }
    }
}
