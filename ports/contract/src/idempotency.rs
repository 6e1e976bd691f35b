//! Contract of the [`IdempotencyStore`].
//!
//! Run everything with [`run_idempotency_suite`], or single checks from your own tests.
use crate::fixtures::{at, response, scope, tenant_a, tenant_b};
use futures_util::future::join_all;
use reporter_ports::ports::{IdempotencyBegin, IdempotencyStore};
use std::future::Future;

/// What the idempotency suite needs.
pub trait IdempotencyUnderTest: IdempotencyStore + Clone + 'static {}
impl<T> IdempotencyUnderTest for T where T: IdempotencyStore + Clone + 'static {}

/// Runs every idempotency check, each on a fresh, empty store from `factory`.
pub async fn run_idempotency_suite<S, F, Fut>(factory: F)
where
    S: IdempotencyUnderTest,
    F: Fn() -> Fut,
    Fut: Future<Output = S>,
{
    crate::run_checks!(
        "idempotency",
        factory,
        [
            first_begin_starts_then_in_flight,
            expired_reservation_is_free,
            completed_response_is_replayed,
            expired_completion_is_free,
            release_frees_the_key,
            scopes_are_independent,
            concurrent_begin_starts_exactly_once,
        ]
    );
}

const OP: &str = "POST /v1/templates";

/// The first `begin` reserves the key; a second one while reserved sees `InFlight`.
pub async fn first_begin_starts_then_in_flight<S: IdempotencyUnderTest>(s: S) {
    let k = scope(&tenant_a(), OP, "k1");
    assert_eq!(
        s.begin(&k, at(0), at(30)).await,
        Ok(IdempotencyBegin::Started),
        "first"
    );
    assert_eq!(
        s.begin(&k, at(10), at(40)).await,
        Ok(IdempotencyBegin::InFlight),
        "second while reserved"
    );
}

/// A reservation past its `in_flight_until` counts as free (the holder died).
pub async fn expired_reservation_is_free<S: IdempotencyUnderTest>(s: S) {
    let k = scope(&tenant_a(), OP, "k1");
    assert_eq!(
        s.begin(&k, at(0), at(30)).await,
        Ok(IdempotencyBegin::Started)
    );
    assert_eq!(
        s.begin(&k, at(31), at(61)).await,
        Ok(IdempotencyBegin::Started),
        "reservation expired at 30"
    );
    assert_eq!(
        s.begin(&k, at(40), at(70)).await,
        Ok(IdempotencyBegin::InFlight),
        "the new reservation holds"
    );
}

/// After `complete`, `begin` replays the stored response until it expires.
pub async fn completed_response_is_replayed<S: IdempotencyUnderTest>(s: S) {
    let k = scope(&tenant_a(), OP, "k1");
    let resp = response(201, r#"{"id":"x"}"#);
    assert_eq!(
        s.begin(&k, at(0), at(30)).await,
        Ok(IdempotencyBegin::Started)
    );
    s.complete(&k, resp.clone(), at(3600))
        .await
        .expect("complete");
    for now in [at(1), at(100), at(3599)] {
        assert_eq!(
            s.begin(&k, now, now + chrono::Duration::seconds(30)).await,
            Ok(IdempotencyBegin::Completed(resp.clone())),
            "replay at {now}"
        );
    }
}

/// A completed record past `expires_at` counts as free.
pub async fn expired_completion_is_free<S: IdempotencyUnderTest>(s: S) {
    let k = scope(&tenant_a(), OP, "k1");
    assert_eq!(
        s.begin(&k, at(0), at(30)).await,
        Ok(IdempotencyBegin::Started)
    );
    s.complete(&k, response(200, "{}"), at(100))
        .await
        .expect("complete");
    assert_eq!(
        s.begin(&k, at(101), at(131)).await,
        Ok(IdempotencyBegin::Started),
        "completion expired at 100"
    );
}

/// `release` frees a reservation so a retry runs again; releasing a free key succeeds.
pub async fn release_frees_the_key<S: IdempotencyUnderTest>(s: S) {
    let k = scope(&tenant_a(), OP, "k1");
    assert_eq!(
        s.begin(&k, at(0), at(30)).await,
        Ok(IdempotencyBegin::Started)
    );
    s.release(&k).await.expect("release");
    assert_eq!(
        s.begin(&k, at(1), at(31)).await,
        Ok(IdempotencyBegin::Started),
        "free after release"
    );
    let free = scope(&tenant_a(), OP, "never-used");
    s.release(&free).await.expect("releasing a free key");
}

/// Tenant, operation and key each separate scopes.
pub async fn scopes_are_independent<S: IdempotencyUnderTest>(s: S) {
    let base = scope(&tenant_a(), OP, "k1");
    let scopes = [
        base.clone(),
        scope(&tenant_b(), OP, "k1"),
        scope(&tenant_a(), "POST /v1/reports", "k1"),
        scope(&tenant_a(), OP, "k2"),
    ];
    for (i, k) in scopes.iter().enumerate() {
        assert_eq!(
            s.begin(k, at(0), at(30)).await,
            Ok(IdempotencyBegin::Started),
            "scope {i} is its own key"
        );
    }
    s.complete(&base, response(201, "a"), at(100))
        .await
        .expect("complete");
    assert_eq!(
        s.begin(&scopes[1], at(1), at(31)).await,
        Ok(IdempotencyBegin::InFlight),
        "another tenant's completion is not replayed"
    );
}

/// 32 concurrent `begin`s of one key: exactly one `Started`, the rest `InFlight`.
pub async fn concurrent_begin_starts_exactly_once<S: IdempotencyUnderTest>(s: S) {
    let k = scope(&tenant_a(), OP, "race");
    let tasks = (0..32).map(|_| {
        let (s, k) = (s.clone(), k.clone());
        tokio::spawn(async move { s.begin(&k, at(0), at(30)).await })
    });
    let results: Vec<_> = join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.expect("task panicked").expect("begin failed"))
        .collect();
    let started = results
        .iter()
        .filter(|r| **r == IdempotencyBegin::Started)
        .count();
    assert_eq!(started, 1, "exactly one Started, got {results:?}");
    assert!(
        results
            .iter()
            .all(|r| matches!(r, IdempotencyBegin::Started | IdempotencyBegin::InFlight)),
        "the rest InFlight, got {results:?}"
    );
}
