//! Shared helpers of the MongoDB integration tests: the server comes from `MONGODB_URI`
//! (skipped with a printed reason when unset, unless `REPORTER_REQUIRE_SERVICES=1`), and every
//! test works in databases of its own that are dropped at the end, also when it fails.
#![allow(dead_code)]
use futures_util::FutureExt;
use mongodb::Client;
use reporter_adapter_mongo::{MongoStore, MongoStoreConfig, MongoTenantRouter};
use reporter_contract::services::{service_url, unique_name};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};

/// Fresh databases on one server, remembered so they can be dropped.
#[derive(Clone)]
pub struct Dbs {
    pub uri: String,
    pub client: Client,
    names: Arc<Mutex<Vec<String>>>,
}

impl Dbs {
    /// A fresh database name (`rpt_<uuid>`), dropped at the end of the test.
    pub fn fresh_name(&self) -> String {
        let name = unique_name("rpt");
        self.names.lock().expect("names lock").push(name.clone());
        name
    }

    /// A store over a fresh database, indexes created.
    pub async fn store(&self) -> MongoStore {
        self.store_with(MongoStoreConfig::default()).await
    }

    /// A store over a fresh database with `config`.
    pub async fn store_with(&self, config: MongoStoreConfig) -> MongoStore {
        let name = self.fresh_name();
        MongoStore::from_client(self.client.clone(), &name, config)
            .await
            .expect("MongoStore::from_client")
    }

    /// A database-per-tenant router whose databases (registry and tenants) all start with a
    /// fresh name, dropped at the end of the test.
    ///
    /// The router keeps the first 20 characters of a prefix (so tenant database names stay
    /// under MongoDB's 64 bytes): the name is `rpt_` and 16 random hex digits, unique within
    /// those 20. A `fresh_name` (`rpt_` and a UUIDv7) is not: its first 16 digits are mostly
    /// the millisecond, so two routers made in one millisecond shared their tenant databases
    /// (and one test saw another's deadlines).
    pub fn router(&self) -> MongoTenantRouter {
        let random = uuid::Uuid::new_v4().simple().to_string();
        let prefix = format!("rpt_{}", &random[..16]);
        self.names.lock().expect("names lock").push(prefix.clone());
        MongoTenantRouter::new(
            self.client.clone(),
            &prefix,
            &prefix,
            MongoStoreConfig::default(),
        )
    }

    /// Drops every database named by [`Dbs::fresh_name`] and every database whose name
    /// starts with one (a router's tenant databases).
    async fn drop_all(&self) {
        let names: Vec<String> = self.names.lock().expect("names lock").drain(..).collect();
        let existing = self.client.list_database_names().await.unwrap_or_default();
        for db in existing
            .iter()
            .filter(|db| names.iter().any(|n| db.starts_with(n.as_str())))
        {
            if let Err(e) = self.client.database(db).drop().await {
                eprintln!("could not drop test database {db}: {e}");
            }
        }
    }
}

/// Runs `body` with fresh databases on the server of `MONGODB_URI`, then drops them (also
/// when `body` panics, which is re-raised). Returns without running when the server is not
/// configured.
pub async fn with_mongo<F, Fut>(body: F)
where
    F: FnOnce(Dbs) -> Fut,
    Fut: Future<Output = ()>,
{
    let Some(uri) = service_url("MONGODB_URI", "MongoDB") else {
        return;
    };
    let client = Client::with_uri_str(&uri).await.expect("MongoDB client");
    let dbs = Dbs {
        uri,
        client,
        names: Arc::new(Mutex::new(Vec::new())),
    };
    let outcome = AssertUnwindSafe(body(dbs.clone())).catch_unwind().await;
    dbs.drop_all().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}
