//! The report flow against real data sources: PostgreSQL (local server, data created here),
//! MariaDB/MySQL (`MYSQL_URL`) and MongoDB (`MONGODB_URI`), byte for byte like the file-backed
//! flow.
use crate::common;

use common::*;
use serde_json::json;

async fn generate(t: &TestApp, source: &str, filters: serde_json::Value) -> String {
    let tpl = t.upload_template("txt", source).await;
    let id = t.request_report(&tpl, filters).await;
    // Up to a minute: the slow-render test's 12 M loop iterations take 15 s and more in a
    // debug build on a loaded machine (speed is not what these tests check).
    let r = t.wait_report(&id, 2400).await;
    assert_eq!(r["status"], "Finished", "{r}");
    let resp = t.get(&token(), &format!("/v1/reports/{id}/download")).await;
    String::from_utf8(resp.0.into_body().into_vec().await.unwrap()).unwrap()
}

/// A scratch PostgreSQL database with `sql` run in it (`None`: no server; the test skips).
async fn scratch_pg(name: &str, sql: &str) -> Option<ScratchPostgres> {
    let pg = ScratchPostgres::create(name).await?;
    pg.client.batch_execute(sql).await.expect("scratch data");
    Some(pg)
}

#[tokio::test]
async fn postgresql_source_end_to_end() {
    let Some(pg) = scratch_pg(
        "reporter_src",
        "CREATE TABLE entries (id int PRIMARY KEY, account text, amount numeric(12,2), booked_on date);
             INSERT INTO entries VALUES (1,'A',10.50,'2024-01-05'),(2,'B',3.25,'2024-02-01'),(3,'A',1.00,'2024-03-09');
             CREATE SCHEMA audit; CREATE TABLE audit.events (id int, note text); INSERT INTO audit.events VALUES (7, 'ok');",
    )
    .await else {
        return;
    };
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

/// Uploads `source` as a txt template (201 expected); its id and `mappedFields`.
async fn upload_mapped(t: &TestApp, source: &str) -> (String, serde_json::Value) {
    let form = Form::new()
        .file("template", "t.tpl", source.as_bytes())
        .text("outputFormat", "txt")
        .text("description", "schema-qualified");
    let resp = t.upload(&token(), form).await;
    let status = resp.0.status();
    let body = json(resp).await;
    assert_eq!(status, poem::http::StatusCode::CREATED, "{body}");
    (
        body["id"].as_str().expect("id").to_owned(),
        body["mappedFields"].clone(),
    )
}

/// The original's `TestTemplate_CreateSchemaQualified`: `ds:public.table` names the default
/// schema explicitly. It uploads, is stored as the template reads it (`public__organization`,
/// as the original stores it), extracts and renders; filters may name the table by any
/// spelling (`organization`, `public.organization`, `public__organization`) and are stored
/// under the template's. Another schema's `ds:other.table` works alongside; a template reading
/// one table under both spellings gets the filter on both; a table named twice in the filters,
/// or the default schema named for a table it does not hold, is refused.
#[tokio::test]
async fn the_default_schema_may_be_named_on_postgresql() {
    let Some(pg) = scratch_pg(
        "reporter_qualified",
        "CREATE TABLE organization (id int PRIMARY KEY, name text);
         INSERT INTO organization VALUES (1,'Acme'),(2,'Globex'),(3,'Initech');
         CREATE SCHEMA other; CREATE TABLE other.accounts (id int, label text);
         INSERT INTO other.accounts VALUES (10,'cash'),(20,'bank');",
    )
    .await
    else {
        return;
    };
    let mut env = pg.source_env("PG");
    env.push((
        "DATASOURCE_PG_SCHEMAS".to_owned(),
        "public,other".to_owned(),
    ));
    let t = start_with(Options {
        env,
        ..Default::default()
    })
    .await;
    let tpl = "{% for o in pg:public.organization %}{{ o.name }};{% endfor %}";
    let (id, mapped) = upload_mapped(&t, tpl).await;
    assert_eq!(mapped, json!({"pg": {"public__organization": ["name"]}}));
    let report = t.request_report(&id, json!({})).await;
    assert_eq!(t.wait_report(&report, 400).await["status"], "Finished");
    assert_eq!(t.stored_text(&id, &report).await, "Acme;Globex;Initech;");
    for spelling in [
        "organization",
        "public.organization",
        "public__organization",
    ] {
        let filters = json!({"pg": {spelling: {"id": {"gte": [2]}}}});
        let report = t.request_report(&id, filters).await;
        let r = t.wait_report(&report, 400).await;
        assert_eq!(r["status"], "Finished", "{spelling}: {r}");
        assert_eq!(
            r["filters"],
            json!({"pg": {"public__organization": {"id": {"gte": [2]}}}}),
            "{spelling}"
        );
        assert_eq!(
            t.stored_text(&id, &report).await,
            "Globex;Initech;",
            "{spelling}"
        );
    }

    // Another schema, beside both spellings of the default one's table.
    let tpl = "{% for a in pg:other.accounts %}{{ a.label }},{% endfor %}|{{ pg.organization.0.name }}|{% for o in pg:public.organization %}{{ o.id }}{% endfor %}";
    let (id, mapped) = upload_mapped(&t, tpl).await;
    assert_eq!(
        mapped,
        json!({"pg": {"organization": ["name"], "other__accounts": ["label"], "public__organization": ["id"]}})
    );
    let filters = json!({"pg": {"other.accounts": {"id": {"eq": [20]}}, "organization": {"id": {"lt": [3]}}}});
    let report = t.request_report(&id, filters).await;
    let r = t.wait_report(&report, 400).await;
    assert_eq!(r["status"], "Finished", "{r}");
    assert_eq!(
        r["filters"]["pg"],
        json!({
            "other__accounts": {"id": {"eq": [20]}},
            "organization": {"id": {"lt": [3]}},
            "public__organization": {"id": {"lt": [3]}},
        })
    );
    assert_eq!(t.stored_text(&id, &report).await, "bank,|Acme|12");

    // Refused: one table named twice; the default schema named for another schema's table.
    let twice = json!({"templateId": id, "filters": {"pg": {
        "organization": {"id": {"eq": [1]}},
        "public.organization": {"id": {"eq": [2]}},
    }}});
    let resp = t.post_json(&token(), "/v1/reports", twice).await;
    expect_error(resp, 400, "TPL-0068").await;
    let form = Form::new()
        .file(
            "template",
            "t.tpl",
            b"{{ pg:public.accounts.0.label }}".as_slice(),
        )
        .text("outputFormat", "txt")
        .text("description", "wrong schema");
    let body = expect_error(t.upload(&token(), form).await, 400, "TPL-0030").await;
    assert!(
        body["fields"].get("pg.public__accounts").is_some(),
        "{body}"
    );
    drop(t);
    pg.remove().await;
}

/// The value of the metric line starting with `series` (0 when absent).
fn metric(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or(0.0)
}

/// Generates `source` over every row of `pg.ledger` (past the row limit): the report must
/// be Partial, `pg` failed with `row_limit_exceeded` and `aux` ok; its stored artifact.
async fn over_the_row_limit(t: &TestApp, source: &str) -> String {
    let tpl = t.upload_template("txt", source).await;
    let id = t.request_report(&tpl, json!({})).await;
    let r = t.wait_report(&id, 400).await;
    assert_eq!(r["status"], "Partial", "{r}");
    assert_eq!(
        r["metadata"]["sections"]["pg"],
        json!({"ok": false, "error_code": "row_limit_exceeded"})
    );
    assert_eq!(r["metadata"]["sections"]["aux"], json!({"ok": true}));
    t.stored_text(&tpl, &id).await
}

/// A table read once by a `for` reaches the render as a stream: the same artifact as the
/// whole-context render, counted in `/metrics`. A streamed table that fails part-way (its row
/// limit) is taken back: the report is rendered again from the other sections, Partial, with
/// none of the rows that had already reached the first render.
#[tokio::test]
async fn a_postgresql_table_streams_into_the_render_and_a_failing_one_is_taken_back() {
    let Some(pg) = scratch_pg(
        "reporter_stream",
        "CREATE TABLE ledger (id int PRIMARY KEY, label text, amount numeric(12,2), booked_on date);
             INSERT INTO ledger SELECT g, 'row <' || g || '>', g * 1.5, DATE '2024-01-01' + g % 400
               FROM generate_series(1, 6000) g;
             CREATE TABLE notes (id int, note text); INSERT INTO notes VALUES (1, 'hello');",
    )
    .await else {
        return;
    };
    let mut env = pg.source_env("PG");
    env.extend(pg.source_env("AUX"));
    let t = start_with(Options {
        env,
        tweak: Some(|r| r.engine_max_rows = "5000".into()),
        ..Default::default()
    })
    .await;
    let streamed = "{{ aux.notes.0.note }}\n{% for r in pg.ledger %}{{ forloop.Counter }}={{ r.id }}:{{ r.label }}:{{ r.amount }}:{{ r.booked_on|date:\"02/01/2006\" }};{% empty %}none{% endfor %}";
    // One more mention of the table: it is then given whole in the context.
    let whole = format!("{streamed}{{% if pg.ledger %}}{{% endif %}}");
    let first_4000 = json!({"pg": {"ledger": {"id": {"between": [1, 4000]}}}});
    let before = t.metrics().await;
    let got = generate(&t, streamed, first_4000.clone()).await;
    assert_eq!(got, generate(&t, &whole, first_4000).await);
    assert!(
        got.starts_with("hello\n1=1:row &lt;1&gt;:1.5:02/01/2024;2=2:row &lt;2&gt;:3:03/01/2024;"),
        "{}",
        &got[..200]
    );
    assert!(
        got.ends_with(";4000=4000:row &lt;4000&gt;:6000:01/01/2024;"),
        "{}",
        &got[got.len() - 200..]
    );
    let after = t.metrics().await;
    let streams = r#"reporter_render_streams_total{outcome="streamed"}"#;
    assert_eq!(
        metric(&after, streams) - metric(&before, streams),
        1.0,
        "only the first template streams"
    );
    let rows = "reporter_render_streamed_rows_total";
    assert_eq!(metric(&after, rows) - metric(&before, rows), 4000.0);
    // No row matches: the empty block, as with the whole context.
    let none = json!({"pg": {"ledger": {"id": {"gt": [9999]}}}});
    assert_eq!(generate(&t, streamed, none).await, "hello\nnone");
    // 6,000 rows past the limit of 5,000: chunks have reached the render when the limit stops
    // the query.
    assert_eq!(over_the_row_limit(&t, streamed).await, "hello\nnone");
    let again = r#"reporter_render_streams_total{outcome="rendered_again"}"#;
    assert_eq!(
        metric(&t.metrics().await, again) - metric(&after, again),
        1.0
    );
    // A render that answers before reading a row (its loop never runs) does not spare the
    // table its limits: the rest is counted, and the section fails as in a whole context.
    let early = "{% if aux.notes.0.note == \"nope\" %}{% for r in pg.ledger %}{{ r.id }}{% endfor %}{% endif %}done";
    assert_eq!(over_the_row_limit(&t, early).await, "done");
    assert_eq!(
        generate(&t, early, json!({"pg": {"ledger": {"id": {"lte": [10]}}}})).await,
        "done"
    );
    drop(t);
    pg.remove().await;
}

/// `ENGINE_MAX_ROWS` is the row limit of a SQL source: raised past 100,000 (the adapter's
/// own default cap), a table of 100,001 rows is read whole; one row more than the setting
/// still fails the section.
#[tokio::test]
async fn engine_max_rows_is_the_only_row_limit_of_a_sql_source() {
    let Some(pg) = scratch_pg(
        "reporter_many_rows",
        "CREATE TABLE big (id int); INSERT INTO big SELECT g FROM generate_series(1, 100001) g;",
    )
    .await
    else {
        return;
    };
    let t = start_with(Options {
        env: pg.source_env("PG"),
        tweak: Some(|r| r.engine_max_rows = "100001".into()),
        ..Default::default()
    })
    .await;
    let count = "{{ pg.big|length }}";
    assert_eq!(generate(&t, count, json!({})).await, "100001");
    drop(t);
    let t = start_with(Options {
        env: pg.source_env("PG"),
        tweak: Some(|r| r.engine_max_rows = "100000".into()),
        ..Default::default()
    })
    .await;
    let tpl = t.upload_template("txt", count).await;
    let id = t.request_report(&tpl, json!({})).await;
    let r = t.wait_report(&id, 400).await;
    assert_eq!(r["status"], "Error", "{r}");
    assert_eq!(
        r["metadata"]["sections"]["pg"]["error_code"], "row_limit_exceeded",
        "{r}"
    );
    drop(t);
    pg.remove().await;
}

/// Where the pieces test keeps its artifacts (`fs` object storage).
fn pieces_root() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("reporter-e2e-pieces-{}", std::process::id()))
}

