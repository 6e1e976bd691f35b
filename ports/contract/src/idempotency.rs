//! Contract of the [`IdempotencyStore`].
//!
//! Run everything with [`idempotency_contract!`](crate::idempotency_contract) (one test per check), or single checks from your own tests.
use crate::fixtures::{at, response, scope, template, tenant_a, tenant_b};
use futures_util::future::join_all;
use reporter_ports::StoreError;
use reporter_ports::ports::{
    Change, IdempotencyBegin, IdempotencyCompletion, IdempotencyOwner, IdempotencyStore,
    TemplateRepository, UnitOfWork, UnitOfWorkPort,
};

fn owner() -> IdempotencyOwner {
    IdempotencyOwner::new()
}

/// What the idempotency suite needs.
pub trait IdempotencyUnderTest: IdempotencyStore + Clone + 'static {}
impl<T> IdempotencyUnderTest for T where T: IdempotencyStore + Clone + 'static {}

/// The idempotency-store contract: reservations, leases, completions and replay.
///
/// `idempotency_contract!(mod <name>, |check| <future>)` emits module `<name>` with one
/// `#[tokio::test]` per check; the future runs `check` on a fresh adapter.
#[macro_export]
macro_rules! idempotency_contract {
    (mod $m:ident, |$check:ident| $run:expr) => {
        $crate::contract_module!(
            $m,
            idempotency,
            |$check| $run,
            [
                first_begin_starts_then_in_flight,
                expired_reservation_is_free,
                completed_response_is_replayed,
                expired_completion_is_free,
                release_frees_the_key,
                renew_extends_only_the_owners_lease,
                scopes_are_independent,
                concurrent_begin_starts_exactly_once,
            ]
        );
    };
}

/// What the idempotent-commit suite needs: the idempotency store and the unit of work on one
/// backend (the completion commits with the changes).
pub trait IdempotentCommitUnderTest:
    IdempotencyStore + UnitOfWorkPort + TemplateRepository + Clone + 'static
{
}
impl<T> IdempotentCommitUnderTest for T where
    T: IdempotencyStore + UnitOfWorkPort + TemplateRepository + Clone + 'static
{
}

/// The idempotent-commit contract: a unit of work that completes an idempotency key commits, or fails, with it.
///
/// `idempotent_commit_contract!(mod <name>, |check| <future>)` emits module `<name>` with one
/// `#[tokio::test]` per check; the future runs `check` on a fresh adapter.
#[macro_export]
macro_rules! idempotent_commit_contract {
    (mod $m:ident, |$check:ident| $run:expr) => {
        $crate::contract_module!(
            $m,
            idempotency,
            |$check| $run,
            [
                a_completion_commits_with_the_change,
                a_lost_reservation_refuses_the_whole_unit,
                a_failed_unit_leaves_the_key_reserved,
            ]
        );
    };
}

