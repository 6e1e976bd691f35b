//! Drop-in compatibility with the original Reporter, as its clients and deployments see it:
//! the report status vocabulary and metadata keys, the snake_case query parameters with their
//! camelCase aliases (unknown keys refused), `/readyz` and `/version`, `STREAMING_BROKERS` in
//! the original's form, and an events exchange an operator declared — through the HTTP API,
//! the released binary and a real AMQP consumer (`RABBITMQ_URI`, skipped without it).
use crate::common;

use base64::Engine as _;
use common::*;
use futures_util::StreamExt;
use poem::http::StatusCode;
use reporter_adapter_rabbitmq::tail::{Tail, TailedEvent, tail};
use reporter_contract::services::{service_url, unique_name};
use reporter_ports::events::EventKey;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A small data source `ledger`, and `down`: a PostgreSQL source nobody listens for.
fn sources() -> (PathBuf, Vec<(String, String)>) {
    let dir = std::env::temp_dir().join(format!("reporter-compat-{}", uuid::Uuid::now_v7()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("entries.csv"),
        "id,account,amount\n1,A,10.50\n2,B,3.25\n",
    )
    .unwrap();
    let env = vec![
        ("DATASOURCE_LEDGER_TYPE".into(), "file".into()),
        ("DATASOURCE_LEDGER_PATH".into(), dir.display().to_string()),
        ("DATASOURCE_DOWN_TYPE".into(), "postgresql".into()),
        ("DATASOURCE_DOWN_HOST".into(), "127.0.0.1".into()),
        ("DATASOURCE_DOWN_PORT".into(), "1".into()),
        ("DATASOURCE_DOWN_DATABASE".into(), "nothing".into()),
    ];
    (dir, env)
}

async fn get_ok(t: &TestApp, path: &str) -> Value {
    let resp = t.get(&token(), path).await;
    let status = resp.0.status();
    let body = json(resp).await;
    assert_eq!(status, StatusCode::OK, "{path}: {body}");
    body
}

fn ids(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_owned())
        .collect()
}

fn today() -> String {
    chrono::Utc::now().format("%Y-%m-%d").to_string()
}

// ---------------------------------------------------------------------------------------
// 1. Report status vocabulary and metadata
// ---------------------------------------------------------------------------------------

/// `Error` (not `Errored`) everywhere a client looks: the report, the status filter, the
/// dashboard's error counts and the `report.errored` payload; metadata with the original's
/// keys and our fixed vocabularies.
#[tokio::test]
async fn failed_reports_are_error_in_rest_filters_dashboard_and_payloads() {
    let (dir, env) = sources();
    let t = start_with(Options {
        env,
        streaming: true,
        ..Default::default()
    })
    .await;
    let errored_tpl = t.upload_template("txt", "{{ down.t.0.f }}").await;
    let errored = t.request_report(&errored_tpl, json!({})).await;
    let r = t.wait_report(&errored, 600).await;
    assert_eq!(r["status"], "Error", "{r}");
    assert_eq!(
        r["metadata"],
        json!({
            "error": "Report generation failed",
            "error_code": "report_generation_failed",
            "sections": {"down": {"ok": false, "error_code": "data_source_unavailable"}}
        })
    );
    let partial_tpl = t
        .upload_template("txt", "{{ ledger.entries.0.id }}{{ down.t.0.f }}")
        .await;
    let partial = t.request_report(&partial_tpl, json!({})).await;
    let r = t.wait_report(&partial, 600).await;
    assert_eq!(r["status"], "Partial", "{r}");
    assert_eq!(r["metadata"]["error"], "Some report data sections failed");
    assert_eq!(r["metadata"]["error_code"], "report_sections_failed");
    assert_eq!(
        r["metadata"]["sections"]["down"]["error_code"],
        "data_source_unavailable"
    );
    let ok_tpl = t.upload_template("txt", "{{ ledger.entries.0.id }}").await;
    let finished = t.request_report(&ok_tpl, json!({})).await;
    let r = t.wait_report(&finished, 600).await;
    assert_eq!(r["status"], "Finished", "{r}");
    assert_eq!(
        r["metadata"],
        json!({"sections": {"ledger": {"ok": true}}}),
        "no error keys on a finished report"
    );

    let page = get_ok(&t, "/v1/reports?status=Error").await;
    assert_eq!(ids(&page), std::slice::from_ref(&errored));
    assert_eq!(page["total"], 1);
    assert_eq!(
        ids(&get_ok(&t, "/v1/reports?status=Partial").await),
        [partial]
    );
    let e = expect_error(
        t.get(&token(), "/v1/reports?status=Errored").await,
        400,
        "TPL-0019",
    )
    .await;
    assert_eq!(e["fields"]["status"], "Processing|Finished|Partial|Error");
    let m = get_ok(&t, "/v1/metrics").await;
    assert_eq!(m["errors"]["total"], 1, "{m}");
    assert_eq!(m["reports"], 3);

    let deliveries = t.broker.as_ref().unwrap().deliveries();
    let e = deliveries
        .iter()
        .find(|e| e.key == EventKey::ReportErrored)
        .expect("report.errored");
    assert_eq!(e.payload.value()["status"], "Error");
    assert_eq!(e.payload.value()["section_count"], 1);
    assert_eq!(e.payload.value()["error_code"], "report_generation_failed");
    let schema = EventKey::ReportErrored.payload_schema();
    assert!(
        jsonschema::validator_for(&schema)
            .unwrap()
            .is_valid(&e.payload.value()),
        "{}",
        e.payload
    );
    let requested = deliveries
        .iter()
        .find(|e| e.key == EventKey::ReportRequested)
        .unwrap();
    assert_eq!(requested.payload.value()["status"], "Processing");
    std::fs::remove_dir_all(dir).unwrap();
}

