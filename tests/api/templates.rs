//! Templates and data sources over HTTP: success paths and every documented error code.
use crate::common;

use common::*;
use poem::http::StatusCode;
use serde_json::json;

fn html(body: &str) -> Vec<u8> {
    format!("<html><body>{body}</body></html>").into_bytes()
}

async fn upload_err(t: &TestApp, form: Form, status: u16, code: &str) -> serde_json::Value {
    let tok = token();
    expect_error(t.upload(&tok, form).await, status, code).await
}

#[tokio::test]
async fn upload_stores_the_template_and_its_mapped_fields() {
    let t = start().await;
    let form = Form::new()
        .file("template", "statement.tpl", STATEMENT_TPL.as_bytes())
        .text("outputFormat", "HTML")
        .text("description", "Statement");
    let resp = t.upload(&token(), form).await;
    resp.assert_status(StatusCode::CREATED);
    let body = json(resp).await;
    let id = body["id"].as_str().unwrap();
    assert_eq!(body["outputFormat"], "html");
    assert_eq!(body["description"], "Statement");
    assert_eq!(body["fileName"], format!("{id}.tpl"));
    assert_eq!(body["sizeBytes"], STATEMENT_TPL.len());
    let tx = body["mappedFields"]["bank"]["transactions"]
        .as_array()
        .unwrap();
    for f in ["account_id", "amount", "direction"] {
        assert!(tx.iter().any(|v| v == f), "{f} missing from {tx:?}");
    }
    assert!(body.get("warnings").is_none());
    // The file is stored at templates/<id>.tpl, exactly.
    let stored = t
        .app
        .ports()
        .storage
        .get(&format!("templates/{id}.tpl"))
        .await
        .unwrap()
        .expect("stored file");
    assert_eq!(stored.bytes.as_ref(), STATEMENT_TPL.as_bytes());
    let got = json(t.get(&token(), &format!("/v1/templates/{id}")).await).await;
    assert_eq!(got["id"], id);
    assert_eq!(got["mappedFields"], body["mappedFields"]);
}

#[tokio::test]
async fn every_format_is_accepted_case_insensitively() {
    let t = start().await;
    let cases: [(&str, Vec<u8>); 5] = [
        ("Html", html("{{ bank.accounts.0.holder_name }}")),
        ("PDF", html("x")),
        ("csv", b"a,b\n{{ bank.accounts.0.account_id }},1".to_vec()),
        (
            "XmL",
            b"<?xml version=\"1.0\"?><r>{{ bank.accounts.0.branch }}</r>".to_vec(),
        ),
        (
            "TXT",
            b"total: {{ bank.transactions|sum:\"amount\" }}".to_vec(),
        ),
    ];
    for (format, content) in cases {
        let resp = t
            .upload(
                &token(),
                Form::new()
                    .file("template", "t.tpl", &content)
                    .text("outputFormat", format),
            )
            .await;
        let status = resp.0.status();
        let body = json(resp).await;
        assert_eq!(status, StatusCode::CREATED, "{format}: {body}");
        assert_eq!(body["outputFormat"], format.to_lowercase());
    }
}

#[tokio::test]
async fn upload_validation_errors_have_their_codes() {
    let t = start().await;
    let ok_file = html("hi");
    upload_err(
        &t,
        Form::new().text("outputFormat", "html"),
        400,
        "TPL-0001",
    )
    .await;
    upload_err(
        &t,
        Form::new().file("template", "t.tpl", &ok_file),
        400,
        "TPL-0001",
    )
    .await;
    upload_err(
        &t,
        Form::new()
            .file("template", "t.html", &ok_file)
            .text("outputFormat", "html"),
        400,
        "TPL-0002",
    )
    .await;
    upload_err(
        &t,
        Form::new()
            .file("template", "t.tpl", &ok_file)
            .text("outputFormat", "docx"),
        400,
        "TPL-0003",
    )
    .await;
    upload_err(
        &t,
        Form::new()
            .file("template", "t.tpl", &[0xff, 0xfe, 0x00])
            .text("outputFormat", "txt"),
        400,
        "TPL-0005",
    )
    .await;
    upload_err(
        &t,
        Form::new()
            .file("template", "t.tpl", b"")
            .text("outputFormat", "txt"),
        400,
        "TPL-0006",
    )
    .await;
    upload_err(
        &t,
        Form::new()
            .file("template", "t.tpl", b"no markup here")
            .text("outputFormat", "html"),
        400,
        "TPL-0007",
    )
    .await;
    upload_err(
        &t,
        Form::new()
            .file("template", "t.tpl", b"only one line")
            .text("outputFormat", "csv"),
        400,
        "TPL-0007",
    )
    .await;
    upload_err(
        &t,
        Form::new()
            .file("template", "t.tpl", b"{{ bank.accounts.0.branch ")
            .text("outputFormat", "txt"),
        400,
        "TPL-0008",
    )
    .await;
    upload_err(
        &t,
        Form::new()
            .file("template", "t.tpl", &html("<script>alert(1)</script>"))
            .text("outputFormat", "html"),
        400,
        "TPL-0032",
    )
    .await;
    upload_err(
        &t,
        Form::new()
            .file("template", "t.tpl", &html("<img src=x onerror=alert(1)>"))
            .text("outputFormat", "html"),
        400,
        "TPL-0032",
    )
    .await;
    upload_err(
        &t,
        Form::new()
            .file("template", "t.tpl", &ok_file)
            .text("outputFormat", "html")
            .text("colour", "red"),
        400,
        "TPL-0015",
    )
    .await;
    let big = vec![b'a'; 1024 * 1024 + 10];
    upload_err(
        &t,
        Form::new()
            .file("template", "t.tpl", &big)
            .text("outputFormat", "txt"),
        413,
        "TPL-0063",
    )
    .await;
    let long = "d".repeat(1001);
    upload_err(
        &t,
        Form::new()
            .file("template", "t.tpl", &ok_file)
            .text("outputFormat", "html")
            .text("description", &long),
        400,
        "TPL-0064",
    )
    .await;
    // Not multipart at all.
    let resp = t
        .post_json(&token(), "/v1/templates", json!({"outputFormat": "html"}))
        .await;
    expect_error(resp, 400, "TPL-0415").await;
    // Nothing was stored by any of these.
    let list = json(t.get(&token(), "/v1/templates").await).await;
    assert_eq!(list["total"], 0);
}

