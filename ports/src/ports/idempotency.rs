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
    /// Atomically reserves the key until `in_flight_until`, unless it is already reserved
    /// (→ `InFlight`) or completed and not expired at `now` (→ `Completed`). An expired
    /// reservation or record counts as free.
    async fn begin(
        &self,
        scope: &IdempotencyScope,
        now: DateTime<Utc>,
        in_flight_until: DateTime<Utc>,
    ) -> Result<IdempotencyBegin, StoreError>;
    /// Stores the response of a reserved key, kept until `expires_at`.
    async fn complete(
        &self,
        scope: &IdempotencyScope,
        response: StoredResponse,
        expires_at: DateTime<Utc>,
    ) -> Result<(), StoreError>;
    /// Frees a reserved key (the request failed), so a retry runs again.
    async fn release(&self, scope: &IdempotencyScope) -> Result<(), StoreError>;
}
