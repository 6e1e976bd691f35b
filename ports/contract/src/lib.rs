//! Port contract suites: the behaviour every adapter of a port must show, written once and run
//! against the in-memory adapters and every later adapter (MongoDB, RabbitMQ, S3, ...).
//!
//! Each check is a `pub async fn` taking a fresh, empty adapter (its own database, bucket or
//! queue names in real backends). Each suite is a macro that an adapter's test file calls once:
//! it emits one `#[tokio::test]` per check, in a module of the caller's choosing, so each check
//! passes or fails on its own and can be run by name:
//!
//! ```ignore
//! reporter_contract::store_contract!(mod store, |check| async {
//!     check(MemoryStore::new()).await
//! });
//! ```
//!
//! `|check| <future>`: the future runs `check` on a fresh adapter (setting up and tearing down
//! whatever the backend needs); `check` is the check function. A failing check panics with a
//! message naming what broke.
//!
//! Time is pinned ([`fixtures::t0`]): suites never read the clock, and pass `now` explicitly.
//! Concurrency checks spawn Tokio tasks: the emitted tests run on a multi-thread runtime.
pub mod datasource;
pub mod figures;
pub mod fixtures;
pub mod idempotency;
pub mod jobs;
pub mod outbox;
pub mod rate_limit;
pub mod services;
pub mod sql;
pub mod storage;
pub mod store;

/// One `#[tokio::test]` (multi-thread runtime) per check `$name` of module `$module` of this
/// crate, each binding `$check` to the check function and awaiting `$run`. Used by the suite
/// macros, which name their checks once.
#[doc(hidden)]
#[macro_export]
macro_rules! contract_tests {
    ($module:ident, |$check:ident| $run:expr, [$($name:ident),* $(,)?]) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $name() {
                let $check = $crate::$module::$name;
                $run.await
            }
        )*
    };
}

/// A module `$m` (seeing the caller's items) holding one test per check; the body of each
/// suite macro.
#[doc(hidden)]
#[macro_export]
macro_rules! contract_module {
    ($m:ident, $module:ident, |$check:ident| $run:expr, [$($name:ident),* $(,)?]) => {
        mod $m {
            #[allow(unused_imports)]
            use super::*;
            $crate::contract_tests!($module, |$check| $run, [$($name),*]);
        }
    };
}
