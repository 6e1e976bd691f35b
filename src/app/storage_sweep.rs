//! The sweep of abandoned uploads: what writers that died mid-write left in the object
//! storage ([`ObjectStorage::sweep_abandoned`](reporter_ports::ports::ObjectStorage::sweep_abandoned)),
//! run by one process at a time.
//!
//! Ownership is a lease on one idempotency key ([`IdempotencyStore`]: exactly one of
//! concurrent `begin`s wins, `renew` only extends the holder's lease). The owner renews it at
//! each of its sweeps; a process that finds it held by another skips its turn; a dead owner's
//! lease ends and the next process to try takes it over.
use super::App;
use reporter_ports::ports::{IdempotencyBegin, IdempotencyOwner, IdempotencyScope};
use reporter_ports::{StoreError, TenantId};
use std::time::Duration;

/// The operation of the lease's key.
const LEASE_OPERATION: &str = "sweep abandoned uploads";

/// What one turn of the sweep did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageSweep {
    /// Another process holds the lease: it sweeps.
    NotOwner,
    /// The storage leaves nothing a sweep could find (whole objects only, or in memory).
    NothingToSweep,
    /// This process swept; this many abandoned uploads were removed.
    Removed(u64),
}

/// The lease's idempotency key: tenant `default` (with a database per tenant, its database
/// holds the lease; no tenant of its own is made up for it), an operation no HTTP request
/// uses, so no client key collides.
fn lease_scope() -> IdempotencyScope {
    IdempotencyScope {
        tenant: TenantId::default_tenant(),
        operation: LEASE_OPERATION.to_owned(),
        key: "object-storage".to_owned(),
    }
}

impl App {
    /// One turn of the sweep of abandoned uploads for the process `owner`: takes or renews
    /// the sweep's lease until `lease` from now, and when this process holds it removes what
    /// uploads older than `older_than` left. MUST NOT sweep without holding the lease, so
    /// at most one process sweeps at a time (until a lease it failed to renew ends). `lease`
    /// SHOULD exceed the period between turns, so that the owner keeps it.
    pub async fn sweep_abandoned_uploads(
        &self,
        owner: IdempotencyOwner,
        older_than: Duration,
        lease: Duration,
    ) -> Result<StorageSweep, StoreError> {
        let span = crate::use_case_span!("sweep_abandoned_uploads");
        span.run(async move {
            let scope = lease_scope();
            let now = self.now();
            let until = now
                + chrono::Duration::from_std(lease)
                    .map_err(|e| StoreError::Unavailable(format!("sweep lease: {e}")))?;
            let idempotency = &self.ports().idempotency;
            let held = idempotency.renew(&scope, owner, until).await?
                || matches!(
                    idempotency.begin(&scope, owner, now, until).await?,
                    IdempotencyBegin::Started
                );
            if !held {
                return Ok(StorageSweep::NotOwner);
            }
            Ok(
                match self.ports().storage.sweep_abandoned(older_than).await? {
                    None => StorageSweep::NothingToSweep,
                    Some(report) => StorageSweep::Removed(report.removed),
                },
            )
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::tests::app_over;
    use reporter_ports::ports::{MockObjectStorage, SweepReport};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A storage counting its sweeps, each removing one upload.
    fn counting(sweeps: Arc<AtomicUsize>) -> MockObjectStorage {
        let mut storage = MockObjectStorage::new();
        storage.expect_sweep_abandoned().returning(move |_| {
            sweeps.fetch_add(1, Ordering::SeqCst);
            Ok(Some(SweepReport { removed: 1 }))
        });
        storage
    }

    #[tokio::test]
    async fn one_process_sweeps_at_a_time_and_a_dead_owners_lease_is_taken_over() {
        let sweeps = Arc::new(AtomicUsize::new(0));
        let app = app_over(counting(sweeps.clone()));
        let (first, second) = (IdempotencyOwner::new(), IdempotencyOwner::new());
        let hour = Duration::from_secs(3600);
        let lease = Duration::from_millis(1500);
        assert_eq!(
            app.sweep_abandoned_uploads(first, hour, lease).await,
            Ok(StorageSweep::Removed(1))
        );
        assert_eq!(
            app.sweep_abandoned_uploads(second, hour, lease).await,
            Ok(StorageSweep::NotOwner)
        );
        // The owner keeps its lease from turn to turn.
        assert_eq!(
            app.sweep_abandoned_uploads(first, hour, lease).await,
            Ok(StorageSweep::Removed(1))
        );
        assert_eq!(sweeps.load(Ordering::SeqCst), 2, "only the owner swept");
        // The first process dies: its lease ends and the second takes over.
        tokio::time::sleep(Duration::from_millis(1600)).await;
        assert_eq!(
            app.sweep_abandoned_uploads(second, hour, lease).await,
            Ok(StorageSweep::Removed(1))
        );
        assert_eq!(
            app.sweep_abandoned_uploads(first, hour, lease).await,
            Ok(StorageSweep::NotOwner)
        );
        assert_eq!(sweeps.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_storage_with_nothing_to_sweep_says_so() {
        let mut storage = MockObjectStorage::new();
        storage.expect_sweep_abandoned().returning(|_| Ok(None));
        let app = app_over(storage);
        assert_eq!(
            app.sweep_abandoned_uploads(
                IdempotencyOwner::new(),
                Duration::from_secs(60),
                Duration::from_secs(60)
            )
            .await,
            Ok(StorageSweep::NothingToSweep)
        );
    }
}
