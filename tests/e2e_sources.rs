//! The report flow against real data sources: PostgreSQL (local server, data created here) and
//! MongoDB (`MONGODB_URI`), byte for byte like the file-backed flow.
mod common;

use common::*;
use serde_json::json;

async fn generate(t: &TestApp, source: &str, filters: serde_json::Value) -> String {
    let tpl = t.upload_template("txt", source).await;
    let id = t.request_report(&tpl, filters).await;
    let r = t.wait_report(&id, 400).await;
    assert_eq!(r["status"], "Finished", "{r}");
    let resp = t.get(&token(), &format!("/v1/reports/{id}/download")).await;
    String::from_utf8(resp.0.into_body().into_vec().await.unwrap()).unwrap()
}

#[tokio::test]
async fn postgresql_source_end_to_end() {
    let Some(pg) = ScratchPostgres::create("reporter_src").await else {
        return;
    };
    pg.client
        .batch_execute(
            "CREATE TABLE entries (id int PRIMARY KEY, account text, amount numeric(12,2), booked_on date);
             INSERT INTO entries VALUES (1,'A',10.50,'2024-01-05'),(2,'B',3.25,'2024-02-01'),(3,'A',1.00,'2024-03-09');
             CREATE SCHEMA audit; CREATE TABLE audit.events (id int, note text); INSERT INTO audit.events VALUES (7, 'ok');",
        )
        .await
        .unwrap();
    let mut env = pg.source_env("PG");
    env.push((
        "DATASOURCE_PG_SCHEMAS".to_owned(),
        "public,audit".to_owned(),
    ));
    let t = start_with(Options {
        env,
        ..Default::default()
    })
    .await;
    let schema = json(t.get(&token(), "/v1/data-sources/pg").await).await;
    let tables: Vec<&str> = schema["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tables, ["audit__events", "entries"]);
    let tpl = "{% for e in pg.entries %}{{ e.id }} {{ e.account }} {{ e.amount }}\n{% endfor %}total={{ pg.entries|sum(\"amount\") }} note={{ pg.audit__events.note }}";
    assert_eq!(
        generate(&t, tpl, json!({})).await,
        "1 A 10.50\n2 B 3.25\n3 A 1.00\ntotal=14.75 note=ok"
    );
    let filtered = generate(&t, tpl, json!({"pg": {"entries": {"booked_on": {"between": ["2024-01-01", "2024-02-28"]}, "account": {"nin": ["B"]}}}})).await;
    assert_eq!(filtered, "1 A 10.50\ntotal=10.50 note=ok");
    // A hostile filter value is data, never SQL.
    let hostile = generate(
        &t,
        tpl,
        json!({"pg": {"entries": {"account": {"eq": ["A'; DROP TABLE entries; --"]}}}}),
    )
    .await;
    assert_eq!(hostile, "total=0 note=ok");
    let n: i64 = pg
        .client
        .query_one("SELECT count(*) FROM entries", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 3);
    drop(t);
    pg.remove().await;
}

#[tokio::test]
async fn mongodb_source_end_to_end() {
    let Some(uri) = reporter_contract::services::service_url("MONGODB_URI", "MongoDB") else {
        return;
    };
    let db = reporter_contract::services::unique_name("reporter_src");
    let client = mongodb::Client::with_uri_str(&uri).await.unwrap();
    let coll = client
        .database(&db)
        .collection::<mongodb::bson::Document>("entries");
    coll.insert_many([
        mongodb::bson::doc! { "id": 1, "account": "A", "amount": "10.50" },
        mongodb::bson::doc! { "id": 2, "account": "B", "amount": "3.25" },
        mongodb::bson::doc! { "id": 3, "account": "A", "amount": "1.00" },
    ])
    .await
    .unwrap();
    let env = vec![
        ("DATASOURCE_CRM_TYPE".to_owned(), "mongodb".to_owned()),
        ("DATASOURCE_CRM_URI".to_owned(), uri.clone()),
        ("DATASOURCE_CRM_DATABASE".to_owned(), db.clone()),
    ];
    let t = start_with(Options {
        env,
        ..Default::default()
    })
    .await;
    let tpl = "{% for e in crm.entries %}{{ e.id }} {{ e.account }} {{ e.amount }}\n{% endfor %}total={{ crm.entries|sum(\"amount\") }}";
    assert_eq!(
        generate(&t, tpl, json!({})).await,
        "1 A 10.50\n2 B 3.25\n3 A 1.00\ntotal=14.75"
    );
    assert_eq!(
        generate(&t, tpl, json!({"crm": {"entries": {"id": {"gte": [2]}}}})).await,
        "2 B 3.25\n3 A 1.00\ntotal=4.25"
    );
    drop(t);
    let _ = client.database(&db).drop().await;
}