/// Files under `dir` whose name starts with `.` (the `fs` storage's temporary files).
fn hidden_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .flat_map(|e| {
            let path = e.path();
            if path.is_dir() {
                hidden_files(&path)
            } else if e.file_name().to_string_lossy().starts_with('.') {
                vec![path]
            } else {
                Vec::new()
            }
        })
        .collect()
}

/// A streamed render's output goes to object storage as it is rendered (here `fs`, or
/// GridFS on the MongoDB backend): the artifact equals the whole-context one. A render that
/// fails after pieces were written (past its output bound) leaves no artifact and no
/// temporary file behind.
#[tokio::test]
async fn a_streamed_artifact_is_written_in_pieces_and_a_failed_one_leaves_nothing() {
    let Some(pg) = scratch_pg(
        "reporter_pieces",
        "CREATE TABLE ledger (id int PRIMARY KEY, label text);
             INSERT INTO ledger SELECT g, 'row <' || g || '>' FROM generate_series(1, 30000) g;",
    )
    .await
    else {
        return;
    };
    let root = pieces_root();
    let t = start_with(Options {
        env: pg.source_env("PG"),
        tweak: Some(|r| {
            r.object_storage_backend = "fs".into();
            r.object_storage_path = pieces_root().display().to_string();
            r.engine_max_output_bytes = "2000000".into();
        }),
        ..Default::default()
    })
    .await;
    let streamed =
        "{% for r in pg.ledger %}{{ forloop.Counter }}={{ r.id }}:{{ r.label }}\n{% endfor %}";
    let whole = format!("{streamed}{{% if pg.ledger %}}{{% endif %}}");
    let uploads =
        |outcome: &str| format!("reporter_artifact_uploads_total{{outcome=\"{outcome}\"}}");
    let before = t.metrics().await;
    let got = generate(&t, streamed, json!({})).await;
    let want: String = (1..=30000)
        .map(|i| format!("{i}={i}:row &lt;{i}&gt;\n"))
        .collect();
    assert!(got.len() > 800_000, "several pieces: {}", got.len());
    assert!(got == want, "the artifact written in pieces differs");
    assert!(got == generate(&t, &whole, json!({})).await);
    assert_eq!(hidden_files(&root), Vec::<std::path::PathBuf>::new());
    let after = t.metrics().await;
    let counted = |text: &str, outcome: &str| metric(text, &uploads(outcome));
    assert_eq!(
        counted(&after, "committed") - counted(&before, "committed"),
        2.0,
        "both artifacts are written while rendered (a render without a streamed table too)"
    );
    // About 3.3 MB of output against a 2 MB bound: pieces went to storage before the bound.
    let wide = "{% for r in pg.ledger %}{{ r.id }}:{{ r.label }}:{{ r.label }}:{{ r.label }}:{{ r.label }}:{{ r.label }}:{{ r.label }}\n{% endfor %}";
    let tpl = t.upload_template("txt", wide).await;
    let id = t.request_report(&tpl, json!({})).await;
    let r = t.wait_report(&id, 400).await;
    assert_eq!(r["status"], "Error", "{r}");
    assert_eq!(
        r["metadata"]["error_code"], "report_generation_failed",
        "{r}"
    );
    let artifact = t.stored_artifact(&tpl, &id).await;
    assert_eq!(artifact, None, "a failed render left an artifact");
    // The abort may end a moment after the report.
    let mut left = hidden_files(&root);
    let mut ended = t.metrics().await;
    for _ in 0..50 {
        if left.is_empty() && counted(&ended, "aborted") > counted(&after, "aborted") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        left = hidden_files(&root);
        ended = t.metrics().await;
    }
    assert_eq!(
        left,
        Vec::<std::path::PathBuf>::new(),
        "temporary files left"
    );
    assert_eq!(counted(&ended, "aborted") - counted(&after, "aborted"), 1.0);
    assert_eq!(counted(&ended, "committed"), counted(&after, "committed"));
    drop(t);
    pg.remove().await;
    let _ = std::fs::remove_dir_all(&root);
}

