//! Port contract suites: the behaviour every adapter of a port must show, written once and run
//! against the in-memory adapters and every later adapter (MongoDB, RabbitMQ, S3, ...).
//!
//! Each suite is an `async fn` taking a factory that builds a fresh, empty adapter, so every
//! check runs in isolation (its own database, bucket or queue names in real backends). Each
//! check is also a `pub async fn` taking one fresh adapter, for adapters that want one test per
//! check. A failing check panics with a message naming what broke; the suite runner prints
//! `contract <suite>::<check>` to stderr before each check.
//!
//! Time is pinned ([`fixtures::t0`]): suites never read the clock, and pass `now` explicitly.
//! Concurrency checks spawn Tokio tasks: run suites on a multi-thread runtime.
pub mod datasource;
pub mod figures;
pub mod fixtures;
pub mod idempotency;
pub mod jobs;
pub mod outbox;
pub mod services;
pub mod storage;
pub mod store;

/// Runs each named check on a fresh adapter from the factory, announcing it on stderr.
#[doc(hidden)]
#[macro_export]
macro_rules! run_checks {
    ($suite:literal, $factory:ident, [$($check:ident),* $(,)?]) => {
        $(
            eprintln!("contract {}::{}", $suite, stringify!($check));
            $check($factory().await).await;
        )*
    };
}
