//! [`Idempotent`]: the `X-Idempotency` reservation of a request, handed to the use case that
//! creates something, so that the stored answer commits in the same unit of work as the
//! creation (a retry after any crash then replays the answer, or runs once when nothing
//! committed).
use chrono::{DateTime, Utc};
use reporter_ports::ports::{
    IdempotencyCompletion, IdempotencyOwner, IdempotencyScope, StoredResponse,
};
use std::fmt;
use std::sync::Arc;

/// How the edge renders the answer of a use case's result (the exact response a replay
/// returns).
pub type Render<T> = Arc<dyn Fn(&T) -> StoredResponse + Send + Sync>;

/// A reserved idempotency key and how to answer it.
pub struct Idempotent<T> {
    /// The key.
    pub scope: IdempotencyScope,
    /// This request's hold on it.
    pub owner: IdempotencyOwner,
    /// Until when the answer is replayed.
    pub expires_at: DateTime<Utc>,
    /// The answer of a result.
    pub render: Render<T>,
}

impl<T> Idempotent<T> {
    /// The completion of the key with the answer of `result`, for the unit of work.
    pub fn completion(&self, result: &T) -> IdempotencyCompletion {
        IdempotencyCompletion {
            scope: self.scope.clone(),
            owner: self.owner,
            response: (self.render)(result),
            expires_at: self.expires_at,
        }
    }
}

impl<T> Clone for Idempotent<T> {
    fn clone(&self) -> Self {
        Self {
            scope: self.scope.clone(),
            owner: self.owner,
            expires_at: self.expires_at,
            render: self.render.clone(),
        }
    }
}

impl<T> fmt::Debug for Idempotent<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Idempotent")
            .field("scope", &self.scope)
            .field("owner", &self.owner)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}