#[tokio::test]
async fn references_must_exist_in_the_data_sources() {
    let t = start().await;
    let body = upload_err(
        &t,
        Form::new()
            .file("template", "t.tpl", b"{{ nope.accounts.0.x }}")
            .text("outputFormat", "txt"),
        400,
        "TPL-0031",
    )
    .await;
    assert!(body["fields"]["nope"].is_string(), "{body}");
    upload_err(
        &t,
        Form::new()
            .file("template", "t.tpl", b"{{ bank.ledger.0.x }}")
            .text("outputFormat", "txt"),
        400,
        "TPL-0030",
    )
    .await;
    let body = upload_err(
        &t,
        Form::new()
            .file(
                "template",
                "t.tpl",
                b"{% for r in bank.accounts %}{{ r.iban }}{{ r.nickname }}{% endfor %}",
            )
            .text("outputFormat", "txt"),
        400,
        "TPL-0014",
    )
    .await;
    let fields = body["fields"].as_object().unwrap();
    assert!(
        fields.contains_key("bank.accounts.iban") && fields.contains_key("bank.accounts.nickname"),
        "{body}"
    );
    // The field argument of filter() is checked like every other field (as the original).
    let body = upload_err(
        &t,
        Form::new()
            .file(
                "template",
                "t.tpl",
                br#"{% for a in filter(bank.accounts, "nope", "x") %}{{ a.branch }}{% endfor %}"#,
            )
            .text("outputFormat", "txt"),
        400,
        "TPL-0014",
    )
    .await;
    let fields = body["fields"].as_object().unwrap();
    assert_eq!(
        fields.keys().collect::<Vec<_>>(),
        ["bank.accounts.nope"],
        "only the unknown filter field is named: {body}"
    );
    assert!(
        fields["bank.accounts.nope"]
            .as_str()
            .unwrap()
            .contains("nope"),
        "{body}"
    );
}

#[tokio::test]
async fn get_answers_404_and_400_with_codes() {
    let t = start().await;
    expect_error(
        t.get(
            &token(),
            "/v1/templates/0198a1b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b",
        )
        .await,
        404,
        "TPL-0011",
    )
    .await;
    expect_error(
        t.get(&token(), "/v1/templates/not-a-uuid").await,
        400,
        "TPL-0009",
    )
    .await;
}

