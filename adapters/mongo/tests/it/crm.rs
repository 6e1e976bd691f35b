//! The Midaz CRM source against the MongoDB stand-in: documents encrypted by an independent
//! implementation of the format (Python's `cryptography`, tests/fixtures/crm/make_fixtures.py),
//! two organizations, decryption of every encrypted field (nested and in arrays), search-hash
//! filters, organizations, and each failure's reason.
use crate::common::with_mongo;
use mongodb::bson::{Bson, Document, doc};
use reporter_adapter_mongo::{CrmSettings, MongoDataSource};
use reporter_ports::datasource::DataSourceId;
use reporter_ports::ports::{
    DataSource, DataSourceError, DecryptionError, FilterSupport, Row, TableQuery,
};
use reporter_ports::report::FilterCondition;
use serde_json::{Value, json};
use std::collections::BTreeMap;

fn fixture() -> Value {
    serde_json::from_str(include_str!("../../../../tests/fixtures/crm/crm.json")).expect("fixture")
}

fn org(f: &Value, i: usize) -> String {
    f["organizations"][i].as_str().expect("org").to_owned()
}

fn key(f: &Value, which: &str) -> Vec<u8> {
    hex::decode(f[which].as_str().expect("key")).expect("hex")
}

fn settings(f: &Value, org: Option<&str>) -> CrmSettings {
    let hash = f["hash_key"].as_str().expect("hash").as_bytes().to_vec();
    CrmSettings::new(Some(&key(f, "encrypt_key_hex")), Some(&hash), org).expect("settings")
}

fn as_doc(v: &Value) -> Document {
    match Bson::try_from(v.clone()).expect("bson") {
        Bson::Document(d) => d,
        other => panic!("not a document: {other:?}"),
    }
}

/// A fresh database holding every collection of the fixture (plus `documents`, a collection
/// the CRM does not name by organization).
async fn crm_database(dbs: &crate::common::Dbs, f: &Value) -> mongodb::Database {
    let db = dbs.client.database(&dbs.fresh_name());
    for (name, docs) in f["collections"].as_object().expect("collections") {
        let docs: Vec<Document> = docs.as_array().expect("docs").iter().map(as_doc).collect();
        db.collection::<Document>(name)
            .insert_many(docs)
            .await
            .expect("insert");
    }
    db.collection::<Document>("documents")
        .insert_one(doc! { "x": 1 })
        .await
        .expect("insert");
    db
}

fn crm(db: mongodb::Database, s: CrmSettings) -> MongoDataSource {
    MongoDataSource::new(DataSourceId::parse("plugin_crm").expect("id"), db).with_crm(s)
}

fn query(table: &str, fields: &[&str], filters: Value) -> TableQuery {
    reporter_contract::fixtures::table_query(table, fields, filters, 1000)
}

/// The fixture's plaintext documents of `collection`, projected to `fields`.
fn expected(f: &Value, collection: &str, fields: &[&str], org: Option<&str>) -> Vec<Value> {
    f["expected"][collection]
        .as_array()
        .expect("expected")
        .iter()
        .map(|d| {
            let mut row = serde_json::Map::new();
            for field in fields {
                let v = match (*field, org) {
                    ("organization_id", Some(o)) => json!(o),
                    _ => d.get(*field).cloned().unwrap_or(Value::Null),
                };
                row.insert((*field).to_owned(), v);
            }
            Value::Object(row)
        })
        .collect()
}

fn rows(r: Vec<Row>) -> Vec<Value> {
    r.into_iter().map(Value::Object).collect()
}

const HOLDER_FIELDS: &[&str] = &[
    "_id",
    "document",
    "name",
    "contact",
    "natural_person",
    "legal_person",
    "organization_id",
];
const ALIAS_FIELDS: &[&str] = &[
    "_id",
    "document",
    "banking_details",
    "regulatory_fields",
    "related_parties",
    "organization_id",
];

