//! [`Tables`]: the discovered tables (and views) of a SQL source, by template-facing name.
use reporter_ports::datasource::{SourceSchema, TableSchema, default_schema_alias};
use std::collections::BTreeMap;

/// One discovered table (or view) and its columns, `C` being what the dialect knows of one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table<C> {
    /// The schema (MySQL: database) holding it.
    pub schema: String,
    pub name: String,
    pub columns: BTreeMap<String, C>,
}

/// Everything discovered, by template-facing name: `table` in the default schema,
/// `schema__table` in any other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tables<C> {
    /// The schema whose tables keep their bare name.
    pub default_schema: String,
    pub tables: BTreeMap<String, Table<C>>,
}

/// The template-facing name of `schema.table`: bare in `default_schema`, else
/// `schema__table`.
pub fn exposed_name(default_schema: &str, schema: &str, table: &str) -> String {
    if schema == default_schema {
        table.to_owned()
    } else {
        format!("{schema}__{table}")
    }
}

impl<C> Tables<C> {
    /// No table yet.
    pub fn new(default_schema: impl Into<String>) -> Self {
        Self {
            default_schema: default_schema.into(),
            tables: BTreeMap::new(),
        }
    }

    /// Groups discovered `(schema, table, column, C)` rows into tables.
    pub fn from_columns(
        default_schema: impl Into<String>,
        rows: impl IntoIterator<Item = (String, String, String, C)>,
    ) -> Self {
        let mut tables = Self::new(default_schema);
        for (schema, table, column, c) in rows {
            tables.insert(schema, table, column, c);
        }
        tables
    }

    /// Adds one discovered column. When a default-schema table's name equals another
    /// schema's `schema__table` name, the default-schema table MUST win: the other is
    /// skipped with a warning.
    pub fn insert(&mut self, schema: String, table: String, column: String, c: C) {
        let name = exposed_name(&self.default_schema, &schema, &table);
        let entry = self.tables.entry(name.clone()).or_insert_with(|| Table {
            schema: schema.clone(),
            name: table.clone(),
            columns: BTreeMap::new(),
        });
        if entry.schema != schema || entry.name != table {
            let default_wins = schema != self.default_schema;
            tracing::warn!(
                table = %name,
                kept = %if default_wins { &entry.schema } else { &schema },
                "two tables share one template name; keeping the default schema's"
            );
            if default_wins {
                return;
            }
            *entry = Table {
                schema,
                name: table,
                columns: BTreeMap::new(),
            };
        }
        entry.columns.insert(column, c);
    }

    /// How many tables.
    pub fn len(&self) -> usize {
        self.tables.len()
    }

    /// True when nothing was discovered.
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }

    /// The table a query names: its listed name, or `<default>__table` for the default
    /// schema's `table` (the template spelling of `ds:<default>.table`).
    pub fn table(&self, name: &str) -> Option<&Table<C>> {
        self.tables.get(name).or_else(|| {
            default_schema_alias(name, &self.default_schema).and_then(|bare| self.tables.get(bare))
        })
    }

    /// The port's view: tables sorted by name, fields sorted, the default schema named.
    pub fn source_schema(&self) -> SourceSchema {
        SourceSchema {
            tables: self
                .tables
                .iter()
                .map(|(name, table)| TableSchema {
                    name: name.clone(),
                    fields: table.columns.keys().cloned().collect(),
                })
                .collect(),
            default_schema: Some(self.default_schema.clone()),
        }
    }
}

impl<C> std::ops::Index<&str> for Tables<C> {
    type Output = Table<C>;

    /// The table listed as `name`; panics when there is none (as a map's index does).
    fn index(&self, name: &str) -> &Table<C> {
        &self.tables[name]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(rows: &[(&str, &str, &str)]) -> Tables<u8> {
        Tables::from_columns(
            "main",
            rows.iter()
                .map(|(s, t, c)| ((*s).into(), (*t).into(), (*c).into(), 0)),
        )
    }

    #[test]
    fn the_default_schema_wins_a_name_clash_in_either_order() {
        for order in [
            [("other", "ledger", "a"), ("main", "other__ledger", "b")],
            [("main", "other__ledger", "b"), ("other", "ledger", "a")],
        ] {
            let t = rows(&order);
            assert_eq!(t.len(), 1);
            assert_eq!(t["other__ledger"].schema, "main");
            assert_eq!(t["other__ledger"].columns.keys().collect::<Vec<_>>(), ["b"]);
        }
    }

    #[test]
    fn names_aliases_and_the_port_view() {
        let t = rows(&[
            ("main", "people", "id"),
            ("x", "y", "z"),
            ("main", "people", "a"),
        ]);
        assert_eq!(
            t.table("main__people").map(|t| t.name.as_str()),
            Some("people")
        );
        assert_eq!(t.table("x__y").map(|t| t.schema.as_str()), Some("x"));
        assert!(t.table("main__").is_none() && t.table("main.people").is_none());
        let s = t.source_schema();
        assert_eq!(s.default_schema.as_deref(), Some("main"));
        assert_eq!(
            s.table("people").map(|t| t.fields.clone()),
            Some(vec!["a".into(), "id".into()])
        );
    }
}
