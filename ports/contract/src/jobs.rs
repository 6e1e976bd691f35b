//! Contract of the [`JobQueue`] producer side.
//!
//! The port has no consumer trait, so the factory also hands back a [`JobDrain`]: a way to read
//! the jobs back (the adapter's consumer end, wrapped by the caller). Keeping it alive also
//! keeps the queue open for the check.
use crate::fixtures::{job, tenant_a, tenant_b};
use futures_util::future::join_all;
use reporter_ports::ports::{JobQueue, ReportJob};
use std::collections::HashSet;

use std::time::Duration;

/// Reads enqueued jobs back, for the suite's checks.
pub trait JobDrain: Send {
    /// The next job; `None` when no more will come.
    fn next_job(&mut self) -> impl Future<Output = Option<ReportJob>> + Send;
}

/// What the jobs suite needs.
pub trait JobsUnderTest: JobQueue + Clone + 'static {}
impl<T> JobsUnderTest for T where T: JobQueue + Clone + 'static {}

/// How long a check waits for one job before failing.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// The job-queue contract: enqueued jobs arrive intact, also when enqueued concurrently.
///
/// `jobs_contract!(mod <name>, |check| <future>)` emits module `<name>` with one
/// `#[tokio::test]` per check; the future runs `check(queue, drain)` on a fresh queue (with
/// room for at least 32 jobs) and its drain.
#[macro_export]
macro_rules! jobs_contract {
    (mod $m:ident, |$check:ident| $run:expr) => {
        $crate::contract_module!(
            $m,
            jobs,
            |$check| $run,
            [enqueued_jobs_arrive, concurrent_enqueues_all_arrive,]
        );
    };
}

async fn drain<D: JobDrain>(d: &mut D, n: usize) -> Vec<ReportJob> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        match tokio::time::timeout(DRAIN_TIMEOUT, d.next_job()).await {
            Ok(Some(j)) => out.push(j),
            Ok(None) => panic!("queue closed after {i} of {n} jobs"),
            Err(_) => panic!("timed out waiting for job {} of {n}", i + 1),
        }
    }
    out
}

/// Enqueue succeeds and the jobs arrive intact.
pub async fn enqueued_jobs_arrive<Q: JobsUnderTest, D: JobDrain>(q: Q, mut d: D) {
    let jobs = vec![job(&tenant_a()), job(&tenant_b()), job(&tenant_a())];
    for j in &jobs {
        q.enqueue(j).await.expect("enqueue");
    }
    let got: HashSet<_> = drain(&mut d, jobs.len())
        .await
        .into_iter()
        .map(|j| (j.tenant, j.report_id))
        .collect();
    let want: HashSet<_> = jobs.into_iter().map(|j| (j.tenant, j.report_id)).collect();
    assert_eq!(got, want, "the jobs enqueued arrive");
}

/// 20 concurrent producers: every enqueue succeeds and every job arrives once.
pub async fn concurrent_enqueues_all_arrive<Q: JobsUnderTest, D: JobDrain>(q: Q, mut d: D) {
    let jobs: Vec<_> = (0..20).map(|_| job(&tenant_a())).collect();
    let tasks = jobs.iter().cloned().map(|j| {
        let q = q.clone();
        tokio::spawn(async move { q.enqueue(&j).await })
    });
    for r in join_all(tasks).await {
        r.expect("producer panicked").expect("enqueue");
    }
    let got = drain(&mut d, jobs.len()).await;
    let ids: HashSet<_> = got.iter().map(|j| j.report_id).collect();
    assert_eq!(ids.len(), jobs.len(), "no job lost or duplicated");
    assert!(jobs.iter().all(|j| ids.contains(&j.report_id)));
}