fn completion(
    scope: &reporter_ports::ports::IdempotencyScope,
    owner: IdempotencyOwner,
) -> IdempotencyCompletion {
    IdempotencyCompletion {
        scope: scope.clone(),
        owner,
        response: response(201, r#"{"id":"t"}"#),
        expires_at: at(3600),
    }
}

/// The change and its stored answer commit together: the record exists and `begin` replays.
pub async fn a_completion_commits_with_the_change<S: IdempotentCommitUnderTest>(s: S) {
    let k = scope(&tenant_a(), OP, "commit");
    let holder = owner();
    assert_eq!(
        s.begin(&k, holder, at(0), at(30)).await,
        Ok(IdempotencyBegin::Started)
    );
    let t = template(&tenant_a(), at(1));
    let uow = UnitOfWork::new()
        .change(Change::Template {
            record: t.clone(),
            expected_version: None,
        })
        .with_idempotency(Some(completion(&k, holder)));
    s.commit(&tenant_a(), uow).await.expect("commit");
    assert!(
        TemplateRepository::get(&s, &tenant_a(), t.id, false)
            .await
            .expect("get")
            .is_some()
    );
    assert_eq!(
        s.begin(&k, owner(), at(2), at(32)).await,
        Ok(IdempotencyBegin::Completed(response(201, r#"{"id":"t"}"#))),
        "a retry replays the committed answer"
    );
}

/// A unit whose owner lost the key (its lease ended and another request took it) is refused
/// as a whole: `IdempotencyLost`, and its change is not applied. So is a unit completing a key
/// that is already completed.
pub async fn a_lost_reservation_refuses_the_whole_unit<S: IdempotentCommitUnderTest>(s: S) {
    let k = scope(&tenant_a(), OP, "lost");
    let (first, second) = (owner(), owner());
    assert_eq!(
        s.begin(&k, first, at(0), at(30)).await,
        Ok(IdempotencyBegin::Started)
    );
    assert_eq!(
        s.begin(&k, second, at(31), at(61)).await,
        Ok(IdempotencyBegin::Started),
        "the first lease ended"
    );
    let t = template(&tenant_a(), at(32));
    let uow = |o| {
        UnitOfWork::new()
            .change(Change::Template {
                record: t.clone(),
                expected_version: None,
            })
            .with_idempotency(Some(completion(&k, o)))
    };
    assert_eq!(
        s.commit(&tenant_a(), uow(first)).await,
        Err(StoreError::IdempotencyLost)
    );
    assert!(
        TemplateRepository::get(&s, &tenant_a(), t.id, false)
            .await
            .expect("get")
            .is_none(),
        "nothing of the refused unit applied"
    );
    s.commit(&tenant_a(), uow(second))
        .await
        .expect("the holder commits");
    let again = template(&tenant_a(), at(33));
    let twice = UnitOfWork::new()
        .change(Change::Template {
            record: again.clone(),
            expected_version: None,
        })
        .with_idempotency(Some(completion(&k, second)));
    assert_eq!(
        s.commit(&tenant_a(), twice).await,
        Err(StoreError::IdempotencyLost),
        "a completed key cannot complete again"
    );
}

/// A unit refused for another reason leaves the key reserved (the request can still release
/// it or retry), never completed.
pub async fn a_failed_unit_leaves_the_key_reserved<S: IdempotentCommitUnderTest>(s: S) {
    let k = scope(&tenant_a(), OP, "failed");
    let holder = owner();
    assert_eq!(
        s.begin(&k, holder, at(0), at(30)).await,
        Ok(IdempotencyBegin::Started)
    );
    let t = template(&tenant_a(), at(1));
    let stale = UnitOfWork::new()
        .change(Change::Template {
            record: t,
            expected_version: Some(7),
        })
        .with_idempotency(Some(completion(&k, holder)));
    assert!(s.commit(&tenant_a(), stale).await.is_err());
    assert_eq!(
        s.begin(&k, owner(), at(2), at(32)).await,
        Ok(IdempotencyBegin::InFlight),
        "still reserved, not completed"
    );
    assert_eq!(s.renew(&k, holder, at(60)).await, Ok(true));
}

/// `renew` extends the owner's lease; a stranger's renew changes nothing; a lease renewed
/// past its first end still holds.
pub async fn renew_extends_only_the_owners_lease<S: IdempotencyUnderTest>(s: S) {
    let k = scope(&tenant_a(), OP, "renew");
    let holder = owner();
    assert_eq!(
        s.begin(&k, holder, at(0), at(10)).await,
        Ok(IdempotencyBegin::Started)
    );
    assert_eq!(s.renew(&k, holder, at(40)).await, Ok(true));
    assert_eq!(s.renew(&k, owner(), at(90)).await, Ok(false), "stranger");
    assert_eq!(
        s.begin(&k, owner(), at(20), at(50)).await,
        Ok(IdempotencyBegin::InFlight),
        "renewed past 10"
    );
    assert_eq!(
        s.begin(&k, owner(), at(41), at(71)).await,
        Ok(IdempotencyBegin::Started),
        "the renewed lease ended at 40, not 90"
    );
    assert_eq!(s.renew(&k, holder, at(100)).await, Ok(false), "lost");
}

const OP: &str = "POST /v1/templates";

/// The first `begin` reserves the key; a second one while reserved sees `InFlight`.
pub async fn first_begin_starts_then_in_flight<S: IdempotencyUnderTest>(s: S) {
    let k = scope(&tenant_a(), OP, "k1");
    assert_eq!(
        s.begin(&k, owner(), at(0), at(30)).await,
        Ok(IdempotencyBegin::Started),
        "first"
    );
    assert_eq!(
        s.begin(&k, owner(), at(10), at(40)).await,
        Ok(IdempotencyBegin::InFlight),
        "second while reserved"
    );
}

/// A reservation past its `in_flight_until` counts as free (the holder died).
pub async fn expired_reservation_is_free<S: IdempotencyUnderTest>(s: S) {
    let k = scope(&tenant_a(), OP, "k1");
    assert_eq!(
        s.begin(&k, owner(), at(0), at(30)).await,
        Ok(IdempotencyBegin::Started)
    );
    assert_eq!(
        s.begin(&k, owner(), at(31), at(61)).await,
        Ok(IdempotencyBegin::Started),
        "reservation expired at 30"
    );
    assert_eq!(
        s.begin(&k, owner(), at(40), at(70)).await,
        Ok(IdempotencyBegin::InFlight),
        "the new reservation holds"
    );
}

/// After `complete`, `begin` replays the stored response until it expires.
pub async fn completed_response_is_replayed<S: IdempotencyUnderTest>(s: S) {
    let k = scope(&tenant_a(), OP, "k1");
    let resp = response(201, r#"{"id":"x"}"#);
    assert_eq!(
        s.begin(&k, owner(), at(0), at(30)).await,
        Ok(IdempotencyBegin::Started)
    );
    s.complete(&k, resp.clone(), at(3600))
        .await
        .expect("complete");
    for now in [at(1), at(100), at(3599)] {
        assert_eq!(
            s.begin(&k, owner(), now, now + chrono::Duration::seconds(30))
                .await,
            Ok(IdempotencyBegin::Completed(resp.clone())),
            "replay at {now}"
        );
    }
}

/// A completed record past `expires_at` counts as free.
pub async fn expired_completion_is_free<S: IdempotencyUnderTest>(s: S) {
    let k = scope(&tenant_a(), OP, "k1");
    assert_eq!(
        s.begin(&k, owner(), at(0), at(30)).await,
        Ok(IdempotencyBegin::Started)
    );
    s.complete(&k, response(200, "{}"), at(100))
        .await
        .expect("complete");
    assert_eq!(
        s.begin(&k, owner(), at(101), at(131)).await,
        Ok(IdempotencyBegin::Started),
        "completion expired at 100"
    );
}

/// `release` frees its owner's reservation so a retry runs again; another owner's release
/// changes nothing; releasing a free key succeeds.
pub async fn release_frees_the_key<S: IdempotencyUnderTest>(s: S) {
    let k = scope(&tenant_a(), OP, "k1");
    let holder = owner();
    assert_eq!(
        s.begin(&k, holder, at(0), at(30)).await,
        Ok(IdempotencyBegin::Started)
    );
    s.release(&k, owner()).await.expect("a stranger's release");
    assert_eq!(
        s.begin(&k, owner(), at(1), at(31)).await,
        Ok(IdempotencyBegin::InFlight),
        "a stranger cannot release it"
    );
    s.release(&k, holder).await.expect("release");
    assert_eq!(
        s.begin(&k, owner(), at(1), at(31)).await,
        Ok(IdempotencyBegin::Started),
        "free after release"
    );
    let free = scope(&tenant_a(), OP, "never-used");
    s.release(&free, owner())
        .await
        .expect("releasing a free key");
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
            s.begin(k, owner(), at(0), at(30)).await,
            Ok(IdempotencyBegin::Started),
            "scope {i} is its own key"
        );
    }
    s.complete(&base, response(201, "a"), at(100))
        .await
        .expect("complete");
    assert_eq!(
        s.begin(&scopes[1], owner(), at(1), at(31)).await,
        Ok(IdempotencyBegin::InFlight),
        "another tenant's completion is not replayed"
    );
}

/// 32 concurrent `begin`s of one key: exactly one `Started`, the rest `InFlight`.
pub async fn concurrent_begin_starts_exactly_once<S: IdempotencyUnderTest>(s: S) {
    let k = scope(&tenant_a(), OP, "race");
    let tasks = (0..32).map(|_| {
        let (s, k) = (s.clone(), k.clone());
        tokio::spawn(async move { s.begin(&k, owner(), at(0), at(30)).await })
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
