//! Port contract suites: the behaviour every adapter of a port must show, written once and run
//! against the in-memory adapters and every later adapter (MongoDB, RabbitMQ, S3, ...).
//!
//! Each suite is an `async fn` taking a factory that builds a fresh, empty adapter, so every
//! check runs in isolation (its own database, bucket or queue names in real backends). Each
//! check is also a `pub async fn` taking one fresh adapter, for adapters that want one test per
//! check. A failing check panics with a message naming what broke; the suite runner prints
//! `contract <suite>::<check>` to stderr before each check, runs every check even when one
//! fails, and then fails naming every failed check.
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

/// Runs each named check on a fresh adapter from the factory, announcing it on stderr. Every
/// check runs even when an earlier one fails: a failure is caught, and the suite then fails
/// once, listing every failed check (so the first failure hides none of the rest).
#[doc(hidden)]
#[macro_export]
macro_rules! run_checks {
    ($suite:literal, $factory:ident, [$($check:ident),* $(,)?]) => {
        $crate::run_checks!(@run $suite, $factory, adapter, adapter, [$($check),*])
    };
    // Checks that borrow the adapter.
    ($suite:literal, $factory:ident, &[$($check:ident),* $(,)?]) => {
        $crate::run_checks!(@run $suite, $factory, adapter, &adapter, [$($check),*])
    };
    (@run $suite:literal, $factory:ident, $a:ident, $arg:expr, [$($check:ident),*]) => {{
        let mut failed: Vec<&'static str> = Vec::new();
        $(
            eprintln!("contract {}::{}", $suite, stringify!($check));
            let $a = $factory().await;
            let outcome = $crate::catch_failure($check($arg)).await;
            if outcome.is_err() {
                eprintln!("contract {}::{} FAILED", $suite, stringify!($check));
                failed.push(stringify!($check));
            }
        )*
        assert!(
            failed.is_empty(),
            "contract {}: {} check(s) failed: {} (their panics are printed above)",
            $suite,
            failed.len(),
            failed.join(", ")
        );
    }};
}

/// Awaits `check`, answering `Err` when it panicked (the panic message is printed by the
/// panic hook as usual).
#[doc(hidden)]
pub async fn catch_failure<F: std::future::Future<Output = ()>>(check: F) -> Result<(), ()> {
    use futures_util::FutureExt;
    std::panic::AssertUnwindSafe(check)
        .catch_unwind()
        .await
        .map_err(|_| ())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    static RAN: AtomicUsize = AtomicUsize::new(0);

    async fn fails(_: ()) {
        RAN.fetch_add(1, Ordering::SeqCst);
        panic!("this check fails");
    }

    async fn passes(_: ()) {
        RAN.fetch_add(1, Ordering::SeqCst);
    }

    async fn suite() {
        let factory = || async {};
        crate::run_checks!("demo", factory, [fails, passes, fails]);
    }

    #[tokio::test]
    async fn a_failed_check_hides_none_of_the_rest() {
        let outcome = crate::catch_failure(suite()).await;
        assert!(outcome.is_err(), "the suite fails");
        assert_eq!(RAN.load(Ordering::SeqCst), 3, "every check ran");
    }
}
