//! S3ObjectStorage against an S3-compatible server: `S3_ENDPOINT`, e.g. the moto server that
//! `scripts/moto.sh start` runs at `http://127.0.0.1:5000`. Each test creates its own bucket
//! (moto accepts any credentials and unsigned bucket requests) and drops it afterwards. The
//! in-memory and unreachable-endpoint tests need no server.
use bytes::Bytes;
use futures_util::{StreamExt, TryStreamExt};
use object_store::ObjectStore;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path;
use reporter_adapter_s3::{DEFAULT_CONTENT_TYPE, S3Config, S3ObjectStorage};
use reporter_contract::services::{service_url, unique_name};
use reporter_ports::StoreError;
use reporter_ports::ports::ObjectStorage;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn config(endpoint: &str, bucket: &str) -> S3Config {
    let mut config = S3Config::new(bucket);
    config.endpoint = Some(endpoint.to_owned());
    config.access_key_id = Some("testing".into());
    config.secret_access_key = Some("testing".into());
    config.allow_http = true;
    config
}

/// A raw client on the same bucket, to look behind the adapter.
fn raw(endpoint: &str, bucket: &str) -> AmazonS3 {
    AmazonS3Builder::new()
        .with_bucket_name(bucket)
        .with_region("us-east-1")
        .with_endpoint(endpoint)
        .with_access_key_id("testing")
        .with_secret_access_key("testing")
        .with_allow_http(true)
        .build()
        .expect("raw client")
}

/// A bucket name unique to this run (S3 names: lower case, digits and `-`).
fn bucket_name() -> String {
    unique_name("reporter").replace('_', "-")
}

async fn create_bucket(endpoint: &str, bucket: &str) {
    let response = reqwest::Client::new()
        .put(format!("{endpoint}/{bucket}"))
        .send()
        .await
        .expect("create bucket request");
    assert!(
        response.status().is_success(),
        "create bucket: {}",
        response.status()
    );
}

async fn drop_bucket(endpoint: &str, bucket: &str) {
    let store = raw(endpoint, bucket);
    let keys = store.list(None).map_ok(|m| m.location).boxed();
    store
        .delete_stream(keys)
        .try_collect::<Vec<Path>>()
        .await
        .expect("empty bucket");
    let response = reqwest::Client::new()
        .delete(format!("{endpoint}/{bucket}"))
        .send()
        .await
        .expect("delete bucket request");
    assert!(
        response.status().is_success(),
        "delete bucket: {}",
        response.status()
    );
}

/// Runs `body` with the endpoint and a fresh bucket, dropped afterwards; skips when
/// `S3_ENDPOINT` is unset.
async fn with_bucket<F, Fut>(body: F)
where
    F: FnOnce(String, String) -> Fut,
    Fut: Future<Output = ()>,
{
    let Some(endpoint) = service_url("S3_ENDPOINT", "an S3-compatible server") else {
        return;
    };
    let endpoint = endpoint.trim_end_matches('/').to_owned();
    let bucket = bucket_name();
    create_bucket(&endpoint, &bucket).await;
    body(endpoint.clone(), bucket.clone()).await;
    drop_bucket(&endpoint, &bucket).await;
}

reporter_contract::object_storage_contract!(mod contract, |check| with_bucket(
    |endpoint, bucket| async move {
        check(&S3ObjectStorage::new(config(&endpoint, &bucket)).expect("storage")).await;
    }
));

/// A storage writing under the key prefix `/tenant-a/`.
fn prefixed(endpoint: &str, bucket: &str) -> S3ObjectStorage {
    let mut c = config(endpoint, bucket);
    c.key_prefix = Some("/tenant-a/".to_owned());
    S3ObjectStorage::new(c).expect("storage")
}

reporter_contract::object_storage_contract!(mod contract_under_a_key_prefix, |check| with_bucket(
    |endpoint, bucket| async move {
        check(&prefixed(&endpoint, &bucket)).await;
    }
));

