//! The Midaz CRM source end to end (`MONGODB_URI`): documents encrypted by an independent
//! implementation (tests/fixtures/crm/make_fixtures.py), decrypted in streamed and whole
//! renders, filters matched through search hashes or refused with 400 TPL-0068, one
//! organization or all, and the section codes of a wrong key and an unsupported format.
use crate::common;

use common::*;
use serde_json::{Value, json};

fn fixture() -> Value {
    serde_json::from_str(include_str!("../fixtures/crm/crm.json")).expect("fixture")
}

/// A fresh database holding `collections` (name → documents as JSON); its name.
async fn load(client: &mongodb::Client, collections: &serde_json::Map<String, Value>) -> String {
    let db = reporter_contract::services::unique_name("reporter_crm");
    for (name, docs) in collections {
        let docs: Vec<mongodb::bson::Document> = docs
            .as_array()
            .expect("docs")
            .iter()
            .map(|d| mongodb::bson::to_document(d).expect("document"))
            .collect();
        client
            .database(&db)
            .collection::<mongodb::bson::Document>(name)
            .insert_many(docs)
            .await
            .expect("insert");
    }
    db
}

fn env(uri: &str, db: &str, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut env = vec![
        (
            "DATASOURCE_PLUGIN_CRM_TYPE".to_owned(),
            "mongodb".to_owned(),
        ),
        (
            "DATASOURCE_PLUGIN_CRM_CONFIG_NAME".to_owned(),
            "plugin_crm".to_owned(),
        ),
        ("DATASOURCE_PLUGIN_CRM_URI".to_owned(), uri.to_owned()),
        ("DATASOURCE_PLUGIN_CRM_DATABASE".to_owned(), db.to_owned()),
    ];
    env.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    env
}

/// The report of `template` with `filters`, once terminal.
async fn report(t: &TestApp, template: &str, filters: Value) -> Value {
    let tpl = t.upload_template("txt", template).await;
    let id = t.request_report(&tpl, filters).await;
    t.wait_report(&id, 400).await
}

async fn text(t: &TestApp, template: &str, filters: Value) -> String {
    let r = report(t, template, filters).await;
    assert_eq!(r["status"], "Finished", "{r}");
    let id = r["id"].as_str().expect("id");
    let resp = t.get(&token(), &format!("/v1/reports/{id}/download")).await;
    String::from_utf8(resp.0.into_body().into_vec().await.expect("body")).expect("utf-8")
}

const HOLDERS: &str = "{% for h in plugin_crm.holders %}{{ h.organization_id }}|{{ h.document }}|{{ h.name }}|{{ h.contact.primary_email }}|{{ h.legal_person.representative.name }}\n{% endfor %}";
const ALIASES: &str = "{{ plugin_crm.aliases|length }}{% for a in plugin_crm.aliases %};{{ a.banking_details.account }} {{ a.banking_details.iban }} {{ a.regulatory_fields.participant_document }}:{% for p in a.related_parties %}{{ p.document }},{% endfor %}{% endfor %}";

