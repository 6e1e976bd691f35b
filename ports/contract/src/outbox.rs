//! Contract of the [`Outbox`], whose rows enter through [`UnitOfWorkPort::commit`].
//!
//! Run everything with [`outbox_contract!`](crate::outbox_contract) (one test per check), or single checks from your own tests.
use crate::fixtures::{at, outbox_row, template, tenant_a, tenant_b};
use chrono::{DateTime, Utc};
use futures_util::future::join_all;
use reporter_ports::ids::OutboxId;
use reporter_ports::ports::{
    Change, Lease, Outbox, OutboxRecord, OutboxStatus, UnitOfWork, UnitOfWorkPort,
};
use reporter_ports::{StoreError, TenantId};
use std::collections::{HashMap, HashSet};
use uuid::Uuid;

/// What the outbox suite needs: the outbox and the unit of work (the only way rows get in) on
/// one cloneable value sharing its state.
pub trait OutboxUnderTest: Outbox + UnitOfWorkPort + Clone + 'static {}
impl<T> OutboxUnderTest for T where T: Outbox + UnitOfWorkPort + Clone + 'static {}

/// The outbox contract: claims, leases, settling, parking, redrive, stats, retention and per-aggregate order.
///
/// `outbox_contract!(mod <name>, |check| <future>)` emits module `<name>` with one
/// `#[tokio::test]` per check; the future runs `check` on a fresh adapter.
#[macro_export]
macro_rules! outbox_contract {
    (mod $m:ident, |$check:ident| $run:expr) => {
        $crate::contract_module!(
            $m,
            outbox,
            |$check| $run,
            [
                committed_rows_are_pending,
                outbox_rows_commit_atomically_with_records,
                claim_leases_rows_oldest_first,
                claim_respects_limit,
                lease_expiry_makes_a_row_reclaimable,
                claim_respects_available_at,
                row_inserted_with_a_lease_is_held,
                token_is_checked,
                mark_published_settles_the_row,
                mark_failed_counts_and_delays,
                release_gives_a_row_back_without_an_attempt,
                parked_rows_are_never_claimed_until_redriven,
                redrive_by_tenant,
                parked_rows_are_listed_newest_first_by_tenant,
                stats_report_the_backlog,
                purge_published_removes_old_published_rows,
                per_aggregate_order_is_kept,
                commit_order_wins_over_event_time,
                concurrent_claimers_never_share_a_row,
            ]
        );
    };
}

// ---------------------------------------------------------------------------------------------
// helpers

const OWNER: &str = "contract-dispatcher";

async fn insert<S: OutboxUnderTest>(s: &S, tenant: &TenantId, rows: Vec<OutboxRecord>) {
    let uow = UnitOfWork::new().with_outbox(rows);
    if let Err(e) = s.commit(tenant, uow).await {
        panic!("committing outbox rows failed: {e:?}");
    }
}

async fn rows<S: OutboxUnderTest>(
    s: &S,
    tenant: &TenantId,
    aggregates: &[&str],
    now: DateTime<Utc>,
) -> Vec<OutboxRecord> {
    let rows: Vec<_> = aggregates
        .iter()
        .map(|a| outbox_row(tenant, a, now))
        .collect();
    insert(s, tenant, rows.clone()).await;
    rows
}

async fn claim<S: OutboxUnderTest>(
    s: &S,
    now: DateTime<Utc>,
    until: DateTime<Utc>,
    limit: usize,
) -> Vec<OutboxRecord> {
    s.claim(OWNER, now, until, limit)
        .await
        .expect("Outbox::claim failed")
}

fn ids(rows: &[OutboxRecord]) -> Vec<OutboxId> {
    rows.iter().map(|r| r.id).collect()
}

async fn row<S: OutboxUnderTest>(s: &S, id: OutboxId) -> OutboxRecord {
    Outbox::get(s, id)
        .await
        .expect("Outbox::get failed")
        .expect("outbox row missing")
}

fn token(r: &OutboxRecord) -> Uuid {
    r.lease.as_ref().expect("claimed row without a lease").token
}

// ---------------------------------------------------------------------------------------------
// checks

