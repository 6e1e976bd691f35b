//! Transaction behaviour with injected server failures (`configureFailPoint failCommand`,
//! which needs `--enable-test-commands` on the stand-in). The fail points are scoped to this
//! test's own client by `appName`, so other tests on the same server are not affected; there
//! is only one `failCommand` fail point per server, so the scenarios run one after the other
//! in a single test.
use crate::common::with_mongo;

use mongodb::Client;
use mongodb::bson::{Document, doc};
use mongodb::options::ClientOptions;
use reporter_adapter_mongo::{MongoStore, MongoStoreConfig};
use reporter_contract::fixtures::{at, day, outbox_row, template, tenant_a};
use reporter_ports::StoreError;
use reporter_ports::ports::{Change, Outbox, TemplateRepository, UnitOfWork, UnitOfWorkPort};

async fn client_named(uri: &str, app: &str) -> Client {
    let mut opts = ClientOptions::parse(uri).await.expect("options");
    opts.app_name = Some(app.to_owned());
    Client::with_options(opts).expect("client")
}

async fn fail_point(admin: &Client, data: Document, mode: mongodb::bson::Bson) {
    admin
        .database("admin")
        .run_command(doc! { "configureFailPoint": "failCommand", "mode": mode, "data": data })
        .await
        .expect("configureFailPoint (start the server with --enable-test-commands)");
}

async fn fail_point_off(admin: &Client) {
    admin
        .database("admin")
        .run_command(doc! { "configureFailPoint": "failCommand", "mode": "off" })
        .await
        .expect("fail point off");
}

#[tokio::test]
async fn injected_failures() {
    with_mongo(|dbs| async move {
        injected_failure_after_the_first_write_leaves_nothing(&dbs).await;
        transient_transaction_error_is_retried(&dbs).await;
    })
    .await;
}

/// The outbox insert (second `insert` of the transaction) fails with a non-retryable error:
/// the template inserted before it and the outbox row are both invisible, and the aggregate
/// counter did not move.
async fn injected_failure_after_the_first_write_leaves_nothing(dbs: &crate::common::Dbs) {
    {
        let app = reporter_contract::services::unique_name("fp");
        let client = client_named(&dbs.uri, &app).await;
        let name = dbs.fresh_name();
        let store = MongoStore::from_client(client, &name, MongoStoreConfig::default())
            .await
            .expect("store");
        let a = tenant_a();
        let t = template(&a, day(0));
        let row = outbox_row(&a, "agg-fp", at(0));
        fail_point(
            &dbs.client,
            doc! { "failCommands": ["insert"], "appName": &app, "errorCode": 2 },
            doc! { "skip": 1 }.into(),
        )
        .await;
        let res = store
            .commit(
                &a,
                UnitOfWork::new()
                    .change(Change::Template {
                        record: t.clone(),
                        expected_version: None,
                    })
                    .with_outbox([row.clone()]),
            )
            .await;
        fail_point_off(&dbs.client).await;
        assert!(
            matches!(res, Err(StoreError::Unavailable(_))),
            "injected failure must be Unavailable, got {res:?}"
        );
        assert_eq!(
            TemplateRepository::get(&store, &a, t.id, true)
                .await
                .expect("get"),
            None,
            "first write rolled back"
        );
        assert!(
            Outbox::get(&store, row.id).await.expect("get").is_none(),
            "outbox row rolled back"
        );
        let seq = store
            .database()
            .collection::<Document>("outbox_sequences")
            .find_one(doc! { "_id": "agg-fp" })
            .await
            .expect("find");
        assert!(seq.is_none(), "aggregate counter rolled back: {seq:?}");

        // The same unit commits once the fault is gone.
        store
            .commit(
                &a,
                UnitOfWork::new()
                    .change(Change::Template {
                        record: t.clone(),
                        expected_version: None,
                    })
                    .with_outbox([row.clone()]),
            )
            .await
            .expect("commit without the fault");
        assert!(Outbox::get(&store, row.id).await.expect("get").is_some());
    }
}

/// A `WriteConflict` labelled `TransientTransactionError` on the first two attempts: with a
/// budget of one attempt the commit gives up (`Unavailable`, proving the fault fires), with
/// the default budget it is retried and the unit commits once, with its outbox row.
async fn transient_transaction_error_is_retried(dbs: &crate::common::Dbs) {
    {
        let app = reporter_contract::services::unique_name("fp");
        let client = client_named(&dbs.uri, &app).await;
        let name = dbs.fresh_name();
        let one_shot = MongoStore::from_client(
            client.clone(),
            &name,
            MongoStoreConfig {
                max_transaction_attempts: 1,
                ..Default::default()
            },
        )
        .await
        .expect("store");
        let store = MongoStore::from_client(client, &name, MongoStoreConfig::default())
            .await
            .expect("store");
        let a = tenant_a();
        let lone = template(&a, day(0));
        fail_point(
            &dbs.client,
            doc! {
                "failCommands": ["insert"],
                "appName": &app,
                "errorCode": 112,
                "errorLabels": ["TransientTransactionError"],
            },
            doc! { "times": 1 }.into(),
        )
        .await;
        let res = one_shot
            .commit(
                &a,
                UnitOfWork::new().change(Change::Template {
                    record: lone.clone(),
                    expected_version: None,
                }),
            )
            .await;
        fail_point_off(&dbs.client).await;
        assert!(
            matches!(&res, Err(StoreError::Unavailable(m)) if m.contains("gave up after 1 attempts")),
            "one attempt only: {res:?}"
        );
        assert_eq!(
            TemplateRepository::get(&store, &a, lone.id, true)
                .await
                .expect("get"),
            None
        );

        let t = template(&a, day(0));
        let row = outbox_row(&a, "agg-retry", at(0));
        fail_point(
            &dbs.client,
            doc! {
                "failCommands": ["insert"],
                "appName": &app,
                "errorCode": 112,
                "errorLabels": ["TransientTransactionError"],
            },
            doc! { "times": 2 }.into(),
        )
        .await;
        let res = store
            .commit(
                &a,
                UnitOfWork::new()
                    .change(Change::Template {
                        record: t.clone(),
                        expected_version: None,
                    })
                    .with_outbox([row.clone()]),
            )
            .await;
        fail_point_off(&dbs.client).await;
        res.expect("commit succeeds after transient failures");
        assert!(
            TemplateRepository::get(&store, &a, t.id, false)
                .await
                .expect("get")
                .is_some()
        );
        let stored = Outbox::get(&store, row.id)
            .await
            .expect("get")
            .expect("row");
        assert_eq!(stored.id, row.id);
        let seq = store
            .database()
            .collection::<Document>("outbox_sequences")
            .find_one(doc! { "_id": "agg-retry" })
            .await
            .expect("find")
            .expect("counter");
        assert_eq!(seq.get_i64("seq").ok(), Some(1), "counter bumped once");
    }
}
