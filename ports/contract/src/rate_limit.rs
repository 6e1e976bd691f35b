//! Contract of the [`RateLimiter`]: fixed windows, atomic counting, independent keys.
//!
//! Run everything with [`rate_limit_contract!`](crate::rate_limit_contract) (one test per
//! check), or single checks from your own tests. The checks that wait for a window to close
//! use one-second windows and wait more than twice that, so a loaded machine does not make
//! them fail.
use futures_util::future::join_all;
use reporter_ports::ports::RateLimiter;
use std::sync::Arc;
use std::time::Duration;

const MINUTE: Duration = Duration::from_secs(60);

/// What the rate-limit suite needs.
pub trait RateLimiterUnderTest: RateLimiter + 'static {}
impl<T> RateLimiterUnderTest for T where T: RateLimiter + 'static {}

/// The rate-limiter contract.
///
/// `rate_limit_contract!(mod <name>, |check| <future>)` emits module `<name>` with one
/// `#[tokio::test]` per check; the future runs `check` on a fresh adapter (its own key
/// space).
#[macro_export]
macro_rules! rate_limit_contract {
    (mod $m:ident, |$check:ident| $run:expr) => {
        $crate::contract_module!(
            $m,
            rate_limit,
            |$check| $run,
            [
                allows_the_limit_then_refuses,
                keys_are_independent,
                a_closed_window_starts_again,
                concurrent_hits_allow_exactly_the_limit,
                the_backend_answers_its_check,
            ]
        );
    };
}

/// `limit` requests pass, the next ones are refused, and the counts and the time to the
/// window's end are reported.
pub async fn allows_the_limit_then_refuses(l: impl RateLimiterUnderTest) {
    for i in 1..=5u64 {
        let d = l.hit("global:10.0.0.1", 5, MINUTE).await.expect("hit");
        assert!(d.allowed, "request {i} of 5 must pass");
        assert_eq!(d.count, i);
        assert_eq!(d.remaining(5), u32::try_from(5 - i).unwrap_or(0));
        assert!(d.reset_after > Duration::ZERO && d.reset_after <= MINUTE);
    }
    for i in 6..=7u64 {
        let d = l.hit("global:10.0.0.1", 5, MINUTE).await.expect("hit");
        assert!(!d.allowed, "request {i} over a limit of 5 must be refused");
        assert_eq!(d.count, i, "refused requests are counted too");
        assert_eq!(d.remaining(5), 0);
        assert!(d.reset_after > Duration::ZERO && d.reset_after <= MINUTE);
    }
}

/// One key's exhausted budget does not touch another key's.
pub async fn keys_are_independent(l: impl RateLimiterUnderTest) {
    for _ in 0..3 {
        l.hit("export:10.0.0.1", 2, MINUTE).await.expect("hit");
    }
    assert!(
        !l.hit("export:10.0.0.1", 2, MINUTE)
            .await
            .expect("hit")
            .allowed
    );
    let other = l.hit("export:10.0.0.2", 2, MINUTE).await.expect("hit");
    assert!(other.allowed);
    assert_eq!(other.count, 1);
    let tier = l.hit("dispatch:10.0.0.1", 2, MINUTE).await.expect("hit");
    assert!(
        tier.allowed,
        "another tier of the same client is another key"
    );
}

/// After the window closes, the key's count starts again at one.
pub async fn a_closed_window_starts_again(l: impl RateLimiterUnderTest) {
    let window = Duration::from_secs(1);
    assert!(l.hit("k", 1, window).await.expect("hit").allowed);
    assert!(!l.hit("k", 1, window).await.expect("hit").allowed);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let d = l.hit("k", 1, window).await.expect("hit");
    assert!(d.allowed, "a new window allows again");
    assert_eq!(d.count, 1);
}

/// Of 60 concurrent requests on one key with a limit of 25, exactly 25 pass.
pub async fn concurrent_hits_allow_exactly_the_limit(l: impl RateLimiterUnderTest) {
    let l = Arc::new(l);
    let hits = (0..60).map(|_| {
        let l = l.clone();
        tokio::spawn(async move { l.hit("global:burst", 25, MINUTE).await })
    });
    let allowed = join_all(hits)
        .await
        .into_iter()
        .map(|r| r.expect("task").expect("hit"))
        .filter(|d| d.allowed)
        .count();
    assert_eq!(allowed, 25);
}

/// A reachable backend answers its readiness check and names itself.
pub async fn the_backend_answers_its_check(l: impl RateLimiterUnderTest) {
    l.check().await.expect("check");
    assert!(matches!(l.backend(), "memory" | "redis"));
}