/// A render slower than the query's deadline holds the streamed query back past it: the
/// report is then rendered again from a whole context (a slow template is not a slow source),
/// and finishes with every row.
#[tokio::test]
async fn a_render_slower_than_the_query_deadline_is_rendered_again_whole() {
    let Some(pg) = scratch_pg(
        "reporter_slow_render",
        "CREATE TABLE ledger (id int PRIMARY KEY, label text);
             INSERT INTO ledger SELECT g, repeat('x', 400) FROM generate_series(1, 20000) g;",
    )
    .await
    else {
        return;
    };
    let t = start_with(Options {
        env: pg.source_env("PG"),
        tweak: Some(|r| r.engine_query_timeout_sec = "1".into()),
        ..Default::default()
    })
    .await;
    let before = t.metrics().await;
    let spin = "y".repeat(600);
    let tpl = format!(
        "{{% for r in pg.ledger %}}{{% for c in \"{spin}\" %}}{{% endfor %}}{{{{ r.id }}}}{{{{ r.label|slice:\":0\" }}}};{{% endfor %}}"
    );
    let started = std::time::Instant::now();
    let got = generate(&t, &tpl, json!({})).await;
    let want: String = (1..=20000).map(|i| format!("{i};")).collect();
    assert_eq!(got, want);
    let again = r#"reporter_render_streams_total{outcome="rendered_again"}"#;
    let after = t.metrics().await;
    // 12 M loop iterations take seconds in a debug build, and 8.4 MB of rows do not fit in the
    // pipe to the render (1 MiB): the first render held its query back past the 1 s deadline
    // (the query is done only once all but the last ~1.3 MB of rows were rendered).
    let streamed = r#"reporter_render_streams_total{outcome="streamed"}"#;
    reporter_contract::figure!(
        "slow streamed render: {:?}, rendered again: {}, streamed: {}",
        started.elapsed(),
        metric(&after, again) - metric(&before, again),
        metric(&after, streamed) - metric(&before, streamed)
    );
    assert_eq!(metric(&after, again) - metric(&before, again), 1.0);
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
        ("DATASOURCE_DOCS_TYPE".to_owned(), "mongodb".to_owned()),
        ("DATASOURCE_DOCS_URI".to_owned(), uri.clone()),
        ("DATASOURCE_DOCS_DATABASE".to_owned(), db.clone()),
    ];
    let t = start_with(Options {
        env,
        ..Default::default()
    })
    .await;
    let tpl = "{% for e in docs.entries %}{{ e.id }} {{ e.account }} {{ e.amount }}\n{% endfor %}total={{ docs.entries|sum:\"amount\" }}";
    assert_eq!(
        generate(&t, tpl, json!({})).await,
        "1 A 10.5\n2 B 3.25\n3 A 1\ntotal=14.75"
    );
    assert_eq!(
        generate(&t, tpl, json!({"docs": {"entries": {"id": {"gte": [2]}}}})).await,
        "2 B 3.25\n3 A 1\ntotal=4.25"
    );
    // Read once by a `for`, the collection streams into the render (cursor order).
    let streamed = "{% for e in docs.entries %}{{ e.id }} {{ e.account }};{% endfor %}";
    assert_eq!(generate(&t, streamed, json!({})).await, "1 A;2 B;3 A;");
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
    // The default database named (`my:<db>.closings`, stored `<db>__closings`), and in a
    // filter (`<db>.closings`).
    let named = format!("{{% for c in my:{db}.closings %}}{{{{ c.id }}}};{{% endfor %}}");
    assert_eq!(generate(&t, &named, json!({})).await, "1;2;");
    let filters = json!({"my": {format!("{db}.closings"): {"id": {"eq": [2]}}}});
    assert_eq!(generate(&t, &named, filters).await, "2;");
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