/// Committed rows read back pending, unleased, with zero attempts.
pub async fn committed_rows_are_pending<S: OutboxUnderTest>(s: S) {
    let a = tenant_a();
    let r = rows(&s, &a, &["agg-1"], at(0)).await;
    let got = row(&s, r[0].id).await;
    assert_eq!(got, r[0], "row read back as committed");
    assert_eq!(got.status, OutboxStatus::Pending);
    assert_eq!(got.attempts, 0);
    assert!(got.lease.is_none());
    let missing = Outbox::get(&s, OutboxId::new()).await.expect("get");
    assert!(missing.is_none(), "unknown row id");
}

/// Outbox rows of a failing unit of work are invisible, like its record changes.
pub async fn outbox_rows_commit_atomically_with_records<S: OutboxUnderTest>(s: S) {
    let a = tenant_a();
    let t = template(&a, at(0));
    let row1 = outbox_row(&a, "agg-1", at(0));
    let insert_t = Change::Template {
        record: t.clone(),
        expected_version: None,
    };
    let uow = UnitOfWork::new()
        .change(insert_t.clone())
        .change(insert_t.clone())
        .with_outbox([row1.clone()]);
    let res = s.commit(&a, uow).await;
    assert_eq!(
        res,
        Err(StoreError::VersionConflict),
        "double insert in one unit"
    );
    assert!(
        Outbox::get(&s, row1.id).await.expect("get").is_none(),
        "row invisible"
    );
    assert!(
        claim(&s, at(1), at(60), 10).await.is_empty(),
        "nothing claimable"
    );
    assert_eq!(
        s.stats(at(1)).await.expect("stats").pending,
        0,
        "nothing pending"
    );

    let row2 = outbox_row(&a, "agg-1", at(0));
    let uow = UnitOfWork::new()
        .change(insert_t)
        .with_outbox([row2.clone()]);
    s.commit(&a, uow).await.expect("good unit of work");
    assert_eq!(row(&s, row2.id).await.status, OutboxStatus::Pending);

    // A row of another tenant is refused.
    let foreign = outbox_row(&tenant_b(), "agg-2", at(0));
    let res = s
        .commit(&a, UnitOfWork::new().with_outbox([foreign.clone()]))
        .await;
    assert!(
        res.is_err(),
        "B's row committed as A must fail, got {res:?}"
    );
    assert!(Outbox::get(&s, foreign.id).await.expect("get").is_none());
}

/// A claim leases rows to the owner until `lease_until`, oldest first, with fresh tokens; a
/// second claim within the lease gets nothing.
pub async fn claim_leases_rows_oldest_first<S: OutboxUnderTest>(s: S) {
    let a = tenant_a();
    let r = rows(&s, &a, &["a", "b", "c"], at(0)).await;
    let got = claim(&s, at(1), at(61), 10).await;
    assert_eq!(ids(&got), ids(&r), "all rows, oldest first");
    let mut tokens = HashSet::new();
    for g in &got {
        let lease = g.lease.as_ref().expect("lease set");
        assert_eq!(lease.owner, OWNER, "lease owner");
        assert_eq!(lease.until, at(61), "lease until");
        assert!(tokens.insert(lease.token), "tokens are fresh per row");
        assert_eq!(row(&s, g.id).await.lease, g.lease, "lease stored");
    }
    assert!(
        claim(&s, at(2), at(62), 10).await.is_empty(),
        "leased rows are not claimable"
    );
}

/// `limit` caps a claim; the rest stays claimable.
pub async fn claim_respects_limit<S: OutboxUnderTest>(s: S) {
    let a = tenant_a();
    let r = rows(&s, &a, &["a", "b", "c", "d", "e"], at(0)).await;
    assert!(claim(&s, at(1), at(60), 0).await.is_empty(), "limit 0");
    let first = claim(&s, at(1), at(60), 2).await;
    assert_eq!(ids(&first), ids(&r[..2]), "first two");
    let rest = claim(&s, at(1), at(60), 10).await;
    assert_eq!(ids(&rest), ids(&r[2..]), "the rest");
}

