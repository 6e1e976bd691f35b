//! The idempotency contract suite against MongoDB, and the TTL index it relies on.
use crate::common::with_mongo;
use futures_util::TryStreamExt;
use mongodb::bson::Document;
use reporter_adapter_mongo::{
    IDEMPOTENCY_COLLECTION, IDEMPOTENCY_TTL_INDEX, MongoIdempotencyStore,
};

reporter_contract::idempotency_contract!(mod idempotency, |check| with_mongo(|dbs| async move {
    let db = dbs.client.database(&dbs.fresh_name());
    let store = MongoIdempotencyStore::new(&db)
        .await
        .expect("MongoIdempotencyStore::new");
    check(store).await;
}));

#[tokio::test]
async fn idempotency_ttl_index_is_present() {
    with_mongo(|dbs| async move {
        let db = dbs.client.database(&dbs.fresh_name());
        MongoIdempotencyStore::new(&db).await.expect("store");
        // Creating it twice is fine (every process start does).
        MongoIdempotencyStore::new(&db).await.expect("store again");
        let indexes: Vec<Document> = db
            .collection::<Document>(IDEMPOTENCY_COLLECTION)
            .list_indexes()
            .await
            .expect("list indexes")
            .try_collect::<Vec<_>>()
            .await
            .expect("indexes")
            .into_iter()
            .map(|m| {
                let mut d = Document::new();
                d.insert("name", m.options.as_ref().and_then(|o| o.name.clone()));
                d.insert(
                    "ttl",
                    m.options
                        .as_ref()
                        .and_then(|o| o.expire_after)
                        .map(|d| d.as_secs() as i64),
                );
                d.insert("keys", m.keys);
                d
            })
            .collect();
        let ttl = indexes
            .iter()
            .find(|d| d.get_str("name").ok() == Some(IDEMPOTENCY_TTL_INDEX))
            .unwrap_or_else(|| panic!("TTL index missing: {indexes:?}"));
        assert_eq!(
            ttl.get_i64("ttl").ok(),
            Some(0),
            "expireAfterSeconds 0: {ttl:?}"
        );
    })
    .await;
}

/// The store and the idempotency records of one database, as `reporter serve` wires them on
/// MongoDB: a unit of work completes its key in the same transaction as its changes.
#[derive(Clone)]
struct OneDatabase {
    store: reporter_adapter_mongo::MongoStore,
    idempotency: MongoIdempotencyStore,
}

mod delegation {
    use super::OneDatabase;
    use async_trait::async_trait;
    use chrono::{DateTime, Utc};
    use reporter_ports::ports::*;
    use reporter_ports::template::Template;
    use reporter_ports::{StoreError, TemplateId, TenantId};

    #[async_trait]
    impl IdempotencyStore for OneDatabase {
        async fn begin(
            &self,
            s: &IdempotencyScope,
            o: IdempotencyOwner,
            now: DateTime<Utc>,
            until: DateTime<Utc>,
        ) -> Result<IdempotencyBegin, StoreError> {
            self.idempotency.begin(s, o, now, until).await
        }
        async fn renew(
            &self,
            s: &IdempotencyScope,
            o: IdempotencyOwner,
            until: DateTime<Utc>,
        ) -> Result<bool, StoreError> {
            self.idempotency.renew(s, o, until).await
        }
        async fn complete(
            &self,
            s: &IdempotencyScope,
            r: StoredResponse,
            until: DateTime<Utc>,
        ) -> Result<(), StoreError> {
            self.idempotency.complete(s, r, until).await
        }
        async fn release(
            &self,
            s: &IdempotencyScope,
            o: IdempotencyOwner,
        ) -> Result<(), StoreError> {
            self.idempotency.release(s, o).await
        }
    }

    #[async_trait]
    impl UnitOfWorkPort for OneDatabase {
        async fn commit(&self, t: &TenantId, uow: UnitOfWork) -> Result<(), StoreError> {
            self.store.commit(t, uow).await
        }
    }

