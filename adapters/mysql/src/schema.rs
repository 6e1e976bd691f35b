//! Discovered tables and columns, and how their MySQL types are handled.
use reporter_ports::datasource::SourceSchema;
use reporter_sql_support::{Tables, quote_with};

/// How a column's values are filtered (which JSON filter values can match them) and, for the
/// few types the wire does not tell apart, read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ColumnKind {
    /// `tinyint` … `bigint` (signed or unsigned), `year`: JSON numbers; booleans too when
    /// the column is `tinyint(1)` (MySQL's `BOOLEAN`).
    Integer { boolean: bool },
    /// `bit(n)`: JSON numbers; booleans too for `bit(1)`.
    Bit { boolean: bool },
    /// `float`, `double`: JSON numbers.
    Float,
    /// `decimal`: JSON numbers or decimal strings, compared exactly.
    Decimal,
    /// `char`, `varchar`, `*text`, `enum`, `set`: strings, compared with the column's collation.
    Text,
    /// `date`: date (or date-time) strings.
    Date,
    /// `datetime`, `timestamp`: date or date-time strings (an offset is converted to UTC).
    DateTime,
    /// `json` (MariaDB: a `longtext` column with a `json_valid` check): read as a nested
    /// value; never filtered.
    Json,
    /// `binary`, `varbinary`, `*blob`: strings, compared byte for byte.
    Binary,
    /// Anything else (`time`, spatial types, …): strings, compared by MySQL's rules.
    Other,
}

impl ColumnKind {
    /// Classifies `information_schema.columns` `data_type` / `column_type`.
    pub(crate) fn classify(data_type: &str, column_type: &str, json: bool) -> Self {
        let column_type = column_type.to_ascii_lowercase();
        match data_type.to_ascii_lowercase().as_str() {
            _ if json => Self::Json,
            "json" => Self::Json,
            "tinyint" | "smallint" | "mediumint" | "int" | "integer" | "bigint" | "year" => {
                Self::Integer {
                    boolean: column_type.starts_with("tinyint(1)"),
                }
            }
            "bit" => Self::Bit {
                boolean: column_type == "bit(1)",
            },
            "float" | "double" | "double precision" | "real" => Self::Float,
            "decimal" | "numeric" | "dec" | "fixed" => Self::Decimal,
            "char" | "varchar" | "tinytext" | "text" | "mediumtext" | "longtext" | "enum"
            | "set" => Self::Text,
            "date" => Self::Date,
            "datetime" | "timestamp" => Self::DateTime,
            "binary" | "varbinary" | "tinyblob" | "blob" | "mediumblob" | "longblob" => {
                Self::Binary
            }
            _ => Self::Other,
        }
    }
}

/// One discovered column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Column {
    pub(crate) kind: ColumnKind,
}

/// One discovered table (or view); its `schema` is the MySQL database holding it.
pub(crate) type Table = reporter_sql_support::Table<Column>;

/// Which server answers: they differ in JSON columns and statement time limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    MySql,
    MariaDb,
}

impl Flavor {
    /// From `SELECT VERSION()` (`10.11.19-MariaDB-…` or `8.4.3`).
    pub(crate) fn from_version(version: &str) -> Self {
        if version.to_ascii_lowercase().contains("mariadb") {
            Self::MariaDb
        } else {
            Self::MySql
        }
    }
}

/// Everything discovered, by template-facing table name (the default database's tables by
/// their bare name), and the server's flavor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Discovered {
    pub(crate) flavor: Flavor,
    pub(crate) tables: Tables<Column>,
}

/// One row of the discovery query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ColumnRow {
    pub(crate) table_schema: String,
    pub(crate) table_name: String,
    pub(crate) column_name: String,
    pub(crate) data_type: String,
    pub(crate) column_type: String,
    /// MariaDB's JSON alias: a `json_valid(col)` column check.
    pub(crate) json_check: bool,
}

/// `` `ident` `` with embedded backticks doubled: safe for any identifier.
pub(crate) fn quote_ident(ident: &str) -> String {
    quote_with(ident, '`', '`')
}

impl Discovered {
    /// Groups discovery rows into tables. When a default-database table's name equals another
    /// database's `db__table` name, the default-database table wins and the other is skipped
    /// with a warning.
    pub(crate) fn from_rows(
        flavor: Flavor,
        default_schema: &str,
        rows: impl IntoIterator<Item = ColumnRow>,
    ) -> Self {
        let tables = Tables::from_columns(
            default_schema,
            rows.into_iter().map(|row| {
                let kind = ColumnKind::classify(&row.data_type, &row.column_type, row.json_check);
                (
                    row.table_schema,
                    row.table_name,
                    row.column_name,
                    Column { kind },
                )
            }),
        );
        Self { flavor, tables }
    }

