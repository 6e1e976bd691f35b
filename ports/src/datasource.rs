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
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceSchema {
    /// Tables.
    pub tables: Vec<TableSchema>,
}

impl SourceSchema {
    /// Looks a table up by name.
    pub fn table(&self, name: &str) -> Option<&TableSchema> {
        self.tables.iter().find(|t| t.name == name)
    }
}
