//! [`FileDataSource`]: a directory of JSON and CSV tables.
use crate::filter::FieldFilter;
use crate::load::{LoadedTable, is_identifier, parse_csv_table, parse_json_table};
use async_trait::async_trait;
use reporter_ports::datasource::{
    DataSourceDescriptor, DataSourceId, DataSourceKind, SourceSchema, TableSchema,
};
use reporter_ports::ports::{DataSource, DataSourceError, Row, TableQuery};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A read-only data source backed by a directory of table files.
///
/// # Layout
/// Every regular file directly inside the directory named `<table>.json` or `<table>.csv`
/// is one table, named by the file stem. The stem must be an identifier
/// (`[A-Za-z_][A-Za-z0-9_]*`) so templates can address it as `source.table`. Files with
/// other extensions, hidden files (`.x`) and subdirectories are ignored. Files are UTF-8; a
/// leading byte-order mark is skipped.
///
/// - `.json`: a JSON array of flat objects (scalar values only). The table's fields are the
///   sorted union of the objects' keys; a row without a key reads that field as `null`.
/// - `.csv`: a header row of unique, non-empty names (trimmed), then rows of exactly as many cells.
///   Cells are typed per column; see the crate docs, "CSV typing".
///
/// # Contract
/// - [`FileDataSource::open`] reads and validates everything eagerly; later changes to the
///   files are not seen (open again to reload). Queries never touch the disk.
/// - The schema lists tables sorted by name, each with its fields sorted.
/// - [`DataSource::query`] answers rows in file order, projected to exactly the requested
///   fields (a missing key is `null`), keeping rows that satisfy every filter (crate docs,
///   "Filter semantics": numbers numerically, strings lexicographically, mixed types never
///   match, an operator with an empty list is ignored). An unknown table or field (projected
///   or filtered) fails before any row is read. More matching rows than
///   `max_rows` fail with [`DataSourceError::RowLimit`].
#[derive(Debug, Clone)]
pub struct FileDataSource {
    descriptor: DataSourceDescriptor,
    tables: BTreeMap<String, LoadedTable>,
    schema: SourceSchema,
}

fn unavailable(path: &Path, what: impl std::fmt::Display) -> DataSourceError {
    DataSourceError::Unavailable(format!("{}: {what}", path.display()))
}

/// Every table file of `dir` (sorted by path), parsed; the `open` contract's errors.
fn load_tables(dir: &Path) -> Result<BTreeMap<String, LoadedTable>, DataSourceError> {
    let mut paths = Vec::new();
    let entries = std::fs::read_dir(dir)
        .map_err(|e| unavailable(dir, format!("cannot list data directory: {e}")))?;
    for entry in entries {
        let entry =
            entry.map_err(|e| unavailable(dir, format!("cannot list data directory: {e}")))?;
        paths.push(entry.path());
    }
    paths.sort();

    let mut tables: BTreeMap<String, LoadedTable> = BTreeMap::new();
    let mut origins: BTreeMap<String, PathBuf> = BTreeMap::new();
    for path in paths {
        let Some((stem, ext)) = table_file(&path) else {
            tracing::debug!(path = %path.display(), "ignoring file that is not a table");
            continue;
        };
        if !path.is_file() {
            tracing::debug!(path = %path.display(), "ignoring non-regular file");
            continue;
        }
        if !is_identifier(&stem) {
            return Err(unavailable(
                &path,
                format!("table name {stem:?} is not an identifier ([A-Za-z_][A-Za-z0-9_]*)"),
            ));
        }
        if let Some(first) = origins.get(&stem) {
            return Err(unavailable(
                &path,
                format!("table {stem:?} is already defined by {}", first.display()),
            ));
        }
        let table = load_table(&path, ext)?;
        tracing::debug!(
            path = %path.display(),
            table = %stem,
            rows = table.rows.len(),
            fields = table.fields.len(),
            "loaded table"
        );
        origins.insert(stem.clone(), path);
        tables.insert(stem, table);
    }
    Ok(tables)
}

/// One table file, read and parsed (a leading UTF-8 byte-order mark is skipped:
/// spreadsheet exports often start with one).
fn load_table(path: &Path, format: TableFormat) -> Result<LoadedTable, DataSourceError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| unavailable(path, format!("cannot read: {e}")))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    match format {
        TableFormat::Json => parse_json_table(path, text),
        TableFormat::Csv => parse_csv_table(path, text),
    }
}

