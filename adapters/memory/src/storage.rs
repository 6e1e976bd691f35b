//! [`MemoryObjectStorage`].
use async_trait::async_trait;
use bytes::Bytes;
use reporter_ports::ports::{ObjectStorage, StoredObject};
use reporter_ports::{ObjectKey, StoreError};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

/// Called with the key and size of each object a [`ByteBudget`] evicts.
pub type OnEvict = Arc<dyn Fn(&str, u64) + Send + Sync>;

/// A bound on the bytes of the evictable objects a [`MemoryObjectStorage`] keeps.
#[derive(Clone)]
pub struct ByteBudget {
    /// Most bytes the evictable objects may take together.
    pub max_bytes: u64,
    /// Which keys may be evicted (e.g. report artifacts; template files never are).
    pub evictable: fn(&str) -> bool,
    /// Told about every eviction (a log line and a metric).
    pub on_evict: OnEvict,
}

/// In-memory [`ObjectStorage`].
///
/// - `put` stores the object under the key exactly as given and answers that key; an invalid
///   key (see [`ObjectKey`]) is refused with
///   `StoreError::Unavailable("invalid object key")` and nothing is stored.
/// - With a [`ByteBudget`], once the evictable objects take more than `max_bytes`, the oldest
///   of them (by their last `put`) are removed until they fit again; the object just stored is
///   never evicted by its own `put`, so one larger than the budget stays alone.
/// - `get` of an invalid key answers `Ok(None)` (it cannot exist); `delete` of an invalid or
///   absent key succeeds.
/// - `check` always succeeds (unless the lock is poisoned).
#[derive(Clone, Default)]
pub struct MemoryObjectStorage {
    inner: Arc<Mutex<Objects>>,
    budget: Option<ByteBudget>,
}

/// The objects, and the evictable ones in the order of their last `put`.
#[derive(Default)]
struct Objects {
    map: HashMap<String, Entry>,
    /// (key, generation) of evictable puts, oldest first; stale entries are skipped.
    order: VecDeque<(String, u64)>,
    evictable_bytes: u64,
    generation: u64,
}

struct Entry {
    object: StoredObject,
    generation: u64,
    evictable: bool,
}

impl Objects {
    fn remove(&mut self, key: &str) -> Option<Entry> {
        let old = self.map.remove(key)?;
        if old.evictable {
            self.evictable_bytes -= old.object.bytes.len() as u64;
        }
        Some(old)
    }

    /// Evicts the oldest evictable objects other than `keep` until they fit in `max`.
    fn evict_over(&mut self, max: u64, keep: &str) -> Vec<(String, u64)> {
        let mut evicted = Vec::new();
        let mut kept = None;
        while self.evictable_bytes > max {
            let Some((key, generation)) = self.order.pop_front() else {
                break;
            };
            let current = self.map.get(&key).map(|e| e.generation);
            if current != Some(generation) {
                continue;
            }
            if key == keep {
                kept = Some((key, generation));
                continue;
            }
            if let Some(e) = self.remove(&key) {
                evicted.push((key, e.object.bytes.len() as u64));
            }
        }
        if let Some(k) = kept {
            self.order.push_front(k);
        }
        evicted
    }
}

impl fmt::Debug for MemoryObjectStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryObjectStorage")
            .field("max_bytes", &self.budget.as_ref().map(|b| b.max_bytes))
            .finish_non_exhaustive()
    }
}

impl MemoryObjectStorage {
    /// An empty storage without a bound.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty storage whose evictable objects stay within `budget`.
    pub fn bounded(budget: ByteBudget) -> Self {
        Self {
            inner: Arc::default(),
            budget: Some(budget),
        }
    }

    fn lock(&self) -> Result<MutexGuard<'_, Objects>, StoreError> {
        self.inner
            .lock()
            .map_err(|_| StoreError::Unavailable("object storage lock poisoned".into()))
    }

    /// Every stored key, sorted (diagnostics and tests).
    pub fn keys(&self) -> Result<Vec<String>, StoreError> {
        let mut keys: Vec<String> = self.lock()?.map.keys().cloned().collect();
        keys.sort();
        Ok(keys)
    }

    /// Bytes the evictable objects take now.
    pub fn evictable_bytes(&self) -> Result<u64, StoreError> {
        Ok(self.lock()?.evictable_bytes)
    }
}

