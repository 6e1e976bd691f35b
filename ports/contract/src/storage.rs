//! Contract suite for [`ObjectStorage`].
//!
//! Every adapter must:
//! - answer `put` with the key it was asked to write (for valid keys) and return the same
//!   bytes and content type from `get`;
//! - overwrite an existing object (bytes and content type);
//! - answer `Ok(None)` for an absent key, and `Ok(())` when deleting one (twice is fine);
//! - reject invalid keys with [`StoreError::Unavailable`] on `put`, `get` and `delete`:
//!   empty, absolute (`/a`), empty segments (`a//b`, `a/`), `.` or `..` segments,
//!   backslashes, NUL and other control characters (see [`INVALID_KEYS`], and
//!   [`reporter_ports::ObjectKey`], the rule they share);
//! - store a 5 MiB object intact;
//! - accept concurrent puts to distinct keys;
//! - pass `check` on a fresh instance.
use bytes::Bytes;
use reporter_ports::StoreError;
use reporter_ports::ports::ObjectStorage;

/// Keys every adapter must reject with [`StoreError::Unavailable`].
pub const INVALID_KEYS: &[&str] = &[
    "",
    "/absolute/key.txt",
    "a//b.txt",
    "trailing/",
    "a/../b.txt",
    "../escape.txt",
    "..",
    "a/./b.txt",
    ".",
    "back\\slash.txt",
    "nul\0byte.txt",
    "tab\there.txt",
    "line\nbreak.txt",
];

/// The object-storage contract: round trips, overwrites, missing objects, deletes, key rules, size, concurrency, readiness. Each check takes `&adapter`.
///
/// `object_storage_contract!(mod <name>, |check| <future>)` emits module `<name>` with one
/// `#[tokio::test]` per check; the future runs `check` on a fresh adapter.
#[macro_export]
macro_rules! object_storage_contract {
    (mod $m:ident, |$check:ident| $run:expr) => {
        $crate::contract_module!(
            $m,
            storage,
            |$check| $run,
            [
                put_get_round_trip,
                overwrite_replaces_bytes_and_type,
                missing_object_is_none,
                delete_is_idempotent,
                invalid_keys_are_rejected,
                large_object_round_trip,
                concurrent_puts_to_distinct_keys,
                check_passes,
            ]
        );
    };
}

pub async fn put_get_round_trip<S: ObjectStorage>(storage: &S) {
    let cases: [(&str, &[u8], &str); 4] = [
        (
            "templates/tenant-a/t1/source.tpl",
            b"<html>{{ bank.accounts }}</html>",
            "text/plain; charset=utf-8",
        ),
        (
            "reports/tenant-a/r1.pdf",
            b"%PDF-1.7 ...",
            "application/pdf",
        ),
        ("flat-key.csv", b"a,b\n1,2\n", "text/csv"),
        ("empty/object.bin", b"", "application/octet-stream"),
    ];
    for (key, bytes, content_type) in cases {
        let stored = storage
            .put(key, Bytes::from_static(bytes), content_type)
            .await
            .unwrap_or_else(|e| panic!("put {key:?} failed: {e}"));
        assert_eq!(
            stored, key,
            "put must answer the requested key for a valid key"
        );
        let got = storage
            .get(&stored)
            .await
            .unwrap_or_else(|e| panic!("get {key:?} failed: {e}"))
            .unwrap_or_else(|| panic!("object {key:?} missing after put"));
        assert_eq!(got.bytes.as_ref(), bytes, "bytes of {key:?}");
        assert_eq!(got.content_type, content_type, "content type of {key:?}");
    }
}

pub async fn overwrite_replaces_bytes_and_type<S: ObjectStorage>(storage: &S) {
    let key = "reports/tenant-a/overwrite.txt";
    storage
        .put(key, Bytes::from_static(b"first version"), "text/plain")
        .await
        .expect("first put");
    storage
        .put(key, Bytes::from_static(b"<p>second</p>"), "text/html")
        .await
        .expect("second put");
    let got = storage.get(key).await.expect("get").expect("present");
    assert_eq!(got.bytes.as_ref(), b"<p>second</p>");
    assert_eq!(got.content_type, "text/html");
}

pub async fn missing_object_is_none<S: ObjectStorage>(storage: &S) {
    assert_eq!(storage.get("never/written.txt").await.expect("get"), None);
    storage
        .put("present/a.txt", Bytes::from_static(b"a"), "text/plain")
        .await
        .expect("put");
    assert_eq!(storage.get("present/b.txt").await.expect("get"), None);
    assert_eq!(storage.get("present").await.expect("get prefix"), None);
}

pub async fn delete_is_idempotent<S: ObjectStorage>(storage: &S) {
    let key = "to-delete/object.txt";
    storage
        .put(key, Bytes::from_static(b"bye"), "text/plain")
        .await
        .expect("put");
    storage.delete(key).await.expect("delete existing");
    assert_eq!(storage.get(key).await.expect("get"), None);
    storage.delete(key).await.expect("delete again");
    storage
        .delete("never/written.txt")
        .await
        .expect("delete never written");
    storage
        .put(key, Bytes::from_static(b"again"), "text/plain")
        .await
        .expect("put after delete");
    let got = storage.get(key).await.expect("get").expect("present");
    assert_eq!(got.bytes.as_ref(), b"again");
}

pub async fn invalid_keys_are_rejected<S: ObjectStorage>(storage: &S) {
    for key in INVALID_KEYS {
        let put = storage
            .put(key, Bytes::from_static(b"x"), "text/plain")
            .await;
        assert!(
            matches!(put, Err(StoreError::Unavailable(_))),
            "put {key:?} must be rejected, got {put:?}"
        );
        let get = storage.get(key).await;
        assert!(
            matches!(get, Err(StoreError::Unavailable(_))),
            "get {key:?} must be rejected, got {get:?}"
        );
        let delete = storage.delete(key).await;
        assert!(
            matches!(delete, Err(StoreError::Unavailable(_))),
            "delete {key:?} must be rejected, got {delete:?}"
        );
    }
}

pub async fn large_object_round_trip<S: ObjectStorage>(storage: &S) {
    let size = 5 * 1024 * 1024;
    let bytes: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
    let bytes = Bytes::from(bytes);
    let key = storage
        .put(
            "large/five-mib.bin",
            bytes.clone(),
            "application/octet-stream",
        )
        .await
        .expect("put 5 MiB");
    let got = storage.get(&key).await.expect("get").expect("present");
    assert_eq!(got.bytes.len(), size);
    assert!(got.bytes == bytes, "5 MiB object came back altered");
}

pub async fn concurrent_puts_to_distinct_keys<S: ObjectStorage>(storage: &S) {
    let n = 16;
    let puts = (0..n).map(|i| async move {
        let key = format!("concurrent/dir-{}/object-{i}.txt", i % 3);
        let body = Bytes::from(format!("body {i}"));
        let stored = storage
            .put(&key, body, "text/plain")
            .await
            .unwrap_or_else(|e| panic!("concurrent put {key:?} failed: {e}"));
        assert_eq!(stored, key);
    });
    futures_util::future::join_all(puts).await;
    for i in 0..n {
        let key = format!("concurrent/dir-{}/object-{i}.txt", i % 3);
        let got = storage.get(&key).await.expect("get").expect("present");
        assert_eq!(got.bytes, Bytes::from(format!("body {i}")), "{key}");
    }
}

pub async fn check_passes<S: ObjectStorage>(storage: &S) {
    storage.check().await.expect("check on a fresh instance");
}
