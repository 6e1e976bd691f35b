//! The store contract suite against MongoDB.
mod common;

use common::with_mongo;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn store_contract_suite() {
    with_mongo(|dbs| async move {
        reporter_contract::store::run_store_suite(|| dbs.store()).await;
    })
    .await;
}
