//! Discovered tables and columns, and how their SQL Server types are filtered.
use reporter_sql_support::{Tables, quote_with};

/// The schema whose tables keep their bare name.
pub(crate) const DEFAULT_SCHEMA: &str = "dbo";

/// Which JSON filter values can match a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ColumnKind {
    /// `tinyint`, `smallint`, `int`, `bigint`: numbers.
    Integer,
    /// `bit`: booleans (and 0/1).
    Bit,
    /// `real`, `float`: numbers.
    Float,
    /// `decimal`, `numeric`, `money`, `smallmoney`: numbers or decimal strings, exactly.
    Decimal,
    /// `char`, `varchar`, `nchar`, `nvarchar`, `text`, `ntext`: strings.
    Text,
    /// `date`: date strings.
    Date,
    /// `datetime`, `datetime2`, `smalldatetime`: date or date-time strings (UTC).
    DateTime,
    /// `datetimeoffset`: date or date-time strings (offset-less ones are UTC).
    DateTimeOffset,
    /// Anything else (`uniqueidentifier`, `time`, `xml`, binary, …): strings, compared by
    /// SQL Server's conversion rules.
    Other,
}

impl ColumnKind {
    /// Classifies `INFORMATION_SCHEMA.COLUMNS.DATA_TYPE`.
    pub(crate) fn classify(data_type: &str) -> Self {
        match data_type.to_ascii_lowercase().as_str() {
            "tinyint" | "smallint" | "int" | "bigint" => Self::Integer,
            "bit" => Self::Bit,
            "real" | "float" => Self::Float,
            "decimal" | "numeric" | "money" | "smallmoney" => Self::Decimal,
            "char" | "varchar" | "nchar" | "nvarchar" | "text" | "ntext" => Self::Text,
            "date" => Self::Date,
            "datetime" | "datetime2" | "smalldatetime" => Self::DateTime,
            "datetimeoffset" => Self::DateTimeOffset,
            _ => Self::Other,
        }
    }
}

/// One discovered table (or view).
pub(crate) type Table = reporter_sql_support::Table<ColumnKind>;

/// Everything discovered, by template-facing table name (`dbo` the default schema).
pub(crate) type Discovered = Tables<ColumnKind>;

/// `[ident]` with embedded `]` doubled: safe for any identifier.
pub(crate) fn quote_ident(ident: &str) -> String {
    quote_with(ident, '[', ']')
}

/// Groups `(schema, table, column, data_type)` rows; a `dbo` table wins a name clash with
/// another schema's `schema__table`.
pub(crate) fn discovered(rows: impl IntoIterator<Item = [String; 4]>) -> Discovered {
    Tables::from_columns(
        DEFAULT_SCHEMA,
        rows.into_iter().map(|[schema, table, column, data_type]| {
            (schema, table, column, ColumnKind::classify(&data_type))
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn row(s: &str, t: &str, c: &str, ty: &str) -> [String; 4] {
        [s.into(), t.into(), c.into(), ty.into()]
    }

    #[test]
    fn names_kinds_and_quoting() {
        let d = discovered([
            row("audit", "events", "at", "datetimeoffset"),
            row("dbo", "people", "id", "int"),
            row("dbo", "people", "amount", "money"),
            row("dbo", "audit__events", "x", "bit"),
        ]);
        let names: Vec<String> = d
            .source_schema()
            .tables
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(names, ["audit__events", "people"]);
        assert_eq!(d.tables["audit__events"].schema, "dbo");
        assert_eq!(d.tables["people"].columns["amount"], ColumnKind::Decimal);
        assert_eq!(quote_ident("a]b"), "[a]]b]");
        assert_eq!(ColumnKind::classify("UNIQUEIDENTIFIER"), ColumnKind::Other);
    }

    /// `ds:dbo.people` (rewritten `dbo__people`) and `ds:audit.events` (`audit__events`)
    /// name the tables `[dbo].[people]` and `[audit].[events]`; the query's SQL names them
    /// schema-qualified.
    #[test]
    fn dbo_and_other_schemas_may_be_named() {
        let d = discovered([
            row("audit", "events", "at", "datetimeoffset"),
            row("dbo", "people", "id", "int"),
        ]);
        let located = |name: &str| d.table(name).map(|t| (t.schema.as_str(), t.name.as_str()));
        assert_eq!(located("people"), Some(("dbo", "people")));
        assert_eq!(located("dbo__people"), Some(("dbo", "people")));
        assert_eq!(located("audit__events"), Some(("audit", "events")));
        for unknown in [
            "dbo__events",
            "dbo.people",
            "audit__people",
            "events",
            "dbo__",
        ] {
            assert_eq!(located(unknown), None, "{unknown}");
        }
        for (name, sql) in [
            ("dbo__people", "SELECT TOP (@P1) [id] FROM [dbo].[people]"),
            (
                "audit__events",
                "SELECT TOP (@P1) [at] FROM [audit].[events]",
            ),
        ] {
            let table = d.table(name).expect("listed");
            let field = table.columns.keys().next().expect("a column").clone();
            let query = reporter_ports::ports::TableQuery {
                table: name.to_owned(),
                fields: vec![field],
                filters: BTreeMap::new(),
                max_rows: 10,
            };
            let statement = crate::sql::build(&query, table, 11).expect("statement");
            assert_eq!(statement.sql, sql);
        }
        let s = d.source_schema();
        assert_eq!(s.default_schema.as_deref(), Some("dbo"));
        assert_eq!(
            s.table("dbo.people").map(|t| t.name.as_str()),
            Some("people")
        );
        assert_eq!(
            s.table("audit.events").map(|t| t.name.as_str()),
            Some("audit__events")
        );
    }
}
