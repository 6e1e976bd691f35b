//! Outbox behaviour beyond the contract suite: racing claimers over 3,000 rows, lease expiry
//! after an abandoned claim, and the indexes the outbox relies on.
use crate::common::with_mongo;
use chrono::Duration;
use futures_util::TryStreamExt;
use reporter_adapter_mongo::{DEADLINE_UNIQUE_INDEX, MongoStoreConfig, OUTBOX_TTL_INDEX};
use reporter_contract::fixtures::{at, outbox_row, tenant_a};
use reporter_ports::StoreError;
use reporter_ports::ids::OutboxId;
use reporter_ports::ports::{Outbox, OutboxRecord, OutboxStatus, UnitOfWork, UnitOfWorkPort};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// 3,000 rows: about three minutes on the Python MongoDB stand-in of CI (10,000 took ten),
/// still 30 rows per aggregate and 60 claims per claimer to race.
const ROWS: usize = 3_000;
const AGGREGATES: usize = 100;

/// Two claimers race over 3,000 rows of 100 aggregates, publishing what they claim: every
/// row is claimed exactly once (leases are long, so a second claim would be a double
/// delivery), and every aggregate is published in commit order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_claimers_race_over_3000_rows() {
    with_mongo(|dbs| async move {
        let store = dbs.store().await;
        let a = tenant_a();
        let mut committed: Vec<OutboxRecord> = Vec::with_capacity(ROWS);
        for chunk in 0..(ROWS / 100) {
            let rows: Vec<OutboxRecord> = (0..100)
                .map(|i| {
                    outbox_row(
                        &a,
                        &format!("agg-{}", (chunk * 100 + i) % AGGREGATES),
                        at(0),
                    )
                })
                .collect();
            store
                .commit(&a, UnitOfWork::new().with_outbox(rows.clone()))
                .await
                .expect("commit rows");
            committed.extend(rows);
        }
        let started = std::time::Instant::now();
        let seq = Arc::new(AtomicU64::new(0));
        let claimers = (0..2).map(|i| {
            let (store, seq) = (store.clone(), seq.clone());
            tokio::spawn(async move {
                let owner = format!("claimer-{i}");
                let mut mine: Vec<(OutboxId, u64)> = Vec::new();
                let mut idle = 0;
                loop {
                    let got = store
                        .claim(&owner, at(1), at(3600), 50)
                        .await
                        .expect("claim");
                    if got.is_empty() {
                        let pending = store.stats(at(1)).await.expect("stats").pending;
                        if pending == 0 {
                            break;
                        }
                        idle += 1;
                        assert!(
                            idle < 20_000,
                            "claimers stalled with {pending} pending rows"
                        );
                        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                        continue;
                    }
                    for row in got {
                        let token = row.lease.as_ref().expect("lease").token;
                        store
                            .mark_published(row.id, token, at(2))
                            .await
                            .expect("publish own claim");
                        mine.push((row.id, seq.fetch_add(1, Ordering::SeqCst)));
                    }
                }
                mine
            })
        });
        let mut all: Vec<(OutboxId, u64)> = Vec::new();
        let mut per_claimer = Vec::new();
        for c in futures_util::future::join_all(claimers).await {
            let mine = c.expect("claimer task");
            per_claimer.push(mine.len());
            all.extend(mine);
        }
        reporter_contract::figure!(
            "2 claimers drained {ROWS} rows in {:?} (split {per_claimer:?})",
            started.elapsed()
        );
        let unique: HashSet<OutboxId> = all.iter().map(|(id, _)| *id).collect();
        assert_eq!(unique.len(), all.len(), "a row was claimed twice");
        assert_eq!(all.len(), ROWS, "every row claimed");
        let order: HashMap<OutboxId, u64> = all.into_iter().collect();
        for agg in 0..AGGREGATES {
            let name = format!("agg-{agg}");
            let published: Vec<u64> = committed
                .iter()
                .filter(|r| r.aggregate == name)
                .map(|r| order[&r.id])
                .collect();
            assert!(
                published.windows(2).all(|w| w[0] < w[1]),
                "aggregate {name} published out of commit order: {published:?}"
            );
        }
        let st = store.stats(at(3)).await.expect("stats");
        assert_eq!((st.pending, st.parked), (0, 0));
    })
    .await;
}

