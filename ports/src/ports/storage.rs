use crate::error::StoreError;
use async_trait::async_trait;
use bytes::Bytes;
use std::time::Duration;

/// A stored object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredObject {
    /// Content.
    pub bytes: Bytes,
    /// Content type recorded at write.
    pub content_type: String,
}

/// Object storage for template sources and report artifacts.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait ObjectStorage: Send + Sync {
    /// Writes (or overwrites) the object and answers the key exactly as stored. Callers MUST
    /// record the returned key, not the one they asked for.
    async fn put(&self, key: &str, bytes: Bytes, content_type: &str) -> Result<String, StoreError>;
    /// Starts writing the object a piece at a time ([`ObjectUpload`]), so the writer never
    /// holds it whole. `Ok(None)` when this storage only takes whole objects: the caller
    /// gathers the pieces and calls [`put`](Self::put). The default takes whole objects.
    async fn begin_put(
        &self,
        key: &str,
        content_type: &str,
    ) -> Result<Option<Box<dyn ObjectUpload>>, StoreError> {
        let _ = (key, content_type);
        Ok(None)
    }
    /// Reads an object; `Ok(None)` when absent.
    async fn get(&self, key: &str) -> Result<Option<StoredObject>, StoreError>;
    /// Deletes an object; deleting an absent object succeeds.
    async fn delete(&self, key: &str) -> Result<(), StoreError>;
    /// Readiness probe.
    async fn check(&self) -> Result<(), StoreError>;
    /// Removes what uploads abandoned by a crashed writer left behind (a writer killed
    /// between [`begin_put`](Self::begin_put) and `commit`/`abort` never cleans up): hidden
    /// temporary files, incomplete multipart uploads, chunks without a file.
    ///
    /// MUST remove only leftovers older than `older_than` (by the adapter's own measure of
    /// an upload's age: its start, or its last write, documented on each adapter; an adapter
    /// MAY also wait until an earlier sweep saw the leftover `older_than` ago), and MUST
    /// NOT touch committed objects nor an upload younger than that: callers pick
    /// `older_than` longer than any write can take. Answers how many abandoned uploads were
    /// removed, or `Ok(None)` when this storage leaves nothing a sweep could find (it takes
    /// whole objects only, or an abandoned upload lives only in the writer's memory, or the
    /// backend expires it by itself). The default answers `Ok(None)`.
    async fn sweep_abandoned(
        &self,
        older_than: Duration,
    ) -> Result<Option<SweepReport>, StoreError> {
        let _ = older_than;
        Ok(None)
    }
}

/// What one [`ObjectStorage::sweep_abandoned`] removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Abandoned uploads removed (each counted once, whatever it was made of).
    pub removed: u64,
}

/// An object being written a piece at a time ([`ObjectStorage::begin_put`]).
///
/// Implementations MUST keep the object invisible until [`commit`](Self::commit): before it,
/// readers see the key's previous object (or none), after it the whole new one, never a
/// part. [`abort`](Self::abort), or dropping the upload uncommitted, MUST leave the key as it
/// was; what an abandoned upload wrote is removed (by `abort` at once; after a drop, as soon
/// as the adapter can).
#[async_trait]
pub trait ObjectUpload: Send {
    /// Appends `piece` to the object.
    async fn write(&mut self, piece: Bytes) -> Result<(), StoreError>;
    /// Makes the whole object visible under its key (replacing an older one) and answers
    /// the key exactly as stored, as [`ObjectStorage::put`] does.
    async fn commit(self: Box<Self>) -> Result<String, StoreError>;
    /// Discards what was written; the key keeps what it held before.
    async fn abort(self: Box<Self>);
}
