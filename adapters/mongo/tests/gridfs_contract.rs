//! The object storage contract suite against GridFS.
mod common;

use bytes::Bytes;
use common::with_mongo;
use reporter_adapter_mongo::GridFsStorage;
use reporter_ports::ports::ObjectStorage;

reporter_contract::object_storage_contract!(mod object_storage, |check| with_mongo(
    |dbs| async move {
        check(&GridFsStorage::new(dbs.client.database(&dbs.fresh_name()))).await;
    }
));

/// Concurrent overwrites of one key leave exactly one stored version, readable.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_overwrites_leave_one_version() {
    with_mongo(|dbs| async move {
        let db = dbs.client.database(&dbs.fresh_name());
        let storage = GridFsStorage::new(db.clone());
        let puts = (0..8).map(|i| {
            let storage = storage.clone();
            tokio::spawn(async move {
                storage
                    .put("same/key.txt", Bytes::from(format!("v{i}")), "text/plain")
                    .await
            })
        });
        for p in futures_util::future::join_all(puts).await {
            p.expect("task").expect("put");
        }
        let got = storage
            .get("same/key.txt")
            .await
            .expect("get")
            .expect("present");
        assert!(got.bytes.starts_with(b"v"), "{:?}", got.bytes);
        let files = db
            .collection::<mongodb::bson::Document>("reporter_objects.files")
            .count_documents(mongodb::bson::doc! { "filename": "same/key.txt" })
            .await
            .expect("count");
        assert_eq!(files, 1, "older versions deleted");
    })
    .await;
}