#[tokio::test]
async fn list_pages_filters_and_counts() {
    let t = start().await;
    let tok = token();
    let mut ids = Vec::new();
    for i in 0..7 {
        let desc = if i % 2 == 0 {
            format!("Monthly (a.*b) statement {i}")
        } else {
            format!("Ledger {i}")
        };
        ids.push(t.create_template(&tok, &desc).await);
    }
    t.upload(
        &tok,
        Form::new()
            .file("template", "t.tpl", b"a,b\n1,2")
            .text("outputFormat", "csv")
            .text("description", "csv one"),
    )
    .await
    .assert_status(StatusCode::CREATED);

    let p1 = json(
        t.get(&tok, "/v1/templates?limit=3&page=1&sort_order=asc")
            .await,
    )
    .await;
    assert_eq!(
        (
            p1["total"].as_u64(),
            p1["page"].as_u64(),
            p1["limit"].as_u64()
        ),
        (Some(8), Some(1), Some(3))
    );
    let first: Vec<&str> = p1["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        first,
        ids[0..3].iter().map(String::as_str).collect::<Vec<_>>()
    );
    let p3 = json(
        t.get(&tok, "/v1/templates?limit=3&page=3&sort_order=asc")
            .await,
    )
    .await;
    assert_eq!(p3["items"].as_array().unwrap().len(), 2);
    let desc = json(t.get(&tok, "/v1/templates?limit=1").await).await;
    assert_eq!(
        desc["items"][0]["description"], "csv one",
        "newest first by default"
    );

    // The description filter is a plain, case-insensitive substring: regex characters are literal.
    let f = json(t.get(&tok, "/v1/templates?description=(A.*B)").await).await;
    assert_eq!(f["total"], 4);
    let f = json(t.get(&tok, "/v1/templates?description=Month.y").await).await;
    assert_eq!(f["total"], 0, "a regex would have matched 'Monthly'");
    let f = json(t.get(&tok, "/v1/templates?outputFormat=CSV").await).await;
    assert_eq!(f["total"], 1);
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let f = json(
        t.get(&tok, &format!("/v1/templates?createdAt={today}"))
            .await,
    )
    .await;
    assert_eq!(f["total"], 8);
    let f = json(t.get(&tok, "/v1/templates?createdAt=2001-01-01").await).await;
    assert_eq!(f["total"], 0);
}

#[tokio::test]
async fn list_parameter_errors() {
    let t = start().await;
    let tok = token();
    expect_error(t.get(&tok, "/v1/templates?limit=0").await, 400, "TPL-0024").await;
    expect_error(
        t.get(&tok, "/v1/templates?limit=101").await,
        400,
        "TPL-0024",
    )
    .await;
    expect_error(t.get(&tok, "/v1/templates?limit=-5").await, 400, "TPL-0024").await;
    expect_error(
        t.get(&tok, "/v1/templates?limit=ten").await,
        400,
        "TPL-0019",
    )
    .await;
    expect_error(t.get(&tok, "/v1/templates?page=0").await, 400, "TPL-0019").await;
    expect_error(
        t.get(&tok, "/v1/templates?sort_order=sideways").await,
        400,
        "TPL-0025",
    )
    .await;
    expect_error(
        t.get(&tok, "/v1/templates?createdAt=31/12/2026").await,
        400,
        "TPL-0020",
    )
    .await;
    expect_error(
        t.get(&tok, "/v1/templates?outputFormat=docx").await,
        400,
        "TPL-0003",
    )
    .await;
}

#[tokio::test]
async fn update_description_format_and_file() {
    let t = start().await;
    let tok = token();
    let id = t.create_template(&tok, "before").await;
    let path = format!("/v1/templates/{id}");
    let patch = |form: Form| {
        let ct = form.content_type();
        t.client
            .patch(&path)
            .header("authorization", bearer(&tok))
            .content_type(ct)
            .body(form.into_body())
            .send()
    };
    let resp = patch(Form::new().text("description", "after")).await;
    resp.assert_status_is_ok();
    let body = json(resp).await;
    assert_eq!(body["description"], "after");
    assert_eq!(body["outputFormat"], "html");

    expect_error(
        patch(Form::new().text("outputFormat", "csv")).await,
        400,
        "TPL-0010",
    )
    .await;
    expect_error(patch(Form::new()).await, 400, "TPL-0001").await;
    // A new file is validated against the new format.
    expect_error(
        patch(
            Form::new()
                .text("outputFormat", "csv")
                .file("template", "t.tpl", b"one line"),
        )
        .await,
        400,
        "TPL-0007",
    )
    .await;
    let resp = patch(Form::new().text("outputFormat", "csv").file(
        "template",
        "t.tpl",
        CSV_TPL.as_bytes(),
    ))
    .await;
    let status = resp.0.status();
    let body = json(resp).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["outputFormat"], "csv");
    assert!(body["mappedFields"]["bank"]["transactions"].is_array());
    let stored = t
        .app
        .ports()
        .storage
        .get(&format!("templates/{id}.tpl"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.bytes.as_ref(), CSV_TPL.as_bytes());
    let form = Form::new().text("description", "x");
    let ct = form.content_type();
    let resp = t
        .client
        .patch("/v1/templates/0198a1b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b")
        .header("authorization", bearer(&tok))
        .content_type(ct)
        .body(form.into_body())
        .send()
        .await;
    expect_error(resp, 404, "TPL-0011").await;
}

