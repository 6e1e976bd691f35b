use crate::datasource::{DataSourceDescriptor, SourceSchema};
use crate::report::FilterCondition;
use async_trait::async_trait;
use std::collections::BTreeMap;

/// One row: field → JSON value.
pub type Row = serde_json::Map<String, serde_json::Value>;

/// A query for one table of a section.
#[derive(Debug, Clone, PartialEq)]
pub struct TableQuery {
    /// Table name as templates address it.
    pub table: String,
    /// Fields to project (only these are read).
    pub fields: Vec<String>,
    /// Conditions by field, all must hold.
    pub filters: BTreeMap<String, FilterCondition>,
    /// Refuse to return more rows than this.
    pub max_rows: usize,
}

/// What a data source can fail with. The text is for logs only; the API shows codes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DataSourceError {
    /// Cannot reach the source.
    #[error("data source unavailable: {0}")]
    Unavailable(String),
    /// Table not in the schema.
    #[error("unknown table {0}")]
    UnknownTable(String),
    /// Field not in the table.
    #[error("unknown field {table}.{field}")]
    UnknownField {
        /// Table.
        table: String,
        /// Field.
        field: String,
    },
    /// A filter value cannot be applied.
    #[error("invalid filter: {0}")]
    InvalidFilter(String),
    /// The result exceeded the row limit.
    #[error("row limit {0} exceeded")]
    RowLimit(usize),
    /// The query took too long.
    #[error("query timed out")]
    Timeout,
    /// The result held more bytes of values than the source allows (the limit, in bytes).
    #[error("result exceeded {0} bytes")]
    TooLarge(usize),
    /// The sink stopped taking rows before the last one (its reader has what it needs, or
    /// failed); not a failure of the source.
    #[error("the reader of the rows stopped taking them")]
    Stopped,
    /// A protected (encrypted) field could not be read. The field is a path for logs
    /// (`related_parties.document`), never a value; no key or ciphertext is ever carried.
    #[error("field {field}: {error}")]
    Decryption {
        /// The field's path.
        field: String,
        /// Why.
        error: DecryptionError,
    },
}

/// Why a source's protected (encrypted) fields could not be read: each is a section error
/// code of its own (`crm_key_missing`, `crm_decryption_failed`, `crm_value_malformed`,
/// `crm_unsupported_format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecryptionError {
    /// The key the field needs (to decrypt it, or to hash a filter value) is not configured.
    #[error("the key is not configured")]
    KeyMissing,
    /// The value did not authenticate: a wrong key, or an altered value.
    #[error("the value did not decrypt (wrong key or altered value)")]
    Failed,
    /// The value is not the encrypted format (not standard base64, too short, or its
    /// plaintext is not UTF-8 text).
    #[error("the value is not in the encrypted format")]
    Malformed,
    /// The value is in an encryption format this version does not read (the newer
    /// `tink:v<N>:` envelope).
    #[error("the value is in an unsupported encryption format")]
    UnsupportedFormat,
}

/// How a source answers a report filter on one field ([`DataSource::filter_support`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilterSupport {
    /// The field must be one of the table's schema fields (the default).
    Schema,
    /// The source answers it although the schema does not list it (a field it rewrites).
    Accepted,
    /// The source cannot answer it; the text says why (for the API's problem list).
    Refused(String),
}

/// Takes the rows of a query one at a time ([`DataSource::query_into`]).
pub trait RowSink: Send {
    /// Takes the next row. An `Err` stops the query: no further row is pushed and the query
    /// answers that error.
    fn push(&mut self, row: Row) -> Result<(), DataSourceError>;

    /// Takes the next row as the JSON text of one object (`{"field":value,…}`, its fields in
    /// the query's order): exactly the text serializing that [`Row`] gives, so a source that
    /// can write it straight from its wire row saves building the map. Sinks that keep rows as
    /// JSON take the text as it is; the default parses it back into a row for [`Self::push`].
    fn push_json(&mut self, json: &[u8]) -> Result<(), DataSourceError> {
        let row: Row = serde_json::from_slice(json)
            .map_err(|e| DataSourceError::Unavailable(format!("a row's JSON did not read: {e}")))?;
        self.push(row)
    }

    /// Waits until the sink takes more rows: a sink that hands rows on (to a render running
    /// meanwhile) holds the source back here instead of keeping what it cannot pass on yet.
    /// Sources that read a cursor SHOULD await it after each row they push; an `Err` stops
    /// the query as a push's does. `None` (the default): ready at once.
    fn ready(&mut self) -> Option<SinkReady<'_>> {
        None
    }
}

/// What [`RowSink::ready`] waits on.
pub type SinkReady<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), DataSourceError>> + Send + 'a>>;

/// A configured data source.
#[async_trait]
pub trait DataSource: Send + Sync {
    /// Id, name and kind.
    fn descriptor(&self) -> DataSourceDescriptor;
    /// Tables and fields, sorted.
    async fn schema(&self) -> Result<SourceSchema, DataSourceError>;
    /// How this source answers a report filter on `table`.`field` with `condition`, checked
    /// when a report is requested. A source that rewrites filters (an encrypted source
    /// matching search hashes) MUST refuse the ones it cannot answer instead of letting them
    /// match nothing. Default: [`FilterSupport::Schema`].
    fn filter_support(
        &self,
        table: &str,
        field: &str,
        condition: &FilterCondition,
    ) -> FilterSupport {
        let _ = (table, field, condition);
        FilterSupport::Schema
    }
    /// Rows of one table, projected to `query.fields`, filtered.
    async fn query(&self, query: &TableQuery) -> Result<Vec<Row>, DataSourceError>;
    /// The rows `query` would answer, pushed into `sink` one at a time.
    ///
    /// MUST push exactly the rows `query` answers (same projection and filters) and fail with
    /// the same errors; MUST stop at the first `Err` of the sink and answer it; MUST answer
    /// `RowLimit` once more rows than the limit have matched (the rows pushed before are the
    /// caller's to discard). Adapters that read a cursor SHOULD push each row as it arrives,
    /// so that the source never holds the whole result; the default collects `query`.
    async fn query_into(
        &self,
        query: &TableQuery,
        sink: &mut dyn RowSink,
    ) -> Result<(), DataSourceError> {
        for row in self.query(query).await? {
            sink.push(row)?;
        }
        Ok(())
    }
}

/// A [`RowSink`] that keeps every row (what `query` answers when it is written over
/// `query_into`).
#[derive(Debug, Default)]
pub struct CollectRows(pub Vec<Row>);

impl RowSink for CollectRows {
    fn push(&mut self, row: Row) -> Result<(), DataSourceError> {
        self.0.push(row);
        Ok(())
    }
}
