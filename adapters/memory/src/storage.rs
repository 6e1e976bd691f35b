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

/// A bound on the bytes of the evictable objects a [`MemoryObjectStorage`] keeps, in total and
/// per owner (a tenant: [`ByteBudget::owner`] names the owner of a key).
#[derive(Clone)]
pub struct ByteBudget {
    /// Most bytes the evictable objects may take together.
    pub max_bytes: u64,
    /// Most bytes the evictable objects of one owner may take (its share).
    pub owner_max_bytes: u64,
    /// Which keys may be evicted (e.g. report artifacts; template files never are).
    pub evictable: fn(&str) -> bool,
    /// The owner of an evictable key (e.g. its tenant segment; `""` for a single owner).
    pub owner: fn(&str) -> &str,
    /// Told about every eviction (a log line and a metric).
    pub on_evict: OnEvict,
}

impl ByteBudget {
    /// A budget of `max_bytes` with one owner for every key (no per-owner share).
    pub fn shared(max_bytes: u64, evictable: fn(&str) -> bool, on_evict: OnEvict) -> Self {
        Self {
            max_bytes,
            owner_max_bytes: max_bytes,
            evictable,
            owner: |_| "",
            on_evict,
        }
    }
}

/// In-memory [`ObjectStorage`].
///
/// - `put` stores the object under the key exactly as given and answers that key; an invalid
///   key (see [`ObjectKey`]) is refused with
///   `StoreError::Unavailable("invalid object key")` and nothing is stored.
/// - With a [`ByteBudget`], a `put` of an evictable object MUST evict only what it must, in
///   this order: first the putting owner's own oldest evictable objects (by their last `put`)
///   while that owner takes more than `owner_max_bytes`; then, while all evictable objects
///   together take more than `max_bytes`, the oldest object of the owner that takes the most
///   (the putting owner on a tie). So one owner's puts never evict another owner's objects
///   unless that owner takes strictly more than the putting one. The object just stored is
///   never evicted by its own `put`: one larger than the budget stays alone, and the total
///   may pass `max_bytes` by at most that object until the next `put`.
/// - `get` of an invalid key answers `Ok(None)` (it cannot exist); `delete` of an invalid or
///   absent key succeeds.
/// - `check` always succeeds (unless the lock is poisoned).
#[derive(Clone, Default)]
pub struct MemoryObjectStorage {
    inner: Arc<Mutex<Objects>>,
    budget: Option<ByteBudget>,
}

/// The objects, and per owner the evictable ones in the order of their last `put`.
#[derive(Default)]
struct Objects {
    map: HashMap<String, Entry>,
    owners: HashMap<String, Owned>,
    evictable_bytes: u64,
    generation: u64,
}

/// One owner's evictable objects.
#[derive(Default)]
struct Owned {
    /// (key, generation) of its evictable puts, oldest first; stale entries are skipped.
    order: VecDeque<(String, u64)>,
    bytes: u64,
}

struct Entry {
    object: StoredObject,
    generation: u64,
    /// The owner, for an evictable object.
    owner: Option<String>,
}

impl Objects {
    fn remove(&mut self, key: &str) -> Option<Entry> {
        let old = self.map.remove(key)?;
        if let Some(owner) = &old.owner {
            let size = old.object.bytes.len() as u64;
            self.evictable_bytes -= size;
            if let Some(owned) = self.owners.get_mut(owner) {
                owned.bytes -= size;
                if owned.bytes == 0 {
                    self.owners.remove(owner);
                }
            }
        }
        Some(old)
    }

    /// Evicts the oldest object of `owner` other than `keep`; `None` when it has none.
    fn evict_oldest(&mut self, owner: &str, keep: &str) -> Option<(String, u64)> {
        loop {
            let owned = self.owners.get_mut(owner)?;
            let (key, generation) = owned.order.pop_front()?;
            if self.map.get(&key).map(|e| e.generation) != Some(generation) {
                continue;
            }
            if key == keep {
                // The object just stored is the newest: nothing older is left.
                owned.order.push_back((key, generation));
                return None;
            }
            let e = self.remove(&key)?;
            return Some((key, e.object.bytes.len() as u64));
        }
    }

    /// The owner that takes the most evictable bytes (`prefer` on a tie).
    fn largest_owner(&self, prefer: &str) -> Option<String> {
        let mut best: Option<(&String, u64)> = None;
        for (name, owned) in &self.owners {
            let better = match best {
                None => true,
                Some((b, bytes)) => {
                    owned.bytes > bytes || (owned.bytes == bytes && name == prefer && b != prefer)
                }
            };
            if better {
                best = Some((name, owned.bytes));
            }
        }
        best.map(|(n, _)| n.clone())
    }

    fn owned_bytes(&self, owner: &str) -> u64 {
        self.owners.get(owner).map_or(0, |o| o.bytes)
    }

