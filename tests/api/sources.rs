//! The report flow against real data sources: PostgreSQL (local server, data created here),
//! MariaDB/MySQL (`MYSQL_URL`) and MongoDB (`MONGODB_URI`), byte for byte like the file-backed
//! flow.
use crate::common;

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
    let tpl = "{% for e in pg.entries %}{{ e.id }} {{ e.account }} {{ e.amount }}\n{% endfor %}total={{ pg.entries|sum:\"amount\" }} note={{ pg.audit__events.0.note }}";
    assert_eq!(
        generate(&t, tpl, json!({})).await,
        "1 A 10.5\n2 B 3.25\n3 A 1\ntotal=14.75 note=ok"
    );
    let filtered = generate(&t, tpl, json!({"pg": {"entries": {"booked_on": {"between": ["2024-01-01", "2024-02-28"]}, "account": {"nin": ["B"]}}}})).await;
    assert_eq!(filtered, "1 A 10.5\ntotal=10.5 note=ok");
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
    let tpl = "{% for e in crm.entries %}{{ e.id }} {{ e.account }} {{ e.amount }}\n{% endfor %}total={{ crm.entries|sum:\"amount\" }}";
    assert_eq!(
        generate(&t, tpl, json!({})).await,
        "1 A 10.5\n2 B 3.25\n3 A 1\ntotal=14.75"
    );
    assert_eq!(
        generate(&t, tpl, json!({"crm": {"entries": {"id": {"gte": [2]}}}})).await,
        "2 B 3.25\n3 A 1\ntotal=4.25"
    );
    drop(t);
    let _ = client.database(&db).drop().await;
}

/// A scratch MariaDB/MySQL database (`MYSQL_URL`), dropped by `drop_mysql`.
async fn scratch_mysql() -> Option<(mysql_async::Opts, String)> {
    use mysql_async::prelude::Queryable;
    let url = reporter_contract::services::service_url("MYSQL_URL", "MySQL/MariaDB")?;
    let opts = mysql_async::Opts::from_url(&url).expect("MYSQL_URL");
    let db = reporter_contract::services::unique_name("reporter_src");
    let mut conn = mysql_async::Conn::new(opts.clone()).await.expect("connect");
    conn.query_drop(format!(
        "CREATE DATABASE `{db}`;
         CREATE TABLE `{db}`.entries (id int PRIMARY KEY, account varchar(8), amount decimal(12,2),
           booked_at datetime(3), meta json, flag boolean);
         INSERT INTO `{db}`.entries VALUES
           (1, 'A', 10.50, '2024-01-05 09:30:00', '{{\"city\": \"Lisbon\"}}', TRUE),
           (2, 'B', 3.25, '2024-02-01 00:00:00', '{{\"city\": \"Porto\"}}', FALSE),
           (3, 'A', 1.00, '2024-03-09 18:00:00.250', NULL, TRUE);
         CREATE TABLE `{db}`.closings (id int PRIMARY KEY, closed_on date);
         INSERT INTO `{db}`.closings VALUES (1, '2024-03-31'), (2, '2024-06-30');"
    ))
    .await
    .expect("create the scratch database");
    let _ = conn.disconnect().await;
    Some((opts, db))
}

async fn drop_mysql(opts: mysql_async::Opts, db: &str) {
    use mysql_async::prelude::Queryable;
    let mut conn = mysql_async::Conn::new(opts).await.expect("connect");
    let _ = conn
        .query_drop(format!("DROP DATABASE IF EXISTS `{db}`"))
        .await;
    let _ = conn.disconnect().await;
}

