//! Runs every port contract suite against the in-memory adapters: one test per check
//! (`cargo test -p reporter-adapter-memory --test contract store::` runs the store's).
use reporter_adapter_memory::{
    MemoryJobQueue, MemoryJobReceiver, MemoryObjectStorage, MemoryStore,
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
