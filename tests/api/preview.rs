//! `POST /v1/templates/preview`: parse errors, render errors, the row limit, the output cut,
//! the time bound, nothing written, scopes, tenants, stored templates and pdf.
use crate::common;

use common::*;
use poem::http::StatusCode;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const PATH: &str = "/v1/templates/preview";

/// The example CSV template: a header and one line per transaction (32 in the example data).
fn csv_body(limit: Option<u32>) -> Value {
    let mut body = json!({"template": CSV_TPL, "outputFormat": "csv", "filters": {}});
    if let Some(l) = limit {
        body["limit"] = json!(l);
    }
    body
}

async fn preview(t: &TestApp, body: Value) -> Value {
    let resp = t.post_json(&token(), PATH, body).await;
    let status = resp.0.status();
    let body = json(resp).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

/// The storage folder of [`fs_storage`] instances (one per test process).
fn storage_dir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("reporter-preview-e2e-{}", std::process::id()))
}

fn fs_storage(r: &mut reporter::config::RawConfig) {
    r.object_storage_backend = "fs".into();
    r.object_storage_path = storage_dir().to_string_lossy().into_owned();
}

/// Every file under `dir`, recursively.
fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn a_sent_template_renders_its_first_rows_and_nothing_is_written() {
    let t = start_with(Options {
        streaming: true,
        tweak: Some(fs_storage),
        ..Default::default()
    })
    .await;
    let stored_before = files_under(&storage_dir());
    let body = preview(&t, csv_body(Some(3))).await;
    assert_eq!(body["status"], "Finished", "{body}");
    assert_eq!(body["contentType"], "text/csv; charset=utf-8", "{body}");
    assert_eq!(body["truncated"], true, "{body}");
    assert_eq!(body["sections"]["bank"]["ok"], true, "{body}");
    assert_eq!(
        body["sections"]["bank"]["rows"]["transactions"], 3,
        "{body}"
    );
    assert!(
        body["sections"]["bank"].get("errorCode").is_none(),
        "{body}"
    );
    let fields = body["mappedFields"]["bank"]["transactions"]
        .as_array()
        .unwrap();
    assert!(fields.iter().any(|f| f == "amount"), "{body}");
    let output = body["output"].as_str().unwrap();
    let lines: Vec<&str> = output.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 4, "a header and three rows: {output}");
    assert!(lines[0].starts_with("transaction_id,"), "{output}");
    assert!(lines[1].starts_with("TX-2024-0001,"), "{output}");
    assert!(body.get("outputBase64").is_none() && body.get("error").is_none());

    // The default limit is 50: every one of the 32 rows, nothing cut.
    let body = preview(&t, csv_body(None)).await;
    assert_eq!(body["truncated"], false, "{body}");
    assert_eq!(
        body["sections"]["bank"]["rows"]["transactions"], 32,
        "{body}"
    );
    // A filter applies as a report's does.
    let mut filtered = csv_body(Some(1000));
    filtered["filters"] = json!({"bank": {"transactions": {"direction": {"eq": ["credit"]}}}});
    let body = preview(&t, filtered).await;
    let output = body["output"].as_str().unwrap();
    assert!(!output.contains(",debit,"), "{output}");
    assert!(output.contains(",credit,"), "{output}");

    // Nothing written: no template, no report, no event, no stored object.
    let templates = json(t.get(&token(), "/v1/templates").await).await;
    assert_eq!(
        templates["items"].as_array().map(Vec::len),
        Some(0),
        "{templates}"
    );
    let reports = json(t.get(&token(), "/v1/reports").await).await;
    assert_eq!(
        reports["items"].as_array().map(Vec::len),
        Some(0),
        "{reports}"
    );
    let outbox = t
        .app
        .ports()
        .outbox
        .stats(chrono::Utc::now())
        .await
        .unwrap();
    assert_eq!((outbox.pending, outbox.parked), (0, 0));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(t.broker.as_ref().unwrap().deliveries().len(), 0);
    assert_eq!(files_under(&storage_dir()), stored_before);
    let _ = std::fs::remove_dir_all(storage_dir());
}

#[tokio::test]
async fn a_template_that_does_not_parse_is_400_tpl_0008_with_its_line() {
    let t = start().await;
    let body = json!({
        "template": "total\n\n{{ bank.accounts.0.branch ",
        "outputFormat": "txt",
    });
    let err = expect_error(t.post_json(&token(), PATH, body).await, 400, "TPL-0008").await;
    let detail = err["fields"]["template"].as_str().unwrap_or_default();
    assert!(detail.contains("line 3"), "{err}");
    // Every other upload check applies too: content for the format, script.
    let body = json!({"template": "no markup", "outputFormat": "html"});
    expect_error(t.post_json(&token(), PATH, body).await, 400, "TPL-0007").await;
    let body = json!({"template": "<html><script>x</script></html>", "outputFormat": "html"});
    expect_error(t.post_json(&token(), PATH, body).await, 400, "TPL-0032").await;
    let body = json!({"template": "x", "outputFormat": "docx"});
    expect_error(t.post_json(&token(), PATH, body).await, 400, "TPL-0003").await;
}