#[tokio::test]
async fn mysql_source_end_to_end() {
    let Some((opts, db)) = scratch_mysql().await else {
        return;
    };
    let mut env = vec![
        ("DATASOURCE_MY_TYPE".to_owned(), "mysql".to_owned()),
        (
            "DATASOURCE_MY_HOST".to_owned(),
            opts.ip_or_hostname().to_owned(),
        ),
        ("DATASOURCE_MY_PORT".to_owned(), opts.tcp_port().to_string()),
        ("DATASOURCE_MY_DATABASE".to_owned(), db.clone()),
    ];
    if let Some(user) = opts.user() {
        env.push(("DATASOURCE_MY_USER".to_owned(), user.to_owned()));
    }
    if let Some(password) = opts.pass() {
        env.push(("DATASOURCE_MY_PASSWORD".to_owned(), password.to_owned()));
    }
    let t = start_with(Options {
        env,
        ..Default::default()
    })
    .await;
    let listed = json(t.get(&token(), "/v1/data-sources").await).await;
    let my = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["id"] == "my")
        .cloned()
        .expect("listed");
    assert_eq!(my["type"], "mysql", "{my}");
    let schema = json(t.get(&token(), "/v1/data-sources/my").await).await;
    assert_eq!(
        schema["tables"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["name"] == "entries"))
            .map(|t| t["fields"].clone())
            .unwrap_or_default(),
        json!(["account", "amount", "booked_at", "flag", "id", "meta"])
    );
    let tpl = "{% for e in my.entries %}{{ e.id }} {{ e.account }} {{ e.amount }} {{ e.booked_at }} {{ e.meta.city }} {{ e.flag }}\n{% endfor %}total={{ my.entries|sum:\"amount\" }}";
    assert_eq!(
        generate(&t, tpl, json!({})).await,
        // The original's clean-up drops trailing decimal zeros (10.50 → 10.5, 1.00 → 1).
        "1 A 10.5 2024-01-05 09:30:00 +0000 UTC Lisbon 1\n\
         2 B 3.25 2024-02-01 00:00:00 +0000 UTC Porto 0\n\
         3 A 1 2024-03-09 18:00:00.25 +0000 UTC  1\n\
         total=14.75"
    );
    let filtered = generate(
        &t,
        tpl,
        json!({"my": {"entries": {"booked_at": {"between": ["2024-01-01", "2024-02-28"]}, "account": {"nin": ["B"]}}}}),
    )
    .await;
    assert_eq!(
        filtered,
        "1 A 10.5 2024-01-05 09:30:00 +0000 UTC Lisbon 1\ntotal=10.5"
    );
    // A hostile filter value is data, never SQL.
    let hostile = generate(
        &t,
        tpl,
        json!({"my": {"entries": {"account": {"eq": ["A'; DROP TABLE entries; --"]}}}}),
    )
    .await;
    assert_eq!(hostile, "total=0");
    // A DATE reaches the template as the PostgreSQL adapter hands a `date` over: a time at
    // midnight UTC in Go's form (the original's templates print dates from typed sources so),
    // compared as an instant and filtered by its day.
    let days = "{% for c in my.closings %}{{ c.id }} {{ c.closed_on }} {% if c.closed_on > my.closings.0.closed_on %}later{% endif %}\n{% endfor %}";
    assert_eq!(
        generate(&t, days, json!({})).await,
        "1 2024-03-31 00:00:00 +0000 UTC \n2 2024-06-30 00:00:00 +0000 UTC later\n"
    );
    assert_eq!(
        generate(
            &t,
            days,
            json!({"my": {"closings": {"closed_on": {"eq": ["2024-06-30"]}}}})
        )
        .await,
        "2 2024-06-30 00:00:00 +0000 UTC \n"
    );
    {
        use mysql_async::prelude::Queryable;
        let mut conn = mysql_async::Conn::new(opts.clone()).await.unwrap();
        let n: Option<i64> = conn
            .query_first(format!("SELECT count(*) FROM `{db}`.entries"))
            .await
            .unwrap();
        assert_eq!(n, Some(3));
        let _ = conn.disconnect().await;
    }
    drop(t);
    drop_mysql(opts, &db).await;
}