#[async_trait]
impl ObjectStorage for MemoryObjectStorage {
    async fn put(&self, key: &str, bytes: Bytes, content_type: &str) -> Result<String, StoreError> {
        ObjectKey::checked(key)?;
        let evictable = self.budget.as_ref().is_some_and(|b| (b.evictable)(key));
        let size = bytes.len() as u64;
        let evicted = {
            let mut objects = self.lock()?;
            objects.remove(key);
            objects.generation += 1;
            let generation = objects.generation;
            let object = StoredObject {
                bytes,
                content_type: content_type.to_owned(),
            };
            objects.map.insert(
                key.to_owned(),
                Entry {
                    object,
                    generation,
                    evictable,
                },
            );
            match (&self.budget, evictable) {
                (Some(budget), true) => {
                    objects.evictable_bytes += size;
                    objects.order.push_back((key.to_owned(), generation));
                    objects.evict_over(budget.max_bytes, key)
                }
                _ => Vec::new(),
            }
        };
        if let Some(budget) = &self.budget {
            for (k, n) in evicted {
                (budget.on_evict)(&k, n);
            }
        }
        Ok(key.to_owned())
    }

    async fn get(&self, key: &str) -> Result<Option<StoredObject>, StoreError> {
        ObjectKey::checked(key)?;
        Ok(self.lock()?.map.get(key).map(|e| e.object.clone()))
    }

    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        ObjectKey::checked(key)?;
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
            assert!(ObjectKey::is_valid(ok), "{ok}");
        }
        for bad in [
            "", "/a", "a/../b", "..", "a\\b", "a//b", "./a", "a/", "a\0b",
        ] {
            assert!(!ObjectKey::is_valid(bad), "{bad:?}");
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
        // Every adapter refuses an invalid key on get too (the storage contract).
        assert!(matches!(
            s.get("../x").await,
            Err(StoreError::Unavailable(_))
        ));
        s.delete("a/b").await.unwrap();
        s.delete("a/b").await.unwrap();
        assert_eq!(s.get("a/b").await, Ok(None));
        s.check().await.unwrap();
    }

    fn budget(max_bytes: u64, log: Arc<Mutex<Vec<String>>>) -> ByteBudget {
        ByteBudget {
            max_bytes,
            evictable: |k| k.starts_with("reports/"),
            on_evict: Arc::new(move |k, _| log.lock().unwrap().push(k.to_owned())),
        }
    }

    async fn put(s: &MemoryObjectStorage, key: &str, n: usize) {
        s.put(key, Bytes::from(vec![b'x'; n]), "text/plain")
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn the_oldest_artifacts_go_first_and_templates_never() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let s = MemoryObjectStorage::bounded(budget(10, log.clone()));
        put(&s, "templates/t.tpl", 100).await;
        put(&s, "reports/a", 4).await;
        put(&s, "reports/b", 4).await;
        assert!(log.lock().unwrap().is_empty());
        put(&s, "reports/c", 4).await;
        assert_eq!(*log.lock().unwrap(), ["reports/a"]);
        assert_eq!(s.get("reports/a").await, Ok(None));
        assert!(
            s.get("templates/t.tpl").await.unwrap().is_some(),
            "not evictable"
        );
        assert_eq!(s.evictable_bytes().unwrap(), 8);
        // A put refreshes an object's age: b is now the newest, so c goes next.
        put(&s, "reports/b", 4).await;
        put(&s, "reports/d", 4).await;
        assert_eq!(*log.lock().unwrap(), ["reports/a", "reports/c"]);
        assert_eq!(
            s.keys().unwrap(),
            ["reports/b", "reports/d", "templates/t.tpl"]
        );
    }

    #[tokio::test]
    async fn an_object_larger_than_the_budget_stays_alone_and_deletes_free_room() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let s = MemoryObjectStorage::bounded(budget(10, log.clone()));
        put(&s, "reports/a", 4).await;
        put(&s, "reports/big", 50).await;
        assert_eq!(*log.lock().unwrap(), ["reports/a"]);
        assert!(
            s.get("reports/big").await.unwrap().is_some(),
            "the newest is kept"
        );
        s.delete("reports/big").await.unwrap();
        assert_eq!(s.evictable_bytes().unwrap(), 0);
        put(&s, "reports/e", 10).await;
        assert_eq!(log.lock().unwrap().len(), 1, "it fits exactly");
    }
}
