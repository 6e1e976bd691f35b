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
//! - pass `check` on a fresh instance;
//! - when it writes objects in pieces (`begin_put` answers an upload): store the pieces as
//!   one object (13 MiB in pieces of unequal size, past S3's 5 MiB part minimum), keep the
//!   key as it was until commit, and leave it as it was after an abort or a drop; refuse
//!   invalid keys. (A failed commit cannot be provoked from here; each adapter's commit
//!   leaves the key as it was by construction: a rename, a multipart completion, a GridFS
//!   `files` document written last.)
//! - sweep what a crashed writer left (`sweep_abandoned`): an upload neither committed nor
//!   aborted nor dropped (forgotten, as a killed process leaves it) is removed once older
//!   than the cutoff, counted once; a younger upload, committed objects and the key it was
//!   writing are left as they were.
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
                upload_in_pieces_round_trips,
                upload_is_invisible_until_commit,
                aborted_or_dropped_upload_leaves_the_key,
                upload_refuses_invalid_keys,
                abandoned_uploads_are_swept_after_the_cutoff,
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

/// Begins a piecewise write of `key`; `None` for a storage that takes whole objects only
/// (it has nothing more to check in the upload checks).
async fn begin<S: ObjectStorage>(
    storage: &S,
    key: &str,
    content_type: &str,
) -> Option<Box<dyn reporter_ports::ports::ObjectUpload>> {
    storage
        .begin_put(key, content_type)
        .await
        .unwrap_or_else(|e| panic!("begin_put {key:?} failed: {e}"))
}

/// Pieces of 1 byte, 3 MiB + 7, 7 MiB and 3 MiB - 1: past S3's 5 MiB part minimum, with
/// parts that do not fall on a piece boundary.
fn pieces() -> Vec<Bytes> {
    [1, 3 * 1024 * 1024 + 7, 7 * 1024 * 1024, 3 * 1024 * 1024 - 1]
        .iter()
        .enumerate()
        .map(|(n, len)| {
            Bytes::from(
                (0..*len)
                    .map(|i| ((i * 7 + n * 13) % 251) as u8)
                    .collect::<Vec<u8>>(),
            )
        })
        .collect()
}

pub async fn upload_in_pieces_round_trips<S: ObjectStorage>(storage: &S) {
    let key = "reports/tenant-a/pieces.csv";
    let Some(mut upload) = begin(storage, key, "text/csv").await else {
        return;
    };
    let pieces = pieces();
    for piece in &pieces {
        upload.write(piece.clone()).await.expect("write a piece");
    }
    let stored = upload.commit().await.expect("commit");
    assert_eq!(stored, key, "commit must answer the requested key");
    let got = storage.get(key).await.expect("get").expect("present");
    let whole: Vec<u8> = pieces.concat();
    assert_eq!(got.bytes.len(), whole.len());
    assert!(got.bytes == whole, "the pieces came back altered");
    assert_eq!(got.content_type, "text/csv");
    // An upload of nothing is an empty object.
    let empty = "reports/tenant-a/empty.csv";
    let upload = begin(storage, empty, "text/csv").await.expect("an upload");
    upload.commit().await.expect("commit empty");
    let got = storage.get(empty).await.expect("get").expect("present");
    assert!(got.bytes.is_empty());
}

pub async fn upload_is_invisible_until_commit<S: ObjectStorage>(storage: &S) {
    let (old, new) = (
        "reports/tenant-a/replaced.txt",
        "reports/tenant-a/fresh.txt",
    );
    storage
        .put(old, Bytes::from_static(b"old version"), "text/plain")
        .await
        .expect("put");
    let Some(mut replacing) = begin(storage, old, "text/csv").await else {
        return;
    };
    let mut fresh = begin(storage, new, "text/csv").await.expect("an upload");
    for piece in pieces() {
        replacing.write(piece.clone()).await.expect("write");
        fresh.write(piece).await.expect("write");
    }
    let got = storage.get(old).await.expect("get").expect("present");
    assert_eq!(got.bytes.as_ref(), b"old version", "visible before commit");
    assert_eq!(got.content_type, "text/plain");
    assert_eq!(
        storage.get(new).await.expect("get"),
        None,
        "visible before commit"
    );
    replacing.commit().await.expect("commit");
    fresh.commit().await.expect("commit");
    let whole = pieces().concat();
    for key in [old, new] {
        let got = storage.get(key).await.expect("get").expect("present");
        assert!(got.bytes == whole, "{key} is not the new object");
        assert_eq!(got.content_type, "text/csv");
    }
}