/// After the lease ends another claimer gets the row with a new token; the old token can no
/// longer settle it.
pub async fn lease_expiry_makes_a_row_reclaimable<S: OutboxUnderTest>(s: S) {
    let a = tenant_a();
    let r = rows(&s, &a, &["a"], at(0)).await;
    let first = claim(&s, at(0), at(30), 1).await;
    assert_eq!(ids(&first), ids(&r));
    assert!(
        claim(&s, at(29), at(90), 1).await.is_empty(),
        "still leased at 29s"
    );
    let second = claim(&s, at(30), at(90), 1).await;
    assert_eq!(ids(&second), ids(&r), "reclaimable when the lease ends");
    assert_ne!(token(&first[0]), token(&second[0]), "new token");
    assert_eq!(
        s.mark_published(r[0].id, token(&first[0]), at(31)).await,
        Err(StoreError::VersionConflict),
        "expired token"
    );
    s.mark_published(r[0].id, token(&second[0]), at(31))
        .await
        .expect("current token publishes");
}

/// A row is not claimable before its `available_at`.
pub async fn claim_respects_available_at<S: OutboxUnderTest>(s: S) {
    let a = tenant_a();
    let mut later = outbox_row(&a, "a", at(0));
    later.available_at = at(100);
    insert(&s, &a, vec![later.clone()]).await;
    assert!(
        claim(&s, at(99), at(200), 10).await.is_empty(),
        "before available_at"
    );
    assert_eq!(ids(&claim(&s, at(100), at(200), 10).await), vec![later.id]);
}

/// A row committed with a lease (direct publish) is held by that lease: not claimable before
/// it ends, and settled by its token.
pub async fn row_inserted_with_a_lease_is_held<S: OutboxUnderTest>(s: S) {
    let a = tenant_a();
    let lease = Lease {
        token: Uuid::new_v4(),
        owner: "direct".into(),
        until: at(30),
    };
    let r = OutboxRecord::pending(
        outbox_row(&a, "a", at(0)).event,
        "a".into(),
        at(0),
        Some(lease.clone()),
    );
    insert(&s, &a, vec![r.clone()]).await;
    assert!(
        claim(&s, at(1), at(60), 10).await.is_empty(),
        "held by the direct lease"
    );
    s.mark_published(r.id, lease.token, at(2))
        .await
        .expect("direct publisher settles its row");
    assert_eq!(row(&s, r.id).await.status, OutboxStatus::Published);
}

/// Settling with a wrong token, or a row that is not leased, is a `VersionConflict`; an
/// unknown row is an error.
pub async fn token_is_checked<S: OutboxUnderTest>(s: S) {
    let a = tenant_a();
    let r = rows(&s, &a, &["a", "b"], at(0)).await;
    let bogus = Uuid::new_v4();
    // Not leased yet.
    assert_eq!(
        s.mark_published(r[0].id, bogus, at(1)).await,
        Err(StoreError::VersionConflict),
        "mark_published on an unleased row"
    );
    let got = claim(&s, at(1), at(60), 1).await;
    assert_eq!(ids(&got), vec![r[0].id]);
    assert_eq!(
        s.mark_published(r[0].id, bogus, at(2)).await,
        Err(StoreError::VersionConflict),
        "mark_published with a wrong token"
    );
    assert_eq!(
        s.mark_failed(r[0].id, bogus, "boom", at(3)).await,
        Err(StoreError::VersionConflict),
        "mark_failed with a wrong token"
    );
    assert_eq!(
        s.park(r[0].id, bogus, "boom", at(3)).await,
        Err(StoreError::VersionConflict),
        "park with a wrong token"
    );
    // Another row's token does not settle this one.
    let other = claim(&s, at(1), at(60), 1).await;
    assert_eq!(ids(&other), vec![r[1].id]);
    assert_eq!(
        s.mark_published(r[0].id, token(&other[0]), at(2)).await,
        Err(StoreError::VersionConflict),
        "another row's token"
    );
    let unchanged = row(&s, r[0].id).await;
    assert_eq!(
        unchanged.status,
        OutboxStatus::Pending,
        "wrong tokens change nothing"
    );
    assert_eq!(unchanged.attempts, 0);
    assert!(
        s.mark_published(OutboxId::new(), bogus, at(2))
            .await
            .is_err(),
        "unknown row"
    );
}

