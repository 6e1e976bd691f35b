//! In-memory adapters for every Reporter port: the zero-install mode and the reference
//! implementation the contract suites (`reporter-contract`) are first run against.
//!
//! - [`MemoryStore`]: templates, deadlines, reports, units of work, the outbox and idempotency
//!   records, all under one lock so a unit of work (record changes, outbox rows, the stored
//!   answer of an idempotent request) is atomic.
//! - [`MemoryObjectStorage`]: object storage in a map.
//! - [`MemoryJobQueue`] / [`MemoryJobReceiver`]: a bounded in-process job channel, and
//!   [`MemoryJobConsumer`], the embedded worker's consumer with retries and a dead-letter list.
//! - [`MemoryPublisher`]: an event publisher that records deliveries and can be told to fail.
//! - [`MemoryRateLimiter`]: fixed-window request counters for one process, bounded in keys.
//!
//! Nothing here is durable: state lives as long as the last clone of the adapter.
mod idempotency;
mod jobs;
mod outbox;
mod publisher;
mod rate_limit;
mod storage;
mod store;

pub use jobs::{
    DeadLetters, MemoryJobConsumer, MemoryJobQueue, MemoryJobReceiver, MemoryRetryPolicy,
};
pub use publisher::MemoryPublisher;
pub use rate_limit::{DEFAULT_MAX_KEYS, MemoryRateLimiter};
pub use storage::{ByteBudget, MemoryObjectStorage, OnEvict};
pub use store::{DEADLINE_UNIQUENESS_RULE, DEFAULT_MAX_PUBLISHED, MemoryStore};