/// A MongoDB database written by an earlier build holds `Errored`: it is read as `Error`,
/// matched by `status=Error` and counted by the dashboard; new records are written `Error`.
#[tokio::test]
async fn reports_stored_as_errored_by_earlier_builds_read_as_error() {
    let Some(mongo) = service_url("MONGODB_URI", "MongoDB") else {
        return;
    };
    let (dir, env) = sources();
    let t = start_with(Options {
        env,
        mongo_uri: Some(mongo.clone()),
        ..Default::default()
    })
    .await;
    let database = t.mongo_database.clone().expect("database");
    let tpl = t.upload_template("txt", "{{ ledger.entries.0.id }}").await;
    let old = t.request_report(&tpl, json!({})).await;
    assert_eq!(t.wait_report(&old, 600).await["status"], "Finished");
    let fresh_tpl = t.upload_template("txt", "{{ down.t.0.f }}").await;
    let fresh = t.request_report(&fresh_tpl, json!({})).await;
    assert_eq!(t.wait_report(&fresh, 600).await["status"], "Error");

    let client = mongodb::Client::with_uri_str(&mongo).await.unwrap();
    let reports = client
        .database(&database)
        .collection::<mongodb::bson::Document>("reports");
    let stored = reports
        .find_one(mongodb::bson::doc! {"_id": &fresh})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stored.get_str("status").unwrap(),
        "Error",
        "written as Error"
    );
    // What an earlier build left behind.
    reports
        .update_one(
            mongodb::bson::doc! {"_id": &old},
            mongodb::bson::doc! {"$set": {"status": "Errored", "error_code": "report_generation_timeout"}},
        )
        .await
        .unwrap();
    let r = get_ok(&t, &format!("/v1/reports/{old}")).await;
    assert_eq!(r["status"], "Error", "{r}");
    assert_eq!(r["metadata"]["error_code"], "report_generation_timeout");
    assert_eq!(r["metadata"]["error"], "Report generation timed out");
    let mut listed = ids(&get_ok(&t, "/v1/reports?status=Error").await);
    listed.sort();
    let mut expected = vec![old.clone(), fresh.clone()];
    expected.sort();
    assert_eq!(listed, expected, "both spellings match status=Error");
    assert_eq!(get_ok(&t, "/v1/reports?status=Finished").await["total"], 0);
    assert_eq!(get_ok(&t, "/v1/metrics").await["errors"]["total"], 2);
    drop(t);
    if std::env::var("REPORTER_E2E_KEEP_DATABASES").as_deref() != Ok("1") {
        let _ = client.database(&database).drop().await;
    }
    std::fs::remove_dir_all(dir).unwrap();
}

// ---------------------------------------------------------------------------------------
// 2. Query parameters
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn templates_take_snake_case_names_and_camel_case_aliases() {
    let t = start().await;
    let csv = t.upload_template("csv", "a,b\n{{ 1 }},2\n").await;
    let html = t
        .upload_template("html", "<html><body>{{ 1 }}</body></html>")
        .await;
    for q in [
        "output_format=csv",
        "outputFormat=csv",
        "output_format=CSV&outputFormat=CSV",
    ] {
        assert_eq!(
            ids(&get_ok(&t, &format!("/v1/templates?{q}")).await),
            std::slice::from_ref(&csv),
            "{q}"
        );
    }
    for q in [
        format!("created_at={}", today()),
        format!("createdAt={}", today()),
    ] {
        assert_eq!(get_ok(&t, &format!("/v1/templates?{q}")).await["total"], 2);
    }
    assert_eq!(
        get_ok(&t, "/v1/templates?created_at=2001-01-01").await["total"],
        0
    );
    for q in ["sort_order=asc", "sortOrder=asc", "sortOrder=ASC"] {
        assert_eq!(
            ids(&get_ok(&t, &format!("/v1/templates?{q}")).await),
            [csv.clone(), html.clone()],
            "{q}"
        );
    }
    // The original's spelling is checked like ours.
    let e = expect_error(
        t.get(&token(), "/v1/templates?output_format=docx").await,
        400,
        "TPL-0003",
    )
    .await;
    assert!(e["fields"]["output_format"].is_string(), "{e}");
    expect_error(
        t.get(&token(), "/v1/templates?created_at=31/12/2026").await,
        400,
        "TPL-0020",
    )
    .await;
    expect_error(
        t.get(&token(), "/v1/templates?sort_order=sideways").await,
        400,
        "TPL-0025",
    )
    .await;
    // Both spellings with different values: which one was meant?
    let e = expect_error(
        t.get(
            &token(),
            "/v1/templates?output_format=csv&outputFormat=html",
        )
        .await,
        400,
        "TPL-0019",
    )
    .await;
    assert!(
        e["fields"]["output_format"].is_string() && e["fields"]["outputFormat"].is_string(),
        "{e}"
    );
    expect_error(
        t.get(&token(), "/v1/templates?sort_order=asc&sortOrder=desc")
            .await,
        400,
        "TPL-0019",
    )
    .await;
}