#[tokio::test]
async fn delete_is_soft_and_cascades_to_deadlines() {
    let t = start().await;
    let tok = token();
    let id = t.create_template(&tok, "to delete").await;
    let other = t.create_template(&tok, "kept").await;
    let mut linked = Vec::new();
    for days in [3, 10] {
        let mut b = deadline_body(days);
        b["templateId"] = json!(id);
        linked.push(
            t.create_deadline(&tok, b).await["id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    let mut b = deadline_body(20);
    b["templateId"] = json!(other);
    let unrelated = t.create_deadline(&tok, b).await["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let resp = t.delete(&tok, &format!("/v1/templates/{id}")).await;
    resp.assert_status_is_ok();
    let body = json(resp).await;
    assert_eq!(body["cascadedDeadlineCount"], 2);
    expect_error(
        t.get(&tok, &format!("/v1/templates/{id}")).await,
        404,
        "TPL-0011",
    )
    .await;
    expect_error(
        t.delete(&tok, &format!("/v1/templates/{id}")).await,
        404,
        "TPL-0011",
    )
    .await;
    for d in &linked {
        expect_error(
            t.get(&tok, &format!("/v1/deadlines/{d}")).await,
            404,
            "TPL-0011",
        )
        .await;
    }
    t.get(&tok, &format!("/v1/deadlines/{unrelated}"))
        .await
        .assert_status_is_ok();
    let list = json(t.get(&tok, "/v1/templates").await).await;
    assert_eq!(list["total"], 1);
    // Soft delete: the record and its file are still stored.
    let tid: reporter_ports::TemplateId = id.parse().unwrap();
    let kept = t
        .app
        .ports()
        .templates
        .get(&reporter_ports::TenantId::default_tenant(), tid, true)
        .await
        .unwrap()
        .expect("soft-deleted record kept");
    assert!(kept.deleted_at.is_some());
    assert!(
        t.app
            .ports()
            .storage
            .get(&format!("templates/{id}.tpl"))
            .await
            .unwrap()
            .is_some()
    );
}

#[tokio::test]
async fn data_sources_list_and_schema() {
    let t = start().await;
    let tok = token();
    let list = json(t.get(&tok, "/v1/data-sources").await).await;
    assert_eq!(
        list,
        json!([{"id": "bank", "externalName": "bank", "type": "file"}])
    );
    let bank = json(t.get(&tok, "/v1/data-sources/bank").await).await;
    let tables: Vec<&str> = bank["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tables, ["accounts", "balances", "transactions"]);
    expect_error(
        t.get(&tok, "/v1/data-sources/unknown").await,
        404,
        "TPL-0057",
    )
    .await;
    expect_error(t.get(&tok, "/v1/data-sources/9bad").await, 400, "TPL-0009").await;
}

#[tokio::test]
async fn configured_file_sources_are_served_and_validated() {
    let dir = std::env::temp_dir().join(format!("reporter-e2e-{}", uuid::Uuid::now_v7()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("loans.csv"), "loan_id,principal\nL1,100\n").unwrap();
    let t = start_with(Options {
        env: vec![
            ("DATASOURCE_CREDIT_TYPE".into(), "file".into()),
            ("DATASOURCE_CREDIT_PATH".into(), dir.display().to_string()),
        ],
        ..Default::default()
    })
    .await;
    let tok = token();
    let list = json(t.get(&tok, "/v1/data-sources").await).await;
    assert_eq!(
        list,
        json!([{"id": "credit", "externalName": dir.file_name().unwrap().to_str().unwrap(), "type": "file"}])
    );
    t.upload(
        &tok,
        Form::new()
            .file("template", "t.tpl", b"{{ credit.loans.0.principal }}")
            .text("outputFormat", "txt"),
    )
    .await
    .assert_status(StatusCode::CREATED);
    // The example data set is not registered once a source is configured.
    upload_err(
        &t,
        Form::new()
            .file("template", "t.tpl", b"{{ bank.accounts.0.branch }}")
            .text("outputFormat", "txt"),
        400,
        "TPL-0031",
    )
    .await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn dashboard_metrics_count_and_validate() {
    let t = start().await;
    let tok = token();
    t.create_template(&tok, "a").await;
    t.create_template(&tok, "b").await;
    let m = json(t.get(&tok, "/v1/metrics").await).await;
    assert_eq!(
        m,
        json!({"templates": 2, "reports": 0, "dataSources": 1, "errors": {"total": 0, "previousPeriodTotal": 0}})
    );
    expect_error(
        t.get(&tok, "/v1/metrics?errorPeriodDays=0").await,
        400,
        "TPL-0019",
    )
    .await;
    expect_error(
        t.get(&tok, "/v1/metrics?errorPeriodDays=366").await,
        400,
        "TPL-0019",
    )
    .await;
    t.get(&tok, "/v1/metrics?errorPeriodDays=365")
        .await
        .assert_status_is_ok();
}
