//! The data source contract suite against a MongoDB database holding the `people` fixture.
use crate::common::with_mongo;
use mongodb::bson::{Bson, Document, doc};
use reporter_adapter_mongo::MongoDataSource;
use reporter_contract::datasource::{PEOPLE_TABLE, people_rows};
use reporter_ports::datasource::DataSourceId;
use reporter_ports::ports::{DataSource, TableQuery};

fn fixture_docs() -> Vec<Document> {
    people_rows()
        .into_iter()
        .map(|row| {
            let bson = Bson::try_from(serde_json::Value::Object(row)).expect("row as BSON");
            match bson {
                Bson::Document(d) => d,
                other => panic!("row is not a document: {other:?}"),
            }
        })
        .collect()
}

/// A fresh database holding the fixture, plus another table (so the schema has more than one,
/// sorted); its name.
async fn people_database(dbs: &crate::common::Dbs) -> (String, mongodb::Database) {
    let name = dbs.fresh_name();
    let db = dbs.client.database(&name);
    db.collection::<Document>(PEOPLE_TABLE)
        .insert_many(fixture_docs())
        .await
        .expect("insert people");
    db.collection::<Document>("accounts")
        .insert_one(doc! { "number": "001", "balance": 10.5 })
        .await
        .expect("insert accounts");
    (name, db)
}

fn people_id() -> DataSourceId {
    DataSourceId::parse("people_db").expect("id")
}

reporter_contract::data_source_contract!(mod contract, |check| with_mongo(|dbs| async move {
    let (_, db) = people_database(&dbs).await;
    check(&MongoDataSource::new(people_id(), db)).await;
}));

#[tokio::test]
async fn descriptor_names_the_database() {
    with_mongo(|dbs| async move {
        let (name, db) = people_database(&dbs).await;
        let source = MongoDataSource::new(people_id(), db);
        let d = source.descriptor();
        assert_eq!(d.external_name, name);
        assert_eq!(d.kind.as_str(), "mongodb");
    })
    .await;
}

/// Fields seen only beyond the sample are unknown; `_id` is a field (read as hex).
#[tokio::test]
async fn fields_come_from_a_bounded_sample() {
    with_mongo(|dbs| async move {
        let db = dbs.client.database(&dbs.fresh_name());
        let coll = db.collection::<Document>("wide");
        let mut docs: Vec<Document> = (0..5).map(|i| doc! { "n": i }).collect();
        docs.push(doc! { "n": 99, "late": true });
        coll.insert_many(docs).await.expect("insert");
        let config = reporter_adapter_mongo::MongoDataSourceConfig {
            sample_size: 5,
            ..Default::default()
        };
        let source =
            MongoDataSource::with_config(DataSourceId::parse("w").expect("id"), db, config);
        let schema = source.schema().await.expect("schema");
        assert_eq!(
            schema.table("wide").map(|t| t.fields.clone()),
            Some(vec!["_id".to_owned(), "n".to_owned()])
        );
        let ids = TableQuery {
            table: "wide".into(),
            fields: vec!["_id".into()],
            filters: Default::default(),
            max_rows: 10,
        };
        let rows = source.query(&ids).await.expect("ids");
        assert!(
            rows.iter()
                .all(|r| r["_id"].as_str().is_some_and(|s| s.len() == 24)),
            "{rows:?}"
        );
        let q = TableQuery {
            table: "wide".into(),
            fields: vec!["late".into()],
            filters: Default::default(),
            max_rows: 10,
        };
        assert!(
            source.query(&q).await.is_err(),
            "late is outside the sample"
        );
    })
    .await;
}
