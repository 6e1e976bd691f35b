use crate::error::StoreError;
use crate::events::EventEnvelope;
use crate::ids::OutboxId;
use crate::tenant::TenantId;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Where an outbox row is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutboxStatus {
    /// Waiting to be published (possibly leased by a publisher right now).
    Pending,
    /// Confirmed by the broker with no return.
    Published,
    /// Gave up after too many attempts; kept with its reason until redriven.
    Parked,
}

/// A claim on a row: only the holder of `token` may settle it until `until`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// Claim token.
    pub token: Uuid,
    /// Who holds it (process / dispatcher name), for diagnostics.
    pub owner: String,
    /// Expiry; after it any dispatcher may claim the row again.
    pub until: DateTime<Utc>,
}

/// One outbox row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutboxRecord {
    /// Row id (not the event id).
    pub id: OutboxId,
    /// Owning tenant.
    pub tenant: TenantId,
    /// The event, complete: a replay publishes exactly these headers and body.
    pub event: EventEnvelope,
    /// Ordering key: rows of the same aggregate are published in commit order.
    pub aggregate: String,
    /// Life-cycle state.
    pub status: OutboxStatus,
    /// Failed publish attempts so far.
    pub attempts: u32,
    /// Last failure reason (sanitised, no payload data).
    pub last_error: Option<String>,
    /// Not claimable before this instant (retry backoff).
    pub available_at: DateTime<Utc>,
    /// Current claim, if any.
    pub lease: Option<Lease>,
    /// Insert instant.
    pub created_at: DateTime<Utc>,
    /// Publish instant.
    pub published_at: Option<DateTime<Utc>>,
}

impl OutboxRecord {
    /// A new pending row, claimable at `now` (or leased to `lease` for a direct publish).
    pub fn pending(
        event: EventEnvelope,
        aggregate: String,
        now: DateTime<Utc>,
        lease: Option<Lease>,
    ) -> Self {
        Self {
            id: OutboxId::new(),
            tenant: event.tenant.clone(),
            event,
            aggregate,
            status: OutboxStatus::Pending,
            attempts: 0,
            last_error: None,
            available_at: now,
            lease,
            created_at: now,
            published_at: None,
        }
    }
}

/// Backlog figures for metrics and readiness.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutboxStats {
    /// Pending rows.
    pub pending: u64,
    /// Parked rows.
    pub parked: u64,
    /// Age in seconds of the oldest pending row.
    pub oldest_pending_age_secs: Option<i64>,
}

/// The durable event outbox.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait Outbox: Send + Sync {
    /// Claims up to `limit` pending rows that are available at `now` and not leased (or whose
    /// lease expired), giving each a fresh lease for `owner` until `lease_until`.
    ///
    /// MUST NOT return two rows of the same aggregate when an older pending row of that
    /// aggregate is not also returned before them (per-aggregate commit order), and MUST NOT
    /// hand the same row to two claimers while a lease is valid. Rows come back oldest first.
    async fn claim(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<OutboxRecord>, StoreError>;
    /// Marks a claimed row published. MUST return `VersionConflict` when `token` no longer
    /// holds the row's lease (it expired and another claimer took it).
    async fn mark_published(
        &self,
        id: OutboxId,
        token: Uuid,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;
    /// Records a failed attempt: attempts + 1, `last_error`, lease released, claimable again at
    /// `retry_at`. Same token rule as `mark_published`.
    async fn mark_failed(
        &self,
        id: OutboxId,
        token: Uuid,
        error: &str,
        retry_at: DateTime<Utc>,
    ) -> Result<(), StoreError>;
    /// Gives a claimed row back without counting an attempt (it was never tried: e.g. the
    /// direct path was full or its breaker opened): lease cleared, claimable at `now`. Same
    /// token rule as `mark_published`.
    async fn release(
        &self,
        id: OutboxId,
        token: Uuid,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;
    /// Parks a row with its reason; a parked row is never claimed until redriven.
    async fn park(&self, id: OutboxId, token: Uuid, reason: &str) -> Result<(), StoreError>;
    /// Returns parked rows (all, or those of `tenant`) to pending with attempts reset; answers
    /// how many moved.
    async fn redrive(
        &self,
        tenant: Option<TenantId>,
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError>;
    /// Backlog figures.
    async fn stats(&self, now: DateTime<Utc>) -> Result<OutboxStats, StoreError>;
    /// Deletes published rows published before `before`; answers how many.
    async fn purge_published(&self, before: DateTime<Utc>) -> Result<u64, StoreError>;
    /// The row, for diagnostics and tests.
    async fn get(&self, id: OutboxId) -> Result<Option<OutboxRecord>, StoreError>;
}
