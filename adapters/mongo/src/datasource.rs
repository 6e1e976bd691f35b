//! [`MongoDataSource`]: a MongoDB database as a report data source.
use crate::crm::{self, CrmSettings, ORGANIZATION_FIELD, SEARCH_FIELD};
use crate::error::is_time_limit;
use async_trait::async_trait;
use futures_util::TryStreamExt;
use mongodb::bson::{Bson, Document, doc};
use mongodb::{Client, Database};
use reporter_ports::datasource::{
    DataSourceDescriptor, DataSourceId, DataSourceKind, SourceSchema, TableSchema,
};
use reporter_ports::ports::{
    CollectRows, DataSource, DataSourceError, FilterSupport, Row, RowSink, TableQuery,
};
use reporter_ports::report::FilterCondition;
use serde_json::{Number, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// Tuning of a [`MongoDataSource`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MongoDataSourceConfig {
    /// Documents read per collection to discover its fields. Default 100.
    pub sample_size: u32,
    /// Server-side time limit of one query (`maxTimeMS`); exceeding it is
    /// [`DataSourceError::Timeout`]. Default 30 s.
    pub query_timeout: Duration,
}

impl Default for MongoDataSourceConfig {
    fn default() -> Self {
        Self {
            sample_size: 100,
            query_timeout: Duration::from_secs(30),
        }
    }
}

/// A MongoDB database as a read-only [`DataSource`].
///
/// - **Tables** are the database's collections (except `system.*`), sorted by name.
/// - **Fields** of a table are the union of the top-level keys of its first `sample_size`
///   documents (natural order), sorted. `_id` is a field, as in the original: an ObjectId
///   reads as its hex string. Keys that are empty, start with `$` or contain `.` are not
///   fields (a projection or filter could not address them literally). A field that appears
///   only in documents past the sample is unknown.
/// - **Queries** project exactly the requested fields (a document without the field answers
///   `null`), filter in the database, and read at most `max_rows + 1` documents: more than
///   `max_rows` matches is [`DataSourceError::RowLimit`]. Row order is unspecified.
/// - **Filters** (all must hold): `eq` and `in` → `$in`, `nin` → `$nin`, `gt`/`gte`/`lt`/`lte`
///   → the same operator on the first value, `between [a, b]` → `$gte a, $lte b`. Values go as
///   BSON (integers as Int64, other numbers as Double, strings, booleans, null). Ordered
///   operators take a number or a string, `between` exactly two of the same kind; non-scalar
///   values are [`DataSourceError::InvalidFilter`]. MongoDB's comparison rules apply: numbers
///   compare numerically across int/long/double, a string never compares with a number, `null`
///   is in no range, `nin` and `eq null` also match a missing field — the same answers as the
///   file data source on flat documents. (Unlike it, an array field matches `eq` when an
///   element matches.)
/// - Values come back as JSON: Int32/Int64 as integers, Double as a number (NaN and infinities
///   as `null`), Decimal128 as a string, DateTime as RFC 3339 text, ObjectId as hex, embedded
///   documents and arrays recursively.
/// - **The Midaz CRM** ([`Self::with_crm`]): tables are the CRM's collections by base name
///   (one organization's, or every organization's with rows tagged `organization_id`), rows
///   are decrypted as they are read, filters on encrypted fields match their search hashes
///   or are refused, and the schema hides the search hashes (`search`). See [`CrmSettings`].
#[derive(Debug, Clone)]
pub struct MongoDataSource {
    id: DataSourceId,
    db: Database,
    config: MongoDataSourceConfig,
    crm: Option<CrmSettings>,
}

/// What one query reads: the collections (each with the organization its rows are tagged
/// with), the filter and the projection.
struct FindPlan {
    collections: Vec<(String, Option<String>)>,
    filter: Document,
    projection: Document,
}

fn unavailable(what: &str, e: &mongodb::error::Error) -> DataSourceError {
    if is_time_limit(e) {
        return DataSourceError::Timeout;
    }
    DataSourceError::Unavailable(format!("mongodb {what}: {e}"))
}

fn is_addressable(key: &str) -> bool {
    !key.is_empty() && !key.starts_with('$') && !key.contains('.')
}