    #[async_trait]
    impl TemplateRepository for OneDatabase {
        async fn get(
            &self,
            t: &TenantId,
            id: TemplateId,
            deleted: bool,
        ) -> Result<Option<Template>, StoreError> {
            TemplateRepository::get(&self.store, t, id, deleted).await
        }
        async fn list(
            &self,
            t: &TenantId,
            q: &TemplateQuery,
            p: reporter_ports::page::PageRequest,
        ) -> Result<reporter_ports::page::Page<Template>, StoreError> {
            TemplateRepository::list(&self.store, t, q, p).await
        }
        async fn count(&self, t: &TenantId) -> Result<u64, StoreError> {
            TemplateRepository::count(&self.store, t).await
        }
    }
}

reporter_contract::idempotent_commit_contract!(mod idempotent_commit, |check| with_mongo(
    |dbs| async move {
        let store = dbs.store().await;
        let idempotency = MongoIdempotencyStore::new(store.database())
            .await
            .expect("MongoIdempotencyStore::new");
        check(OneDatabase { store, idempotency }).await;
    }
));

/// A process killed mid-commit leaves its transaction open, holding the key's record, until
/// the server aborts it (60 s on mongod). A retry's `begin` MUST answer `InFlight` within
/// about `BEGIN_LOCK_WAIT`, not wait for that lock, and start the key once the lock is gone.
#[tokio::test]
async fn a_key_locked_by_an_abandoned_transaction_is_in_flight_at_once() {
    use chrono::{Duration as Span, Utc};
    use mongodb::bson::doc;
    use reporter_adapter_mongo::BEGIN_LOCK_WAIT;
    use reporter_ports::ports::{
        IdempotencyBegin, IdempotencyOwner, IdempotencyScope, IdempotencyStore,
    };
    with_mongo(|dbs| async move {
        let db = dbs.client.database(&dbs.fresh_name());
        let store = MongoIdempotencyStore::new(&db).await.expect("store");
        let scope = IdempotencyScope {
            tenant: reporter_contract::fixtures::tenant_a(),
            operation: "POST /v1/reports".into(),
            key: "held-by-the-dead".into(),
        };
        let now = Utc::now();
        let dead = IdempotencyOwner::new();
        let first = store
            .begin(&scope, dead, now, now + Span::milliseconds(50))
            .await
            .expect("first begin");
        assert_eq!(first, IdempotencyBegin::Started);
        // The dead request's commit: it wrote the record in a transaction that never ends.
        let mut session = dbs.client.start_session().await.expect("session");
        session.start_transaction().await.expect("transaction");
        let id = doc! {
            "tenant": scope.tenant.as_str(),
            "operation": &scope.operation,
            "key": &scope.key,
        };
        db.collection::<mongodb::bson::Document>(IDEMPOTENCY_COLLECTION)
            .update_one(
                doc! { "_id": id },
                doc! { "$set": { "state": "completed" } },
            )
            .session(&mut session)
            .await
            .expect("the dead request's write");
        // Its lease has ended: a retry would take the key over, but the record is locked.
        let later = now + Span::seconds(1);
        let asked = std::time::Instant::now();
        let retry = tokio::time::timeout(
            std::time::Duration::from_secs(15),
            store.begin(
                &scope,
                IdempotencyOwner::new(),
                later,
                later + Span::seconds(3),
            ),
        )
        .await
        .expect("begin MUST NOT wait for the abandoned transaction");
        let waited = asked.elapsed();
        assert_eq!(retry.expect("begin"), IdempotencyBegin::InFlight);
        assert!(
            waited >= BEGIN_LOCK_WAIT / 2,
            "answered after {waited:?}: InFlight came from the lock wait, not a live lease"
        );
        // The server ends the transaction (here: the abort a lifetime limit would do).
        session.abort_transaction().await.expect("abort");
        let after = store
            .begin(
                &scope,
                IdempotencyOwner::new(),
                later,
                later + Span::seconds(3),
            )
            .await
            .expect("begin after the abort");
        assert_eq!(after, IdempotencyBegin::Started);
    })
    .await;
}
