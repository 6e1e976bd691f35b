//! Builds the one parameterised `SELECT TOP` a [`TableQuery`] becomes.
//!
//! Identifiers come only from the discovered schema and are always bracket-quoted; every
//! filter value is a bound parameter (`@Pn`), typed for the column it is compared with and
//! checked here first, so that SQL Server's implicit conversions never decide a match. See
//! the crate docs, "Filters", for the semantics.
use crate::schema::{ColumnKind, Table, quote_ident};
use chrono::{DateTime, NaiveDate, NaiveDateTime};
use tiberius::ColumnData;

/// A bound parameter.
pub(crate) type Param = ColumnData<'static>;
use reporter_ports::ports::{DataSourceError, TableQuery};
use reporter_ports::report::FilterCondition;
use serde_json::Value;
use std::fmt::Write as _;

/// SQL Server refuses a request with more than 2 100 parameters.
pub(crate) const MAX_PARAMS: usize = 2_000;

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
    let column = |field: &str| {
        table
            .columns
            .get(field)
            .copied()
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
        let kind = column(field)?;
        builder.condition(field, kind, condition)?;
    }
    if builder.params.len() >= MAX_PARAMS {
        return Err(DataSourceError::InvalidFilter(format!(
            "too many filter values (at most {MAX_PARAMS})"
        )));
    }
    let select_list = if projection.is_empty() {
        "1 AS [_]".to_owned()
    } else {
        projection.join(", ")
    };
    builder.params.push(ColumnData::I64(Some(fetch)));
    let mut sql = format!(
        "SELECT TOP (@P{}) {select_list} FROM {}.{}",
        builder.params.len(),
        quote_ident(&table.schema),
        quote_ident(&table.name)
    );
    if !builder.clauses.is_empty() {
        let _ = write!(sql, " WHERE {}", builder.clauses.join(" AND "));
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

/// A filter value ready to bind: the SQL that stands for it (`@P` is numbered when bound)
/// and the parameter.
#[derive(Debug, Clone, PartialEq)]
struct Bound {
    cast: Option<&'static str>,
    param: Param,
}

impl Bound {
    fn plain(param: Param) -> Self {
        Self { cast: None, param }
    }

    fn cast(to: &'static str, text: String) -> Self {
        Self {
            cast: Some(to),
            param: ColumnData::String(Some(text.into())),
        }
    }
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

/// `[+-]digits[.digits][e[+-]digits]`: what SQL Server reads exactly as a DECIMAL.
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

fn moment_param(kind: ColumnKind, moment: Moment) -> Bound {
    let t = match (kind, moment) {
        (ColumnKind::Date, Moment::Date(d)) => {
            return Bound::cast("DATE", d.format("%Y-%m-%d").to_string());
        }
        (_, Moment::Date(d)) => d.and_time(Default::default()),
        (_, Moment::DateTime(t)) => t,
    };
    let iso = t.format("%Y-%m-%dT%H:%M:%S%.6f").to_string();
    match kind {
        ColumnKind::DateTimeOffset => Bound::cast("DATETIMEOFFSET(7)", format!("{iso}+00:00")),
        _ => Bound::cast("DATETIME2(7)", iso),
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
        (_, Value::Null | Value::Array(_) | Value::Object(_)) => None,
        (K::Integer | K::Float | K::Other, Value::Number(n)) => Some(Bound::plain(number(n))),
        (K::Bit | K::Other, Value::Bool(b)) => Some(Bound::plain(ColumnData::Bit(Some(*b)))),
        (K::Bit, Value::Number(n)) if n.as_i64().is_some_and(|i| i == 0 || i == 1) => {
            Some(Bound::plain(ColumnData::Bit(Some(n.as_i64() == Some(1)))))
        }
        (K::Decimal, Value::Number(n)) => Some(Bound::cast("DECIMAL(38,18)", n.to_string())),
        (K::Decimal, Value::String(s)) => {
            if !is_decimal_text(s) {
                return Err(invalid(field, op, format!("{s:?} is not a decimal number")));
            }
            Some(Bound::cast("DECIMAL(38,18)", s.trim().to_owned()))
        }
        (K::Text | K::Other, Value::String(s)) => Some(Bound::plain(text(s))),
        (K::Date | K::DateTime | K::DateTimeOffset, Value::String(s)) => match parse_moment(s) {
            Some(moment) => Some(moment_param(kind, moment)),
            None => {
                return Err(invalid(
                    field,
                    op,
                    format!("{s:?} is not a date or date-time"),
                ));
            }
        },
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
    fn push(&mut self, bound: Bound) -> String {
        self.params.push(bound.param);
        let n = self.params.len();
        match bound.cast {
            Some(to) => format!("CAST(@P{n} AS {to})"),
            None => format!("@P{n}"),
        }
    }

    fn condition(
        &mut self,
        field: &str,
        kind: ColumnKind,
        cond: &FilterCondition,
    ) -> Result<(), DataSourceError> {
        for (op, values) in cond.operators() {
            if values.iter().any(|v| v.is_array() || v.is_object()) {
                return Err(invalid(field, op, "values must be scalars"));
            }
        }
        let col = quote_ident(field);
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
                    None => "1 = 0".to_owned(),
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
                    _ => "1 = 0".to_owned(),
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
    ) -> Result<(Vec<String>, bool), DataSourceError> {
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
            "1 = 0".to_owned()
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
        TableQuery {
            table: "t".into(),
            fields: fields.iter().map(|f| (*f).to_owned()).collect(),
            filters: serde_json::from_value(filters).expect("filters"),
            max_rows: 10,
        }
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
