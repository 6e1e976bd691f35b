//! [`Dialect`]: what one SQL server's driver and syntax bring to the shared statement builder.
use reporter_ports::ports::DataSourceError;
use serde_json::Value;

/// One SQL server's syntax and driver, as the shared code needs them.
///
/// The builder ([`crate::build`]) decides *what* a query means (which values can match, NULL
/// handling, the order of clauses and parameters); the dialect decides *how* it is written:
///
/// - identifiers MUST come out quoted so that any name, hostile ones included, is one
///   identifier ([`Dialect::quote_ident`], usually [`quote_with`]);
/// - every filter value MUST end up a bound parameter, never spliced into the SQL
///   ([`Dialect::convert`] → [`Dialect::operands`] / [`Dialect::membership`]);
/// - the statement MUST return at most `fetch` rows ([`Dialect::select`]);
/// - driver errors MUST map to the port's errors, flagging those that show the cached schema
///   stale ([`Dialect::map_error`]).
pub trait Dialect {
    /// What binding needs to know of a column (its kind, its SQL type).
    type Column;
    /// One filter value converted for a column, not yet bound.
    type Value;
    /// A bound parameter, as the driver takes it.
    type Param;
    /// The driver's error.
    type Error;

    /// SQL for a condition that never holds (a value that can never match its column).
    const NEVER: &'static str;
    /// The select list of a query that projects no field (some servers refuse an empty one).
    const EMPTY_SELECT: &'static str;
    /// A statement MUST carry fewer filter parameters than this (the server's own cap, with
    /// room for the row limit); more is `InvalidFilter`.
    const MAX_PARAMS: usize = usize::MAX;

    /// `ident` as one quoted identifier, whatever it holds.
    fn quote_ident(&self, ident: &str) -> String;

    /// The projection of `field` (quoted; a dialect may cast it for reading).
    fn project(&self, field: &str, _column: &Self::Column) -> String {
        self.quote_ident(field)
    }

    /// `value` (a scalar or null) converted for a comparison with `column`: `Ok(None)` when
    /// it can never match (null, or a JSON type the column's type never equals: mixed types
    /// never match), `Err(InvalidFilter)` when it could but the column's type cannot take
    /// this value. `field` and `op` name the condition in error messages.
    fn convert(
        &self,
        field: &str,
        op: &str,
        column: &Self::Column,
        value: &Value,
    ) -> Result<Option<Self::Value>, DataSourceError>;

    /// Binds the values of one comparison (one for `gt`…`lte`, two for `between`), appending
    /// to `params`; returns the SQL operand standing for each value, in order.
    fn operands(
        &self,
        params: &mut Vec<Self::Param>,
        column: &Self::Column,
        values: Vec<Self::Value>,
    ) -> Vec<String>;

    /// `col` equal to one of `values` (not equal to any when `negated`); `values` is not
    /// empty. By default `col IN (…)` / `col NOT IN (…)` over [`Dialect::operands`].
    fn membership(
        &self,
        params: &mut Vec<Self::Param>,
        col: &str,
        column: &Self::Column,
        values: Vec<Self::Value>,
        negated: bool,
    ) -> String {
        let operands = self.operands(params, column, values).join(", ");
        let op = if negated { "NOT IN" } else { "IN" };
        format!("{col} {op} ({operands})")
    }

    /// The whole statement: `list` from `from` (both already quoted), filtered by `filter`
    /// when there is one, returning at most `fetch` rows. The row limit is bound as the last
    /// parameter.
    fn select(
        &self,
        params: &mut Vec<Self::Param>,
        list: &str,
        from: &str,
        filter: Option<&str>,
        fetch: u64,
    ) -> String;

    /// A driver error as the port's error, flagged when it shows the cached schema stale
    /// (a table or column dropped since discovery).
    fn map_error(error: &Self::Error) -> Mapped;
}

/// A driver error mapped for the port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapped {
    pub error: DataSourceError,
    /// The error shows the cached schema stale: drop it ([`crate::SchemaCache::invalidate`]).
    pub stale_schema: bool,
}

impl Mapped {
    /// An error that says nothing about the schema.
    pub fn error(error: DataSourceError) -> Self {
        Self {
            error,
            stale_schema: false,
        }
    }

    /// An error that shows the cached schema stale: `Unavailable`, saying so.
    pub fn stale(detail: impl std::fmt::Display) -> Self {
        Self {
            error: DataSourceError::Unavailable(format!(
                "schema changed since discovery: {detail}"
            )),
            stale_schema: true,
        }
    }

    /// The error and the flag.
    pub fn pair(self) -> (DataSourceError, bool) {
        (self.error, self.stale_schema)
    }
}

/// `ident` between `open` and `close`, every `close` inside doubled: `"a""b"`, `` `a``b` ``,
/// `[a]]b]`. Safe for any identifier.
pub fn quote_with(ident: &str, open: char, close: char) -> String {
    let mut out = String::with_capacity(ident.len() + 2);
    out.push(open);
    for c in ident.chars() {
        out.push(c);
        if c == close {
            out.push(close);
        }
    }
    out.push(close);
    out
}

/// A filter value ready to bind: the parameter and the SQL type its placeholder is cast to
/// (`CAST(<placeholder> AS <type>)`), if any.
#[derive(Debug, Clone, PartialEq)]
pub struct Bound<P> {
    pub param: P,
    pub cast: Option<&'static str>,
}

impl<P> Bound<P> {
    /// A parameter compared as it is.
    pub fn plain(param: P) -> Self {
        Self { param, cast: None }
    }

    /// A parameter cast to `to` on the server.
    pub fn cast(to: &'static str, param: P) -> Self {
        Self {
            param,
            cast: Some(to),
        }
    }
}

/// Appends each value's parameter to `params` and returns its operand: `placeholder(n)` for
/// the `n`-th parameter (1-based), inside `CAST(… AS type)` when the value asks for one. The
/// usual [`Dialect::operands`] of a server with positional placeholders.
pub fn bind_all<P>(
    params: &mut Vec<P>,
    values: Vec<Bound<P>>,
    placeholder: impl Fn(usize) -> String,
) -> Vec<String> {
    values
        .into_iter()
        .map(|bound| {
            params.push(bound.param);
            let ph = placeholder(params.len());
            match bound.cast {
                Some(to) => format!("CAST({ph} AS {to})"),
                None => ph,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_doubles_the_closing_character() {
        assert_eq!(quote_with("a", '"', '"'), r#""a""#);
        assert_eq!(quote_with(r#"we"ird"#, '"', '"'), r#""we""ird""#);
        assert_eq!(quote_with("we`ird", '`', '`'), "`we``ird`");
        assert_eq!(quote_with("a]b[c", '[', ']'), "[a]]b[c]");
        assert_eq!(quote_with("people; drop", '"', '"'), r#""people; drop""#);
    }

    #[test]
    fn bound_values_take_numbered_or_positional_placeholders() {
        let mut params = vec![0];
        let ops = bind_all(
            &mut params,
            vec![Bound::plain(1), Bound::cast("DATE", 2)],
            |n| format!("@P{n}"),
        );
        assert_eq!(ops, ["@P2", "CAST(@P3 AS DATE)"]);
        assert_eq!(params, [0, 1, 2]);
        let ops = bind_all(&mut params, vec![Bound::cast("DECIMAL(65,30)", 3)], |_| {
            "?".to_owned()
        });
        assert_eq!(ops, ["CAST(? AS DECIMAL(65,30))"]);
    }
}