/// A JSON scalar as BSON.
fn to_bson(v: &Value) -> Bson {
    match v {
        Value::Null => Bson::Null,
        Value::Bool(b) => Bson::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Bson::Int64(i),
            None => Bson::Double(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => Bson::String(s.clone()),
        // Refused before conversion; kept total for safety.
        Value::Array(_) | Value::Object(_) => Bson::Null,
    }
}

/// An instant as Go's `time.Time.String()` prints a UTC time (`2025-06-01 10:00:00.123 +0000
/// UTC`): the original's MongoDB source hands templates `time.Time` values.
fn go_time(t: chrono::DateTime<chrono::Utc>) -> String {
    let mut s = t.format("%Y-%m-%d %H:%M:%S").to_string();
    let nanos = t.timestamp_subsec_nanos();
    if nanos != 0 {
        let frac = format!("{nanos:09}");
        s.push('.');
        s.push_str(frac.trim_end_matches('0'));
    }
    s.push_str(" +0000 UTC");
    s
}

/// A stored BSON value as JSON, in the shapes the original's templates see: dates as Go
/// times, object ids as hex, UUID binaries as UUID text, other binaries as hex. Public (as
/// `bson_to_json`) for `reporter-bench`'s `crm-decrypt` figure.
pub fn to_json(v: &Bson) -> Value {
    match v {
        Bson::Null | Bson::Undefined => Value::Null,
        Bson::Boolean(b) => Value::Bool(*b),
        Bson::Int32(i) => Value::from(*i),
        Bson::Int64(i) => Value::from(*i),
        Bson::Double(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
        Bson::String(s) | Bson::Symbol(s) => Value::String(s.clone()),
        Bson::Decimal128(d) => Value::String(d.to_string()),
        Bson::DateTime(dt) => {
            let ms = dt.timestamp_millis();
            chrono::DateTime::from_timestamp_millis(ms)
                .map_or(Value::from(ms), |t| Value::String(go_time(t)))
        }
        Bson::ObjectId(o) => Value::String(o.to_hex()),
        Bson::Binary(b) => match uuid::Uuid::from_slice(&b.bytes) {
            Ok(u) if b.bytes.len() == 16 => Value::String(u.to_string()),
            _ => Value::String(hex::encode(&b.bytes)),
        },
        Bson::Array(a) => Value::Array(a.iter().map(to_json).collect()),
        Bson::Document(d) => {
            Value::Object(d.iter().map(|(k, v)| (k.clone(), to_json(v))).collect())
        }
        other => Value::String(other.to_string()),
    }
}

fn invalid(field: &str, op: &str, why: &str) -> DataSourceError {
    DataSourceError::InvalidFilter(format!("{field}: {op} {why}"))
}

fn ordered_bound(field: &str, op: &str, v: &Value) -> Result<Bson, DataSourceError> {
    match v {
        Value::Number(_) | Value::String(_) => Ok(to_bson(v)),
        _ => Err(invalid(field, op, "needs a number or a string")),
    }
}

/// The clauses of one field's condition (empty when the condition has no operator).
pub(crate) fn condition_clauses(
    field: &str,
    cond: &FilterCondition,
) -> Result<Vec<Document>, DataSourceError> {
    let all = cond.operators();
    for (op, values) in all {
        if values.iter().any(|v| v.is_array() || v.is_object()) {
            return Err(invalid(field, op, "values must be scalars"));
        }
    }
    let list = |vs: &[Value]| vs.iter().map(to_bson).collect::<Vec<_>>();
    let mut out = Vec::new();
    if !cond.eq.is_empty() {
        out.push(doc! { field: { "$in": list(&cond.eq) } });
    }
    if !cond.in_.is_empty() {
        out.push(doc! { field: { "$in": list(&cond.in_) } });
    }
    if !cond.nin.is_empty() {
        out.push(doc! { field: { "$nin": list(&cond.nin) } });
    }
    for (op, mongo_op, values) in [
        ("gt", "$gt", &cond.gt),
        ("gte", "$gte", &cond.gte),
        ("lt", "$lt", &cond.lt),
        ("lte", "$lte", &cond.lte),
    ] {
        if let Some(first) = values.first() {
            out.push(doc! { field: { mongo_op: ordered_bound(field, op, first)? } });
        }
    }
    match cond.between.as_slice() {
        [] => {}
        [low, high] => {
            let (lo, hi) = (
                ordered_bound(field, "between", low)?,
                ordered_bound(field, "between", high)?,
            );
            if low.is_number() != high.is_number() {
                return Err(invalid(field, "between", "bounds must have the same type"));
            }
            out.push(doc! { field: { "$gte": lo, "$lte": hi } });
        }
        _ => return Err(invalid(field, "between", "takes exactly two values")),
    }
    Ok(out)
}

impl MongoDataSource {
    /// Connects to `uri` and serves database `db_name` as data source `id`.
    pub async fn connect(
        id: DataSourceId,
        uri: &str,
        db_name: &str,
    ) -> Result<Self, DataSourceError> {
        let client = Client::with_uri_str(uri)
            .await
            .map_err(|e| DataSourceError::Unavailable(format!("mongodb connect: {e}")))?;
        Ok(Self::new(id, client.database(db_name)))
    }

    /// Serves `db` as data source `id` with the default configuration.
    pub fn new(id: DataSourceId, db: Database) -> Self {
        Self::with_config(id, db, MongoDataSourceConfig::default())
    }

    /// Serves `db` as data source `id`.
    pub fn with_config(id: DataSourceId, db: Database, config: MongoDataSourceConfig) -> Self {
        Self {
            id,
            db,
            config,
            crm: None,
        }
    }

    /// Reads `db` as the Midaz CRM's data (see [`crate::crm`]): the caller decides which
    /// source is the CRM ([`crm::is_crm_source`]).
    pub fn with_crm(mut self, crm: CrmSettings) -> Self {
        self.crm = Some(crm);
        self
    }

    /// The collections serving each CRM table, in name order, with their organization.
    async fn crm_tables(
        &self,
        crm: &CrmSettings,
    ) -> Result<BTreeMap<String, Vec<(String, String)>>, DataSourceError> {
        let mut tables: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        for name in self.tables(None).await? {
            if let Some((table, org)) = crm.table_of(&name) {
                let (table, org) = (table.to_owned(), org.to_owned());
                tables.entry(table).or_default().push((name, org));
            }
        }
        Ok(tables)
    }

    /// The union of the fields of `collections`.
    async fn fields_of(
        &self,
        collections: &[(String, String)],
    ) -> Result<BTreeSet<String>, DataSourceError> {
        let mut all = BTreeSet::new();
        for (c, _) in collections {
            all.extend(self.fields(c).await?);
        }
        Ok(all)
    }

    async fn tables(&self, only: Option<&str>) -> Result<Vec<String>, DataSourceError> {
        let mut action = self.db.list_collection_names();
        if let Some(name) = only {
            action = action.filter(doc! { "name": name });
        }
        let mut names: Vec<String> = action
            .await
            .map_err(|e| unavailable("list collections", &e))?
            .into_iter()
            .filter(|n| !n.starts_with("system."))
            .collect();
        names.sort();
        Ok(names)
    }

    async fn fields(&self, table: &str) -> Result<Vec<String>, DataSourceError> {
        let docs: Vec<Document> = self
            .db
            .collection::<Document>(table)
            .find(doc! {})
            .limit(i64::from(self.config.sample_size))
            .max_time(self.config.query_timeout)
            .await
            .map_err(|e| unavailable("sample", &e))?
            .try_collect()
            .await
            .map_err(|e| unavailable("sample cursor", &e))?;
        let keys: BTreeSet<String> = docs
            .iter()
            .flat_map(|d| d.keys())
            .filter(|k| is_addressable(k))
            .cloned()
            .collect();
        Ok(keys.into_iter().collect())
    }
}

#[async_trait]
impl DataSource for MongoDataSource {
    fn descriptor(&self) -> DataSourceDescriptor {
        DataSourceDescriptor {
            id: self.id.clone(),
            external_name: self.db.name().to_owned(),
            kind: DataSourceKind::Mongodb,
        }
    }

    async fn schema(&self) -> Result<SourceSchema, DataSourceError> {
        if let Some(crm) = &self.crm {
            let mut tables = Vec::new();
            for (name, collections) in self.crm_tables(crm).await? {
                let mut fields = self.fields_of(&collections).await?;
                fields.remove(SEARCH_FIELD);
                if crm.tags_organizations() {
                    fields.insert(ORGANIZATION_FIELD.to_owned());
                }
                tables.push(TableSchema {
                    name,
                    fields: fields.into_iter().collect(),
                });
            }
            return Ok(SourceSchema {
                tables,
                default_schema: None,
            });
        }
        let mut tables = Vec::new();
        for name in self.tables(None).await? {
            let fields = self.fields(&name).await?;
            tables.push(TableSchema { name, fields });
        }
        Ok(SourceSchema {
            tables,
            default_schema: None,
        })
    }

    async fn query(&self, query: &TableQuery) -> Result<Vec<Row>, DataSourceError> {
        let mut rows = CollectRows::default();
        self.query_into(query, &mut rows).await?;
        Ok(rows.0)
    }

    /// Reads the cursor one document at a time, each pushed as soon as it is projected.
    async fn query_into(
        &self,
        query: &TableQuery,
        sink: &mut dyn RowSink,
    ) -> Result<(), DataSourceError> {
        let plan = match &self.crm {
            Some(crm) => self.crm_plan(crm, query).await?,
            None => {
                let (filter, projection) = self.find_spec(query).await?;
                FindPlan {
                    collections: vec![(query.table.clone(), None)],
                    filter,
                    projection,
                }
            }
        };
        let keys = self.crm.as_ref().map(|c| &c.keys);
        let mut count = 0usize;
        for (collection, org) in &plan.collections {
            let left = query.max_rows.saturating_sub(count).saturating_add(1);
            let mut cursor = self
                .db
                .collection::<Document>(collection)
                .find(plan.filter.clone())
                .projection(plan.projection.clone())
                .limit(i64::try_from(left).unwrap_or(i64::MAX))
                .max_time(self.config.query_timeout)
                .await
                .map_err(|e| unavailable("find", &e))?;
            while let Some(mut d) = cursor
                .try_next()
                .await
                .map_err(|e| unavailable("cursor", &e))?
            {
                count += 1;
                if count > query.max_rows {
                    return Err(DataSourceError::RowLimit(query.max_rows));
                }
                if let Some(keys) = keys {
                    crm::decrypt_document(keys, &mut d)?;
                }
                let row = query
                    .fields
                    .iter()
                    .map(|f| match org {
                        Some(org) if f == ORGANIZATION_FIELD => {
                            (f.clone(), Value::String(org.clone()))
                        }
                        _ => (f.clone(), d.get(f).map_or(Value::Null, to_json)),
                    })
                    .collect::<Row>();
                sink.push(row)?;
                if let Some(ready) = sink.ready() {
                    ready.await?;
                }
            }
        }
        Ok(())
    }

    fn filter_support(
        &self,
        table: &str,
        field: &str,
        condition: &FilterCondition,
    ) -> FilterSupport {
        let Some(crm) = &self.crm else {
            return FilterSupport::Schema;
        };
        if field == ORGANIZATION_FIELD && crm.tags_organizations() {
            return match crm::organization_matches("", condition) {
                Ok(_) => FilterSupport::Accepted,
                Err(e) => FilterSupport::Refused(e.to_string()),
            };
        }
        crm::support(&crm.keys, table, field, condition)
    }
}

impl MongoDataSource {
    /// The plan of a query on the CRM: its collections (those an `organization_id` filter
    /// selects), the filters rewritten to search hashes, the projection; `crm_key_missing`
    /// up front when the query reads an encrypted field without the key.
    async fn crm_plan(
        &self,
        crm: &CrmSettings,
        query: &TableQuery,
    ) -> Result<FindPlan, DataSourceError> {
        let tagging = crm.tags_organizations();
        let collections = self
            .crm_tables(crm)
            .await?
            .remove(&query.table)
            .ok_or_else(|| DataSourceError::UnknownTable(query.table.clone()))?;
        let mut known = self.fields_of(&collections).await?;
        if tagging {
            known.insert(ORGANIZATION_FIELD.to_owned());
        }
        let unknown = |field: &String| DataSourceError::UnknownField {
            table: query.table.clone(),
            field: field.clone(),
        };
        if let Some(f) = query.fields.iter().find(|f| !known.contains(*f)) {
            return Err(unknown(f));
        }
        if !crm.keys.can_decrypt()
            && let Some(field) = crm::first_encrypted(&query.fields)
        {
            return Err(DataSourceError::Decryption {
                field: field.to_owned(),
                error: reporter_ports::ports::DecryptionError::KeyMissing,
            });
        }
        let mut clauses = Vec::new();
        let mut organizations: Option<&FilterCondition> = None;
        for (field, cond) in &query.filters {
            if tagging && field == ORGANIZATION_FIELD {
                organizations = Some(cond);
                continue;
            }
            let (key, cond) = crm::rewrite(&crm.keys, &query.table, field, cond)?;
            if key == *field && !known.contains(field) {
                return Err(unknown(field));
            }
            clauses.extend(condition_clauses(&key, &cond)?);
        }
        let mut chosen = Vec::new();
        for (collection, org) in collections {
            let keep = match organizations {
                Some(cond) => crm::organization_matches(&org, cond)?,
                None => true,
            };
            if keep {
                chosen.push((collection, tagging.then_some(org)));
            }
        }
        Ok(FindPlan {
            collections: chosen,
            filter: all_of(clauses),
            projection: projection(&query.fields, |f| tagging && f == ORGANIZATION_FIELD),
        })
    }
}

/// The filter matching every clause (`{}` when there is none).
fn all_of(clauses: Vec<Document>) -> Document {
    if clauses.is_empty() {
        doc! {}
    } else {
        doc! { "$and": clauses }
    }
}

/// The projection of `fields` but those `skip` names (fields the source adds itself); `_id`
/// only when asked for.
fn projection(fields: &[String], skip: impl Fn(&str) -> bool) -> Document {
    let mut projection = doc! {};
    if !fields.iter().any(|f| f == "_id") {
        projection.insert("_id", 0);
    }
    for f in fields.iter().filter(|f| !skip(f)) {
        projection.insert(f.as_str(), 1);
    }
    projection
}

impl MongoDataSource {
    /// The filter and projection of `query`, after checking its table and fields exist.
    async fn find_spec(&self, query: &TableQuery) -> Result<(Document, Document), DataSourceError> {
        if query.table.starts_with("system.") || self.tables(Some(&query.table)).await?.is_empty() {
            return Err(DataSourceError::UnknownTable(query.table.clone()));
        }
        let known: BTreeSet<String> = self.fields(&query.table).await?.into_iter().collect();
        let unknown = |field: &String| DataSourceError::UnknownField {
            table: query.table.clone(),
            field: field.clone(),
        };
        if let Some(f) = query.fields.iter().find(|f| !known.contains(*f)) {
            return Err(unknown(f));
        }
        if let Some(f) = query.filters.keys().find(|f| !known.contains(*f)) {
            return Err(unknown(f));
        }
        let mut clauses = Vec::new();
        for (field, cond) in &query.filters {
            clauses.extend(condition_clauses(field, cond)?);
        }
        Ok((all_of(clauses), projection(&query.fields, |_| false)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cond(v: Value) -> FilterCondition {
        serde_json::from_value(v).expect("condition")
    }

    #[test]
    fn operators_translate() {
        let c = condition_clauses(
            "x",
            &cond(json!({"eq": [1, "a"], "nin": [null], "gt": [2.5]})),
        )
        .expect("valid");
        assert_eq!(
            c,
            vec![
                doc! { "x": { "$in": [1i64, "a"] } },
                doc! { "x": { "$nin": [Bson::Null] } },
                doc! { "x": { "$gt": 2.5 } },
            ]
        );
        let b = condition_clauses("d", &cond(json!({"between": ["2021-01-01", "2021-12-31"]})))
            .expect("valid");
        assert_eq!(
            b,
            vec![doc! { "d": { "$gte": "2021-01-01", "$lte": "2021-12-31" } }]
        );
        assert!(
            condition_clauses("x", &cond(json!({})))
                .expect("empty")
                .is_empty()
        );
    }

    #[test]
    fn invalid_conditions() {
        for bad in [
            json!({"between": [1]}),
            json!({"between": [1, 2, 3]}),
            json!({"between": [1, "2"]}),
            json!({"between": [true, false]}),
            json!({"gt": [null]}),
            json!({"eq": [[1]]}),
            json!({"nin": [{"a": 1}]}),
        ] {
            assert!(
                matches!(
                    condition_clauses("x", &cond(bad.clone())),
                    Err(DataSourceError::InvalidFilter(_))
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn bson_to_json() {
        assert_eq!(to_json(&Bson::Int32(3)), json!(3));
        assert_eq!(to_json(&Bson::Double(f64::NAN)), Value::Null);
        assert_eq!(
            to_json(&Bson::Document(doc! { "a": [1i64, "b"] })),
            json!({"a": [1, "b"]})
        );
        assert_eq!(
            to_json(&Bson::DateTime(mongodb::bson::DateTime::from_millis(0))),
            json!("1970-01-01 00:00:00 +0000 UTC")
        );
        assert_eq!(
            to_json(&Bson::DateTime(mongodb::bson::DateTime::from_millis(1_500))),
            json!("1970-01-01 00:00:01.5 +0000 UTC")
        );
    }

    #[test]
    fn addressable_keys() {
        assert!(is_addressable("name"));
        assert!(is_addressable("_id"));
        for k in ["", "$x", "a.b"] {
            assert!(!is_addressable(k), "{k}");
        }
    }
}