/// `mark_published` sets the status and instant and releases the lease; the token is spent.
pub async fn mark_published_settles_the_row<S: OutboxUnderTest>(s: S) {
    let a = tenant_a();
    let r = rows(&s, &a, &["a"], at(0)).await;
    let got = claim(&s, at(1), at(60), 1).await;
    s.mark_published(r[0].id, token(&got[0]), at(5))
        .await
        .expect("mark_published");
    let done = row(&s, r[0].id).await;
    assert_eq!(done.status, OutboxStatus::Published);
    assert_eq!(done.published_at, Some(at(5)));
    assert!(done.lease.is_none(), "lease released");
    assert!(
        claim(&s, at(100), at(200), 10).await.is_empty(),
        "published rows never claimed"
    );
    assert_eq!(
        s.mark_published(r[0].id, token(&got[0]), at(6)).await,
        Err(StoreError::VersionConflict),
        "a spent token cannot settle again"
    );
}

/// `mark_failed` adds an attempt, records the error, releases the lease and delays the row
/// until `retry_at`.
pub async fn mark_failed_counts_and_delays<S: OutboxUnderTest>(s: S) {
    let a = tenant_a();
    let r = rows(&s, &a, &["a"], at(0)).await;
    let got = claim(&s, at(1), at(60), 1).await;
    s.mark_failed(r[0].id, token(&got[0]), "broker down", at(30))
        .await
        .expect("mark_failed");
    let failed = row(&s, r[0].id).await;
    assert_eq!(failed.status, OutboxStatus::Pending);
    assert_eq!(failed.attempts, 1, "attempts + 1");
    assert_eq!(failed.last_error.as_deref(), Some("broker down"));
    assert_eq!(failed.available_at, at(30));
    assert!(failed.lease.is_none(), "lease released");
    assert!(
        claim(&s, at(29), at(90), 10).await.is_empty(),
        "not before retry_at"
    );
    let again = claim(&s, at(30), at(90), 10).await;
    assert_eq!(ids(&again), ids(&r), "claimable at retry_at");
    s.mark_failed(r[0].id, token(&again[0]), "again", at(40))
        .await
        .expect("second mark_failed");
    assert_eq!(row(&s, r[0].id).await.attempts, 2, "attempts accumulate");
}

/// `release` gives a claimed row back at once without counting an attempt; the token is spent,
/// and a wrong token changes nothing.
pub async fn release_gives_a_row_back_without_an_attempt<S: OutboxUnderTest>(s: S) {
    let a = tenant_a();
    let r = rows(&s, &a, &["a", "b"], at(0)).await;
    let got = claim(&s, at(1), at(60), 2).await;
    assert_eq!(
        s.release(r[0].id, Uuid::new_v4(), at(2)).await,
        Err(StoreError::VersionConflict),
        "a wrong token"
    );
    s.release(r[0].id, token(&got[0]), at(2))
        .await
        .expect("release");
    let back = row(&s, r[0].id).await;
    assert_eq!(back.status, OutboxStatus::Pending);
    assert_eq!(back.attempts, 0, "no attempt counted");
    assert!(back.last_error.is_none());
    assert!(back.lease.is_none(), "lease released");
    assert_eq!(
        s.release(r[0].id, token(&got[0]), at(2)).await,
        Err(StoreError::VersionConflict),
        "the token is spent"
    );
    let again = claim(&s, at(2), at(90), 10).await;
    assert_eq!(
        ids(&again),
        vec![r[0].id],
        "claimable at once; the other row is still leased"
    );
    assert!(
        s.release(OutboxId::new(), Uuid::new_v4(), at(2))
            .await
            .is_err(),
        "unknown row"
    );
}