#[tokio::test]
async fn reports_take_snake_case_names_and_camel_case_aliases() {
    let (dir, env) = sources();
    let t = start_with(Options {
        env,
        ..Default::default()
    })
    .await;
    let a = t.upload_template("txt", "{{ ledger.entries.0.id }}").await;
    let b = t
        .upload_template("txt", "{{ ledger.entries.0.amount }}")
        .await;
    let ra = t.request_report(&a, json!({})).await;
    let rb = t.request_report(&b, json!({})).await;
    for q in [
        format!("template_id={a}"),
        format!("templateId={a}"),
        format!("template_id={a}&templateId={a}"),
    ] {
        assert_eq!(
            ids(&get_ok(&t, &format!("/v1/reports?{q}")).await),
            std::slice::from_ref(&ra),
            "{q}"
        );
    }
    let e = expect_error(
        t.get(
            &token(),
            &format!("/v1/reports?template_id={a}&templateId={b}"),
        )
        .await,
        400,
        "TPL-0019",
    )
    .await;
    assert!(e["fields"]["templateId"].is_string(), "{e}");
    let e = expect_error(
        t.get(&token(), "/v1/reports?template_id=nope").await,
        400,
        "TPL-0012",
    )
    .await;
    assert!(e["fields"]["template_id"].is_string(), "{e}");
    for q in [
        format!("created_at={}", today()),
        format!("createdAt={}", today()),
        format!("start_date={}", today()),
        format!("startDate={}", today()),
        format!("end_date={}", today()),
        format!("endDate={}", today()),
        format!("createdFrom={}", today()),
        format!("start_date={0}&end_date={0}", today()),
    ] {
        assert_eq!(
            get_ok(&t, &format!("/v1/reports?{q}")).await["total"],
            2,
            "{q}"
        );
    }
    assert_eq!(
        get_ok(&t, "/v1/reports?end_date=2001-01-01").await["total"],
        0
    );
    assert_eq!(
        get_ok(&t, "/v1/reports?start_date=2999-01-01").await["total"],
        0
    );
    expect_error(
        t.get(
            &token(),
            "/v1/reports?start_date=2030-01-02&end_date=2030-01-01",
        )
        .await,
        400,
        "TPL-0023",
    )
    .await;
    expect_error(
        t.get(&token(), "/v1/reports?start_date=yesterday").await,
        400,
        "TPL-0020",
    )
    .await;
    assert_eq!(
        ids(&get_ok(&t, "/v1/reports?sort_order=asc").await),
        [ra.clone(), rb.clone()]
    );
    assert_eq!(
        ids(&get_ok(&t, "/v1/reports?sortOrder=desc").await),
        [rb.clone(), ra.clone()]
    );
    // The original's other list parameters: output_format and description filter by the
    // template fields a report carries; active and type are accepted without effect.
    let form = Form::new()
        .file(
            "template",
            "t.tpl",
            b"<html><p>{{ ledger.entries.0.id }}</p></html>".as_slice(),
        )
        .text("outputFormat", "html")
        .text("description", "Quarterly LEDGER export");
    let uploaded = json(t.upload(&token(), form).await).await;
    let c = uploaded["id"].as_str().expect("id").to_owned();
    let rc = t.request_report(&c, json!({})).await;
    for q in [
        "output_format=html",
        "outputFormat=HTML",
        "output_format=html&outputFormat=html",
        "description=ledger%20EXPORT",
        "description=quarterly&output_format=html",
    ] {
        assert_eq!(
            ids(&get_ok(&t, &format!("/v1/reports?{q}")).await),
            std::slice::from_ref(&rc),
            "{q}"
        );
    }
    assert_eq!(
        get_ok(&t, "/v1/reports?output_format=txt").await["total"],
        2,
        "the two txt reports"
    );
    assert_eq!(
        get_ok(&t, "/v1/reports?description=.*").await["total"],
        0,
        "plain text, not a pattern"
    );
    for q in [
        "active=true",
        "type=anything",
        "active=false&type=x&limit=5",
    ] {
        assert_eq!(
            get_ok(&t, &format!("/v1/reports?{q}")).await["total"],
            3,
            "{q}: accepted, no effect"
        );
    }
    let e = expect_error(
        t.get(&token(), "/v1/reports?output_format=docx").await,
        400,
        "TPL-0003",
    )
    .await;
    assert!(e["fields"]["output_format"].is_string(), "{e}");
    expect_error(
        t.get(&token(), "/v1/reports?output_format=html&outputFormat=pdf")
            .await,
        400,
        "TPL-0019",
    )
    .await;
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn deadlines_take_snake_case_names_and_camel_case_aliases() {
    let t = start().await;
    let tok = token();
    let soon = t.create_deadline(&tok, deadline_body(10)).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let later = t.create_deadline(&tok, deadline_body(40)).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let day = |n: i64| {
        (chrono::Utc::now() + chrono::Duration::days(n))
            .format("%Y-%m-%d")
            .to_string()
    };
    for (q, expected) in [
        (format!("start_date={}", day(20)), vec![later.clone()]),
        (format!("startDate={}", day(20)), vec![later.clone()]),
        (format!("end_date={}", day(20)), vec![soon.clone()]),
        (format!("endDate={}", day(20)), vec![soon.clone()]),
        (
            format!("start_date={}&endDate={}", day(5), day(15)),
            vec![soon.clone()],
        ),
        (
            "sort_order=asc".to_owned(),
            vec![soon.clone(), later.clone()],
        ),
        (
            "sortOrder=asc".to_owned(),
            vec![soon.clone(), later.clone()],
        ),
    ] {
        assert_eq!(
            ids(&get_ok(&t, &format!("/v1/deadlines?{q}")).await),
            expected,
            "{q}"
        );
    }
    let e = expect_error(
        t.get(
            &tok,
            &format!("/v1/deadlines?start_date={}&startDate={}", day(1), day(2)),
        )
        .await,
        400,
        "TPL-0019",
    )
    .await;
    assert!(e["fields"]["start_date"].is_string(), "{e}");
    let e = expect_error(
        t.get(&tok, "/v1/deadlines?end_date=tomorrow").await,
        400,
        "TPL-0020",
    )
    .await;
    assert!(e["fields"]["end_date"].is_string(), "{e}");
    expect_error(
        t.get(
            &tok,
            &format!("/v1/deadlines?start_date={}&end_date={}", day(9), day(3)),
        )
        .await,
        400,
        "TPL-0023",
    )
    .await;
}

/// A silently ignored parameter is a wrong answer: any key an operation does not declare is
/// 400 TPL-0019 naming it (after authentication).
#[tokio::test]
async fn unknown_query_parameters_are_refused_by_name() {
    let t = start().await;
    let tok = token();
    let tpl = t.upload_template("txt", "x").await;
    for (path, key) in [
        ("/v1/templates?foo=1".to_owned(), "foo"),
        (
            "/v1/templates?limit=5&templateId=x".to_owned(),
            "templateId",
        ),
        ("/v1/reports?outputformat=html".to_owned(), "outputformat"),
        (
            "/v1/reports?templateDescription=x".to_owned(),
            "templateDescription",
        ),
        ("/v1/deadlines?template_id=x".to_owned(), "template_id"),
        ("/v1/deadlines/notifications?page=2".to_owned(), "page"),
        (format!("/v1/templates/{tpl}?verbose=1"), "verbose"),
        ("/v1/data-sources?x=".to_owned(), "x"),
        (
            "/v1/metrics?error_period_days=3".to_owned(),
            "error_period_days",
        ),
        ("/v1/streaming/events?format=v3".to_owned(), "format"),
    ] {
        let e = expect_error(t.get(&tok, &path).await, 400, "TPL-0019").await;
        assert!(e["fields"][key].is_string(), "{path}: {e}");
        assert!(e["message"].as_str().unwrap().contains(key), "{path}: {e}");
    }
    let e = expect_error(t.get(&tok, "/v1/templates?b=1&a=2").await, 400, "TPL-0019").await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .starts_with("unknown query parameter(s): a, b;"),
        "{e}"
    );
    // Writes too.
    let resp = t
        .post_json(&tok, "/v1/deadlines?dry_run=true", deadline_body(5))
        .await;
    expect_error(resp, 400, "TPL-0019").await;
    assert_eq!(
        get_ok(&t, "/v1/deadlines").await["total"],
        0,
        "nothing created"
    );
    // Authentication comes first.
    expect_error(
        t.client.get("/v1/templates?foo=1").send().await,
        401,
        "TPL-0401",
    )
    .await;
}

