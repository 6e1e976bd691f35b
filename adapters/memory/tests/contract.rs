//! Runs every port contract suite against the in-memory adapters: one test per check
//! (`cargo test -p reporter-adapter-memory --test contract store::` runs the store's).
use reporter_adapter_memory::{
    ByteBudget, MemoryJobQueue, MemoryJobReceiver, MemoryObjectStorage, MemoryStore,
};
use reporter_contract::jobs::JobDrain;
use reporter_ports::ports::ReportJob;

reporter_contract::store_contract!(mod store, |check| async {
    check(MemoryStore::new()).await
});

reporter_contract::outbox_contract!(mod outbox, |check| async {
    check(MemoryStore::new()).await
});

reporter_contract::idempotency_contract!(mod idempotency, |check| async {
    check(MemoryStore::new()).await
});

reporter_contract::idempotent_commit_contract!(mod idempotent_commit, |check| async {
    check(MemoryStore::new()).await
});

reporter_contract::object_storage_contract!(mod object_storage, |check| async {
    check(&MemoryObjectStorage::new()).await
});

// With a budget shared per owner (as the service wires it in multi-tenant mode), every key
// evictable and owned by its first segment; large enough that the suite evicts nothing.
reporter_contract::object_storage_contract!(mod bounded_object_storage, |check| async {
    check(&MemoryObjectStorage::bounded(ByteBudget {
        max_bytes: 1 << 30,
        owner_max_bytes: 1 << 29,
        evictable: |_| true,
        owner: |k| k.split('/').next().unwrap_or(""),
        on_evict: std::sync::Arc::new(|_, _| {}),
    }))
    .await
});

struct Drain(MemoryJobReceiver);

impl JobDrain for Drain {
    async fn next_job(&mut self) -> Option<ReportJob> {
        self.0.recv().await
    }
}

reporter_contract::jobs_contract!(mod jobs, |check| async {
    let (q, rx) = MemoryJobQueue::new(64);
    check(q, Drain(rx)).await
});

reporter_contract::rate_limit_contract!(mod rate_limit, |check| async {
    check(reporter_adapter_memory::MemoryRateLimiter::default()).await
});
