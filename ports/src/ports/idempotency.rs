use crate::error::StoreError;
use crate::tenant::TenantId;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Identifies one idempotent request: a client key, scoped by tenant and operation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct IdempotencyScope {
    /// Tenant.
    pub tenant: TenantId,
    /// Operation (e.g. `POST /v1/templates`).
    pub operation: String,
    /// The client's `X-Idempotency` value.
    pub key: String,
}

/// A response kept for replay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredResponse {
    /// HTTP status.
    pub status: u16,
    /// Content type.
    pub content_type: String,
    /// Body bytes.
    pub body: Vec<u8>,
}

/// The request (one attempt, in one process) that holds a reservation. A reservation is a
/// lease: its holder renews it while it runs ([`IdempotencyStore::renew`]); a holder that died
/// stops renewing, and the key is free again when the lease ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct IdempotencyOwner(pub uuid::Uuid);

impl IdempotencyOwner {
    /// A fresh owner (one per request attempt).
    pub fn new() -> Self {
        Self(uuid::Uuid::now_v7())
    }
}

impl Default for IdempotencyOwner {
    fn default() -> Self {
        Self::new()
    }
}

/// The completion of a reserved key, committed in the unit of work of the change it guards
/// ([`crate::ports::UnitOfWork::idempotency`]), so that the change and its stored answer exist
/// together or not at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyCompletion {
    /// The key.
    pub scope: IdempotencyScope,
    /// The reservation's holder: the commit MUST fail when it no longer holds it.
    pub owner: IdempotencyOwner,
    /// The answer to replay.
    pub response: StoredResponse,
    /// Replayed until then.
    pub expires_at: DateTime<Utc>,
}

/// What `begin` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdempotencyBegin {
    /// The key was free and is now reserved for this caller.
    Started,
    /// Another request with the key is in flight.
    InFlight,
    /// A request with the key completed; here is its response.
    Completed(StoredResponse),
}

/// Idempotency records.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait IdempotencyStore: Send + Sync {
    /// Atomically reserves the key for `owner` until `lease_until`, unless a reservation is
    /// live (→ `InFlight`) or a completed record has not expired at `now` (→ `Completed`). An
    /// expired reservation or record counts as free. Of concurrent callers with one scope
    /// exactly one gets `Started`.
    async fn begin(
        &self,
        scope: &IdempotencyScope,
        owner: IdempotencyOwner,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<IdempotencyBegin, StoreError>;
    /// Extends `owner`'s reservation to `lease_until`. MUST answer `false`, changing nothing,
    /// when the key is not reserved by `owner` (its lease ended and another request took it,
    /// or it completed or was released).
    async fn renew(
        &self,
        scope: &IdempotencyScope,
        owner: IdempotencyOwner,
        lease_until: DateTime<Utc>,
    ) -> Result<bool, StoreError>;
    /// Stores the response of the key, kept until `expires_at` (for answers that are not
    /// committed with a unit of work; a completion committed with one is already stored).
    async fn complete(
        &self,
        scope: &IdempotencyScope,
        response: StoredResponse,
        expires_at: DateTime<Utc>,
    ) -> Result<(), StoreError>;
    /// Frees `owner`'s reservation (the request failed), so a retry runs again. A key reserved
    /// by another owner, or completed, is left alone; releasing a free key succeeds.
    async fn release(
        &self,
        scope: &IdempotencyScope,
        owner: IdempotencyOwner,
    ) -> Result<(), StoreError>;
}
