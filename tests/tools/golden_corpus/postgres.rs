//! Loading a case's tables into PostgreSQL and reading them through `PostgresDataSource`.
//! One scratch database per data source name, reused across cases (the schemas a case
//! created are dropped before the next case) and dropped at the end. A table named
//! `<schema>__<table>` (the rewrite of `ds:schema.table`) is created as `table` in a real
//! schema `<schema>`, which the data source is configured to read.
use super::columns::ColType;
use super::{Loader, Table};
use crate::common::ScratchPostgres;
use reporter_ports::datasource::DataSourceId;
use reporter_ports::ports::DataSource;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

#[derive(Default)]
pub struct Postgres {
    dbs: BTreeMap<String, ScratchPostgres>,
    url: String,
}

impl Postgres {
    pub fn new(url: String) -> Self {
        Self {
            dbs: BTreeMap::new(),
            url,
        }
    }
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// A literal for `value` in a column of type `ty`.
fn literal(value: &Value, ty: ColType) -> String {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match (value, ty) {
        (Value::Null, _) => "NULL".into(),
        (_, ColType::Jsonb) => format!("{}::jsonb", quote(&value.to_string())),
        (_, ColType::Date) => quote(text(value).get(..10).unwrap_or_default()),
        (_, ColType::Timestamp) => quote(text(value).trim_end_matches(" +0000 UTC")),
        (_, ColType::TimestampTz) => quote(text(value).trim_end_matches(" UTC")),
        (_, ColType::Bigint | ColType::Double | ColType::Boolean) => text(value),
        (_, ColType::Text | ColType::Numeric | ColType::Uuid) => quote(&text(value)),
    }
}

/// `(schema, table)` of a template-facing table name.
fn qualified(name: &str) -> (&str, &str) {
    name.split_once("__").unwrap_or(("public", name))
}

/// `CREATE TABLE` and `INSERT`s for one table; `Err` when a column has no single type.
fn table_sql(t: &Table) -> Result<String, String> {
    let mut types = BTreeMap::new();
    for (c, ty) in &t.types {
        let ty = ty.ok_or_else(|| {
            format!(
                "column {}.{c} mixes types; a PostgreSQL column has one",
                t.name
            )
        })?;
        types.insert(c.as_str(), ty);
    }
    let (schema, table) = qualified(&t.name);
    let name = format!("\"{schema}\".\"{table}\"");
    let defs: Vec<String> = types
        .iter()
        .map(|(c, ty)| format!("\"{c}\" {}", ty.sql()))
        .collect();
    let mut sql = format!("CREATE TABLE {name} ({});\n", defs.join(", "));
    let cols: Vec<String> = types.keys().map(|k| format!("\"{k}\"")).collect();
    for row in &t.rows {
        let vals: Vec<String> = types
            .iter()
            .map(|(c, ty)| literal(row.get(*c).unwrap_or(&Value::Null), *ty))
            .collect();
        sql.push_str(&format!(
            "INSERT INTO {name} ({}) VALUES ({});\n",
            cols.join(", "),
            vals.join(", ")
        ));
    }
    Ok(sql)
}

impl Loader for Postgres {
    async fn load(&mut self, ds: &str, tables: &[Table]) -> Result<Arc<dyn DataSource>, String> {
        let mut sql = String::new();
        for t in tables {
            sql.push_str(&table_sql(t)?);
        }
        let schemas: BTreeSet<&str> = tables.iter().map(|t| qualified(&t.name).0).collect();
        if !self.dbs.contains_key(ds) {
            let pg = ScratchPostgres::create("golden")
                .await
                .ok_or("no PostgreSQL")?;
            self.dbs.insert(ds.to_owned(), pg);
        }
        let pg = self.dbs.get(ds).ok_or("no PostgreSQL")?;
        let reset = "DO $$ DECLARE s text; BEGIN FOR s IN SELECT nspname FROM pg_namespace \
            WHERE nspname NOT LIKE 'pg\\_%' AND nspname NOT IN ('information_schema', 'public') \
            LOOP EXECUTE format('DROP SCHEMA %I CASCADE', s); END LOOP; END $$;\n\
            DROP SCHEMA public CASCADE; CREATE SCHEMA public;\n";
        let create: String = schemas
            .iter()
            .filter(|s| **s != "public")
            .map(|s| format!("CREATE SCHEMA \"{s}\";\n"))
            .collect();
        let all = format!("{reset}{create}{sql}");
        pg.client
            .batch_execute(&all)
            .await
            .map_err(|e| format!("loading: {e}\n{all}"))?;
        let id = DataSourceId::parse(ds).ok_or("data source id")?;
        let mut config = reporter_adapter_postgres::PostgresConfig::from_url(id, &self.url)
            .map_err(|e| e.to_string())?;
        config.database = pg.db.clone();
        config.pool_size = 2;
        config.schemas = std::iter::once("public")
            .chain(schemas.into_iter().filter(|s| *s != "public"))
            .map(str::to_owned)
            .collect();
        let source = reporter_adapter_postgres::PostgresDataSource::new(config)
            .map_err(|e| e.to_string())?;
        Ok(Arc::new(source))
    }

    async fn finish(self) {
        for (_, pg) in self.dbs {
            pg.remove().await;
        }
    }
}