fn cursor(json: &str) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(json);
    form_urlencode(&b64)
}

fn form_urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `limit=` (empty) takes the default; `cursor` is validated as the original validates it
/// (base64 of `{"id", "points_next"}`) on every list.
#[tokio::test]
async fn an_empty_limit_takes_the_default_and_cursors_are_validated() {
    let t = start().await;
    for list in ["/v1/templates", "/v1/reports", "/v1/deadlines"] {
        for q in [
            "limit=",
            "limit=&page=",
            "limit=&sort_order=",
            "page=1&limit=",
        ] {
            let page = get_ok(&t, &format!("{list}?{q}")).await;
            assert_eq!(page["limit"], 10, "{list}?{q}");
            assert_eq!(page["page"], 1, "{list}?{q}");
        }
        // Only an empty value counts as absent: a blank one is a value, and not a number.
        let resp = t
            .client
            .get(format!("{list}?limit=%20"))
            .header("authorization", bearer(&token()))
            .send()
            .await;
        expect_error(resp, 400, "TPL-0019").await;
        for good in [
            r#"{"id":"0198a1b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b","points_next":true}"#,
            r#"{"id":"x"}"#,
            r#"{}"#,
        ] {
            get_ok(&t, &format!("{list}?cursor={}", cursor(good))).await;
        }
        for bad in [
            "not-base64!".to_owned(),
            cursor("[1,2]"),
            cursor(r#"{"id": 7}"#),
            cursor(r#"{"points_next": "yes"}"#),
            cursor("not json"),
        ] {
            let e = expect_error(
                t.get(&token(), &format!("{list}?cursor={bad}")).await,
                400,
                "TPL-0019",
            )
            .await;
            assert!(e["fields"]["cursor"].is_string(), "{list} {bad}: {e}");
        }
        expect_error(
            t.get(&token(), &format!("{list}?limit=0")).await,
            400,
            "TPL-0024",
        )
        .await;
    }
    let n = get_ok(&t, "/v1/deadlines/notifications?limit=").await;
    assert!(n["items"].is_array(), "{n}");
}

/// The spec (what SDKs are generated from) documents both spellings of every list parameter.
#[tokio::test]
async fn the_spec_documents_both_spellings_of_every_list_parameter() {
    let t = start().await;
    let spec: Value = serde_json::from_str(
        &t.client
            .get("/openapi.json")
            .send()
            .await
            .0
            .into_body()
            .into_string()
            .await
            .unwrap(),
    )
    .unwrap();
    let names = |path: &str| -> Vec<String> {
        spec["paths"][path]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["in"] == "query")
            .map(|p| p["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let common = ["page", "limit", "sort_order", "sortOrder", "cursor"];
    for (path, own) in [
        (
            "/v1/templates",
            &[
                "output_format",
                "outputFormat",
                "description",
                "created_at",
                "createdAt",
            ][..],
        ),
        (
            "/v1/reports",
            &[
                "status",
                "template_id",
                "templateId",
                "output_format",
                "outputFormat",
                "description",
                "active",
                "type",
                "created_at",
                "createdAt",
                "start_date",
                "startDate",
                "end_date",
                "endDate",
            ][..],
        ),
        (
            "/v1/deadlines",
            &[
                "status",
                "active",
                "type",
                "start_date",
                "startDate",
                "end_date",
                "endDate",
            ][..],
        ),
    ] {
        let got = names(path);
        for n in common.iter().chain(own) {
            assert!(got.iter().any(|g| g == n), "{path} lacks {n}: {got:?}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// 5-6. The event contract: schemas, manifest and AsyncAPI agree
// ---------------------------------------------------------------------------------------

fn without_schema_keyword(mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.remove("$schema");
    }
    v
}

/// `report.errored` keeps every field of `report.finished` but the artifact ones, adds
/// `error_code` and `error_summary`; the payload schema, the manifest (served) and the
/// committed AsyncAPI document say the same for every event, and every policy requests
/// dead-letter handling of routable failures.
#[tokio::test]
async fn schemas_manifest_and_asyncapi_agree_on_every_payload() {
    let t = start().await;
    let manifest = get_ok(&t, "/v1/streaming/events").await;
    let asyncapi: Value =
        serde_yaml::from_str(include_str!("../../openapi/asyncapi.yaml")).expect("YAML");
    for k in EventKey::ALL {
        let schema = k.payload_schema();
        let entry = manifest["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["key"] == k.key())
            .unwrap();
        assert_eq!(entry["payloadSchema"], schema, "{}", k.key());
        assert_eq!(entry["defaultPolicy"]["dlq"], "on_routable_failure");
        let message = asyncapi["components"]["messages"]
            .as_object()
            .unwrap()
            .values()
            .find(|m| m["name"] == k.key())
            .unwrap_or_else(|| panic!("{} not in the AsyncAPI document", k.key()));
        assert_eq!(
            message["payload"]["schema"],
            without_schema_keyword(schema.clone()),
            "{}",
            k.key()
        );
    }
    let required = |k: EventKey| -> std::collections::BTreeSet<String> {
        k.payload_schema()["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    };
    let mut expected = required(EventKey::ReportFinished);
    expected.remove("artifact_object_key");
    expected.remove("artifact_content_type");
    expected.extend(["error_code".to_owned(), "error_summary".to_owned()]);
    assert_eq!(required(EventKey::ReportErrored), expected);
    assert!(expected.contains("section_count"));
}

// ---------------------------------------------------------------------------------------
// 3. Health and version
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn readyz_answers_the_original_body() {
    let t = start_with(Options {
        tweak: Some(|r| r.deployment_mode = "byoc".into()),
        ..Default::default()
    })
    .await;
    let resp = t.client.get("/readyz").send().await;
    resp.assert_status_is_ok();
    let r = json(resp).await;
    assert_eq!(r["status"], "healthy", "{r}");
    assert!(r.get("reason").is_none(), "{r}");
    assert_eq!(r["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(r["deployment_mode"], "byoc");
    let store = &r["checks"]["store"];
    assert_eq!(store["status"], "up", "{r}");
    assert!(store["latency_ms"].is_u64(), "{r}");
    assert!(store.get("latencyMs").is_none(), "snake_case keys: {r}");
    assert_eq!(r["checks"]["dataSource:bank"]["status"], "up");
    // Dependencies this configuration does not use.
    for dep in ["events", "rabbitmq"] {
        assert_eq!(r["checks"][dep], json!({"status": "n/a"}), "{r}");
    }
    let v = json(t.client.get("/version").send().await).await;
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    assert!(
        chrono::DateTime::parse_from_rfc3339(v["buildTime"].as_str().unwrap()).is_ok(),
        "{v}"
    );
    assert!(v["dirty"].is_boolean(), "{v}");
    let commit = v["commit"].as_str().unwrap();
    assert!(
        commit == "unknown"
            || (commit.len() == 40 && commit.bytes().all(|b| b.is_ascii_hexdigit())),
        "{v}"
    );

    // With publication on, the event broker's check carries the breaker state.
    let s = start_with(Options {
        streaming: true,
        ..Default::default()
    })
    .await;
    let r = json(s.client.get("/readyz").send().await).await;
    let events = &r["checks"]["events"];
    assert_eq!(events["status"], "up", "{r}");
    assert_eq!(events["breaker_state"], "closed", "{r}");
    assert!(events["latency_ms"].is_u64(), "{r}");
    assert_eq!(r["deployment_mode"], "local");
}

/// The released binary on SIGTERM: `/readyz` turns 503 `draining` (every check `skipped`)
/// while requests are still served for SHUTDOWN_DRAIN_SECONDS, then the process exits 0.
#[test]
fn sigterm_turns_readiness_to_draining_then_the_process_exits() {
    let addr = free_addr();
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_reporter"));
    // Only what this test sets: in memory, nothing of the caller's services.
    for (k, _) in std::env::vars() {
        if [
            "DATASOURCE_",
            "AUTH_",
            "STREAMING_",
            "MONGO",
            "RABBITMQ",
            "SHUTDOWN_",
        ]
        .iter()
        .any(|p| k.starts_with(p))
        {
            command.env_remove(k);
        }
    }
    let mut child = command
        .arg("serve")
        .env("TMPDIR", crate::common::children_tmpdir())
        .env("SERVER_ADDRESS", &addr)
        .env("AUTH_JWT_SECRET", SECRET)
        .env("SHUTDOWN_DRAIN_SECONDS", "3")
        .env("LOG_LEVEL", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn reporter");
    struct Kill(u32);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &self.0.to_string()])
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
    let _guard = Kill(child.id());
    wait_listening(&addr, &mut child, Duration::from_secs(30));
    let tok = token();
    let (status, body) = request(&addr, "GET", "/readyz", &tok, "application/json", b"");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let signalled = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill -TERM");
    assert!(signalled.success());
    let started = Instant::now();
    let mut draining = None;
    while started.elapsed() < Duration::from_secs(3) {
        let (status, body) = request(&addr, "GET", "/readyz", &tok, "application/json", b"");
        if status == 503 {
            draining = Some(serde_json::from_slice::<Value>(&body).unwrap());
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let r = draining.expect("readiness turned 503 after SIGTERM");
    assert_eq!(r["status"], "draining", "{r}");
    assert!(r["reason"].as_str().unwrap().contains("draining"), "{r}");
    for (name, check) in r["checks"].as_object().unwrap() {
        assert_eq!(check["status"], "skipped", "{name}: {r}");
    }
    // Still serving while draining.
    let (status, _) = request(&addr, "GET", "/health", &tok, "application/json", b"");
    assert_eq!(status, 200);
    let (status, _) = request(&addr, "GET", "/v1/templates", &tok, "application/json", b"");
    assert_eq!(status, 200);
    let deadline = Instant::now() + Duration::from_secs(20);
    let code = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the process did not exit");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(code.success(), "exit status {code}");
    assert!(
        started.elapsed() >= Duration::from_millis(2500),
        "the drain period was kept ({:?})",
        started.elapsed()
    );
}

// ---------------------------------------------------------------------------------------
// 7. STREAMING_BROKERS in the original's form
// ---------------------------------------------------------------------------------------

/// `reporter config check` says which setting names the event broker.
#[test]
fn config_check_says_which_broker_setting_is_used() {
    let run = |brokers: &str, rabbit: Option<&str>| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_reporter"));
        for (k, _) in std::env::vars() {
            if k.starts_with("STREAMING_") || k.starts_with("RABBITMQ") || k.starts_with("MONGO") {
                c.env_remove(k);
            }
        }
        c.args(["config", "check"])
            .env("STREAMING_ENABLED", "true")
            .env("RABBITMQ_REPORT_EVENTS_EXCHANGE", "reporter.events")
            .env("STREAMING_CLOUDEVENTS_SOURCE", "reporter")
            .env("STREAMING_BROKERS", brokers);
        if let Some(r) = rabbit {
            c.env("RABBITMQ_URI", r);
        }
        let out = c.output().expect("run");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = run("rabbitmq:5672", Some("amqp://guest:secret@mq:5672/%2f"));
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("RabbitMQ amqp://guest:***@mq:5672/%2f from RABBITMQ_URI")
            && out.contains("'rabbitmq:5672' names no AMQP URI"),
        "{out}"
    );
    let (code, out, _) = run("amqp://mq:5672", Some("amqp://other:5672"));
    assert_eq!(code, Some(0));
    assert!(
        out.contains("amqp://mq:5672 from STREAMING_BROKERS"),
        "{out}"
    );
    let (code, out, _) = run("memory://", None);
    assert_eq!(code, Some(0));
    assert!(out.contains("in-memory broker"), "{out}");
    let (code, _, err) = run("rabbitmq:5672", None);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("RABBITMQ_URI") && err.contains("names no AMQP URI"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------
// 7-9. A real broker: the original's settings, an operator's exchange, bounded AE queue
// ---------------------------------------------------------------------------------------

/// Reads the tail until `n` events arrived or `within` elapsed.
async fn collect(tail: &mut Tail, n: usize, within: Duration) -> Vec<TailedEvent> {
    let end = tokio::time::Instant::now() + within;
    let mut got = Vec::new();
    while got.len() < n {
        match tokio::time::timeout_at(end, tail.next()).await {
            Ok(Some(Ok(e))) => got.push(e),
            Ok(Some(Err(e))) => panic!("tail failed: {e}"),
            Ok(None) => panic!("tail ended"),
            Err(_) => break,
        }
    }
    got
}

/// Unique names for a test's events exchange, its alternate exchange and the job queue
/// topology (a RabbitMQ job queue comes with RABBITMQ_URI), all removed on drop.
struct Names {
    exchange: String,
    alternate: String,
    jobs: String,
    _cleanup: RabbitTopology,
}

fn names(prefix: &str) -> Names {
    let exchange = unique_name(prefix);
    let alternate = format!("{exchange}.unroutable");
    let jobs = format!("{exchange}.jobs");
    let _cleanup = RabbitTopology {
        queues: vec![
            alternate.clone(),
            format!("{jobs}.queue"),
            format!("{jobs}.queue.retry"),
            format!("{jobs}.dlq"),
        ],
        exchanges: vec![
            exchange.clone(),
            alternate.clone(),
            format!("{jobs}.exchange"),
            format!("{jobs}.dlx"),
        ],
    };
    Names {
        exchange,
        alternate,
        jobs,
        _cleanup,
    }
}

/// The original's deployment settings: STREAMING_BROKERS=rabbitmq:5672 and the AMQP server in
/// RABBITMQ_URI. Events reach a consumer bound to the exchange.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_original_s_broker_list_publishes_to_rabbitmq_uri() {
    let Some(uri) = service_url("RABBITMQ_URI", "RabbitMQ") else {
        return;
    };
    let n = names("reporter_compat_brokers");
    let mut raw = rabbit_raw(&uri, &n.exchange, &n.alternate);
    raw.streaming_brokers = Some("rabbitmq:5672".into());
    raw.rabbitmq_uri = Some(uri.as_str().into());
    raw.rabbitmq_exchange = format!("{}.exchange", n.jobs);
    raw.rabbitmq_queue = format!("{}.queue", n.jobs);
    raw.rabbitmq_key = format!("{}.key", n.jobs);
    raw.rabbitmq_dlq = format!("{}.dlq", n.jobs);
    raw.rabbitmq_dlx = format!("{}.dlx", n.jobs);
    let config = raw.validate(&[]).expect("valid");
    assert!(
        config.streaming.describe().contains("from RABBITMQ_URI"),
        "{}",
        config.streaming.describe()
    );
    let t = start_raw(raw, Vec::new()).await;
    let mut tail = tail(&uri, &n.exchange, "#").await.expect("tail");
    let tpl = t.upload_template("txt", "broker list").await;
    let got = collect(&mut tail, 1, Duration::from_secs(20)).await;
    assert_eq!(got.len(), 1, "the event reached the consumer");
    assert_eq!(got[0].routing_key, "template.created");
    assert_eq!(got[0].headers["ce-subject"], tpl);
    let r = json(t.client.get("/readyz").send().await).await;
    assert_eq!(r["checks"]["events"]["status"], "up", "{r}");
    assert_eq!(r["checks"]["rabbitmq"]["status"], "up", "{r}");
}

fn ctl_eval(expr: &str) {
    rabbitmqctl(&["eval", expr]).expect("rabbitmqctl eval");
}

/// The `arguments` column of `rabbitmqctl list_queues` for `queue`.
fn queue_arguments(queue: &str) -> String {
    rabbitmqctl(&[
        "list_queues",
        "-q",
        "--no-table-headers",
        "name",
        "arguments",
    ])
    .expect("list_queues")
    .lines()
    .find(|l| l.split_whitespace().next() == Some(queue))
    .unwrap_or_else(|| panic!("queue {queue} is not on the broker"))
    .to_owned()
}

/// An operator declared the events exchange without `alternate-exchange`, and an older
/// version left the unroutable queue without bounds: Reporter starts, leaves both as they
/// are, and its events reach a bound consumer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exchange_an_operator_declared_differently_does_not_stop_start_up() {
    let Some(uri) = service_url("RABBITMQ_URI", "RabbitMQ") else {
        return;
    };
    let n = names("reporter_compat_operator");
    ctl_eval(&format!(
        r#"rabbit_exchange:declare(rabbit_misc:r(<<"/">>, exchange, <<"{}">>), topic, true, false, false, [], <<"reporter-tests">>)."#,
        n.exchange
    ));
    ctl_eval(&format!(
        r#"rabbit_amqqueue:declare(rabbit_misc:r(<<"/">>, queue, <<"{}">>), true, false, [], none, <<"reporter-tests">>)."#,
        n.alternate
    ));
    assert!(!queue_arguments(&n.alternate).contains("x-max-length"));
    let t = start_raw(rabbit_raw(&uri, &n.exchange, &n.alternate), Vec::new()).await;
    let mut tail = tail(&uri, &n.exchange, "#").await.expect("tail");
    let id = t.create_deadline(&token(), deadline_body(4)).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let got = collect(&mut tail, 1, Duration::from_secs(20)).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].routing_key, "deadline.created");
    assert_eq!(got[0].headers["ce-subject"], id);
    assert!(
        !queue_arguments(&n.alternate).contains("x-max-length"),
        "the operator's queue is left as it is"
    );
}

/// An operator declared the events exchange as `direct` (Reporter declares `topic`): Reporter
/// starts, the difference is reported (and logged) and the exchange used as it is: an event
/// reaches a queue bound with its routing key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exchange_of_another_type_does_not_stop_start_up() {
    use lapin::options::ExchangeDeclareOptions;
    let Some(uri) = service_url("RABBITMQ_URI", "RabbitMQ") else {
        return;
    };
    let n = names("reporter_compat_direct");
    let conn = lapin::Connection::connect(&uri, lapin::ConnectionProperties::default())
        .await
        .expect("connect");
    let ch = conn.create_channel().await.expect("channel");
    ch.exchange_declare(
        n.exchange.as_str().into(),
        lapin::ExchangeKind::Direct,
        ExchangeDeclareOptions {
            durable: true,
            ..Default::default()
        },
        lapin::types::FieldTable::default(),
    )
    .await
    .expect("the operator's direct exchange");
    let t = start_raw(rabbit_raw(&uri, &n.exchange, &n.alternate), Vec::new()).await;
    // What the start-up check found (the same call the publisher's link makes).
    let report = reporter_adapter_rabbitmq::ensure_events_topology(
        &conn,
        &reporter_adapter_rabbitmq::EventsTopology {
            exchange: n.exchange.clone(),
            alternate: None,
        },
    )
    .await
    .expect("a difference is not an error");
    assert!(
        report
            .differences
            .iter()
            .any(|d| d.contains(&n.exchange) && d.contains("type")),
        "the type difference is reported: {report:?}"
    );
    let mut tail = tail(&uri, &n.exchange, "deadline.created")
        .await
        .expect("tail");
    let id = t.create_deadline(&token(), deadline_body(4)).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let got = collect(&mut tail, 1, Duration::from_secs(20)).await;
    assert_eq!(got.len(), 1, "published to the direct exchange as it is");
    assert_eq!(got[0].routing_key, "deadline.created");
    assert_eq!(got[0].headers["ce-subject"], id);
    let r = json(t.client.get("/readyz").send().await).await;
    assert_eq!(r["checks"]["events"]["status"], "up", "{r}");
    let _ = conn.close(200, "done".into()).await;
}

/// Declared by Reporter, the alternate exchange's queue carries the configured bounds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_unroutable_queue_is_declared_with_the_configured_bounds() {
    let Some(uri) = service_url("RABBITMQ_URI", "RabbitMQ") else {
        return;
    };
    let n = names("reporter_compat_bounds");
    let mut raw = rabbit_raw(&uri, &n.exchange, &n.alternate);
    raw.streaming_unroutable_ttl_seconds = "60".into();
    raw.streaming_unroutable_max_length = "2".into();
    let t = start_raw(raw, Vec::new()).await;
    let args = queue_arguments(&n.alternate);
    assert!(
        args.contains("x-message-ttl") && args.contains("60000"),
        "{args}"
    );
    assert!(
        args.contains("x-max-length") && args.contains(",2}"),
        "{args}"
    );
    // Nothing is bound: three unroutable events, the queue keeps the newest two.
    let tok = token();
    for i in 0..3 {
        t.create_template(&tok, &format!("unrouted {i}")).await;
    }
    let mut depth = None;
    for _ in 0..40 {
        depth = rabbit_queue_depth(&n.alternate);
        if depth == Some(2)
            && t.app
                .ports()
                .outbox
                .stats(chrono::Utc::now())
                .await
                .unwrap()
                .pending
                == 0
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(depth, Some(2), "bounded by STREAMING_UNROUTABLE_MAX_LENGTH");
}

/// A real failure names its cause: a missing exchange the user may not declare.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topology_failure_at_start_up_names_the_cause() {
    let Some(uri) = service_url("RABBITMQ_URI", "RabbitMQ") else {
        return;
    };
    let user = unique_name("reporter_ro");
    if let Err(e) = rabbitmqctl(&["add_user", &user, "pw-for-tests"]) {
        // CI (REPORTER_REQUIRE_SERVICES=1) runs rabbitmqctl on its own broker: a failure there
        // is a failure, not a reason to skip.
        assert!(
            !reporter_contract::services::required(),
            "rabbitmqctl add_user failed (REPORTER_REQUIRE_SERVICES=1): {e:?}"
        );
        reporter_contract::services::skipped(&format!("rabbitmqctl add_user ({e:?})"));
        return;
    }
    struct DropUser(String);
    impl Drop for DropUser {
        fn drop(&mut self) {
            let _ = rabbitmqctl(&["delete_user", &self.0]);
        }
    }
    let _user = DropUser(user.clone());
    rabbitmqctl(&["set_permissions", "-p", "/", &user, "^$", ".*", ".*"]).expect("permissions");
    let (scheme, rest) = uri.split_once("://").unwrap();
    let host = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
    let restricted = format!("{scheme}://{user}:pw-for-tests@{host}");
    let n = names("reporter_compat_denied");
    let config = rabbit_raw(&restricted, &n.exchange, &n.alternate)
        .validate(&[])
        .expect("valid");
    let err = match reporter::wiring::build(&config, reporter::wiring::Role::Serve).await {
        Ok(_) => panic!("start-up must fail"),
        Err(e) => format!("{e:#}"),
    };
    assert!(
        err.contains(&format!("exchange '{}'", n.alternate))
            && err.contains("ACCESS_REFUSED")
            && err.contains("STREAMING_BROKERS")
            && !err.contains("no broker answered")
            && !err.contains("pw-for-tests"),
        "{err}"
    );
}
