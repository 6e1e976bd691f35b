//! [`MemoryObjectStorage`].
use async_trait::async_trait;
use bytes::Bytes;
use reporter_ports::StoreError;
use reporter_ports::ports::{ObjectStorage, StoredObject};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

/// True when `key` is an acceptable object key: not empty, no leading `/`, no backslash, no NUL,
/// and no empty, `.` or `..` segment between `/` separators.
pub fn is_valid_object_key(key: &str) -> bool {
    !key.is_empty()
        && !key.starts_with('/')
        && !key.contains('\\')
        && !key.contains('\0')
        && key
            .split('/')
            .all(|seg| !seg.is_empty() && seg != "." && seg != "..")
}

/// In-memory [`ObjectStorage`].
///
/// - `put` stores the object under the key exactly as given and answers that key; an invalid
///   key (see [`is_valid_object_key`]) is refused with
///   `StoreError::Unavailable("invalid object key")` and nothing is stored.
/// - `get` of an invalid key answers `Ok(None)` (it cannot exist); `delete` of an invalid or
///   absent key succeeds.
/// - `check` always succeeds (unless the lock is poisoned).
#[derive(Clone, Default)]
pub struct MemoryObjectStorage {
    inner: Arc<Mutex<HashMap<String, StoredObject>>>,
}

impl fmt::Debug for MemoryObjectStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryObjectStorage")
            .finish_non_exhaustive()
    }
}

impl MemoryObjectStorage {
    /// An empty storage.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> Result<MutexGuard<'_, HashMap<String, StoredObject>>, StoreError> {
        self.inner
            .lock()
            .map_err(|_| StoreError::Unavailable("object storage lock poisoned".into()))
    }

    /// Every stored key, sorted (diagnostics and tests).
    pub fn keys(&self) -> Result<Vec<String>, StoreError> {
        let mut keys: Vec<String> = self.lock()?.keys().cloned().collect();
        keys.sort();
        Ok(keys)
    }
}

#[async_trait]
impl ObjectStorage for MemoryObjectStorage {
    async fn put(&self, key: &str, bytes: Bytes, content_type: &str) -> Result<String, StoreError> {
        if !is_valid_object_key(key) {
            return Err(StoreError::Unavailable("invalid object key".into()));
        }
        self.lock()?.insert(
            key.to_owned(),
            StoredObject {
                bytes,
                content_type: content_type.to_owned(),
            },
        );
        Ok(key.to_owned())
    }

    async fn get(&self, key: &str) -> Result<Option<StoredObject>, StoreError> {
        if !is_valid_object_key(key) {
            return Ok(None);
        }
        Ok(self.lock()?.get(key).cloned())
    }

    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.lock()?.remove(key);
        Ok(())
    }

    async fn check(&self) -> Result<(), StoreError> {
        self.lock().map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_rules() {
        for ok in ["a", "t/templates/x.tpl", "a.b/c..d"] {
            assert!(is_valid_object_key(ok), "{ok}");
        }
        for bad in [
            "", "/a", "a/../b", "..", "a\\b", "a//b", "./a", "a/", "a\0b",
        ] {
            assert!(!is_valid_object_key(bad), "{bad:?}");
        }
    }

    #[tokio::test]
    async fn put_get_delete() {
        let s = MemoryObjectStorage::new();
        assert_eq!(
            s.put("a/b", Bytes::from_static(b"x"), "text/plain").await,
            Ok("a/b".to_owned())
        );
        let o = s.get("a/b").await.unwrap().unwrap();
        assert_eq!(o.bytes, Bytes::from_static(b"x"));
        assert_eq!(o.content_type, "text/plain");
        assert!(matches!(
            s.put("../x", Bytes::new(), "x").await,
            Err(StoreError::Unavailable(_))
        ));
        assert_eq!(s.get("../x").await, Ok(None));
        s.delete("a/b").await.unwrap();
        s.delete("a/b").await.unwrap();
        assert_eq!(s.get("a/b").await, Ok(None));
        s.check().await.unwrap();
    }
}
