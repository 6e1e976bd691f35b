//! Port contract suites: the behaviour every adapter of a port must show, written once and run
//! against the in-memory adapters and every later adapter (MongoDB, RabbitMQ, S3, ...).
//!
//! Each suite is an `async fn` taking a factory that builds a fresh, empty adapter, so every
//! check runs in isolation (its own database, bucket or queue names in real backends).
pub mod datasource;
pub mod idempotency;
pub mod jobs;
pub mod outbox;
pub mod storage;
pub mod store;
