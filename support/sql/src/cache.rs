//! [`SchemaCache`]: a source's discovered schema, reused for a while.
use futures_util::lock::Mutex;
use reporter_ports::ports::DataSourceError;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The discovered schema `T` of one source.
///
/// - [`SchemaCache::get`] MUST answer the cached schema while it is younger than the TTL,
///   and discover it again (once, concurrent callers waiting for that discovery) when older
///   or absent; a failed discovery caches nothing.
/// - [`SchemaCache::invalidate`] drops it: the next call discovers again (a query that found
///   a table or column gone, [`crate::Mapped::stale_schema`]; a forced refresh).
///
/// The cache holds one schema: its memory is bounded by the schema's size; the discovery's
/// own time by the caller's timeout around the discovery future.
#[derive(Debug)]
pub struct SchemaCache<T> {
    ttl: Duration,
    slot: Mutex<Option<(Instant, Arc<T>)>>,
}

impl<T> SchemaCache<T> {
    /// An empty cache keeping a schema for `ttl`.
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            slot: Mutex::new(None),
        }
    }

    /// The cached schema, or the one `discover` finds (then cached).
    pub async fn get<F>(&self, discover: impl FnOnce() -> F) -> Result<Arc<T>, DataSourceError>
    where
        F: Future<Output = Result<T, DataSourceError>>,
    {
        let mut slot = self.slot.lock().await;
        if let Some((at, schema)) = slot.as_ref()
            && at.elapsed() < self.ttl
        {
            return Ok(Arc::clone(schema));
        }
        let schema = Arc::new(discover().await?);
        *slot = Some((Instant::now(), Arc::clone(&schema)));
        Ok(schema)
    }

    /// Drops the cached schema.
    pub async fn invalidate(&self) {
        self.slot.lock().await.take();
    }

    /// Drops the cached schema and discovers it again now.
    pub async fn refresh<F>(&self, discover: impl FnOnce() -> F) -> Result<Arc<T>, DataSourceError>
    where
        F: Future<Output = Result<T, DataSourceError>>,
    {
        self.invalidate().await;
        self.get(discover).await
    }

    /// The port's error of a failed query, dropping the cache first when the failure shows
    /// it stale.
    pub async fn failed(&self, mapped: crate::Mapped) -> DataSourceError {
        if mapped.stale_schema {
            self.invalidate().await;
        }
        mapped.error
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn run<T>(f: impl Future<Output = T>) -> T {
        f.now_or_never().expect("no waiting in these tests")
    }

    #[test]
    fn reuses_within_the_ttl_and_discovers_again_when_stale_or_invalidated() {
        let discoveries = AtomicUsize::new(0);
        let discover =
            || async { Ok::<_, DataSourceError>(discoveries.fetch_add(1, Ordering::SeqCst)) };
        let cache = SchemaCache::new(Duration::from_secs(60));
        assert_eq!(*run(cache.get(discover)).expect("first"), 0);
        assert_eq!(*run(cache.get(discover)).expect("cached"), 0);
        let kept = run(cache.failed(crate::Mapped::error(DataSourceError::Timeout)));
        assert_eq!(kept, DataSourceError::Timeout);
        assert_eq!(*run(cache.get(discover)).expect("still cached"), 0);
        let stale = run(cache.failed(crate::Mapped::stale("no such table")));
        assert!(matches!(stale, DataSourceError::Unavailable(m) if m.contains("schema changed")));
        assert_eq!(*run(cache.get(discover)).expect("again"), 1);
        assert_eq!(*run(cache.refresh(discover)).expect("refreshed"), 2);

        let expired = SchemaCache::new(Duration::ZERO);
        assert_eq!(*run(expired.get(discover)).expect("a"), 3);
        assert_eq!(
            *run(expired.get(discover)).expect("b"),
            4,
            "TTL zero: never reused"
        );
    }

    #[test]
    fn a_failed_discovery_caches_nothing() {
        let cache = SchemaCache::<u8>::new(Duration::from_secs(60));
        let failed = run(cache.get(|| async { Err(DataSourceError::Timeout) }));
        assert_eq!(failed, Err(DataSourceError::Timeout));
        assert_eq!(*run(cache.get(|| async { Ok(7) })).expect("discovered"), 7);
    }
}