    /// The table a query names: its listed name, or `db__table` for the default database's
    /// `table` (the template spelling of `ds:db.table`).
    pub(crate) fn table(&self, name: &str) -> Option<&Table> {
        self.tables.table(name)
    }

    /// The port's view: tables sorted by name, fields sorted, the default database the
    /// default schema.
    pub(crate) fn source_schema(&self) -> SourceSchema {
        self.tables.source_schema()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(schema: &str, table: &str, column: &str, data_type: &str, ty: &str) -> ColumnRow {
        ColumnRow {
            table_schema: schema.into(),
            table_name: table.into(),
            column_name: column.into(),
            data_type: data_type.into(),
            column_type: ty.into(),
            json_check: false,
        }
    }

    #[test]
    fn names_types_and_collisions() {
        let mut json = row("app", "people", "meta", "longtext", "longtext");
        json.json_check = true;
        let d = Discovered::from_rows(
            Flavor::MariaDb,
            "app",
            [
                row("other", "ledger", "amount", "decimal", "decimal(12,2)"),
                row("app", "people", "name", "varchar", "varchar(20)"),
                row("app", "people", "id", "int", "int(11)"),
                row("app", "people", "active", "tinyint", "tinyint(1)"),
                json,
                row(
                    "app",
                    "other__ledger",
                    "id",
                    "bigint",
                    "bigint(20) unsigned",
                ),
            ],
        );
        let s = d.source_schema();
        let names: Vec<&str> = s.tables.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["other__ledger", "people"]);
        assert_eq!(
            d.tables["other__ledger"].schema, "app",
            "the default db wins"
        );
        let people = &d.tables["people"].columns;
        assert_eq!(people["meta"].kind, ColumnKind::Json);
        assert_eq!(people["active"].kind, ColumnKind::Integer { boolean: true });
        assert_eq!(people["id"].kind, ColumnKind::Integer { boolean: false });
        assert_eq!(
            s.table("people").map(|t| t.fields.clone()),
            Some(vec![
                "active".into(),
                "id".into(),
                "meta".into(),
                "name".into()
            ])
        );
    }

    #[test]
    fn the_default_database_may_be_named() {
        let d = Discovered::from_rows(
            Flavor::MariaDb,
            "app",
            [
                row("app", "people", "id", "int", "int(11)"),
                row("other", "people", "id", "int", "int(11)"),
            ],
        );
        let schema_of = |name: &str| d.table(name).map(|t| (t.schema.as_str(), t.name.as_str()));
        assert_eq!(schema_of("people"), Some(("app", "people")));
        assert_eq!(schema_of("app__people"), Some(("app", "people")));
        assert_eq!(schema_of("other__people"), Some(("other", "people")));
        for unknown in ["app__ledger", "app.people", "public__people", "ap__people"] {
            assert_eq!(schema_of(unknown), None, "{unknown}");
        }
        let s = d.source_schema();
        assert_eq!(s.default_schema.as_deref(), Some("app"));
        assert_eq!(
            s.table("app.people").map(|t| t.name.as_str()),
            Some("people")
        );
        assert_eq!(
            s.table("other.people").map(|t| t.name.as_str()),
            Some("other__people")
        );
    }

    #[test]
    fn classification() {
        use ColumnKind::*;
        for (dt, ct, kind) in [
            ("decimal", "decimal(10,2)", Decimal),
            ("double", "double", Float),
            ("bit", "bit(1)", Bit { boolean: true }),
            ("bit", "bit(8)", Bit { boolean: false }),
            ("datetime", "datetime(6)", DateTime),
            ("timestamp", "timestamp", DateTime),
            ("date", "date", Date),
            ("json", "json", Json),
            ("enum", "enum('a','b')", Text),
            ("longblob", "longblob", Binary),
            ("time", "time", Other),
            ("year", "year(4)", Integer { boolean: false }),
        ] {
            assert_eq!(ColumnKind::classify(dt, ct, false), kind, "{dt}");
        }
        assert_eq!(
            Flavor::from_version("10.11.19-MariaDB-0+deb12u1"),
            Flavor::MariaDb
        );
        assert_eq!(Flavor::from_version("8.4.3"), Flavor::MySql);
    }

    #[test]
    fn quoting_doubles_backticks() {
        assert_eq!(quote_ident("a"), "`a`");
        assert_eq!(quote_ident("we`ird"), "`we``ird`");
        assert_eq!(quote_ident("people; drop"), "`people; drop`");
    }
}