#[tokio::test]
async fn a_render_error_is_a_200_error_with_its_cause_and_line() {
    let t = start().await;
    let body = preview(
        &t,
        json!({
            "template": "a\n\n\n{% calc bank.accounts.0.branch / 0 %}",
            "outputFormat": "txt",
        }),
    )
    .await;
    assert_eq!(body["status"], "Error", "{body}");
    assert_eq!(body["errorCode"], "report_generation_failed", "{body}");
    assert_eq!(body["error"]["cause"], "division_by_zero", "{body}");
    assert_eq!(body["error"]["line"], 4, "{body}");
    assert!(body["error"]["message"].is_string(), "{body}");
    assert!(body.get("output").is_none(), "{body}");
    // Output a browser would run as script is refused as a report's is.
    let body = preview(
        &t,
        json!({
            "template": "<r>{{ \"<scr\"|safe }}{{ \"ipt>x</scr\"|safe }}{{ \"ipt>\"|safe }}</r>",
            "outputFormat": "xml",
        }),
    )
    .await;
    assert_eq!(body["status"], "Error", "{body}");
    assert_eq!(body["error"]["cause"], "script_detected", "{body}");
    // html is sanitized as a report's is.
    let body = preview(
        &t,
        json!({
            "template": "<html><body>{{ \"<img src=x o\"|safe }}{{ \"nerror=\\\"alert(1)\\\">\"|safe }}ok</body></html>",
            "outputFormat": "html",
        }),
    )
    .await;
    assert_eq!(body["status"], "Finished", "{body}");
    let html = body["output"].as_str().unwrap();
    assert!(html.contains("ok") && !html.contains("onerror"), "{html}");
}

#[tokio::test]
async fn limits_outside_one_to_a_thousand_and_malformed_requests_are_refused() {
    let t = start().await;
    for limit in [0, 1001, -5] {
        let mut body = csv_body(None);
        body["limit"] = json!(limit);
        let err = expect_error(t.post_json(&token(), PATH, body).await, 400, "TPL-0064").await;
        assert!(err["fields"]["limit"].is_string(), "{err}");
    }
    let body = preview(&t, csv_body(Some(1))).await;
    assert_eq!(
        body["sections"]["bank"]["rows"]["transactions"], 1,
        "{body}"
    );
    let body = preview(&t, csv_body(Some(1000))).await;
    assert_eq!(body["truncated"], false, "{body}");
    // Exactly one of template and templateId; outputFormat only with template.
    expect_error(
        t.post_json(&token(), PATH, json!({"limit": 5})).await,
        400,
        "TPL-0001",
    )
    .await;
    let both = json!({"template": "x", "outputFormat": "txt", "templateId": "0190c3a0-0000-7000-8000-000000000000"});
    expect_error(t.post_json(&token(), PATH, both).await, 400, "TPL-0064").await;
    let no_format = json!({"template": "x"});
    expect_error(
        t.post_json(&token(), PATH, no_format).await,
        400,
        "TPL-0001",
    )
    .await;
    let bad_id = json!({"templateId": "nope"});
    expect_error(t.post_json(&token(), PATH, bad_id).await, 400, "TPL-0012").await;
    let unknown = json!({"template": "x", "outputFormat": "txt", "colour": "red"});
    let resp = t.post_json(&token(), PATH, unknown).await;
    assert_eq!(resp.0.status(), StatusCode::BAD_REQUEST);
    // Filters are checked as a report request's are.
    let mut body = csv_body(None);
    body["filters"] = json!({"nowhere": {"t": {"f": {"eq": [1]}}}});
    expect_error(t.post_json(&token(), PATH, body).await, 400, "TPL-0031").await;
}

#[tokio::test]
async fn the_output_is_cut_at_its_bound() {
    let t = start_with(Options {
        tweak: Some(|r| r.preview_max_output_bytes = "1024".into()),
        ..Default::default()
    })
    .await;
    let body = preview(&t, csv_body(None)).await;
    let output = body["output"].as_str().unwrap();
    assert_eq!(output.len(), 1024, "{body}");
    assert_eq!(body["truncated"], true, "{body}");
    assert_eq!(
        body["sections"]["bank"]["rows"]["transactions"], 32,
        "{body}"
    );
    let body = preview(&t, csv_body(Some(2))).await;
    assert!(body["output"].as_str().unwrap().len() < 1024, "{body}");
}

#[tokio::test]
async fn an_endless_render_ends_at_the_time_bound_and_the_service_serves_on() {
    let t = start_with(Options {
        tweak: Some(|r| {
            r.preview_timeout_seconds = "2".into();
            r.engine_render_fuel = "100000000000".into();
        }),
        ..Default::default()
    })
    .await;
    // Seven accounts, twelve nested loops: 7^12 turns that write nothing.
    let source = format!(
        "{}{{% if a.branch == \"nowhere\" %}}{{{{ a.branch }}}}{{% endif %}}{}",
        "{% for a in bank.accounts %}".repeat(12),
        "{% endfor %}".repeat(12)
    );
    let started = Instant::now();
    let body = preview(&t, json!({"template": source, "outputFormat": "txt"})).await;
    assert_eq!(body["status"], "Error", "{body}");
    assert_eq!(body["errorCode"], "report_generation_timeout", "{body}");
    assert_eq!(body["error"]["cause"], "timeout", "{body}");
    // Generous: the bound is 2 s; a loaded machine may take longer to answer.
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    let body = preview(&t, csv_body(Some(1))).await;
    assert_eq!(body["status"], "Finished", "{body}");
}