/// A dispatcher claims and dies: its rows (and their aggregates' successors) stay held until
/// the lease ends, then another dispatcher takes them with new tokens and the dead one's
/// tokens settle nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_expiry_after_an_abandoned_claim() {
    with_mongo(|dbs| async move {
        let store = dbs.store().await;
        let a = tenant_a();
        let rows: Vec<OutboxRecord> = ["x", "x", "y"]
            .iter()
            .map(|agg| outbox_row(&a, agg, at(0)))
            .collect();
        store
            .commit(&a, UnitOfWork::new().with_outbox(rows.clone()))
            .await
            .expect("commit");
        let dead = store.claim("dead", at(1), at(31), 10).await.expect("claim");
        let dead_ids: Vec<OutboxId> = dead.iter().map(|r| r.id).collect();
        assert_eq!(dead_ids, vec![rows[0].id, rows[1].id, rows[2].id]);

        for t in [2, 15, 30] {
            assert!(
                store
                    .claim("live", at(t), at(t + 60), 10)
                    .await
                    .expect("claim")
                    .is_empty(),
                "nothing claimable at {t}s while the dead lease holds"
            );
        }
        let live = store
            .claim("live", at(31), at(91), 10)
            .await
            .expect("claim");
        assert_eq!(
            live.iter().map(|r| r.id).collect::<Vec<_>>(),
            dead_ids,
            "all rows reclaimable when the lease ends, in order"
        );
        for (old, new) in dead.iter().zip(&live) {
            let (old_t, new_t) = (
                old.lease.as_ref().expect("lease").token,
                new.lease.as_ref().expect("lease").token,
            );
            assert_ne!(old_t, new_t, "fresh token");
            assert_eq!(new.lease.as_ref().expect("lease").owner, "live");
            assert_eq!(
                store.mark_published(old.id, old_t, at(32)).await,
                Err(StoreError::VersionConflict),
                "the dead dispatcher's token is spent"
            );
            store
                .mark_published(new.id, new_t, at(32))
                .await
                .expect("live token publishes");
        }
        for r in &rows {
            let got = Outbox::get(&store, r.id).await.expect("get").expect("row");
            assert_eq!(got.status, OutboxStatus::Published);
            assert_eq!(got.attempts, 0, "an expired lease is not a failed attempt");
        }
        // Real clock: a lease of 300 ms expires on its own.
        let b = outbox_row(&a, "z", chrono::Utc::now());
        store
            .commit(&a, UnitOfWork::new().with_outbox([b.clone()]))
            .await
            .expect("commit");
        let now = chrono::Utc::now();
        let first = store
            .claim("dead", now, now + Duration::milliseconds(300), 1)
            .await
            .expect("claim");
        assert_eq!(first.len(), 1);
        assert!(
            store
                .claim(
                    "live",
                    chrono::Utc::now(),
                    chrono::Utc::now() + Duration::seconds(30),
                    1
                )
                .await
                .expect("claim")
                .is_empty()
        );
        tokio::time::sleep(std::time::Duration::from_millis(350)).await;
        let now = chrono::Utc::now();
        let second = store
            .claim("live", now, now + Duration::seconds(30), 1)
            .await
            .expect("claim");
        assert_eq!(second.iter().map(|r| r.id).collect::<Vec<_>>(), vec![b.id]);
    })
    .await;
}

/// One index as `(name, keys, unique, partial filter, expireAfterSeconds)`.
type IndexInfo = (
    String,
    mongodb::bson::Document,
    bool,
    Option<mongodb::bson::Document>,
    Option<u64>,
);

async fn indexes(db: &mongodb::Database, coll: &str) -> Vec<IndexInfo> {
    db.collection::<mongodb::bson::Document>(coll)
        .list_indexes()
        .await
        .expect("list indexes")
        .try_collect::<Vec<_>>()
        .await
        .expect("indexes")
        .into_iter()
        .map(|m| {
            let o = m.options.unwrap_or_default();
            (
                o.name.unwrap_or_default(),
                m.keys,
                o.unique.unwrap_or(false),
                o.partial_filter_expression,
                o.expire_after.map(|d| d.as_secs()),
            )
        })
        .collect()
}

/// `ensure_indexes` creates the unique, list, claim and TTL indexes, is idempotent, and
/// applies a changed outbox retention to the existing TTL index.
#[tokio::test]
async fn unique_and_ttl_indexes_are_present() {
    with_mongo(|dbs| async move {
        let config = MongoStoreConfig {
            outbox_retention: std::time::Duration::from_secs(3600),
            ..Default::default()
        };
        let store = dbs.store_with(config.clone()).await;
        store.ensure_indexes().await.expect("ensure twice");
        let db = store.database().clone();

        let dl = indexes(&db, "deadlines").await;
        let unique = dl
            .iter()
            .find(|i| i.0 == DEADLINE_UNIQUE_INDEX)
            .unwrap_or_else(|| panic!("deadline unique index missing: {dl:?}"));
        assert!(unique.2, "deadline index is unique");
        let keys: Vec<&str> = unique.1.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            ["tenant", "kind", "template_id", "due_date", "frequency"]
        );
        let partial = unique.3.as_ref().expect("partial filter");
        assert_eq!(partial.get_bool("deleted").ok(), Some(false), "{partial:?}");
        assert!(partial.contains_key("template_id"), "{partial:?}");

        let ob = indexes(&db, "outbox").await;
        let names: HashSet<&str> = ob.iter().map(|i| i.0.as_str()).collect();
        for n in [
            "outbox_claim",
            "outbox_aggregate_order",
            "outbox_backlog",
            OUTBOX_TTL_INDEX,
        ] {
            assert!(names.contains(n), "outbox index {n} missing: {names:?}");
        }
        let claim = ob
            .iter()
            .find(|i| i.0 == "outbox_claim")
            .expect("claim index");
        let keys: Vec<&str> = claim.1.keys().map(String::as_str).collect();
        assert_eq!(keys, ["status", "available_at", "created_at"]);
        let ttl = ob
            .iter()
            .find(|i| i.0 == OUTBOX_TTL_INDEX)
            .expect("ttl index");
        assert_eq!(ttl.4, Some(3600), "retention as expireAfterSeconds");

        for (coll, name) in [
            ("templates", "templates_list"),
            ("deadlines", "deadlines_list"),
            ("reports", "reports_list"),
        ] {
            assert!(
                indexes(&db, coll).await.iter().any(|i| i.0 == name),
                "{coll}.{name} missing"
            );
        }

        // A restart with another retention updates the TTL index in place.
        let longer = MongoStoreConfig {
            outbox_retention: std::time::Duration::from_secs(7200),
            ..config
        };
        reporter_adapter_mongo::MongoStore::from_client(dbs.client.clone(), db.name(), longer)
            .await
            .expect("restart with a new retention");
        let ttl = indexes(&db, "outbox")
            .await
            .into_iter()
            .find(|i| i.0 == OUTBOX_TTL_INDEX)
            .expect("ttl index");
        assert_eq!(ttl.4, Some(7200), "retention updated with collMod");
    })
    .await;
}
