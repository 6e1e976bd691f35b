use crate::error::StoreError;
use async_trait::async_trait;
use bytes::Bytes;

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
    /// Reads an object; `Ok(None)` when absent.
    async fn get(&self, key: &str) -> Result<Option<StoredObject>, StoreError>;
    /// Deletes an object; deleting an absent object succeeds.
    async fn delete(&self, key: &str) -> Result<(), StoreError>;
    /// Readiness probe.
    async fn check(&self) -> Result<(), StoreError>;
}
