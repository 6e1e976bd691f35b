//! Discovered tables and columns, and how their PostgreSQL types are handled.
use reporter_sql_support::{Tables, quote_with};

/// The schema whose tables keep their bare name.
pub(crate) const DEFAULT_SCHEMA: &str = "public";

/// How a column's values are read and which JSON filter values can match them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ColumnKind {
    /// `smallint`, `integer`, `bigint`: JSON numbers.
    Integer,
    /// `real`, `double precision`: JSON numbers.
    Float,
    /// `numeric`: read as exact text; filtered by JSON numbers or decimal strings.
    Numeric,
    /// `boolean`.
    Bool,
    /// `text`, `character varying`, `character`, `name`.
    Text,
    /// `date`: read as `YYYY-MM-DD`; filtered by strings.
    Date,
    /// `timestamp without time zone`: read as `YYYY-MM-DDTHH:MM:SS[.f]`; filtered by strings.
    Timestamp,
    /// `timestamp with time zone`: read as RFC 3339 in UTC; filtered by strings.
    TimestampTz,
    /// `json`, `jsonb`: read as text and decoded into a nested JSON value.
    Json,
    /// Anything else (uuid, time, interval, enums, arrays, ...): read as PostgreSQL's
    /// text form; filtered by any scalar, cast to the column type by the server.
    Other,
}

impl ColumnKind {
    /// Classifies `information_schema.columns.data_type`.
    pub(crate) fn from_data_type(data_type: &str) -> Self {
        match data_type {
            "smallint" | "integer" | "bigint" => Self::Integer,
            "real" | "double precision" => Self::Float,
            "numeric" => Self::Numeric,
            "boolean" => Self::Bool,
            "text" | "character varying" | "character" | "name" => Self::Text,
            "date" => Self::Date,
            "timestamp without time zone" => Self::Timestamp,
            "timestamp with time zone" => Self::TimestampTz,
            "json" | "jsonb" => Self::Json,
            _ => Self::Other,
        }
    }

    /// True when the projection must cast the column to `text` (no exact native decoding).
    pub(crate) fn read_as_text(self) -> bool {
        matches!(self, Self::Numeric | Self::Json | Self::Other)
    }
}

/// One discovered column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Column {
    pub(crate) kind: ColumnKind,
    /// The column's type as a quoted SQL type name (`"pg_catalog"."int4"`), for casts.
    pub(crate) sql_type: String,
}

/// One discovered table (or view).
pub(crate) type Table = reporter_sql_support::Table<Column>;

/// Everything discovered, by template-facing table name (`public` the default schema).
pub(crate) type Discovered = Tables<Column>;

/// One row of the discovery query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ColumnRow {
    pub(crate) table_schema: String,
    pub(crate) table_name: String,
    pub(crate) column_name: String,
    pub(crate) data_type: String,
    pub(crate) udt_schema: String,
    pub(crate) udt_name: String,
}

/// `"ident"` with embedded double quotes doubled: safe for any identifier.
pub(crate) fn quote_ident(ident: &str) -> String {
    quote_with(ident, '"', '"')
}

/// Groups discovery rows into tables. When a `public` table's name equals another schema's
/// `schema__table` name, the `public` table wins and the other is skipped with a warning.
pub(crate) fn discovered(rows: impl IntoIterator<Item = ColumnRow>) -> Discovered {
    Tables::from_columns(
        DEFAULT_SCHEMA,
        rows.into_iter().map(|row| {
            let column = Column {
                kind: ColumnKind::from_data_type(&row.data_type),
                sql_type: format!(
                    "{}.{}",
                    quote_ident(&row.udt_schema),
                    quote_ident(&row.udt_name)
                ),
            };
            (row.table_schema, row.table_name, row.column_name, column)
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(schema: &str, table: &str, column: &str, data_type: &str, udt: &str) -> ColumnRow {
        ColumnRow {
            table_schema: schema.into(),
            table_name: table.into(),
            column_name: column.into(),
            data_type: data_type.into(),
            udt_schema: "pg_catalog".into(),
            udt_name: udt.into(),
        }
    }

    #[test]
    fn names_types_and_collisions() {
        let d = discovered([
            row("other", "ledger", "amount", "numeric", "numeric"),
            row("public", "people", "name", "text", "text"),
            row("public", "people", "id", "integer", "int4"),
            row("x", "y", "z", "USER-DEFINED", "citext"),
            row("public", "other__ledger", "id", "bigint", "int8"),
        ]);
        let s = d.source_schema();
        let names: Vec<&str> = s.tables.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["other__ledger", "people", "x__y"]);
        assert_eq!(
            s.table("people").map(|t| t.fields.clone()),
            Some(vec!["id".into(), "name".into()])
        );
        let ledger = &d.tables["other__ledger"];
        assert_eq!(
            ledger.schema, "public",
            "the public table wins a name collision"
        );
        assert_eq!(d.tables["x__y"].columns["z"].kind, ColumnKind::Other);
        assert_eq!(
            d.tables["people"].columns["id"].sql_type,
            r#""pg_catalog"."int4""#
        );
    }

    #[test]
    fn the_default_schema_may_be_named() {
        let d = discovered([
            row("public", "organization", "name", "text", "text"),
            row("other", "organization", "id", "integer", "int4"),
            row("public", "public__kept", "id", "integer", "int4"),
            row("public", "kept", "name", "text", "text"),
        ]);
        let schema_of = |name: &str| d.table(name).map(|t| (t.schema.as_str(), t.name.as_str()));
        assert_eq!(schema_of("organization"), Some(("public", "organization")));
        assert_eq!(
            schema_of("public__organization"),
            Some(("public", "organization"))
        );
        assert_eq!(
            schema_of("other__organization"),
            Some(("other", "organization"))
        );
        assert_eq!(
            schema_of("public__kept"),
            Some(("public", "public__kept")),
            "a listed name wins"
        );
        for unknown in [
            "public__missing",
            "public__",
            "public.organization",
            "other__kept",
        ] {
            assert_eq!(schema_of(unknown), None, "{unknown}");
        }
        let s = d.source_schema();
        assert_eq!(s.default_schema.as_deref(), Some("public"));
        assert_eq!(
            s.table("public.organization").map(|t| t.name.as_str()),
            Some("organization")
        );
        assert_eq!(
            s.table("other.organization").map(|t| t.name.as_str()),
            Some("other__organization")
        );
    }

    #[test]
    fn quoting_doubles_quotes() {
        assert_eq!(quote_ident("a"), r#""a""#);
        assert_eq!(quote_ident(r#"we"ird"#), r#""we""ird""#);
        assert_eq!(quote_ident("people; drop"), r#""people; drop""#);
    }
}