#[tokio::test]
async fn a_key_prefix_is_invisible_to_callers() {
    with_bucket(|endpoint, bucket| async move {
        let storage = prefixed(&endpoint, &bucket);
        let key = storage
            .put("reports/r1.csv", Bytes::from_static(b"a,b\n"), "text/csv")
            .await
            .expect("put");
        assert_eq!(key, "reports/r1.csv", "the prefix is invisible to callers");
        let raw = raw(&endpoint, &bucket);
        let stored = raw
            .get(&Path::from("tenant-a/reports/r1.csv"))
            .await
            .expect("stored under the prefix");
        assert_eq!(stored.bytes().await.expect("bytes").as_ref(), b"a,b\n");
        let unprefixed = S3ObjectStorage::new(config(&endpoint, &bucket)).expect("storage");
        assert_eq!(unprefixed.get("reports/r1.csv").await.expect("get"), None);
    })
    .await;
}

#[tokio::test]
async fn content_type_is_the_objects_metadata() {
    with_bucket(|endpoint, bucket| async move {
        let storage = S3ObjectStorage::new(config(&endpoint, &bucket)).expect("storage");
        storage
            .put(
                "r.html",
                Bytes::from_static(b"<p>"),
                "text/html; charset=utf-8",
            )
            .await
            .expect("put");
        let response = reqwest::Client::new()
            .get(format!("{endpoint}/{bucket}/r.html"))
            .send()
            .await
            .expect("plain GET");
        assert_eq!(
            response
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok()),
            Some("text/html; charset=utf-8")
        );

        // Written by another tool without a content type: whatever the server answers.
        raw(&endpoint, &bucket)
            .put(&Path::from("bare.bin"), Bytes::from_static(b"x").into())
            .await
            .expect("raw put");
        let bare = storage
            .get("bare.bin")
            .await
            .expect("get")
            .expect("present");
        assert!(!bare.content_type.is_empty(), "{bare:?}");
        assert_eq!(bare.bytes.as_ref(), b"x");
    })
    .await;
}

#[tokio::test]
async fn check_fails_for_a_missing_bucket() {
    let Some(endpoint) = service_url("S3_ENDPOINT", "an S3-compatible server") else {
        return;
    };
    let mut c = config(endpoint.trim_end_matches('/'), &bucket_name());
    c.max_retries = 0;
    let storage = S3ObjectStorage::new(c).expect("storage");
    let err = storage.check().await.expect_err("no such bucket");
    assert!(matches!(err, StoreError::Unavailable(_)), "{err:?}");
    let put = storage
        .put("k", Bytes::from_static(b"x"), "text/plain")
        .await;
    assert!(matches!(put, Err(StoreError::Unavailable(_))), "{put:?}");
}

#[tokio::test]
async fn an_unreachable_endpoint_is_unavailable_quickly() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let mut c = config(&format!("http://127.0.0.1:{port}"), "bucket");
    c.max_retries = 0;
    c.connect_timeout = Duration::from_millis(500);
    c.request_timeout = Duration::from_secs(2);
    let storage = S3ObjectStorage::new(c).expect("storage");
    let started = Instant::now();
    assert!(matches!(
        storage.check().await,
        Err(StoreError::Unavailable(_))
    ));
    assert!(matches!(
        storage.get("k").await,
        Err(StoreError::Unavailable(_))
    ));
    assert!(matches!(
        storage.delete("k").await,
        Err(StoreError::Unavailable(_))
    ));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

reporter_contract::object_storage_contract!(mod contract_over_any_object_store_backend, |check| async {
    let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
    check(&S3ObjectStorage::from_store(store, None).expect("storage")).await;
});

#[tokio::test]
async fn an_object_without_a_content_type_reads_as_the_default() {
    let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
    store
        .put(&Path::from("bare"), Bytes::from_static(b"x").into())
        .await
        .expect("raw put");
    let storage = S3ObjectStorage::from_store(store, None).expect("storage");
    let bare = storage.get("bare").await.expect("get").expect("present");
    assert_eq!(bare.content_type, DEFAULT_CONTENT_TYPE);
}
