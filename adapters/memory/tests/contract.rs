//! Runs every port contract suite against the in-memory adapters.
use reporter_adapter_memory::{
    MemoryJobQueue, MemoryJobReceiver, MemoryObjectStorage, MemoryStore,
};
use reporter_contract::jobs::JobDrain;
use reporter_contract::{idempotency, jobs, outbox, storage, store};
use reporter_ports::ports::ReportJob;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn store_contract() {
    store::run_store_suite(|| async { MemoryStore::new() }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn outbox_contract() {
    outbox::run_outbox_suite(|| async { MemoryStore::new() }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn idempotency_contract() {
    idempotency::run_idempotency_suite(|| async { MemoryStore::new() }).await;
}

struct Drain(MemoryJobReceiver);

impl JobDrain for Drain {
    async fn next_job(&mut self) -> Option<ReportJob> {
        self.0.recv().await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn jobs_contract() {
    jobs::run_jobs_suite(|| async {
        let (q, rx) = MemoryJobQueue::new(64);
        (q, Drain(rx))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn idempotent_commit_contract() {
    idempotency::run_idempotent_commit_suite(|| async { MemoryStore::new() }).await;
}

#[tokio::test]
async fn object_storage_contract() {
    storage::run_object_storage_suite(|| async { MemoryObjectStorage::new() }).await;
}