/// A parked row is never claimed; `redrive` returns it to pending with attempts reset.
pub async fn parked_rows_are_never_claimed_until_redriven<S: OutboxUnderTest>(s: S) {
    let a = tenant_a();
    let r = rows(&s, &a, &["a"], at(0)).await;
    let got = claim(&s, at(1), at(60), 1).await;
    s.mark_failed(r[0].id, token(&got[0]), "x", at(2))
        .await
        .expect("fail");
    let got = claim(&s, at(2), at(60), 1).await;
    s.park(r[0].id, token(&got[0]), "too many attempts", at(3))
        .await
        .expect("park");
    let parked = row(&s, r[0].id).await;
    assert_eq!(parked.status, OutboxStatus::Parked);
    assert_eq!(parked.last_error.as_deref(), Some("too many attempts"));
    assert_eq!(parked.parked_at, Some(at(3)), "when it was parked");
    assert_eq!(parked.attempts, 2, "the attempt that parked it counts");
    assert!(parked.lease.is_none());
    assert!(
        claim(&s, at(1_000_000), at(2_000_000), 10).await.is_empty(),
        "parked rows are never claimed"
    );
    assert_eq!(
        s.redrive(None, at(100)).await.expect("redrive"),
        1,
        "one moved"
    );
    let back = row(&s, r[0].id).await;
    assert_eq!(back.status, OutboxStatus::Pending);
    assert_eq!(back.attempts, 0, "attempts reset");
    assert_eq!(back.parked_at, None, "a redrive clears parked_at");
    assert_eq!(
        ids(&claim(&s, at(100), at(160), 10).await),
        ids(&r),
        "claimable again"
    );
    assert_eq!(
        s.redrive(None, at(100)).await.expect("redrive"),
        0,
        "nothing left"
    );
}

/// `redrive(Some(tenant))` moves only that tenant's parked rows.
pub async fn redrive_by_tenant<S: OutboxUnderTest>(s: S) {
    let (a, b) = (tenant_a(), tenant_b());
    let ra = rows(&s, &a, &["a"], at(0)).await;
    let rb = rows(&s, &b, &["b"], at(0)).await;
    for g in claim(&s, at(1), at(60), 10).await {
        s.park(g.id, token(&g), "parked", at(2))
            .await
            .expect("park");
    }
    assert_eq!(
        s.redrive(Some(a.clone()), at(5)).await.expect("redrive A"),
        1
    );
    assert_eq!(row(&s, ra[0].id).await.status, OutboxStatus::Pending);
    assert_eq!(
        row(&s, rb[0].id).await.status,
        OutboxStatus::Parked,
        "B untouched"
    );
    assert_eq!(s.redrive(Some(b), at(5)).await.expect("redrive B"), 1);
}

