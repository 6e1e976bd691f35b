//! The outbox contract suite against MongoDB.
mod common;

use common::with_mongo;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn outbox_contract_suite() {
    with_mongo(|dbs| async move {
        reporter_contract::outbox::run_outbox_suite(|| dbs.store()).await;
    })
    .await;
}