#[tokio::test]
async fn every_organization_is_read_decrypted_and_tagged() {
    with_mongo(|dbs| async move {
        let f = fixture();
        let (a, b) = (org(&f, 0), org(&f, 1));
        let source = crm(crm_database(&dbs, &f).await, settings(&f, None));
        let schema = source.schema().await.expect("schema");
        let names: Vec<&str> = schema.tables.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["aliases", "holders"]);
        let holders = schema.table("holders").expect("holders");
        assert!(holders.fields.iter().any(|f| f == "organization_id"));
        assert!(holders.fields.iter().any(|f| f == "contact"));
        assert!(!holders.fields.iter().any(|f| f == "search"), "{holders:?}");

        let got = rows(
            source
                .query(&query("holders", HOLDER_FIELDS, json!({})))
                .await
                .expect("holders"),
        );
        let mut want = expected(&f, &format!("holders_{a}"), HOLDER_FIELDS, Some(&a));
        want.extend(expected(
            &f,
            &format!("holders_{b}"),
            HOLDER_FIELDS,
            Some(&b),
        ));
        assert_eq!(got, want);
        // The non-string, empty and null values stayed as they were.
        assert_eq!(got[2]["document"], json!(12345));
        assert_eq!(got[2]["name"], json!(""));
        assert_eq!(got[0]["contact"]["secondary_email"], Value::Null);

        let got = rows(
            source
                .query(&query("aliases", ALIAS_FIELDS, json!({})))
                .await
                .expect("aliases"),
        );
        let mut want = expected(&f, &format!("aliases_{a}"), ALIAS_FIELDS, Some(&a));
        want.extend(expected(
            &f,
            &format!("aliases_{b}"),
            ALIAS_FIELDS,
            Some(&b),
        ));
        assert_eq!(got, want);
        assert_eq!(
            got[0]["related_parties"][0]["document"],
            json!("12345678900")
        );
        assert_eq!(got[0]["related_parties"][1]["document"], json!(""));

        // The search hashes stay readable to a query that names them (never listed).
        let hashed = source
            .query(&query(
                "holders",
                &["search"],
                json!({"organization_id": {"eq": [a]}}),
            ))
            .await
            .expect("search");
        assert_eq!(hashed[0]["search"]["document"], f["hashes"]["12345678900"]);
    })
    .await;
}

