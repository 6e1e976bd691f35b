//! Data source descriptors and schemas.
use serde::{Deserialize, Serialize};
use std::fmt;

/// A data source id: `^[a-zA-Z][a-zA-Z0-9_-]{0,127}$` (reference A.3.15).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DataSourceId(String);

impl DataSourceId {
    /// The rule [`Self::parse`] applies, as an ECMA-262 / PCRE pattern.
    pub const PATTERN: &'static str = "^[a-zA-Z][a-zA-Z0-9_-]{0,127}$";
    /// Parses and validates an id.
    pub fn parse(raw: &str) -> Option<Self> {
        let mut chars = raw.chars();
        let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
        let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        (first_ok && rest_ok && raw.len() <= 128).then(|| Self(raw.to_owned()))
    }
    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DataSourceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The technology behind a data source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DataSourceKind {
    /// A directory of JSON / CSV tables.
    File,
    /// PostgreSQL.
    Postgresql,
    /// MongoDB.
    Mongodb,
    /// MySQL or MariaDB.
    Mysql,
    /// Microsoft SQL Server.
    Sqlserver,
}

impl DataSourceKind {
    /// Lower-case name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::File => "file",
            Self::Postgresql => "postgresql",
            Self::Mongodb => "mongodb",
            Self::Mysql => "mysql",
            Self::Sqlserver => "sqlserver",
        }
    }
}

/// What the API lists about a data source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataSourceDescriptor {
    /// Id used in templates and filters.
    pub id: DataSourceId,
    /// Human-facing name (database or directory name).
    pub external_name: String,
    /// Technology.
    pub kind: DataSourceKind,
}

/// One table (or collection) and its fields, in a stable order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableSchema {
    /// Table name as templates address it (`schema__table` outside the default schema).
    pub name: String,
    /// Field names, sorted.
    pub fields: Vec<String>,
}

/// The discovered schema of a data source, tables sorted by name.
///
/// A SQL source names the tables of its default schema (PostgreSQL `public`, SQL Server
/// `dbo`, MySQL the configured database) by their bare name and every other table
/// `schema__table`; [`Self::table`] also finds a table by its other spellings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceSchema {
    /// Tables.
    pub tables: Vec<TableSchema>,
    /// The schema whose tables go by their bare name; `None` for sources without schemas
    /// (files, MongoDB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_schema: Option<String>,
}

impl SourceSchema {
    /// Looks a table up by any of its spellings, the listed name first.
    ///
    /// Contract: `name` as listed wins; otherwise `<default>__table` (what `ds:<default>.table`
    /// is rewritten to in a template) and `<default>.table` find the default schema's
    /// `table`, and `schema.table` finds `schema__table`. The answer's `name` is the listed
    /// (canonical) one.
    pub fn table(&self, name: &str) -> Option<&TableSchema> {
        let exact = |n: &str| self.tables.iter().find(|t| t.name == n);
        if let Some(t) = exact(name) {
            return Some(t);
        }
        let default = self.default_schema.as_deref();
        if let Some(bare) = default.and_then(|d| default_schema_alias(name, d)) {
            return exact(bare);
        }
        let (schema, table) = name.split_once('.')?;
        if default == Some(schema) {
            exact(table)
        } else {
            exact(&format!("{schema}__{table}"))
        }
    }
}

/// The bare table name `name` stands for when it is `<default_schema>__<table>`: the
/// template spelling of `ds:<default_schema>.<table>`, for sources that list the default
/// schema's tables by their bare name. `None` for any other name.
pub fn default_schema_alias<'a>(name: &'a str, default_schema: &str) -> Option<&'a str> {
    name.strip_prefix(default_schema)?
        .strip_prefix("__")
        .filter(|table| !table.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(default: Option<&str>, names: &[&str]) -> SourceSchema {
        SourceSchema {
            tables: names
                .iter()
                .map(|n| TableSchema {
                    name: (*n).to_owned(),
                    fields: vec!["id".into()],
                })
                .collect(),
            default_schema: default.map(str::to_owned),
        }
    }

    fn found(s: &SourceSchema, name: &str) -> Option<String> {
        s.table(name).map(|t| t.name.clone())
    }

    #[test]
    fn the_default_schema_may_be_named() {
        let s = schema(Some("public"), &["organization", "sales__orders"]);
        for spelling in [
            "organization",
            "public__organization",
            "public.organization",
        ] {
            assert_eq!(
                found(&s, spelling).as_deref(),
                Some("organization"),
                "{spelling}"
            );
        }
        for spelling in ["sales__orders", "sales.orders"] {
            assert_eq!(
                found(&s, spelling).as_deref(),
                Some("sales__orders"),
                "{spelling}"
            );
        }
        for unknown in [
            "orders",
            "public__orders",
            "public.orders",
            "public__",
            "other.organization",
            "sales__organization",
        ] {
            assert_eq!(found(&s, unknown), None, "{unknown}");
        }
    }

    #[test]
    fn a_listed_name_wins_over_an_alias() {
        let s = schema(Some("public"), &["public__x", "x"]);
        assert_eq!(found(&s, "public__x").as_deref(), Some("public__x"));
        assert_eq!(found(&s, "public.x").as_deref(), Some("x"));
    }

    #[test]
    fn sources_without_schemas_take_the_dotted_spelling_only() {
        let s = schema(None, &["people", "a__b"]);
        assert_eq!(found(&s, "people").as_deref(), Some("people"));
        assert_eq!(found(&s, "a.b").as_deref(), Some("a__b"));
        assert_eq!(found(&s, "public__people"), None);
        assert_eq!(default_schema_alias("dbo__t", "dbo"), Some("t"));
        assert_eq!(default_schema_alias("dbox__t", "dbo"), None);
    }
}