/// `list_parked` answers only parked rows, newest parked first, bounded by `limit`, of one
/// tenant or all, with what an operator needs and nothing of the payload; a redrive empties it.
pub async fn parked_rows_are_listed_newest_first_by_tenant<S: OutboxUnderTest>(s: S) {
    let (a, b) = (tenant_a(), tenant_b());
    let ra = rows(&s, &a, &["a1", "a2", "a3", "a4"], at(0)).await;
    let rb = rows(&s, &b, &["b1"], at(1)).await;
    assert!(
        s.list_parked(None, 10).await.expect("list").is_empty(),
        "nothing parked yet"
    );
    let got = claim(&s, at(2), at(60), 10).await;
    let tok: HashMap<_, _> = got.iter().map(|g| (g.id, token(g))).collect();
    assert_eq!(tok.len(), 5, "every row claimed");
    // a1 and b1 fail once first: their attempts are kept.
    for r in [&ra[0], &rb[0]] {
        s.mark_failed(r.id, tok[&r.id], "returned", at(3))
            .await
            .expect("fail");
    }
    let again = claim(&s, at(4), at(60), 10).await;
    let tok2: HashMap<_, _> = again.iter().map(|g| (g.id, token(g))).collect();
    // Parked in the order a1 (t=10), b1 (t=11), a3 (t=12); a2 published, a4 stays pending.
    s.park(
        ra[0].id,
        tok2[&ra[0].id],
        "NO_ROUTE deadline.created",
        at(10),
    )
    .await
    .expect("park a1");
    s.park(rb[0].id, tok2[&rb[0].id], "NO_ROUTE b", at(11))
        .await
        .expect("park b1");
    s.park(ra[2].id, tok[&ra[2].id], "NO_ROUTE a3", at(12))
        .await
        .expect("park a3");
    s.mark_published(ra[1].id, tok[&ra[1].id], at(12))
        .await
        .expect("publish a2");

    let of_a = s.list_parked(Some(a.clone()), 10).await.expect("list A");
    assert_eq!(
        of_a.iter().map(|p| p.id).collect::<Vec<_>>(),
        vec![ra[2].id, ra[0].id],
        "A's parked rows, newest parked first; pending and published left out"
    );
    let first = &of_a[1];
    assert_eq!(first.tenant, a);
    assert_eq!(first.key, ra[0].event.key);
    assert_eq!(first.event_id, ra[0].event.id, "the ce-id");
    assert_eq!(first.subject, ra[0].event.subject);
    assert_eq!(first.aggregate, "a1");
    assert_eq!(
        first.attempts, 2,
        "one failure, then the one that parked it"
    );
    assert_eq!(first.reason.as_deref(), Some("NO_ROUTE deadline.created"));
    assert_eq!(first.parked_at, Some(at(10)));
    assert_eq!(first.created_at, at(0));
    assert_eq!(of_a[0].attempts, 1);

    let all = s.list_parked(None, 10).await.expect("list all");
    assert_eq!(
        all.iter().map(|p| p.id).collect::<Vec<_>>(),
        vec![ra[2].id, rb[0].id, ra[0].id],
        "every tenant's, newest parked first"
    );
    assert_eq!(
        s.list_parked(None, 2)
            .await
            .expect("list 2")
            .iter()
            .map(|p| p.id)
            .collect::<Vec<_>>(),
        vec![ra[2].id, rb[0].id],
        "bounded by limit, the newest kept"
    );
    assert!(s.list_parked(None, 0).await.expect("list 0").is_empty());
    assert_eq!(
        s.list_parked(Some(b.clone()), 10)
            .await
            .expect("list B")
            .iter()
            .map(|p| p.id)
            .collect::<Vec<_>>(),
        vec![rb[0].id]
    );

    assert_eq!(
        s.redrive(Some(a.clone()), at(20)).await.expect("redrive"),
        2
    );
    assert!(
        s.list_parked(Some(a), 10).await.expect("list A").is_empty(),
        "a redrive empties the tenant's list"
    );
    assert_eq!(
        s.list_parked(None, 10)
            .await
            .expect("list all")
            .iter()
            .map(|p| p.id)
            .collect::<Vec<_>>(),
        vec![rb[0].id],
        "the other tenant's row stays parked"
    );
}

/// `stats` counts pending (leased or not) and parked rows and the age of the oldest pending.
pub async fn stats_report_the_backlog<S: OutboxUnderTest>(s: S) {
    let a = tenant_a();
    let empty = s.stats(at(0)).await.expect("stats");
    assert_eq!(
        (empty.pending, empty.parked, empty.oldest_pending_age_secs),
        (0, 0, None),
        "empty outbox"
    );
    let r1 = rows(&s, &a, &["a"], at(0)).await;
    let r2 = rows(&s, &a, &["b", "c"], at(10)).await;
    let st = s.stats(at(100)).await.expect("stats");
    assert_eq!((st.pending, st.parked), (3, 0));
    assert_eq!(
        st.oldest_pending_age_secs,
        Some(100),
        "age of the oldest pending row"
    );

    let got = claim(&s, at(100), at(200), 10).await;
    let by_id: HashMap<_, _> = got.iter().map(|g| (g.id, token(g))).collect();
    assert_eq!(
        s.stats(at(100)).await.expect("stats").pending,
        3,
        "leased rows are pending"
    );
    s.mark_published(r1[0].id, by_id[&r1[0].id], at(101))
        .await
        .expect("publish");
    s.park(r2[0].id, by_id[&r2[0].id], "p", at(105))
        .await
        .expect("park");
    let st = s.stats(at(110)).await.expect("stats");
    assert_eq!((st.pending, st.parked), (1, 1));
    assert_eq!(
        st.oldest_pending_age_secs,
        Some(100),
        "oldest remaining is 10s old at 110"
    );
}

