//! The object storage contract suite against GridFS.
use crate::common::with_mongo;
use bytes::Bytes;
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

/// An aborted or dropped upload leaves no chunk behind (only the committed file's remain),
/// and an overwrite through an upload leaves one version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_uploads_leave_no_chunks() {
    with_mongo(|dbs| async move {
        let db = dbs.client.database(&dbs.fresh_name());
        let storage = GridFsStorage::new(db.clone());
        let piece = Bytes::from(vec![b'x'; 600 * 1024]);
        for commit in [true, true, false, false] {
            let mut upload = storage
                .begin_put("k/artifact.csv", "text/csv")
                .await
                .expect("begin")
                .expect("GridFS writes in pieces");
            upload.write(piece.clone()).await.expect("write");
            upload.write(piece.clone()).await.expect("write");
            if commit {
                upload.commit().await.expect("commit");
            } else {
                drop(upload);
            }
        }
        let mut aborted = storage
            .begin_put("k/artifact.csv", "text/csv")
            .await
            .expect("begin")
            .expect("an upload");
        aborted.write(piece.clone()).await.expect("write");
        aborted.abort().await;
        let count = |collection: &'static str| {
            let db = db.clone();
            async move {
                db.collection::<mongodb::bson::Document>(collection)
                    .count_documents(mongodb::bson::doc! {})
                    .await
                    .expect("count")
            }
        };
        assert_eq!(count("reporter_objects.files").await, 1, "one version");
        // 1.2 MB in 255 KiB chunks: 5 chunks of the one file. A dropped upload's chunks are
        // deleted by a task the driver spawns: a moment later.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while count("reporter_objects.chunks").await != 5 && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        assert_eq!(
            count("reporter_objects.chunks").await,
            5,
            "chunks left behind"
        );
        let got = storage
            .get("k/artifact.csv")
            .await
            .expect("get")
            .expect("present");
        assert_eq!(got.bytes.len(), 2 * piece.len());
    })
    .await;
}