#[tokio::test]
async fn crm_data_is_decrypted_filtered_and_split_by_organization() {
    let Some(uri) = reporter_contract::services::service_url("MONGODB_URI", "MongoDB") else {
        return;
    };
    let f = fixture();
    let (a, b) = (
        f["organizations"][0].as_str().expect("a").to_owned(),
        f["organizations"][1].as_str().expect("b").to_owned(),
    );
    let client = mongodb::Client::with_uri_str(&uri).await.expect("client");
    let db = load(&client, f["collections"].as_object().expect("collections")).await;
    let keys = [
        // The original's two spellings, one of each.
        (
            "CRYPTO_ENCRYPT_SECRET_KEY_PLUGIN_CRM",
            f["encrypt_key_hex"].as_str().expect("key"),
        ),
        (
            "CRYPTO_HASH_SECRET_KEY_CRM",
            f["hash_key"].as_str().expect("hash"),
        ),
    ];
    let t = start_with(Options {
        env: env(&uri, &db, &keys),
        ..Default::default()
    })
    .await;

    let details = json(t.get(&token(), "/v1/data-sources/plugin_crm").await).await;
    let tables = details["tables"].as_array().expect("tables");
    let names: Vec<&str> = tables
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["aliases", "holders"], "{details}");
    for table in tables {
        let fields: Vec<&str> = table["fields"]
            .as_array()
            .expect("fields")
            .iter()
            .map(|f| f.as_str().expect("field"))
            .collect();
        assert!(
            fields.contains(&"organization_id") && fields.contains(&"document"),
            "{table}"
        );
        assert!(
            !fields.contains(&"search"),
            "the search hashes are listed: {table}"
        );
    }

    // Streamed (read once by a `for`): every organization, in collection-name order.
    let all = format!(
        "{a}|12345678900|Ana Silva|ana@example.com|\n{a}|11222333000181|Acme Ltda|finance@acme.example|Carlos Souza\n{a}|12345|||\n{b}|55566677788|Bruno Costa|bruno@example.com|\n"
    );
    assert_eq!(text(&t, HOLDERS, json!({})).await, all);
    // Whole context (the row count is read): arrays and nested fields decrypted.
    assert_eq!(
        text(&t, ALIASES, json!({})).await,
        "3;0001234-5 BR1500000000000010932840814P2 12345678:12345678900,,,;0009999-1 BR1800360305000010009795493C1 87654321:98765432100,;0004321-0 BR6400000000000010932840814P3 11223344:55566677788,"
    );
    // Filters on encrypted fields match their search hashes; organization_id chooses organizations.
    assert_eq!(
        text(
            &t,
            HOLDERS,
            json!({"plugin_crm": {"holders": {"document": {"eq": ["12345678900"]}}}})
        )
        .await,
        format!("{a}|12345678900|Ana Silva|ana@example.com|\n")
    );
    assert_eq!(
        text(
            &t,
            ALIASES,
            json!({"plugin_crm": {"aliases": {"banking_details.account": {"eq": ["0009999-1"]}}}})
        )
        .await,
        "1;0009999-1 BR1800360305000010009795493C1 87654321:98765432100,"
    );
    assert_eq!(
        text(
            &t,
            HOLDERS,
            json!({"plugin_crm": {"holders": {"organization_id": {"eq": [b]}}}})
        )
        .await,
        format!("{b}|55566677788|Bruno Costa|bruno@example.com|\n")
    );

    // What the CRM cannot answer is refused, naming the field.
    let tpl = t.upload_template("txt", HOLDERS).await;
    for (field, cond) in [
        ("name", json!({"eq": ["Ana Silva"]})),
        ("contact.primary_email", json!({"eq": ["ana@example.com"]})),
        ("document", json!({"gte": ["1"]})),
        ("banking_details.account", json!({"eq": ["0001234-5"]})),
    ] {
        let body =
            json!({"templateId": tpl, "filters": {"plugin_crm": {"holders": {field: cond}}}});
        let b = expect_error(
            t.post_json(&token(), "/v1/reports", body).await,
            400,
            "TPL-0068",
        )
        .await;
        let path = format!("plugin_crm.holders.{field}");
        assert!(
            b["fields"][&path]
                .as_str()
                .is_some_and(|w| w.contains(field)),
            "{field}: {b}"
        );
    }
    drop(t);

    // One organization (given in capitals): exactly its collections, rows not tagged; a wrong
    // key fails the section with its code, and never shows a value.
    let org_b = b.to_ascii_uppercase();
    let t = start_with(Options {
        env: env(
            &uri,
            &db,
            &[
                (
                    "DATASOURCE_PLUGIN_CRM_MIDAZ_ORGANIZATION_ID",
                    org_b.as_str(),
                ),
                (
                    "CRYPTO_ENCRYPT_SECRET_KEY_CRM",
                    f["wrong_encrypt_key_hex"].as_str().expect("key"),
                ),
            ],
        ),
        ..Default::default()
    })
    .await;
    let details = json(t.get(&token(), "/v1/data-sources/plugin_crm").await).await;
    assert!(
        !details.to_string().contains("organization_id"),
        "{details}"
    );
    assert_eq!(
        text(
            &t,
            "{% for h in plugin_crm.holders %}{{ h._id }} {{ h.external_id }};{% endfor %}",
            json!({})
        )
        .await,
        "h-b1 EXT-h-b1;"
    );
    let r = report(
        &t,
        "{% for h in plugin_crm.holders %}{{ h.document }}{% endfor %}",
        json!({}),
    )
    .await;
    assert_eq!(r["status"], "Error", "{r}");
    assert_eq!(
        r["metadata"]["sections"]["plugin_crm"],
        json!({"ok": false, "error_code": "crm_decryption_failed"}),
        "{r}"
    );
    // Without the hash key, a filter on a hashed field is refused.
    let tpl = t
        .upload_template(
            "txt",
            "{% for h in plugin_crm.holders %}{{ h.document }}{% endfor %}",
        )
        .await;
    let body = json!({"templateId": tpl, "filters": {"plugin_crm": {"holders": {"document": {"eq": ["1"]}}}}});
    expect_error(
        t.post_json(&token(), "/v1/reports", body).await,
        400,
        "TPL-0068",
    )
    .await;
    drop(t);

    // The CRM's newer envelope is not read: its own code, no ciphertext in the report.
    let tink = f["bad_values"]["tink"].as_str().expect("tink");
    let mut bad = serde_json::Map::new();
    bad.insert(
        format!("holders_{a}"),
        json!([{"_id": "h-x", "document": tink}]),
    );
    let bad_db = load(&client, &bad).await;
    let t = start_with(Options {
        env: env(&uri, &bad_db, &keys),
        ..Default::default()
    })
    .await;
    let r = report(
        &t,
        "{% for h in plugin_crm.holders %}{{ h.document }}{% endfor %}",
        json!({}),
    )
    .await;
    assert_eq!(
        r["metadata"]["sections"]["plugin_crm"]["error_code"], "crm_unsupported_format",
        "{r}"
    );
    assert!(!r.to_string().contains(tink), "{r}");
    drop(t);
    let _ = client.database(&db).drop().await;
    let _ = client.database(&bad_db).drop().await;
}
