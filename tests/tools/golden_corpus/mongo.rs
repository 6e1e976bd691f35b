//! Loading a case's tables into the MongoDB stand-in and reading them through
//! `MongoDataSource`: one database per case and data source (nothing is dropped while the
//! corpus runs; see `finish`), one collection per table, documents in row order. Values go
//! as BSON of the column's type: NUMERIC as Decimal128, UUID as a UUID binary, dates and
//! times as BSON dates, JSONB as embedded documents and arrays, other values as their JSON
//! type (a column without one type keeps each value's own).
use super::columns::{ColType, go_time};
use super::{Loader, Table};
use mongodb::bson::{self, Binary, Bson, DateTime as BsonDate, Decimal128, Document};
use reporter_ports::datasource::DataSourceId;
use reporter_ports::ports::DataSource;
use serde_json::Value;
use std::sync::Arc;

pub struct Mongo {
    client: mongodb::Client,
    prefix: String,
    created: usize,
}

impl Mongo {
    pub async fn connect(uri: &str) -> Result<Self, String> {
        let client = mongodb::Client::with_uri_str(uri)
            .await
            .map_err(|e| e.to_string())?;
        Ok(Self {
            client,
            prefix: reporter_contract::services::unique_name("golden_mongo"),
            created: 0,
        })
    }
}

fn natural(v: &Value) -> Result<Bson, String> {
    bson::to_bson(v).map_err(|e| e.to_string())
}

fn date(s: &str) -> Result<Bson, String> {
    let t = go_time(s)
        .or_else(|| {
            chrono::NaiveDate::parse_from_str(s.get(..10)?, "%Y-%m-%d")
                .ok()?
                .and_hms_opt(0, 0, 0)
                .map(|t| t.and_utc())
        })
        .ok_or_else(|| format!("{s:?} is not a time"))?;
    Ok(Bson::DateTime(BsonDate::from_millis(t.timestamp_millis())))
}

/// `value` as BSON of a column of type `ty`.
fn to_bson(value: &Value, ty: Option<ColType>) -> Result<Bson, String> {
    let Value::String(s) = value else {
        return natural(value);
    };
    match ty {
        Some(ColType::Numeric) => s
            .parse::<Decimal128>()
            .map(Bson::Decimal128)
            .map_err(|e| format!("{s:?}: {e}")),
        Some(ColType::Uuid) => bson::Uuid::parse_str(s)
            .map(|u| Bson::Binary(Binary::from_uuid(u)))
            .map_err(|e| format!("{s:?}: {e}")),
        Some(ColType::Date | ColType::Timestamp | ColType::TimestampTz) => date(s),
        _ => natural(value),
    }
}

fn document(t: &Table, row: &serde_json::Map<String, Value>) -> Result<Document, String> {
    let mut d = Document::new();
    for (k, v) in row {
        let ty = t.types.get(k).copied().flatten();
        d.insert(k.clone(), to_bson(v, ty)?);
    }
    Ok(d)
}

impl Loader for Mongo {
    async fn load(&mut self, ds: &str, tables: &[Table]) -> Result<Arc<dyn DataSource>, String> {
        self.created += 1;
        let db = self
            .client
            .database(&format!("{}_{}", self.prefix, self.created));
        for t in tables {
            let docs = t
                .rows
                .iter()
                .map(|r| document(t, r))
                .collect::<Result<Vec<_>, _>>()?;
            if docs.is_empty() {
                db.create_collection(&t.name)
                    .await
                    .map_err(|e| e.to_string())?;
            } else {
                db.collection::<Document>(&t.name)
                    .insert_many(docs)
                    .await
                    .map_err(|e| e.to_string())?;
            }
        }
        let id = DataSourceId::parse(ds).ok_or("data source id")?;
        Ok(Arc::new(reporter_adapter_mongo::MongoDataSource::new(
            id, db,
        )))
    }

    /// Drops the databases, unless `REPORTER_E2E_KEEP_DATABASES=1` (the stand-in of CI's
    /// MongoDB pass is thrown away; its dropDatabase can stall while other tests run), and
    /// waits at most a few seconds for that.
    async fn finish(self) {
        if std::env::var("REPORTER_E2E_KEEP_DATABASES").as_deref() == Ok("1") {
            return;
        }
        let drops = async {
            for i in 1..=self.created {
                let _ = self
                    .client
                    .database(&format!("{}_{i}", self.prefix))
                    .drop()
                    .await;
            }
        };
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), drops).await;
    }
}
