//! Errors every storage-like port shares.
use thiserror::Error;

/// What a storage port can answer besides success.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum StoreError {
    /// The record does not exist (or belongs to another tenant).
    #[error("not found")]
    NotFound,
    /// An update named an expected version that is no longer current (optimistic concurrency).
    #[error("version conflict")]
    VersionConflict,
    /// A uniqueness rule was violated; the string names the rule.
    #[error("duplicate: {0}")]
    Duplicate(String),
    /// The idempotency reservation a unit of work completes is no longer held by its owner.
    #[error("idempotency reservation lost")]
    IdempotencyLost,
    /// The backing service cannot be reached or answered with an error. The text is for logs only.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
}
