//! The database-per-tenant router: the store, outbox and idempotency contract suites run
//! through it unchanged; tenants are isolated at the database level (each tenant's records
//! and outbox rows live in its own database, nowhere else); claims serve every tenant.
use crate::common::with_mongo;
use mongodb::bson::doc;
use reporter_adapter_mongo::tenant_database_name;
use reporter_contract::fixtures::{at, outbox_row, template, tenant_a, tenant_b};
use reporter_ports::ports::{Change, Outbox, TemplateRepository, UnitOfWork, UnitOfWorkPort};
use std::collections::BTreeSet;

reporter_contract::store_contract!(mod store_through_the_router, |check| with_mongo(
    |dbs| async move {
        check(dbs.router()).await;
    }
));

reporter_contract::outbox_contract!(mod outbox_through_the_router, |check| with_mongo(
    |dbs| async move {
        check(dbs.router()).await;
    }
));

reporter_contract::idempotency_contract!(mod idempotency_through_the_router, |check| with_mongo(
    |dbs| async move {
        check(dbs.router()).await;
    }
));

/// Each tenant's records and outbox rows are in its own database and in no other; the
/// registry lists both; one tenant cannot read the other's record by id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_are_isolated_at_the_database_level() {
    with_mongo(|dbs| async move {
        let router = dbs.router();
        let (a, b) = (tenant_a(), tenant_b());
        let ta = template(&a, at(0));
        let tb = template(&b, at(0));
        for (tenant, t) in [(&a, &ta), (&b, &tb)] {
            router
                .commit(
                    tenant,
                    UnitOfWork::new()
                        .change(Change::Template {
                            record: t.clone(),
                            expected_version: None,
                        })
                        .with_outbox([outbox_row(tenant, &t.id.to_string(), at(0))]),
                )
                .await
                .expect("commit");
        }
        let prefix = router.database_name(&a);
        let prefix = prefix.split("_t_").next().expect("prefix").to_owned();
        let db_a = tenant_database_name(&prefix, &a);
        let db_b = tenant_database_name(&prefix, &b);
        assert_ne!(db_a, db_b);
        assert_eq!(router.database_name(&a), db_a);

        let names: BTreeSet<String> = dbs
            .client
            .list_database_names()
            .await
            .expect("list databases")
            .into_iter()
            .filter(|n| n.starts_with(&prefix))
            .collect();
        assert!(names.contains(&db_a) && names.contains(&db_b), "{names:?}");

        for (db, mine, other) in [(&db_a, (&a, &ta), (&b, &tb)), (&db_b, (&b, &tb), (&a, &ta))] {
            let database = dbs.client.database(db);
            let templates = database.collection::<mongodb::bson::Document>("templates");
            let outbox = database.collection::<mongodb::bson::Document>("outbox");
            assert_eq!(
                templates.count_documents(doc! {}).await.expect("count"),
                1,
                "{db} holds exactly its tenant's template"
            );
            assert_eq!(
                templates
                    .count_documents(
                        doc! { "_id": mine.1.id.to_string(), "tenant": mine.0.as_str() }
                    )
                    .await
                    .expect("count"),
                1
            );
            assert_eq!(
                templates
                    .count_documents(doc! { "_id": other.1.id.to_string() })
                    .await
                    .expect("count"),
                0,
                "{db} holds the other tenant's template"
            );
            assert_eq!(
                outbox.count_documents(doc! {}).await.expect("count"),
                1,
                "{db} holds exactly its tenant's outbox row"
            );
            assert_eq!(
                outbox
                    .count_documents(doc! { "tenant": other.0.as_str() })
                    .await
                    .expect("count"),
                0
            );
        }
        // The registry database holds no records, only the tenant list.
        let registry = dbs.client.database(&prefix);
        for coll in ["templates", "outbox"] {
            assert_eq!(
                registry
                    .collection::<mongodb::bson::Document>(coll)
                    .count_documents(doc! {})
                    .await
                    .expect("count"),
                0,
                "the registry database holds {coll}"
            );
        }
        let tenants: BTreeSet<String> = router
            .tenants()
            .await
            .expect("tenants")
            .into_iter()
            .map(|t| t.as_str().to_owned())
            .collect();
        assert_eq!(
            tenants,
            BTreeSet::from([a.as_str().to_owned(), b.as_str().to_owned()])
        );
        // By id across tenants: nothing.
        assert!(
            TemplateRepository::get(&router, &b, ta.id, true)
                .await
                .expect("get")
                .is_none()
        );
        assert!(
            TemplateRepository::get(&router, &a, ta.id, false)
                .await
                .expect("get")
                .is_some()
        );
    })
    .await;
}

/// A busy tenant does not starve a quiet one: with 200 pending rows in one tenant and 3 in
/// the other, the first claim of 10 already carries the quiet tenant's rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_serve_every_tenant() {
    with_mongo(|dbs| async move {
        let router = dbs.router();
        let (busy, quiet) = (tenant_a(), tenant_b());
        let rows: Vec<_> = (0..200)
            .map(|i| outbox_row(&busy, &format!("busy-{i}"), at(0)))
            .collect();
        router
            .commit(&busy, UnitOfWork::new().with_outbox(rows))
            .await
            .expect("commit busy");
        let rows: Vec<_> = (0..3)
            .map(|i| outbox_row(&quiet, &format!("quiet-{i}"), at(1)))
            .collect();
        router
            .commit(&quiet, UnitOfWork::new().with_outbox(rows))
            .await
            .expect("commit quiet");
        let got = router
            .claim("dispatcher", at(2), at(3600), 10)
            .await
            .expect("claim");
        let quiet_rows = got.iter().filter(|r| r.event.tenant == quiet).count();
        let busy_rows = got.iter().filter(|r| r.event.tenant == busy).count();
        assert_eq!(quiet_rows, 3, "the quiet tenant waited behind the busy one");
        assert!(busy_rows >= 5, "the busy tenant got {busy_rows} of 10");
        // Settling goes to the row's own tenant database.
        for r in &got {
            let token = r.lease.as_ref().expect("lease").token;
            router
                .mark_published(r.id, token, at(3))
                .await
                .expect("settle");
        }
        let st = router.stats(at(4)).await.expect("stats");
        assert_eq!(st.pending, 200 - busy_rows as u64);
    })
    .await;
}

reporter_contract::idempotent_commit_contract!(mod idempotent_commit_through_the_router, |check| with_mongo(
    |dbs| async move {
        check(dbs.router()).await;
    }
));