/// `purge_published` deletes published rows published strictly before `before`, and nothing
/// else.
pub async fn purge_published_removes_old_published_rows<S: OutboxUnderTest>(s: S) {
    let a = tenant_a();
    let r = rows(&s, &a, &["a", "b", "c", "d"], at(0)).await;
    let got = claim(&s, at(1), at(60), 10).await;
    let tok: HashMap<_, _> = got.iter().map(|g| (g.id, token(g))).collect();
    s.mark_published(r[0].id, tok[&r[0].id], at(10))
        .await
        .expect("p0");
    s.mark_published(r[1].id, tok[&r[1].id], at(20))
        .await
        .expect("p1");
    s.park(r[2].id, tok[&r[2].id], "parked", at(3))
        .await
        .expect("park");
    assert_eq!(
        s.purge_published(at(20)).await.expect("purge"),
        1,
        "strictly before"
    );
    assert!(
        Outbox::get(&s, r[0].id).await.expect("get").is_none(),
        "purged"
    );
    assert!(
        Outbox::get(&s, r[1].id).await.expect("get").is_some(),
        "published at 20 kept"
    );
    assert!(
        Outbox::get(&s, r[2].id).await.expect("get").is_some(),
        "parked kept"
    );
    assert!(
        Outbox::get(&s, r[3].id).await.expect("get").is_some(),
        "pending kept"
    );
    assert_eq!(s.purge_published(at(1000)).await.expect("purge"), 1);
    assert_eq!(s.purge_published(at(1000)).await.expect("purge"), 0);
}

/// Checks the per-aggregate rule on one claim result: a row of an aggregate may be returned
/// only when every older row of that aggregate still pending (`pending`, commit order) is
/// returned before it.
fn assert_aggregate_order(what: &str, pending: &[OutboxRecord], claimed: &[OutboxRecord]) {
    let pos: HashMap<OutboxId, usize> =
        claimed.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
    for (i, r) in pending.iter().enumerate() {
        let Some(&ri) = pos.get(&r.id) else { continue };
        for older in pending[..i].iter().filter(|o| o.aggregate == r.aggregate) {
            match pos.get(&older.id) {
                Some(&oi) if oi < ri => {}
                _ => panic!(
                    "{what}: row {} of aggregate {} handed out before older pending row {}",
                    r.id, r.aggregate, older.id
                ),
            }
        }
    }
}

/// Rows of a later commit may carry an earlier event time than rows of an earlier commit (a
/// unit of work built before another but committed after it, or clocks of two processes that
/// disagree). Commit order decides: every row is still handed out, each aggregate in commit
/// order, and no aggregate is held back for good by its own younger rows.
pub async fn commit_order_wins_over_event_time<S: OutboxUnderTest>(s: S) {
    let a = tenant_a();
    // Commit 1 at t=10 and commit 2 at t=5, both over x and y, interleaved.
    let first = rows(&s, &a, &["x", "y", "x", "y"], at(10)).await;
    let second = rows(&s, &a, &["y", "x", "y", "x"], at(5)).await;
    let committed: Vec<OutboxRecord> = first.iter().chain(&second).cloned().collect();
    let mut published: Vec<OutboxId> = Vec::new();
    for round in 0..committed.len() {
        let c = claim(&s, at(20), at(80), 3).await;
        assert!(
            !c.is_empty(),
            "round {round}: nothing claimable with {} of {} rows unpublished",
            committed.len() - published.len(),
            committed.len()
        );
        let pending: Vec<OutboxRecord> = committed
            .iter()
            .filter(|r| !published.contains(&r.id))
            .cloned()
            .collect();
        assert_aggregate_order(&format!("round {round}"), &pending, &c);
        for g in &c {
            s.mark_published(g.id, token(g), at(21))
                .await
                .expect("publish");
            published.push(g.id);
        }
        if published.len() == committed.len() {
            break;
        }
    }
    assert_eq!(published.len(), committed.len(), "every row handed out");
    for agg in ["x", "y"] {
        let want: Vec<OutboxId> = committed
            .iter()
            .filter(|r| r.aggregate == agg)
            .map(|r| r.id)
            .collect();
        let got: Vec<OutboxId> = published
            .iter()
            .copied()
            .filter(|id| want.contains(id))
            .collect();
        assert_eq!(got, want, "aggregate {agg} out of commit order");
    }
}

