//! The idempotency contract suite against MongoDB, and the TTL index it relies on.
mod common;

use common::with_mongo;
use futures_util::TryStreamExt;
use mongodb::bson::Document;
use reporter_adapter_mongo::{
    IDEMPOTENCY_COLLECTION, IDEMPOTENCY_TTL_INDEX, MongoIdempotencyStore,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn idempotency_contract_suite() {
    with_mongo(|dbs| async move {
        reporter_contract::idempotency::run_idempotency_suite(|| {
            let dbs = dbs.clone();
            async move {
                let db = dbs.client.database(&dbs.fresh_name());
                MongoIdempotencyStore::new(&db)
                    .await
                    .expect("MongoIdempotencyStore::new")
            }
        })
        .await;
    })
    .await;
}

#[tokio::test]
async fn idempotency_ttl_index_is_present() {
    with_mongo(|dbs| async move {
        let db = dbs.client.database(&dbs.fresh_name());
        MongoIdempotencyStore::new(&db).await.expect("store");
        // Creating it twice is fine (every process start does).
        MongoIdempotencyStore::new(&db).await.expect("store again");
        let indexes: Vec<Document> = db
            .collection::<Document>(IDEMPOTENCY_COLLECTION)
            .list_indexes()
            .await
            .expect("list indexes")
            .try_collect::<Vec<_>>()
            .await
            .expect("indexes")
            .into_iter()
            .map(|m| {
                let mut d = Document::new();
                d.insert("name", m.options.as_ref().and_then(|o| o.name.clone()));
                d.insert(
                    "ttl",
                    m.options
                        .as_ref()
                        .and_then(|o| o.expire_after)
                        .map(|d| d.as_secs() as i64),
                );
                d.insert("keys", m.keys);
                d
            })
            .collect();
        let ttl = indexes
            .iter()
            .find(|d| d.get_str("name").ok() == Some(IDEMPOTENCY_TTL_INDEX))
            .unwrap_or_else(|| panic!("TTL index missing: {indexes:?}"));
        assert_eq!(
            ttl.get_i64("ttl").ok(),
            Some(0),
            "expireAfterSeconds 0: {ttl:?}"
        );
    })
    .await;
}
