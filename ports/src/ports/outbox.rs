use crate::error::StoreError;
use crate::events::{EventEnvelope, EventKey};
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
    /// When it was parked; `None` unless parked (a redrive clears it). Rows parked before this
    /// field existed read back `None`.
    #[serde(default)]
    pub parked_at: Option<DateTime<Utc>>,
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
            parked_at: None,
        }
    }
}

/// A parked row as an operator sees it: who, what and why, never the event's payload (which
/// may carry business data); [`Outbox::list_parked`] answers these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParkedEvent {
    /// Row id (what a redrive moves; not the event id).
    pub id: OutboxId,
    /// Owning tenant.
    pub tenant: TenantId,
    /// The event's definition (routing key and `ce-type`).
    pub key: EventKey,
    /// The event's id (`ce-id`), kept by a redrive.
    pub event_id: String,
    /// The event's subject (`ce-subject`: the resource id).
    pub subject: String,
    /// Ordering key of the row.
    pub aggregate: String,
    /// Failed publish attempts, the one that parked it included.
    pub attempts: u32,
    /// Why it was parked (sanitised, no payload data).
    pub reason: Option<String>,
    /// When it was parked (`None` for a row parked before the instant was recorded).
    pub parked_at: Option<DateTime<Utc>>,
    /// When the event was committed.
    pub created_at: DateTime<Utc>,
}

impl ParkedEvent {
    /// The operator's view of `row` (its payload left out).
    pub fn of(row: &OutboxRecord) -> Self {
        Self {
            id: row.id,
            tenant: row.tenant.clone(),
            key: row.event.key,
            event_id: row.event.id.clone(),
            subject: row.event.subject.clone(),
            aggregate: row.aggregate.clone(),
            attempts: row.attempts,
            reason: row.last_error.clone(),
            parked_at: row.parked_at,
            created_at: row.created_at,
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
    /// Parks a row after a failed attempt: attempts + 1 (the attempt that parked it counts),
    /// its reason kept as `last_error`, `now` as `parked_at`, lease released; a parked row is
    /// never claimed until redriven. Same token rule as `mark_published`.
    async fn park(
        &self,
        id: OutboxId,
        token: Uuid,
        reason: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;
    /// Returns parked rows (all, or those of `tenant`) to pending with attempts reset and
    /// `parked_at` cleared; answers how many moved.
    async fn redrive(
        &self,
        tenant: Option<TenantId>,
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError>;
    /// The parked rows (all, or those of `tenant` only), newest parked first (by `parked_at`,
    /// then the later commit first; rows without `parked_at` last), at most `limit` of them.
    /// MUST NOT answer a pending or published row, nor a row of another tenant when `tenant`
    /// is given; `limit` 0 answers nothing.
    async fn list_parked(
        &self,
        tenant: Option<TenantId>,
        limit: usize,
    ) -> Result<Vec<ParkedEvent>, StoreError>;
    /// Backlog figures.
    async fn stats(&self, now: DateTime<Utc>) -> Result<OutboxStats, StoreError>;
    /// Deletes published rows published before `before`; answers how many.
    async fn purge_published(&self, before: DateTime<Utc>) -> Result<u64, StoreError>;
    /// The row, for diagnostics and tests.
    async fn get(&self, id: OutboxId) -> Result<Option<OutboxRecord>, StoreError>;
}