/// Rows of one aggregate come out in commit order: never a row while an older pending row of
/// its aggregate is leased elsewhere, waiting for a retry, or not returned ahead of it.
pub async fn per_aggregate_order_is_kept<S: OutboxUnderTest>(s: S) {
    let a = tenant_a();
    let r = rows(&s, &a, &["x", "y", "x", "x", "y"], at(0)).await;
    let (x1, y1, x2, x3, y2) = (&r[0], &r[1], &r[2], &r[3], &r[4]);

    // One at a time: the first claim can only be x1.
    let c1 = claim(&s, at(1), at(60), 1).await;
    assert_eq!(ids(&c1), vec![x1.id], "oldest row first");
    // x1 is leased: nothing of x may come out; y1 may.
    let c2 = claim(&s, at(1), at(60), 10).await;
    assert!(
        c2.iter().all(|g| g.aggregate != "x"),
        "no row of x while x1 is leased, got {:?}",
        ids(&c2)
    );
    assert!(c2.iter().any(|g| g.id == y1.id), "y1 is free to go");
    assert_aggregate_order("claim while x1 leased", &r[1..], &c2);
    // x1 fails with a retry later: x2 still may not overtake it.
    s.mark_failed(x1.id, token(&c1[0]), "nack", at(50))
        .await
        .expect("mark_failed x1");
    let c3 = claim(&s, at(2), at(60), 10).await;
    assert!(
        c3.iter().all(|g| g.aggregate != "x"),
        "no row of x while x1 waits for its retry, got {:?}",
        ids(&c3)
    );
    // Settle everything of y handed out so far.
    for g in c2.iter().chain(&c3) {
        s.mark_published(g.id, token(g), at(3))
            .await
            .expect("publish y");
    }
    // At retry time x1 comes first; x2 and x3 may follow only behind it.
    let c4 = claim(&s, at(50), at(110), 10).await;
    assert_eq!(
        c4.first().map(|g| g.id),
        Some(x1.id),
        "x1 first at its retry time"
    );
    let still_pending: Vec<OutboxRecord> = [x1, x2, x3, y2]
        .into_iter()
        .filter(|p| !c2.iter().chain(&c3).any(|g| g.id == p.id))
        .cloned()
        .collect();
    assert_aggregate_order("claim at retry time", &still_pending, &c4);
    for g in &c4 {
        s.mark_published(g.id, token(g), at(51))
            .await
            .expect("publish");
    }
    // Drain the rest, one at a time, and check the global publish order per aggregate.
    let mut published: Vec<OutboxId> = c2.iter().chain(&c3).chain(&c4).map(|g| g.id).collect();
    for _ in 0..10 {
        let c = claim(&s, at(60), at(120), 1).await;
        let Some(g) = c.first() else { break };
        s.mark_published(g.id, token(g), at(61))
            .await
            .expect("publish");
        published.push(g.id);
    }
    assert_eq!(published.len(), 5, "every row published exactly once");
    for agg in ["x", "y"] {
        let want: Vec<_> = r
            .iter()
            .filter(|g| g.aggregate == agg)
            .map(|g| g.id)
            .collect();
        let got: Vec<_> = published
            .iter()
            .copied()
            .filter(|id| want.contains(id))
            .collect();
        assert_eq!(got, want, "publish order of aggregate {agg}");
    }
}

/// 16 concurrent claimers over 48 rows of distinct aggregates: every row is handed out exactly
/// once while the leases hold.
pub async fn concurrent_claimers_never_share_a_row<S: OutboxUnderTest>(s: S) {
    let a = tenant_a();
    let names: Vec<String> = (0..48).map(|i| format!("agg-{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let r = rows(&s, &a, &refs, at(0)).await;
    let tasks = (0..16).map(|i| {
        let s = s.clone();
        tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let got = s
                    .claim(&format!("claimer-{i}"), at(1), at(3600), 3)
                    .await
                    .expect("claim");
                if got.is_empty() {
                    break;
                }
                mine.extend(got.into_iter().map(|g| g.id));
                tokio::task::yield_now().await;
            }
            mine
        })
    });
    let mut all = Vec::new();
    for t in join_all(tasks).await {
        all.extend(t.expect("claimer task panicked"));
    }
    let unique: HashSet<_> = all.iter().collect();
    assert_eq!(
        unique.len(),
        all.len(),
        "a row was claimed twice within its lease"
    );
    assert_eq!(all.len(), r.len(), "every row claimed once");
}