#[tokio::test]
async fn one_organization_reads_exactly_its_collections() {
    with_mongo(|dbs| async move {
        let f = fixture();
        let b = org(&f, 1);
        let upper = b.to_ascii_uppercase();
        let source = crm(crm_database(&dbs, &f).await, settings(&f, Some(&upper)));
        let schema = source.schema().await.expect("schema");
        let names: Vec<&str> = schema.tables.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["aliases", "holders"]);
        assert!(
            !schema
                .tables
                .iter()
                .any(|t| t.fields.iter().any(|f| f == "organization_id"))
        );
        let fields = &HOLDER_FIELDS[..6];
        let got = rows(
            source
                .query(&query("holders", fields, json!({})))
                .await
                .expect("holders"),
        );
        assert_eq!(got, expected(&f, &format!("holders_{b}"), fields, None));
        let err = source
            .query(&query("holders", &["organization_id"], json!({})))
            .await
            .expect_err("no organization_id with one organization");
        assert!(
            matches!(err, DataSourceError::UnknownField { .. }),
            "{err:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn filters_on_encrypted_fields_match_their_search_hashes() {
    with_mongo(|dbs| async move {
        let f = fixture();
        let (a, b) = (org(&f, 0), org(&f, 1));
        let source = crm(crm_database(&dbs, &f).await, settings(&f, None));
        let ids = |r: Vec<Row>| r.iter().map(|r| r["_id"].clone()).collect::<Vec<_>>();
        let by_document = source
            .query(&query(
                "holders",
                &["_id", "document"],
                json!({"document": {"eq": ["12345678900"]}}),
            ))
            .await
            .expect("by document");
        assert_eq!(ids(by_document), [json!("h-a1")]);
        let by_account = source
            .query(&query(
                "aliases",
                &["_id"],
                json!({"banking_details.account": {"in": ["0001234-5", "0004321-0"]}}),
            ))
            .await
            .expect("by account");
        assert_eq!(ids(by_account), [json!("al-a1"), json!("al-b1")]);
        let by_party = source
            .query(&query(
                "aliases",
                &["_id"],
                json!({"related_parties.document": {"eq": ["98765432100"]}}),
            ))
            .await
            .expect("by related party");
        assert_eq!(ids(by_party), [json!("al-a2")]);
        let not_ana = source
            .query(&query(
                "aliases",
                &["_id"],
                json!({"document": {"nin": ["12345678900"]}}),
            ))
            .await
            .expect("nin");
        assert_eq!(ids(not_ana), [json!("al-a2"), json!("al-b1")]);
        let only_b = source
            .query(&query(
                "holders",
                &["_id", "organization_id"],
                json!({"organization_id": {"eq": [b]}}),
            ))
            .await
            .expect("organization");
        assert_eq!(ids(only_b), [json!("h-b1")]);
        let not_b = source
            .query(&query(
                "holders",
                &["_id"],
                json!({"organization_id": {"nin": [b]}, "type": {"eq": ["LEGAL_PERSON"]}}),
            ))
            .await
            .expect("organization nin");
        assert_eq!(ids(not_b), [json!("h-a2")]);
        let _ = a;
    })
    .await;
}

#[tokio::test]
async fn filters_the_crm_cannot_answer_are_refused() {
    with_mongo(|dbs| async move {
        let f = fixture();
        let source = crm(crm_database(&dbs, &f).await, settings(&f, None));
        let c = |v: Value| serde_json::from_value::<FilterCondition>(v).expect("cond");
        let eq = c(json!({"eq": ["x"]}));
        for (table, field, cond) in [
            ("holders", "name", &eq),
            ("holders", "contact.primary_email", &eq),
            ("holders", "banking_details.account", &eq),
            ("aliases", "name", &eq),
            ("holders", "document", &c(json!({"gte": ["1"]}))),
            ("holders", "organization_id", &c(json!({"lt": ["z"]}))),
        ] {
            let refused = source.filter_support(table, field, cond);
            assert!(
                matches!(&refused, FilterSupport::Refused(why) if why.contains(field)),
                "{table}.{field}: {refused:?}"
            );
            let err = source
                .query(&TableQuery {
                    table: table.into(),
                    fields: vec!["_id".into()],
                    filters: BTreeMap::from([(field.to_owned(), cond.clone())]),
                    max_rows: 10,
                })
                .await
                .expect_err("refused in the worker too");
            assert!(
                matches!(err, DataSourceError::InvalidFilter(_)),
                "{table}.{field}: {err:?}"
            );
        }
        assert_eq!(
            source.filter_support("holders", "document", &eq),
            FilterSupport::Accepted
        );
        assert_eq!(
            source.filter_support("holders", "type", &eq),
            FilterSupport::Schema
        );
        let no_hash_key = crm(
            dbs.client.database(&dbs.fresh_name()),
            CrmSettings::new(Some(&key(&f, "encrypt_key_hex")), None, None).expect("settings"),
        );
        assert!(matches!(
            no_hash_key.filter_support("holders", "document", &eq),
            FilterSupport::Refused(why) if why.contains("document")
        ));
    })
    .await;
}

#[tokio::test]
async fn each_failure_ends_the_query_with_its_reason() {
    with_mongo(|dbs| async move {
        let f = fixture();
        let a = org(&f, 0);
        let good = crm_database(&dbs, &f).await;
        let hash = f["hash_key"].as_str().expect("hash").as_bytes().to_vec();
        let wrong = crm(
            good.clone(),
            CrmSettings::new(Some(&key(&f, "wrong_encrypt_key_hex")), Some(&hash), None).expect("settings"),
        );
        let decryption = |field: &str, error| DataSourceError::Decryption { field: field.into(), error };
        assert_eq!(
            wrong.query(&query("holders", &["_id", "document"], json!({}))).await,
            Err(decryption("document", DecryptionError::Failed))
        );
        let keyless = crm(good.clone(), CrmSettings::new(None, None, None).expect("settings"));
        assert_eq!(
            keyless.query(&query("holders", &["_id", "contact"], json!({}))).await,
            Err(decryption("contact", DecryptionError::KeyMissing))
        );
        assert_eq!(
            keyless.query(&query("holders", &["_id", "document"], json!({"document": {"eq": ["1"]}}))).await,
            Err(decryption("document", DecryptionError::KeyMissing))
        );
        // Fields that are not encrypted need no key.
        assert_eq!(
            keyless.query(&query("holders", &["_id", "type"], json!({}))).await.map(|r| r.len()),
            Ok(4)
        );
        for (value, field, error) in [
            ("altered", "document", DecryptionError::Failed),
            ("not_base64", "contact.primary_email", DecryptionError::Malformed),
            ("too_short", "related_parties.document", DecryptionError::Malformed),
            ("tink", "document", DecryptionError::UnsupportedFormat),
        ] {
            let db = dbs.client.database(&dbs.fresh_name());
            let bad = f["bad_values"][value].as_str().expect("value");
            let document = match field {
                "document" => doc! { "_id": 1, "document": bad },
                "contact.primary_email" => doc! { "_id": 1, "contact": { "primary_email": bad } },
                _ => doc! { "_id": 1, "related_parties": [ { "document": "" }, { "document": bad } ] },
            };
            db.collection::<Document>(&format!("holders_{a}"))
                .insert_one(document)
                .await
                .expect("insert");
            let source = crm(db, settings(&f, None));
            let top = field.split('.').next().expect("top");
            let got = source.query(&query("holders", &["_id", top], json!({}))).await;
            assert_eq!(got, Err(decryption(field, error)), "{value}");
            let text = format!("{:?}", got.expect_err("error"));
            assert!(!text.contains(bad), "the value leaked: {text}");
        }
    })
    .await;
}