#[tokio::test]
async fn the_preview_needs_templates_write() {
    let t = start().await;
    for scopes in [
        &["templates:read"][..],
        &["reports:write", "reports:read"][..],
    ] {
        let tok = token_for(Some("default"), scopes);
        expect_error(
            t.post_json(&tok, PATH, csv_body(None)).await,
            403,
            "TPL-0403",
        )
        .await;
    }
    let tok = token_for(Some("default"), &["templates:write"]);
    let resp = t.post_json(&tok, PATH, csv_body(None)).await;
    assert_eq!(resp.0.status(), StatusCode::OK);
    let resp = t.client.post(PATH).body_json(&csv_body(None)).send().await;
    assert_eq!(resp.0.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_stored_template_previews_by_id_in_its_tenant_only() {
    let t = start_with(Options {
        multi_tenant: true,
        ..Default::default()
    })
    .await;
    let acme = token_for(Some("acme"), &all_scopes());
    let globex = token_for(Some("globex"), &all_scopes());
    let form = Form::new()
        .file("template", "t.tpl", CSV_TPL.as_bytes())
        .text("outputFormat", "csv");
    let resp = t.upload(&acme, form).await;
    resp.assert_status(StatusCode::CREATED);
    let id = json(resp).await["id"].as_str().unwrap().to_owned();
    let by_id = json!({"templateId": id, "limit": 2});
    let resp = t.post_json(&acme, PATH, by_id.clone()).await;
    assert_eq!(resp.0.status(), StatusCode::OK);
    let body = json(resp).await;
    assert_eq!(body["status"], "Finished", "{body}");
    assert_eq!(body["truncated"], true, "{body}");
    assert_eq!(
        body["sections"]["bank"]["rows"]["transactions"], 2,
        "{body}"
    );
    assert!(
        body["output"]
            .as_str()
            .unwrap()
            .starts_with("transaction_id,")
    );
    // Another tenant's template is not found.
    expect_error(t.post_json(&globex, PATH, by_id).await, 404, "TPL-0011").await;
    // A stored template renders in its own format.
    let with_format = json!({"templateId": id, "outputFormat": "txt"});
    expect_error(t.post_json(&acme, PATH, with_format).await, 400, "TPL-0064").await;
}

#[tokio::test]
async fn a_pdf_preview_answers_its_bytes_in_base64() {
    use base64::Engine as _;
    let t = start().await;
    let body = preview(
        &t,
        json!({
            "template": "<html><body><h1>Accounts</h1>{% for a in bank.accounts %}<p>{{ a.account_id }}</p>{% endfor %}</body></html>",
            "outputFormat": "pdf",
            "limit": 2,
        }),
    )
    .await;
    assert_eq!(body["status"], "Finished", "{body}");
    assert_eq!(body["contentType"], "application/pdf", "{body}");
    assert!(body.get("output").is_none(), "{body}");
    let pdf = base64::engine::general_purpose::STANDARD
        .decode(body["outputBase64"].as_str().unwrap())
        .unwrap();
    assert!(pdf.starts_with(b"%PDF"), "not a PDF");
    assert_eq!(body["sections"]["bank"]["rows"]["accounts"], 2, "{body}");
}

#[tokio::test]
async fn a_postgresql_table_is_read_up_to_the_limit_only() {
    let Some(pg) = ScratchPostgres::create("reporter_preview").await else {
        return;
    };
    pg.client
        .batch_execute(
            "CREATE TABLE entries (id int PRIMARY KEY, amount numeric(12,2));
             INSERT INTO entries SELECT g, g FROM generate_series(1, 5000) g;",
        )
        .await
        .expect("scratch data");
    let t = start_with(Options {
        env: pg.source_env("PG"),
        ..Default::default()
    })
    .await;
    let source = "id;amount\n{% for e in pg.entries %}{{ e.id }};{{ e.amount }}\n{% endfor %}";
    for _ in 0..3 {
        // The query is stopped at the limit; the source serves the next one as well.
        let body = preview(
            &t,
            json!({"template": source, "outputFormat": "csv", "limit": 10,
                   "filters": {"pg": {"entries": {"id": {"gt": [100]}}}}}),
        )
        .await;
        assert_eq!(body["status"], "Finished", "{body}");
        assert_eq!(body["truncated"], true, "{body}");
        assert_eq!(body["sections"]["pg"]["rows"]["entries"], 10, "{body}");
        let output = body["output"].as_str().unwrap();
        assert_eq!(output.lines().count(), 11, "{output}");
        assert!(
            output
                .lines()
                .skip(1)
                .all(|l| l.split(';').next().unwrap().parse::<u32>().unwrap() > 100),
            "{output}"
        );
    }
    drop(t);
    pg.remove().await;
}