    /// Evicts what `budget` asks after `keep`, of `owner`, was stored.
    fn evict_over(&mut self, budget: &ByteBudget, owner: &str, keep: &str) -> Vec<(String, u64)> {
        let mut evicted = Vec::new();
        while self.owned_bytes(owner) > budget.owner_max_bytes {
            match self.evict_oldest(owner, keep) {
                Some(e) => evicted.push(e),
                None => break,
            }
        }
        while self.evictable_bytes > budget.max_bytes {
            let Some(largest) = self.largest_owner(owner) else {
                break;
            };
            match self.evict_oldest(&largest, keep) {
                Some(e) => evicted.push(e),
                None => break,
            }
        }
        evicted
    }
}

impl fmt::Debug for MemoryObjectStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryObjectStorage")
            .field("max_bytes", &self.budget.as_ref().map(|b| b.max_bytes))
            .field(
                "owner_max_bytes",
                &self.budget.as_ref().map(|b| b.owner_max_bytes),
            )
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

    /// Bytes the evictable objects of `owner` take now.
    pub fn owned_bytes(&self, owner: &str) -> Result<u64, StoreError> {
        Ok(self.lock()?.owned_bytes(owner))
    }
}

#[async_trait]
impl ObjectStorage for MemoryObjectStorage {
    async fn put(&self, key: &str, bytes: Bytes, content_type: &str) -> Result<String, StoreError> {
        ObjectKey::checked(key)?;
        let owner = self
            .budget
            .as_ref()
            .filter(|b| (b.evictable)(key))
            .map(|b| (b.owner)(key).to_owned());
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
                    owner: owner.clone(),
                },
            );
            match (&self.budget, owner) {
                (Some(budget), Some(owner)) => {
                    objects.evictable_bytes += size;
                    let owned = objects.owners.entry(owner.clone()).or_default();
                    owned.bytes += size;
                    owned.order.push_back((key.to_owned(), generation));
                    objects.evict_over(budget, &owner, key)
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
        ByteBudget::shared(
            max_bytes,
            |k| k.starts_with("reports/"),
            Arc::new(move |k, _| log.lock().unwrap().push(k.to_owned())),
        )
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

    fn tenant_budget(
        max_bytes: u64,
        owner_max_bytes: u64,
        log: Arc<Mutex<Vec<String>>>,
    ) -> ByteBudget {
        ByteBudget {
            max_bytes,
            owner_max_bytes,
            evictable: |k| k.contains("/reports/"),
            owner: |k| k.split('/').next().unwrap_or(""),
            on_evict: Arc::new(move |k, _| log.lock().unwrap().push(k.to_owned())),
        }
    }

    #[tokio::test]
    async fn a_tenants_puts_evict_only_its_own_artifacts_past_its_share() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let s = MemoryObjectStorage::bounded(tenant_budget(100, 40, log.clone()));
        put(&s, "a/reports/1", 10).await;
        for i in 0..9 {
            put(&s, &format!("b/reports/{i}"), 32).await;
        }
        assert!(
            s.get("a/reports/1").await.unwrap().is_some(),
            "B's puts left A's artifact"
        );
        assert!(log.lock().unwrap().iter().all(|k| k.starts_with("b/")));
        assert_eq!(log.lock().unwrap().len(), 8, "B keeps its newest only");
        assert_eq!(s.owned_bytes("b").unwrap(), 32);
        assert_eq!(s.owned_bytes("a").unwrap(), 10);
        assert!(s.get("b/reports/8").await.unwrap().is_some());
    }

    #[tokio::test]
    async fn past_the_total_the_tenant_taking_the_most_loses_its_oldest() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let s = MemoryObjectStorage::bounded(tenant_budget(100, 60, log.clone()));
        put(&s, "a/reports/1", 20).await;
        put(&s, "b/reports/1", 30).await;
        put(&s, "b/reports/2", 30).await;
        assert!(log.lock().unwrap().is_empty());
        // c's put passes the total (110): b takes the most, so b's oldest goes, not a's.
        put(&s, "c/reports/1", 30).await;
        assert_eq!(*log.lock().unwrap(), ["b/reports/1"]);
        // c passes the total again and takes as much as b now (60): the putter loses its own.
        put(&s, "c/reports/2", 30).await;
        assert_eq!(*log.lock().unwrap(), ["b/reports/1", "c/reports/1"]);
        assert_eq!(s.evictable_bytes().unwrap(), 80);
        assert!(s.get("a/reports/1").await.unwrap().is_some());
        // Another tenant's objects go only when it takes strictly more than the putter.
        put(&s, "a/reports/2", 25).await;
        assert_eq!(
            *log.lock().unwrap(),
            ["b/reports/1", "c/reports/1", "a/reports/1"],
            "a (45) takes the most after its put"
        );
    }
}