pub async fn aborted_or_dropped_upload_leaves_the_key<S: ObjectStorage>(storage: &S) {
    let (kept, absent) = ("reports/tenant-a/kept.txt", "reports/tenant-a/absent.txt");
    storage
        .put(kept, Bytes::from_static(b"kept"), "text/plain")
        .await
        .expect("put");
    for key in [kept, absent] {
        let Some(mut aborted) = begin(storage, key, "text/csv").await else {
            return;
        };
        let mut dropped = begin(storage, key, "text/csv").await.expect("an upload");
        for piece in pieces() {
            aborted.write(piece.clone()).await.expect("write");
            dropped.write(piece).await.expect("write");
        }
        aborted.abort().await;
        drop(dropped);
    }
    let got = storage.get(kept).await.expect("get").expect("present");
    assert_eq!(got.bytes.as_ref(), b"kept");
    assert_eq!(got.content_type, "text/plain");
    assert_eq!(storage.get(absent).await.expect("get"), None);
    // The key still takes a new object.
    let mut upload = begin(storage, absent, "text/plain")
        .await
        .expect("an upload");
    upload
        .write(Bytes::from_static(b"after"))
        .await
        .expect("write");
    upload.commit().await.expect("commit");
    let got = storage.get(absent).await.expect("get").expect("present");
    assert_eq!(got.bytes.as_ref(), b"after");
}

pub async fn upload_refuses_invalid_keys<S: ObjectStorage>(storage: &S) {
    if begin(storage, "valid/key.txt", "text/plain")
        .await
        .is_none()
    {
        return;
    }
    for key in INVALID_KEYS {
        let began = storage.begin_put(key, "text/plain").await;
        assert!(
            matches!(began, Err(StoreError::Unavailable(_))),
            "begin_put {key:?} must be rejected, got {:?}",
            began.as_ref().map(|u| u.is_some())
        );
    }
}

/// A piece of 600 KiB: past a GridFS chunk (255 KiB), so an abandoned GridFS upload has
/// chunks in the store, under an S3 part (5 MiB).
fn abandoned_piece() -> Bytes {
    Bytes::from(vec![b'x'; 600 * 1024])
}

/// Uploads `sweep_abandoned(older_than)` removed (the storage sweeps: checked first).
async fn sweep<S: ObjectStorage>(storage: &S, older_than: std::time::Duration) -> u64 {
    storage
        .sweep_abandoned(older_than)
        .await
        .expect("sweep")
        .expect("a storage that sweeps")
        .removed
}

pub async fn abandoned_uploads_are_swept_after_the_cutoff<S: ObjectStorage>(storage: &S) {
    use std::time::Duration;
    let (committed, crashed, writing) = (
        "reports/tenant-a/committed.txt",
        "reports/tenant-a/crashed.csv",
        "reports/tenant-a/writing.csv",
    );
    storage
        .put(committed, Bytes::from_static(b"committed"), "text/plain")
        .await
        .expect("put");
    storage
        .put(
            crashed,
            Bytes::from_static(b"before the crash"),
            "text/plain",
        )
        .await
        .expect("put");
    let probe = storage.sweep_abandoned(Duration::from_secs(3600)).await;
    // `None`: nothing a sweep could find (whole objects only, or an abandoned upload lives
    // in the writer's memory).
    if probe.expect("sweep").is_none() {
        return;
    }
    let mut abandoned = begin(storage, crashed, "text/csv")
        .await
        .expect("a storage that sweeps writes in pieces");
    abandoned.write(abandoned_piece()).await.expect("write");
    // A killed writer neither commits, aborts nor drops its upload.
    std::mem::forget(abandoned);
    // A sweep sees it young (an adapter may count an upload's age from the first sweep that
    // saw it too: S3's start times come from another clock).
    assert_eq!(
        sweep(storage, Duration::from_secs(3600)).await,
        0,
        "an upload younger than the cutoff was removed"
    );
    tokio::time::sleep(Duration::from_secs(4)).await;
    let mut in_progress = begin(storage, writing, "text/csv")
        .await
        .expect("an upload");
    in_progress.write(abandoned_piece()).await.expect("write");
    assert_eq!(
        sweep(storage, Duration::from_secs(3600)).await,
        0,
        "an upload younger than the cutoff was removed"
    );
    // The abandoned upload is 4 s old, the one in progress just started (GridFS measures
    // in whole seconds).
    assert_eq!(
        sweep(storage, Duration::from_secs(2)).await,
        1,
        "the abandoned upload, once"
    );
    in_progress
        .write(Bytes::from_static(b"end"))
        .await
        .expect("the upload in progress goes on");
    in_progress.commit().await.expect("and commits");
    assert_eq!(
        sweep(storage, Duration::ZERO).await,
        0,
        "nothing abandoned is left; objects are not leftovers"
    );
    let got = storage.get(committed).await.expect("get").expect("present");
    assert_eq!(got.bytes.as_ref(), b"committed");
    let got = storage.get(crashed).await.expect("get").expect("present");
    assert_eq!(
        got.bytes.as_ref(),
        b"before the crash",
        "the crash changed nothing"
    );
    let got = storage.get(writing).await.expect("get").expect("present");
    let mut whole = abandoned_piece().to_vec();
    whole.extend_from_slice(b"end");
    assert!(got.bytes == whole, "the upload in progress was damaged");
}
