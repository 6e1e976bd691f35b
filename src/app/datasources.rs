//! The configured data sources and template field validation against their schemas.
use super::error::{AppError, AppResult, Code};
use super::{App, Caller};
use reporter_ports::datasource::{DataSourceDescriptor, DataSourceId, SourceSchema};
use reporter_ports::ports::DataSource;
use reporter_ports::template::MappedFields;
use std::collections::{BTreeMap, HashSet};

/// Most unknown items an upload error lists in `fields` (all are counted in its message).
pub const MAX_LISTED_PROBLEMS: usize = 100;
use std::sync::Arc;

/// Every configured data source, by id.
#[derive(Clone, Default)]
pub struct DataSourceCatalog {
    sources: BTreeMap<String, Arc<dyn DataSource>>,
}

impl DataSourceCatalog {
    /// Builds the catalog. A later source with the same id replaces an earlier one.
    pub fn new(sources: impl IntoIterator<Item = Arc<dyn DataSource>>) -> Self {
        Self {
            sources: sources
                .into_iter()
                .map(|s| (s.descriptor().id.as_str().to_owned(), s))
                .collect(),
        }
    }
    /// Descriptors sorted by id.
    pub fn descriptors(&self) -> Vec<DataSourceDescriptor> {
        self.sources.values().map(|s| s.descriptor()).collect()
    }
    /// A source by id.
    pub fn get(&self, id: &str) -> Option<Arc<dyn DataSource>> {
        self.sources.get(id).cloned()
    }
    /// Number of sources.
    pub fn len(&self) -> usize {
        self.sources.len()
    }
    /// True when no source is configured.
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }
}

/// A non-fatal finding returned with an accepted template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// Stable code, e.g. `DATA_SOURCE_UNAVAILABLE`.
    pub code: &'static str,
    /// What it is about.
    pub field: String,
    /// Human message.
    pub message: String,
}

/// A data source with its schema.
#[derive(Debug, Clone)]
pub struct DataSourceDetails {
    /// Id, name and kind.
    pub descriptor: DataSourceDescriptor,
    /// Tables and fields.
    pub schema: SourceSchema,
}

impl App {
    /// Lists the configured data sources.
    pub fn list_data_sources(&self, caller: &Caller) -> Vec<DataSourceDescriptor> {
        let span = crate::use_case_span!("list_data_sources", tenant = %caller.tenant);
        span.in_scope(|| {
            let _ = caller;
            self.catalog.descriptors()
        })
    }

    /// One data source with its tables and fields.
    ///
    /// MUST return `InvalidPathParameter` for a malformed id, `DataSourceNotFound` for an unknown
    /// one and `DataSourceUnavailable` when its schema cannot be read.
    pub async fn get_data_source(
        &self,
        caller: &Caller,
        raw_id: &str,
    ) -> AppResult<DataSourceDetails> {
        let span =
            crate::use_case_span!("get_data_source", tenant = %caller.tenant, data_source = raw_id);
        span.run(async move {
            let _ = caller;
            let id = DataSourceId::parse(raw_id).ok_or_else(|| {
                AppError::new(
                    Code::InvalidPathParameter,
                    format!("data source id must match {}", DataSourceId::PATTERN),
                )
                .field("dataSourceId", "invalid format")
            })?;
            let source = self.catalog.get(id.as_str()).ok_or_else(|| {
                AppError::new(
                    Code::DataSourceNotFound,
                    format!("data source '{id}' is not configured"),
                )
                .entity("DataSource")
            })?;
            let schema = source.schema().await.map_err(|e| {
                tracing::warn!(error = %e, "data source schema unavailable");
                AppError::new(
                    Code::DataSourceUnavailable,
                    format!("data source '{id}' is unavailable; retry later"),
                )
            })?;
            Ok(DataSourceDetails {
                descriptor: source.descriptor(),
                schema,
            })
        })
        .await
    }

    /// Checks that every `datasource.table.field` a template reads exists.
    ///
    /// MUST fail with `UnknownDataSource` / `UnknownTable` / `UnknownField` (the first
    /// [`MAX_LISTED_PROBLEMS`] problems listed in `fields`, all of them counted in the message,
    /// the first one deciding the code). A source whose schema is temporarily unreadable yields
    /// a `DATA_SOURCE_UNAVAILABLE` warning instead of an error. A table is found by any spelling
    /// [`SourceSchema::table`] accepts (`public__orders`, from `ds:public.orders`, is the
    /// default schema's `orders`); the mapped fields keep the template's spelling, the name
    /// the render reads the table by. Linear in the number of mapped fields (one schema read
    /// per data source, hashed field lookups).
    pub(crate) async fn check_mapped_fields(
        &self,
        mapped: &MappedFields,
    ) -> AppResult<Vec<Warning>> {
        let mut problems: BTreeMap<String, String> = BTreeMap::new();
        let mut first: Option<Code> = None;
        let mut count = 0usize;
        let mut warnings = Vec::new();
        let mut note =
            |code: Code, key: String, msg: String, problems: &mut BTreeMap<String, String>| {
                first.get_or_insert(code);
                count += 1;
                if problems.len() < MAX_LISTED_PROBLEMS {
                    problems.insert(key, msg);
                }
            };
        for (ds, tables) in mapped {
            let Some(source) = self.catalog.get(ds) else {
                note(
                    Code::UnknownDataSource,
                    ds.clone(),
                    format!("data source '{ds}' is not configured"),
                    &mut problems,
                );
                continue;
            };
            let schema = match source.schema().await {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e, data_source = %ds, "schema unavailable during template validation");
                    warnings.push(Warning {
                        code: "DATA_SOURCE_UNAVAILABLE",
                        field: ds.clone(),
                        message: format!(
                            "data source '{ds}' is unavailable; its fields were not checked"
                        ),
                    });
                    continue;
                }
            };
            for (table, fields) in tables {
                let Some(t) = schema.table(table) else {
                    note(
                        Code::UnknownTable,
                        format!("{ds}.{table}"),
                        format!("table '{table}' does not exist in data source '{ds}'"),
                        &mut problems,
                    );
                    continue;
                };
                let known: HashSet<&str> = t.fields.iter().map(String::as_str).collect();
                for f in fields {
                    if !known.contains(f.as_str()) {
                        note(
                            Code::UnknownField,
                            format!("{ds}.{table}.{f}"),
                            format!("field '{f}' does not exist in table '{table}'"),
                            &mut problems,
                        );
                    }
                }
            }
        }
        match first {
            None => Ok(warnings),
            Some(code) => {
                let listed = if count > problems.len() {
                    format!(" (the first {} listed)", problems.len())
                } else {
                    String::new()
                };
                Err(AppError::new(
                    code,
                    format!("the template references {count} unknown data source item(s){listed}"),
                )
                .fields(problems))
            }
        }
    }
}
