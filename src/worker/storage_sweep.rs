//! The worker's turn at the sweep of abandoned uploads ([`App::sweep_abandoned_uploads`]):
//! every `every`, the process holding the sweep's lease removes what writers that died
//! mid-write left in the object storage, and counts it.
use super::WorkerMetrics;
use crate::app::{App, StorageSweep};
use reporter_ports::ports::IdempotencyOwner;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// When and what the sweep removes (OBJECT_STORAGE_ABANDONED_AFTER_SECONDS,
/// OBJECT_STORAGE_SWEEP_INTERVAL_SECONDS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageSweepSettings {
    /// Age past which an upload counts as abandoned. MUST exceed the longest write (the
    /// job deadline bounds an artifact's).
    pub older_than: Duration,
    /// Period between turns.
    pub every: Duration,
    /// The object storage backend, as the metric labels it (`fs`, `s3`, `gridfs`, `memory`).
    pub backend: &'static str,
}

impl StorageSweepSettings {
    /// The lease a turn takes: two periods, so the owner renews it a period before it ends
    /// and a dead owner's passes to another process within two periods.
    pub fn lease(&self) -> Duration {
        self.every.saturating_mul(2)
    }
}

/// Runs a turn every `settings.every` until `shutdown` turns true. Stops at the first turn
/// that finds nothing to sweep (a storage that leaves no leftovers); a failed turn is logged
/// and tried again at the next.
pub(super) async fn run(
    app: Arc<App>,
    settings: StorageSweepSettings,
    metrics: WorkerMetrics,
    mut shutdown: watch::Receiver<bool>,
) {
    let owner = IdempotencyOwner::new();
    loop {
        tokio::select! {
            () = tokio::time::sleep(settings.every) => {}
            _ = shutdown.changed() => return,
        }
        if *shutdown.borrow() {
            return;
        }
        match app
            .sweep_abandoned_uploads(owner, settings.older_than, settings.lease())
            .await
        {
            Ok(StorageSweep::Removed(removed)) => {
                metrics.abandoned_removed(settings.backend, removed);
                if removed > 0 {
                    tracing::warn!(
                        removed,
                        backend = settings.backend,
                        "removed uploads abandoned by writers that died mid-write"
                    );
                }
            }
            Ok(StorageSweep::NotOwner) => {
                tracing::debug!("another process holds the sweep of abandoned uploads");
            }
            Ok(StorageSweep::NothingToSweep) => {
                tracing::debug!(
                    backend = settings.backend,
                    "the object storage leaves no abandoned uploads: sweep stopped"
                );
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "sweep of abandoned uploads failed; trying again later");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::{DataSourceCatalog, Emitter, KeyLayout, Ports, Settings};
    use reporter_adapter_fs::LocalObjectStorage;
    use reporter_adapter_memory::{MemoryJobQueue, MemoryStore};
    use reporter_ports::clock::SystemClock;
    use reporter_ports::ports::MockTemplateRunner;
    use std::time::SystemTime;

    fn app_over(storage: LocalObjectStorage) -> Arc<App> {
        let store = Arc::new(MemoryStore::new());
        let ports = Ports {
            templates: store.clone(),
            deadlines: store.clone(),
            reports: store.clone(),
            uow: store.clone(),
            outbox: store.clone(),
            storage: Arc::new(storage),
            idempotency: store,
            jobs: Arc::new(MemoryJobQueue::new(4).0),
            runner: Arc::new(MockTemplateRunner::new()),
            clock: Arc::new(SystemClock),
            deliveries: None,
        };
        let settings = Settings {
            max_page_limit: 100,
            layout: KeyLayout {
                tenant_prefix: false,
            },
        };
        Arc::new(App::new(
            ports,
            DataSourceCatalog::default(),
            Emitter::disabled(),
            settings,
        ))
    }

    fn removed(registry: &prometheus::Registry) -> f64 {
        registry
            .gather()
            .iter()
            .filter(|f| f.name() == "reporter_storage_abandoned_removed_total")
            .flat_map(|f| f.get_metric().to_vec())
            .find(|m| m.get_label().iter().any(|l| l.value() == "fs"))
            .map_or(0.0, |m| m.get_counter().get_value())
    }

    /// A temporary file left two hours ago goes at the worker's next turn and is counted; one
    /// just written stays.
    #[tokio::test]
    async fn the_worker_removes_old_leftovers_and_counts_them() {
        let dir = tempfile::tempdir().expect("a directory");
        let reports = dir.path().join("reports");
        std::fs::create_dir_all(&reports).expect("dir");
        let (old, young) = (
            reports.join(".r.csv.aB3dE5.tmp"),
            reports.join(".y.csv.Zz9Yy8.tmp"),
        );
        std::fs::File::create(&old)
            .and_then(|f| f.set_modified(SystemTime::now() - Duration::from_secs(7200)))
            .expect("an old leftover");
        std::fs::write(&young, b"being written").expect("a young one");
        let registry = prometheus::Registry::new();
        let metrics = WorkerMetrics::register(&registry).expect("metrics");
        let (stop, stopped) = watch::channel(false);
        let settings = StorageSweepSettings {
            older_than: Duration::from_secs(3600),
            every: Duration::from_millis(20),
            backend: "fs",
        };
        let app = app_over(LocalObjectStorage::new(dir.path()));
        let task = tokio::spawn(run(app, settings, metrics, stopped));
        tokio::time::timeout(Duration::from_secs(10), async {
            while removed(&registry) < 1.0 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the sweep ran");
        assert!(!old.exists(), "the old leftover is gone");
        assert!(young.exists(), "the young one stays");
        stop.send(true).expect("stop");
        task.await.expect("the sweep stops");
        assert_eq!(removed(&registry), 1.0);
    }
}