impl FileDataSource {
    /// Loads every table of `dir`.
    ///
    /// Fails with [`DataSourceError::Unavailable`], naming the offending file, when the
    /// directory cannot be read, a file cannot be read or is not valid UTF-8, a JSON file is
    /// not valid JSON or not an array of flat objects, a CSV file is malformed (bad header,
    /// ragged rows), a table name is not an identifier, or two files (`x.json` and `x.csv`)
    /// define the same table. An empty directory is a valid source with no tables.
    ///
    /// This is blocking I/O, meant for start-up; call it through
    /// `tokio::task::spawn_blocking` from async code if the directory is large.
    pub fn open(id: DataSourceId, dir: PathBuf) -> Result<Self, DataSourceError> {
        let dir = dir
            .canonicalize()
            .map_err(|e| unavailable(&dir, format!("cannot open data directory: {e}")))?;
        if !dir.is_dir() {
            return Err(unavailable(&dir, "not a directory"));
        }
        let external_name = dir.file_name().map_or_else(
            || dir.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );

        let tables = load_tables(&dir)?;
        let schema = SourceSchema {
            tables: tables
                .iter()
                .map(|(name, t)| TableSchema {
                    name: name.clone(),
                    fields: t.fields.clone(),
                })
                .collect(),
            default_schema: None,
        };
        tracing::info!(
            data_source = %id,
            dir = %dir.display(),
            tables = schema.tables.len(),
            "file data source opened"
        );
        Ok(Self {
            descriptor: DataSourceDescriptor {
                id,
                external_name,
                kind: DataSourceKind::File,
            },
            tables,
            schema,
        })
    }

    /// Runs a query synchronously (the data is in memory).
    fn run(&self, query: &TableQuery) -> Result<Vec<Row>, DataSourceError> {
        let table = self
            .tables
            .get(&query.table)
            .ok_or_else(|| DataSourceError::UnknownTable(query.table.clone()))?;
        let known = |field: &str| {
            table
                .fields
                .binary_search_by(|f| f.as_str().cmp(field))
                .is_ok()
        };
        let unknown = |field: &str| DataSourceError::UnknownField {
            table: query.table.clone(),
            field: field.to_owned(),
        };
        if let Some(field) = query.fields.iter().find(|f| !known(f)) {
            return Err(unknown(field));
        }
        let mut filters = Vec::with_capacity(query.filters.len());
        for (field, condition) in &query.filters {
            if !known(field) {
                return Err(unknown(field));
            }
            filters.push(FieldFilter::compile(field, condition)?);
        }

        let mut out = Vec::new();
        for row in table
            .rows
            .iter()
            .filter(|r| filters.iter().all(|f| f.matches(r)))
        {
            if out.len() == query.max_rows {
                return Err(DataSourceError::RowLimit(query.max_rows));
            }
            out.push(
                query
                    .fields
                    .iter()
                    .map(|f| (f.clone(), row.get(f).cloned().unwrap_or(Value::Null)))
                    .collect::<Row>(),
            );
        }
        Ok(out)
    }
}

#[derive(Debug, Clone, Copy)]
enum TableFormat {
    Json,
    Csv,
}

/// `(stem, format)` for a visible `*.json` / `*.csv` path.
fn table_file(path: &Path) -> Option<(String, TableFormat)> {
    let name = path.file_name()?.to_str()?;
    if name.starts_with('.') {
        return None;
    }
    let (stem, ext) = name.rsplit_once('.')?;
    let format = match ext {
        "json" => TableFormat::Json,
        "csv" => TableFormat::Csv,
        _ => return None,
    };
    Some((stem.to_owned(), format))
}

#[async_trait]
impl DataSource for FileDataSource {
    fn descriptor(&self) -> DataSourceDescriptor {
        self.descriptor.clone()
    }

    async fn schema(&self) -> Result<SourceSchema, DataSourceError> {
        Ok(self.schema.clone())
    }

    async fn query(&self, query: &TableQuery) -> Result<Vec<Row>, DataSourceError> {
        let result = self.run(query);
        if let Err(error) = &result {
            tracing::debug!(
                data_source = %self.descriptor.id,
                table = %query.table,
                %error,
                "file data source query refused"
            );
        }
        result
    }
}
