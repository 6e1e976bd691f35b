//! The filter builder: a query's conditions as SQL clauses and bound parameters, with the
//! semantics every data source shares (the file source's):
//!
//! - `eq` and `in` hold when the column equals any listed value (`null` listed matches NULL);
//!   `nin` when it equals none (a NULL column qualifies unless `null` is listed);
//! - `gt`, `gte`, `lt`, `lte` compare with the first listed value, which MUST be a number or
//!   a string; `between` takes exactly two numbers or two strings (`>= low AND <= high`);
//!   NULL is in no range;
//! - any non-scalar value, or anything else, is `InvalidFilter`;
//! - a value the [`Dialect`] finds unable to match its column never matches.
use crate::dialect::Dialect;
use reporter_ports::ports::DataSourceError;
use reporter_ports::report::FilterCondition;
use serde_json::Value;

/// `InvalidFilter("<field>: <op> <why>")`: how a condition is refused.
pub fn invalid_filter(field: &str, op: &str, why: impl std::fmt::Display) -> DataSourceError {
    DataSourceError::InvalidFilter(format!("{field}: {op} {why}"))
}

/// The clauses (joined with `AND`) and parameters of a statement's filters.
pub(crate) struct Filter<'d, D: Dialect> {
    dialect: &'d D,
    pub(crate) clauses: Vec<String>,
    pub(crate) params: Vec<D::Param>,
}

/// Order operators need a number or a string.
fn ordered<'v>(field: &str, op: &str, value: &'v Value) -> Result<&'v Value, DataSourceError> {
    match value {
        Value::Number(_) | Value::String(_) => Ok(value),
        _ => Err(invalid_filter(field, op, "needs a number or a string")),
    }
}

impl<'d, D: Dialect> Filter<'d, D> {
    pub(crate) fn new(dialect: &'d D) -> Self {
        Self {
            dialect,
            clauses: Vec::new(),
            params: Vec::new(),
        }
    }

    /// Adds the clauses of `cond` on `field` (a column of the table).
    pub(crate) fn condition(
        &mut self,
        field: &str,
        column: &D::Column,
        cond: &FilterCondition,
    ) -> Result<(), DataSourceError> {
        for (op, values) in cond.operators() {
            if values.iter().any(|v| v.is_array() || v.is_object()) {
                return Err(invalid_filter(field, op, "values must be scalars"));
            }
        }
        let col = self.dialect.quote_ident(field);
        for (op, values) in [("eq", &cond.eq), ("in", &cond.in_)] {
            if !values.is_empty() {
                let clause = self.any_of(field, op, &col, column, values)?;
                self.clauses.push(clause);
            }
        }
        if !cond.nin.is_empty()
            && let Some(clause) = self.none_of(field, &col, column, &cond.nin)?
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
                let clause = match self.dialect.convert(field, op, column, value)? {
                    Some(v) => {
                        let operand = self.operands(column, vec![v]).join("");
                        format!("{col} {sql_op} {operand}")
                    }
                    None => D::NEVER.to_owned(),
                };
                self.clauses.push(clause);
            }
        }
        match cond.between.as_slice() {
            [] => {}
            [low, high] => {
                let clause = self.between(field, &col, column, low, high)?;
                self.clauses.push(clause);
            }
            _ => return Err(invalid_filter(field, "between", "takes exactly two values")),
        }
        Ok(())
    }

    fn operands(&mut self, column: &D::Column, values: Vec<D::Value>) -> Vec<String> {
        self.dialect.operands(&mut self.params, column, values)
    }

    /// `>= low AND <= high`; both bounds of one JSON type.
    fn between(
        &mut self,
        field: &str,
        col: &str,
        column: &D::Column,
        low: &Value,
        high: &Value,
    ) -> Result<String, DataSourceError> {
        let (low, high) = (
            ordered(field, "between", low)?,
            ordered(field, "between", high)?,
        );
        if std::mem::discriminant(low) != std::mem::discriminant(high) {
            return Err(invalid_filter(
                field,
                "between",
                "bounds must have the same type",
            ));
        }
        let low = self.dialect.convert(field, "between", column, low)?;
        let high = self.dialect.convert(field, "between", column, high)?;
        Ok(match (low, high) {
            (Some(low), Some(high)) => match self.operands(column, vec![low, high]).as_slice() {
                [a, b] => format!("({col} >= {a} AND {col} <= {b})"),
                _ => D::NEVER.to_owned(),
            },
            _ => D::NEVER.to_owned(),
        })
    }

    /// The converted values that can match, and whether `null` is among the values.
    fn matching(
        &self,
        field: &str,
        op: &str,
        column: &D::Column,
        values: &[Value],
    ) -> Result<(Vec<D::Value>, bool), DataSourceError> {
        let mut matching = Vec::with_capacity(values.len());
        for value in values {
            if let Some(v) = self.dialect.convert(field, op, column, value)? {
                matching.push(v);
            }
        }
        Ok((matching, values.iter().any(Value::is_null)))
    }

    /// Equal to any value; `null` matches a NULL column.
    fn any_of(
        &mut self,
        field: &str,
        op: &str,
        col: &str,
        column: &D::Column,
        values: &[Value],
    ) -> Result<String, DataSourceError> {
        let (matching, has_null) = self.matching(field, op, column, values)?;
        let mut parts = Vec::new();
        if has_null {
            parts.push(format!("{col} IS NULL"));
        }
        if !matching.is_empty() {
            parts.push(
                self.dialect
                    .membership(&mut self.params, col, column, matching, false),
            );
        }
        Ok(if parts.is_empty() {
            D::NEVER.to_owned()
        } else {
            format!("({})", parts.join(" OR "))
        })
    }

    /// Equal to none of the values: a NULL column qualifies unless `null` is listed.
    fn none_of(
        &mut self,
        field: &str,
        col: &str,
        column: &D::Column,
        values: &[Value],
    ) -> Result<Option<String>, DataSourceError> {
        let (matching, has_null) = self.matching(field, "nin", column, values)?;
        let differs = (!matching.is_empty()).then(|| {
            self.dialect
                .membership(&mut self.params, col, column, matching, true)
        });
        Ok(match (differs, has_null) {
            (None, false) => None,
            (None, true) => Some(format!("{col} IS NOT NULL")),
            (Some(d), false) => Some(format!("({col} IS NULL OR {d})")),
            (Some(d), true) => Some(format!("({col} IS NOT NULL AND {d})")),
        })
    }
}
