//! Rate limiting: a fixed-window request counter per key. Every API process that uses the
//! same backend shares one budget per key.
use async_trait::async_trait;
use std::time::Duration;

/// What one counted request decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateDecision {
    /// True while the key's count in its window is at most the limit.
    pub allowed: bool,
    /// Requests counted in the key's current window, this one included.
    pub count: u64,
    /// Time until the key's window closes (and its count starts again at zero); at most the
    /// window and more than zero.
    pub reset_after: Duration,
}

impl RateDecision {
    /// Requests still allowed in the window after this one, for `limit`.
    pub fn remaining(&self, limit: u32) -> u32 {
        u32::try_from(u64::from(limit).saturating_sub(self.count)).unwrap_or(0)
    }
}

/// The backend of a [`RateLimiter`] could not count.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RateLimitError {
    /// The backend did not answer (unreachable, timed out, refused the command); never a
    /// credential in the text.
    #[error("rate limiter backend unavailable: {0}")]
    Unavailable(String),
}

/// A fixed-window counter per key.
#[async_trait]
pub trait RateLimiter: Send + Sync {
    /// Counts one request against `key` and decides it against `limit`.
    ///
    /// The first request of a key opens its window of length `window`; every request until
    /// the window closes is counted in it, refused ones too. MUST be atomic: of any number
    /// of concurrent requests on one key (from any process sharing the backend) exactly
    /// `limit` are allowed per window. `window` MUST be at least one millisecond.
    async fn hit(
        &self,
        key: &str,
        limit: u32,
        window: Duration,
    ) -> Result<RateDecision, RateLimitError>;

    /// Whether the backend answers (readiness).
    async fn check(&self) -> Result<(), RateLimitError>;

    /// The backend's name for logs, metrics and readiness: `memory` or `redis`.
    fn backend(&self) -> &'static str;
}
