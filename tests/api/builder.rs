//! End to end over HTTP: the template builder (`blocks-config`, `filters`, `generate-code`,
//! `validate`): catalogues and languages, scopes, malformed bodies, unknown block types,
//! injection attempts in every string property, limits, data-source checks, and generated
//! code that uploads, renders, and reads exactly its `mappedFields`.
use crate::common;

use common::{Form, TestApp, bearer, expect_error, json, start, token, token_for};
use poem::http::StatusCode;
use serde_json::{Value, json};

const GEN: &str = "/v1/templates/generate-code";
const VALIDATE: &str = "/v1/templates/validate";

async fn post(
    app: &TestApp,
    path: &str,
    body: Value,
    lang: Option<&str>,
) -> poem::test::TestResponse {
    let mut req = app
        .client
        .post(path)
        .header("authorization", bearer(&token()))
        .body_json(&body);
    if let Some(l) = lang {
        req = req.header("accept-language", l);
    }
    req.send().await
}

async fn generate(app: &TestApp, blocks: Value, format: &str) -> Value {
    let resp = post(app, GEN, json!({"blocks": blocks, "format": format}), None).await;
    let status = resp.0.status();
    let body = json(resp).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

async fn validate(app: &TestApp, blocks: Value) -> Value {
    let resp = post(app, VALIDATE, json!({"blocks": blocks}), Some("en")).await;
    let status = resp.0.status();
    let body = json(resp).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

/// The (blockId, field) pairs of a validation result.
fn error_keys(v: &Value) -> Vec<(String, String)> {
    v["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| {
            (
                e["blockId"].as_str().unwrap_or_default().to_owned(),
                e["field"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// Uploads `code` as a template of `format`; the upload's body (201 expected).
async fn upload(app: &TestApp, code: &str, format: &str) -> Value {
    let form = Form::new()
        .file("template", "built.tpl", code.as_bytes())
        .text("outputFormat", format)
        .text("description", "built");
    let resp = app.upload(&token(), form).await;
    let status = resp.0.status();
    let body = json(resp).await;
    assert_eq!(status, StatusCode::CREATED, "{body}\n{code}");
    body
}

/// Renders `code` as a report over the bundled data; the artifact text.
async fn render(app: &TestApp, code: &str, format: &str) -> (Value, String) {
    let uploaded = upload(app, code, format).await;
    let id = uploaded["id"].as_str().expect("id").to_owned();
    let report = app.request_report(&id, json!({})).await;
    let done = app.wait_report(&report, 400).await;
    assert_eq!(done["status"], "Finished", "{done}\n{code}");
    let resp = app
        .get(&token(), &format!("/v1/reports/{report}/download"))
        .await;
    resp.assert_status_is_ok();
    let text = resp.0.into_body().into_string().await.expect("text");
    (uploaded, text)
}

/// The README's worked example (`examples/builder/eur-transactions.json`).
fn worked_example() -> Value {
    let file: Value =
        serde_json::from_str(include_str!("../../examples/builder/eur-transactions.json"))
            .expect("example JSON");
    assert_eq!(file["format"], "html");
    file["blocks"].clone()
}

#[tokio::test]
async fn catalogues_in_portuguese_by_default_and_english_on_request() {
    let app = start().await;
    let resp = app.get(&token(), "/v1/templates/blocks-config").await;
    resp.assert_status_is_ok();
    resp.assert_header("content-language", "pt-BR");
    resp.assert_header("vary", "Accept-Language");
    let body = json(resp).await;
    let blocks = body["blocks"].as_array().expect("blocks");
    let types: Vec<&str> = blocks.iter().map(|b| b["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "text",
            "variable",
            "loop",
            "conditional",
            "aggregation",
            "calculation",
            "date_time",
            "counter",
            "comment",
            "section",
            "with",
            "expression",
            "custom_tag"
        ]
    );
    let counter = &blocks[7];
    assert_eq!(counter["label"], "Contador");
    assert_eq!(counter["category"], "dimp");
    assert_eq!(counter["acceptsChildren"], false);
    assert_eq!(
        counter["properties"][0],
        json!({"name": "counterMode", "type": "enum", "required": true, "values": ["increment", "show"]})
    );
    assert_eq!(blocks[9]["label"], "Secao");
    assert_eq!(blocks[2]["acceptsChildren"], true);
    // Every property has `values`: the enum's, or [] (the reference's shape).
    assert_eq!(
        counter["properties"][1],
        json!({"name": "counterNames", "type": "string[]", "required": true, "values": []})
    );
    for b in blocks {
        for p in b["properties"].as_array().expect("properties") {
            let values = p["values"].as_array().expect("values on every property");
            assert_eq!(values.is_empty(), p["type"] != "enum", "{p}");
        }
    }
    let tag = &blocks[12];
    assert_eq!(
        tag["properties"][0]["values"],
        json!([
            "sum_by",
            "count_by",
            "avg_by",
            "min_by",
            "max_by",
            "calc",
            "last_item_by_group"
        ])
    );

    let resp = app
        .client
        .get("/v1/templates/blocks-config")
        .header("authorization", bearer(&token()))
        .header("accept-language", "en-US,en;q=0.9,pt;q=0.5")
        .send()
        .await;
    resp.assert_header("content-language", "en");
    let body = json(resp).await;
    assert_eq!(body["blocks"][9]["label"], "Section");
    assert_eq!(body["blocks"][7]["label"], "Counter");

    let resp = app.get(&token(), "/v1/templates/filters").await;
    resp.assert_status_is_ok();
    let body = json(resp).await;
    let filters = body["filters"].as_array().expect("filters");
    let names: Vec<&str> = filters
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "percent_of",
            "slice_str",
            "strip_zeros",
            "replace",
            "where",
            "sum",
            "count",
            "floatformat",
            "length",
            "date"
        ]
    );
    assert_eq!(filters[5]["description"], "Soma campo de array");
    assert_eq!(filters[5]["args"], json!(["field"]));
    assert_eq!(filters[2]["args"], json!([]));
    let resp = app
        .client
        .get("/v1/templates/filters")
        .header("authorization", bearer(&token()))
        .header("accept-language", "en")
        .send()
        .await;
    let body = json(resp).await;
    assert_eq!(
        body["filters"][5]["description"],
        "Exact sum of a field over rows"
    );
}

#[tokio::test]
async fn builder_routes_win_over_the_template_id_route() {
    let app = start().await;
    for path in ["/v1/templates/blocks-config", "/v1/templates/filters"] {
        app.get(&token(), path).await.assert_status_is_ok();
    }
    // The id route still parses ids.
    expect_error(
        app.get(&token(), "/v1/templates/not-a-uuid").await,
        400,
        "TPL-0009",
    )
    .await;
    // Methods the builder routes do not have.
    expect_error(
        app.delete(&token(), "/v1/templates/blocks-config").await,
        405,
        "TPL-0405",
    )
    .await;
    expect_error(app.get(&token(), GEN).await, 405, "TPL-0405").await;
}

#[tokio::test]
async fn scopes() {
    let app = start().await;
    let resp = app.client.get("/v1/templates/blocks-config").send().await;
    expect_error(resp, 401, "TPL-0401").await;
    let resp = app
        .client
        .post(GEN)
        .body_json(&json!({"blocks": []}))
        .send()
        .await;
    expect_error(resp, 401, "TPL-0401").await;

    let reports_only = token_for(Some("default"), &["reports:read"]);
    for path in ["/v1/templates/blocks-config", "/v1/templates/filters"] {
        expect_error(app.get(&reports_only, path).await, 403, "TPL-0403").await;
    }
    let read_only = token_for(Some("default"), &["templates:read"]);
    app.get(&read_only, "/v1/templates/filters")
        .await
        .assert_status_is_ok();
    let blocks = json!({"blocks": [{"type": "text", "content": "x"}]});
    for path in [GEN, VALIDATE] {
        expect_error(
            app.post_json(&read_only, path, blocks.clone()).await,
            403,
            "TPL-0403",
        )
        .await;
    }
    let write_only = token_for(Some("default"), &["templates:write"]);
    for path in [GEN, VALIDATE] {
        app.post_json(&write_only, path, blocks.clone())
            .await
            .assert_status_is_ok();
    }
}

#[tokio::test]
async fn generates_the_worked_example() {
    let app = start().await;
    let body = generate(&app, worked_example(), "html").await;
    assert_eq!(
        body["code"],
        "<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"UTF-8\">\n</head>\n<body>\n\
         <h1>EUR transactions</h1>\n\
         {% for t in bank.transactions %}\n    {% if t.currency == \"EUR\" %}\n        \
         <p>{{ t.booked_on }} {{ t.amount }}</p>\n    {% endif %}\n{% endfor %}\n\
         <p>Debits: {% sum_by bank.transactions by \"amount\" if direction == \"debit\" and currency == \"EUR\" %}</p>\n\
         </body>\n</html>\n"
    );
    assert_eq!(
        body["mappedFields"],
        json!({"bank": {"transactions": ["amount", "booked_on", "currency", "direction"]}})
    );
    assert!(body.get("warnings").is_none());
    let v = validate(&app, worked_example()).await;
    assert_eq!(v, json!({"valid": true, "errors": []}));
}

#[tokio::test]
async fn malformed_bodies_are_400_and_semantic_problems_are_200() {
    let app = start().await;
    for path in [GEN, VALIDATE] {
        // Not JSON.
        let resp = app
            .client
            .post(path)
            .header("authorization", bearer(&token()))
            .content_type("application/json")
            .body("{\"blocks\": [}")
            .send()
            .await;
        expect_error(resp, 400, "TPL-0017").await;
        // No body.
        let resp = app
            .client
            .post(path)
            .header("authorization", bearer(&token()))
            .content_type("application/json")
            .body("")
            .send()
            .await;
        expect_error(resp, 400, "TPL-0001").await;
        // Wrong JSON types.
        let resp = post(
            &app,
            path,
            json!({"blocks": [{"type": "text", "content": {"a": 1}}]}),
            None,
        )
        .await;
        expect_error(resp, 400, "TPL-0017").await;
        let resp = post(&app, path, json!({"blocks": {"type": "text"}}), None).await;
        expect_error(resp, 400, "TPL-0017").await;
        // Unknown fields, at the top and in a block.
        let resp = post(&app, path, json!({"blocks": [], "extra": 1}), None).await;
        expect_error(resp, 400, "TPL-0015").await;
        let resp = post(
            &app,
            path,
            json!({"blocks": [{"type": "text", "content": "x", "colour": "red"}]}),
            None,
        )
        .await;
        expect_error(resp, 400, "TPL-0015").await;
        // No blocks at all; an empty object; null.
        let body = expect_error(post(&app, path, json!({}), None).await, 400, "TPL-0001").await;
        assert_eq!(body["fields"]["blocks"], "obrigatorio");
        let body = expect_error(
            post(&app, path, json!({}), Some("en")).await,
            400,
            "TPL-0001",
        )
        .await;
        assert_eq!(body["fields"]["blocks"], "required");
        expect_error(
            post(&app, path, json!({"blocks": null}), None).await,
            400,
            "TPL-0001",
        )
        .await;
        // Not a JSON content type.
        let resp = app
            .client
            .post(path)
            .header("authorization", bearer(&token()))
            .content_type("text/plain")
            .body("blocks")
            .send()
            .await;
        expect_error(resp, 400, "TPL-0415").await;
    }
    // An empty list: a validation error on validate, 400 TPL-0001 on generate-code.
    let v = validate(&app, json!([])).await;
    assert_eq!(
        v,
        json!({"valid": false, "errors": [{"blockId": "", "field": "blocks", "message": "blocks must not be empty"}]})
    );
    expect_error(
        post(&app, GEN, json!({"blocks": []}), None).await,
        400,
        "TPL-0001",
    )
    .await;
    // An unknown format.
    let body = expect_error(
        post(
            &app,
            GEN,
            json!({"blocks": [{"type": "text", "content": "x"}], "format": "docx"}),
            None,
        )
        .await,
        400,
        "TPL-0003",
    )
    .await;
    assert!(body["fields"]["format"].is_string());
    let resp = post(
        &app,
        VALIDATE,
        json!({"blocks": [{"type": "text", "content": "x"}], "format": "docx"}),
        Some("en"),
    )
    .await;
    let v = json(resp).await;
    assert_eq!(v["valid"], false);
    assert_eq!(error_keys(&v), [("".to_owned(), "format".to_owned())]);
}

#[tokio::test]
async fn unknown_block_types_and_missing_properties() {
    let app = start().await;
    let blocks = json!([
        {"type": "chart"},
        {"blockId": "loop", "type": "loop", "collection": "bank.accounts", "children": [
            {"type": "text"},
            {"type": "Text", "content": "x"}
        ]},
        {"content": "no type"},
        {"type": "conditional", "condition": "1", "children": [{"type": "text", "content": "a"}],
         "elifBranches": [{"condition": "", "children": []}]},
        {"type": "text", "content": "x", "children": [{"type": "text", "content": "lost"}]}
    ]);
    let v = validate(&app, blocks.clone()).await;
    assert_eq!(v["valid"], false);
    assert_eq!(
        error_keys(&v),
        [
            ("block-0", "type"),
            ("loop", "iterator"),
            ("loop-0", "content"),
            ("loop-1", "type"),
            ("block-2", "type"),
            ("block-3-elif-0", "condition"),
            ("block-3-elif-0", "children"),
            ("block-4", "children"),
        ]
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
    );
    assert_eq!(v["errors"][0]["message"], "unknown block type: chart");
    // Portuguese by default.
    let resp = post(&app, VALIDATE, json!({"blocks": blocks.clone()}), None).await;
    resp.assert_header("content-language", "pt-BR");
    let pt = json(resp).await;
    assert_eq!(pt["errors"][0]["message"], "Tipo de bloco invalido: chart");
    // generate-code: 400 TPL-0090 with every problem in `fields`.
    let body = expect_error(
        post(
            &app,
            GEN,
            json!({"blocks": blocks, "format": "txt"}),
            Some("en"),
        )
        .await,
        400,
        "TPL-0090",
    )
    .await;
    assert_eq!(body["fields"]["block-0.type"], "unknown block type: chart");
    assert_eq!(body["fields"]["loop-0.content"], "content is required");
    assert_eq!(body["fields"].as_object().unwrap().len(), 8);
    // A blockId used twice, and one with a control character.
    let v = validate(
        &app,
        json!([
            {"blockId": "a", "type": "text", "content": "x"},
            {"blockId": "a", "type": "text", "content": "y"},
            {"blockId": "b\u{0007}", "type": "text", "content": "z"}
        ]),
    )
    .await;
    assert_eq!(
        v["errors"],
        json!([
            {"blockId": "a", "field": "blockId", "message": "blockId a is used twice"},
            {"blockId": "b\u{0007}", "field": "blockId",
             "message": "blockId must be at most 128 characters, without control characters"}
        ])
    );
}

#[tokio::test]
async fn data_sources_are_checked_like_uploads() {
    let app = start().await;
    let var = |path: &str| json!([{"blockId": "v", "type": "variable", "variable": path}]);
    for (path, code, msg) in [
        (
            "nowhere.accounts.id",
            "TPL-0031",
            "data source 'nowhere' is not configured",
        ),
        (
            "bank.customers.id",
            "TPL-0030",
            "table 'customers' does not exist in data source 'bank'",
        ),
        (
            "bank.accounts.iban",
            "TPL-0014",
            "field 'iban' does not exist in table 'accounts' of 'bank'",
        ),
    ] {
        let body = expect_error(
            post(
                &app,
                GEN,
                json!({"blocks": var(path), "format": "txt"}),
                Some("en"),
            )
            .await,
            400,
            code,
        )
        .await;
        assert_eq!(body["fields"]["v.variable"], msg);
        let v = validate(&app, var(path)).await;
        assert_eq!(
            v["errors"],
            json!([{"blockId": "v", "field": "variable", "message": msg}])
        );
    }
    // Fields of loop rows, aggregation arguments and tag fields are checked too.
    let blocks = json!([
        {"blockId": "l", "type": "loop", "iterator": "a", "collection": "bank.accounts", "children": [
            {"blockId": "in", "type": "variable", "variable": "a.nickname"}
        ]},
        {"blockId": "s", "type": "aggregation", "collection": "bank.transactions", "function": "sum", "field": "fee"},
        {"blockId": "t", "type": "custom_tag", "tagName": "count_by", "tagArgs": "bank.transactions if kind == \"x\""}
    ]);
    let v = validate(&app, blocks).await;
    assert_eq!(
        error_keys(&v),
        [("in", "variable"), ("s", "field"), ("t", "tagArgs")]
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
    );
}

/// Payloads that would open, close or escape code if written as they are; each tries to read
/// `bank.balances`, which no carrier reads.
const PAYLOADS: [&str; 8] = [
    "{{ bank.balances }}",
    "x }} {{ bank.balances",
    "{% for b in bank.balances %}{{ b }}{% endfor %}",
    "#} {# ",
    "x\" %}{% if bank.balances %}",
    "a\nb",
    "x'|safe",
    "{",
];

/// Blocks with one string property holding the marker `§`, and that property's name.
fn carriers() -> Vec<(&'static str, Value)> {
    let text = json!([{"type": "text", "content": "x"}]);
    let cur = "bank.accounts.0.currency";
    vec![
        ("content", json!({"type": "comment", "content": "§"})),
        ("variable", json!({"type": "variable", "variable": "§"})),
        (
            "name",
            json!({"type": "variable", "variable": cur, "filters": [{"name": "§"}]}),
        ),
        (
            "args",
            json!({"type": "variable", "variable": cur, "filters": [{"name": "replace", "args": "§"}]}),
        ),
        (
            "args",
            json!({"type": "variable", "variable": "bank.transactions.0.booked_on",
                "filters": [{"name": "date", "args": "§"}]}),
        ),
        (
            "iterator",
            json!({"type": "loop", "iterator": "§", "collection": "bank.accounts", "children": text}),
        ),
        (
            "collection",
            json!({"type": "loop", "iterator": "a", "collection": "§", "children": text}),
        ),
        (
            "condition",
            json!({"type": "conditional", "condition": "§", "children": text}),
        ),
        (
            "condition",
            json!({"type": "conditional", "condition": "1", "children": text,
            "elifBranches": [{"condition": "§", "children": text}]}),
        ),
        (
            "collection",
            json!({"type": "aggregation", "collection": "§", "function": "sum", "field": "amount"}),
        ),
        (
            "function",
            json!({"type": "aggregation", "collection": "bank.transactions", "function": "§", "field": "amount"}),
        ),
        (
            "field",
            json!({"type": "aggregation", "collection": "bank.transactions", "function": "sum", "field": "§"}),
        ),
        (
            "field",
            json!({"type": "aggregation", "collection": "bank.transactions", "function": "count", "field": "currency:§"}),
        ),
        (
            "variable",
            json!({"type": "calculation", "variable": "§", "function": "length"}),
        ),
        (
            "function",
            json!({"type": "calculation", "variable": "bank.accounts", "function": "§"}),
        ),
        ("format", json!({"type": "date_time", "format": "§"})),
        (
            "variable",
            json!({"type": "date_time", "variable": "§", "format": "2006"}),
        ),
        (
            "counterNames",
            json!({"type": "counter", "properties": {"counterMode": "increment", "counterNames": ["§"]}}),
        ),
        (
            "counterMode",
            json!({"type": "counter", "properties": {"counterMode": "§", "counterNames": ["a"]}}),
        ),
        (
            "variable",
            json!({"type": "with", "variable": "§", "assignment": "1", "children": text}),
        ),
        (
            "assignment",
            json!({"type": "with", "variable": "v", "assignment": "§", "children": text}),
        ),
        (
            "expression",
            json!({"type": "expression", "expression": "§"}),
        ),
        (
            "tagName",
            json!({"type": "custom_tag", "tagName": "§", "tagArgs": "bank.transactions"}),
        ),
        (
            "tagArgs",
            json!({"type": "custom_tag", "tagName": "sum_by", "tagArgs": "§"}),
        ),
        (
            "tagArgs",
            json!({"type": "custom_tag", "tagName": "count_by", "tagArgs": "bank.transactions if §"}),
        ),
        (
            "tagArgs",
            json!({"type": "custom_tag", "tagName": "sum_by", "tagArgs": "bank.transactions by \"§\""}),
        ),
        (
            "tagArgs",
            json!({"type": "custom_tag", "tagName": "calc", "tagArgs": "§"}),
        ),
        (
            "tagArgs",
            json!({"type": "custom_tag", "tagName": "last_item_by_group",
            "tagArgs": "bank.transactions group_by \"§\" order_by \"booked_on\" as last"}),
        ),
    ]
}

fn substitute(v: &Value, payload: &str) -> Value {
    match v {
        Value::String(s) => Value::String(s.replace('§', payload)),
        Value::Array(a) => Value::Array(a.iter().map(|x| substitute(x, payload)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), substitute(x, payload)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Every payload in every string property is either refused, naming the block and the
/// property, or accepted only where it is a harmless string literal: then the code uploads,
/// renders, and reads nothing the block does not read (never `bank.balances`).
#[tokio::test]
async fn injection_attempts_in_every_string_property() {
    let app = start().await;
    let mut accepted = Vec::new();
    for (field, carrier) in carriers() {
        for payload in PAYLOADS {
            let mut block = substitute(&carrier, payload);
            block["blockId"] = json!("target");
            let blocks = json!([block]);
            let v = validate(&app, blocks.clone()).await;
            if v["valid"] == false {
                let expected_id = if carrier.get("filters").is_some() {
                    "target-filter-0"
                } else if carrier.get("elifBranches").is_some() {
                    "target-elif-0"
                } else {
                    "target"
                };
                assert!(
                    error_keys(&v).contains(&(expected_id.to_owned(), field.to_owned())),
                    "{field} with {payload:?}: {v}"
                );
                let resp = post(&app, GEN, json!({"blocks": blocks, "format": "txt"}), None).await;
                assert_eq!(
                    resp.0.status(),
                    StatusCode::BAD_REQUEST,
                    "{field} {payload:?}"
                );
                continue;
            }
            accepted.push(format!("{field}={payload:?}"));
            let body = generate(&app, blocks, "txt").await;
            let code = body["code"].as_str().unwrap();
            assert!(
                body["mappedFields"]["bank"].get("balances").is_none(),
                "{code}"
            );
            let (uploaded, _) = render(&app, code, "txt").await;
            assert_eq!(uploaded["mappedFields"], body["mappedFields"], "{code}");
        }
    }
    // Only string literals (layouts, comparison values, comments) take these payloads.
    for a in &accepted {
        assert!(
            a.starts_with("args=")
                || a.starts_with("format=")
                || a.starts_with("field=")
                || a.starts_with("content="),
            "{accepted:?}"
        );
    }
}

#[tokio::test]
async fn hostile_text_is_written_so_that_it_renders_as_itself() {
    let app = start().await;
    let mut blocks = Vec::new();
    for (i, p) in PAYLOADS.iter().enumerate() {
        blocks
            .push(json!({"blockId": format!("t{i}"), "type": "text", "content": format!("[{p}]")}));
    }
    // A trailing `{` followed by a variable must not become `{{{`.
    blocks.push(json!({"type": "text", "content": "{", "inline": true}));
    blocks
        .push(json!({"type": "variable", "variable": "bank.accounts.0.currency", "inline": true}));
    blocks.push(json!({"type": "text", "content": "%}"}));
    let body = generate(&app, Value::Array(blocks), "txt").await;
    let code = body["code"].as_str().unwrap();
    assert!(
        code.contains("[{% templatetag openvariable %} bank.balances }}]\n"),
        "{code}"
    );
    assert!(
        code.contains("{% templatetag openbrace %}{{ bank.accounts.0.currency }}%}"),
        "{code}"
    );
    // Only the variable reads data: text never became code.
    assert_eq!(
        body["mappedFields"],
        json!({"bank": {"accounts": ["currency"]}})
    );
    let (uploaded, out) = render(&app, code, "txt").await;
    assert_eq!(uploaded["mappedFields"], body["mappedFields"]);
    let mut expected = String::new();
    for p in PAYLOADS {
        expected.push_str(&format!("[{p}]\n"));
    }
    expected.push_str("{EUR%}\n");
    assert_eq!(out, expected);
    // Verbatim but for the output clean-up, which applies to text as to all output: decimal
    // numbers lose trailing zeros, multi-dot codes stay.
    let body = generate(
        &app,
        json!([{"type": "text", "content": "total 1.50 v1.10.0"}]),
        "txt",
    )
    .await;
    let (_, out) = render(&app, body["code"].as_str().unwrap(), "txt").await;
    assert_eq!(out, "total 1.5 v1.10.0\n");
}

#[tokio::test]
async fn nesting_depth_and_block_count_are_bounded() {
    let app = start().await;
    let nest = |levels: usize| {
        let mut b = json!({"type": "text", "content": "leaf"});
        for _ in 0..levels {
            b = json!({"type": "section", "children": [b]});
        }
        json!([b])
    };
    // 50 levels: accepted.
    generate(&app, nest(50), "txt").await;
    // 51: a validation error naming the deepest parent, and 400 TPL-0091.
    let v = validate(&app, nest(51)).await;
    assert_eq!(v["valid"], false);
    assert_eq!(v["errors"][0]["field"], "children");
    assert_eq!(
        v["errors"][0]["message"],
        "blocks nest deeper than 50 levels"
    );
    expect_error(
        post(&app, GEN, json!({"blocks": nest(51)}), None).await,
        400,
        "TPL-0091",
    )
    .await;
    // Past the block bound but within the JSON bound (131 levels: a body of n levels
    // nests 2n + 3 deep, so up to 64): still a 200 validation finding.
    for levels in [60, 64] {
        let v = validate(&app, nest(levels)).await;
        assert_eq!(v["valid"], false, "{levels} levels");
        assert_eq!(
            v["errors"][0]["message"], "blocks nest deeper than 50 levels",
            "{levels} levels"
        );
        expect_error(
            post(&app, GEN, json!({"blocks": nest(levels)}), None).await,
            400,
            "TPL-0091",
        )
        .await;
    }
    // One level past the JSON bound, and far deeper: 400 TPL-0091 on both operations.
    for path in [GEN, VALIDATE] {
        expect_error(
            post(&app, path, json!({"blocks": nest(65)}), None).await,
            400,
            "TPL-0091",
        )
        .await;
        expect_error(
            post(&app, path, json!({"blocks": nest(500)}), None).await,
            400,
            "TPL-0091",
        )
        .await;
    }
    // Block count.
    let many = |n: usize| Value::Array(vec![json!({"type": "comment", "content": "c"}); n]);
    generate(&app, many(5000), "txt").await;
    let v = validate(&app, many(5001)).await;
    assert_eq!(
        v["errors"],
        json!([{"blockId": "", "field": "blocks", "message": "more than 5000 blocks"}])
    );
    expect_error(
        post(&app, GEN, json!({"blocks": many(5001)}), None).await,
        400,
        "TPL-0092",
    )
    .await;
    // Code size: the upload's 1 MiB limit (413 TPL-0063), a validation error on validate.
    let big = "x".repeat(600 * 1024);
    let blocks = json!([{"type": "text", "content": big}, {"type": "text", "content": big}]);
    expect_error(
        post(
            &app,
            GEN,
            json!({"blocks": blocks.clone(), "format": "txt"}),
            None,
        )
        .await,
        413,
        "TPL-0063",
    )
    .await;
    let v = validate(&app, blocks).await;
    assert_eq!(error_keys(&v), [("".to_owned(), "blocks".to_owned())]);
}

#[tokio::test]
async fn the_uploads_template_rules_apply_to_generated_code() {
    let app = start().await;
    // Script in a text block: that block, and TPL-0032 on generate-code.
    let blocks =
        json!([{"blockId": "s", "type": "text", "content": "<img src=x onerror=alert(1)>"}]);
    let v = validate(&app, blocks.clone()).await;
    assert_eq!(error_keys(&v), [("s".to_owned(), "content".to_owned())]);
    expect_error(
        post(&app, GEN, json!({"blocks": blocks, "format": "html"}), None).await,
        400,
        "TPL-0032",
    )
    .await;
    // Split across blocks: found in the template as a whole.
    let blocks = json!([
        {"type": "text", "content": "<scr", "inline": true},
        {"type": "text", "content": "ipt>"}
    ]);
    expect_error(
        post(&app, GEN, json!({"blocks": blocks, "format": "txt"}), None).await,
        400,
        "TPL-0032",
    )
    .await;
    // A CSV template needs a header line and a second line.
    let blocks = json!([{"type": "text", "content": "only one line"}]);
    expect_error(
        post(
            &app,
            GEN,
            json!({"blocks": blocks.clone(), "format": "csv"}),
            None,
        )
        .await,
        400,
        "TPL-0007",
    )
    .await;
    let resp = post(
        &app,
        VALIDATE,
        json!({"blocks": blocks, "format": "csv"}),
        Some("en"),
    )
    .await;
    let v = json(resp).await;
    assert_eq!(error_keys(&v), [("".to_owned(), "format".to_owned())]);
    assert_eq!(
        v["errors"][0]["message"],
        "the generated template does not fit its format: a CSV template needs a header line and at least one more line"
    );
    let resp = post(
        &app,
        VALIDATE,
        json!({"blocks": [{"type": "text", "content": "only one line"}], "format": "csv"}),
        None,
    )
    .await;
    assert_eq!(
        json(resp).await["errors"][0]["message"],
        "o template gerado nao serve para o formato: um template CSV precisa de uma linha de cabecalho e pelo menos mais uma linha"
    );
}

/// Expressions past the template parser's bounds (finding 10 of issue 30): an `or` chain of
/// 390 terms in a condition and a `^` chain of 990 in an expression block once validated as
/// `valid: true` while generate-code answered 400 TPL-0080. Now both refuse, validate on the
/// block and property, generate-code with the parser's code; 100 operators still pass both.
#[tokio::test]
async fn validate_and_generate_code_agree_on_expressions_past_the_parsers_bounds() {
    let app = start().await;
    let or_chain = vec!["1"; 390].join(" or ");
    let pow_chain = vec!["9"; 990].join("^");
    let cases = [
        (
            json!([{"blockId": "c", "type": "conditional", "condition": or_chain,
                    "children": [{"type": "text", "content": "x"}]}]),
            ("c", "condition"),
        ),
        (
            json!([{"blockId": "e", "type": "expression", "expression": pow_chain}]),
            ("e", "expression"),
        ),
        (
            json!([{"blockId": "t", "type": "custom_tag", "tagName": "count_by",
                    "tagArgs": format!("bank.accounts if {or_chain}")}]),
            ("t", "tagArgs"),
        ),
    ];
    for (blocks, (id, field)) in cases {
        let v = validate(&app, blocks.clone()).await;
        assert_eq!(v["valid"], false, "{v}");
        assert_eq!(error_keys(&v), [(id.to_owned(), field.to_owned())], "{v}");
        assert!(
            v["errors"][0]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("more than 100 operators"),
            "{v}"
        );
        let body = expect_error(
            post(&app, GEN, json!({"blocks": blocks, "format": "txt"}), None).await,
            400,
            "TPL-0080",
        )
        .await;
        assert!(
            body["fields"][format!("{id}.{field}")].is_string(),
            "{body}"
        );
    }
    // At the bound: valid, generated, uploaded.
    let at_bound = json!([{"type": "expression", "expression": vec!["9"; 101].join("^")},
                          {"type": "conditional", "condition": vec!["1"; 101].join(" or "),
                           "children": [{"type": "text", "content": "x"}]}]);
    assert_eq!(validate(&app, at_bound.clone()).await["valid"], true);
    let body = generate(&app, at_bound, "txt").await;
    upload(&app, body["code"].as_str().unwrap_or_default(), "txt").await;
}

/// Whatever bound the sandbox's parse of the generated code hits, validate reports it too:
/// both run the same check, the sandbox's parse included. 2500 expression blocks of 100
/// operators (about 1 MB of dense code) need more than the 32 MiB floor of
/// TEMPLATE_PARSE_MEMORY_MIB: validate answers `valid: false` about the template as a
/// whole, generate-code 400 TPL-0082 (as the upload of the same code would).
#[tokio::test]
async fn validate_reports_the_sandbox_parses_bounds_as_generate_code_does() {
    let small = common::start_with(common::Options {
        tweak: Some(|r| r.template_parse_memory_mib = "32".into()),
        ..Default::default()
    })
    .await;
    let dense = vec!["a"; 101].join("+");
    let blocks = Value::Array(vec![
        json!({"type": "expression", "expression": dense});
        2500
    ]);
    let v = validate(&small, blocks.clone()).await;
    assert_eq!(v["valid"], false, "{v}");
    assert_eq!(
        error_keys(&v),
        [("".to_owned(), "blocks".to_owned())],
        "{v}"
    );
    expect_error(
        post(
            &small,
            GEN,
            json!({"blocks": blocks, "format": "txt"}),
            None,
        )
        .await,
        400,
        "TPL-0082",
    )
    .await;
}

/// A text block prints exactly what it holds: `bank:accounts.holder_name` is text, not a
/// schema reference for the engine's rewrite (it once printed `bank.accounts__holder_name`).
#[tokio::test]
async fn a_text_block_holding_a_schema_reference_prints_it_verbatim() {
    let app = start().await;
    let text = "bank:accounts.holder_name db:sales.orders x:y Total: 5";
    let body = generate(&app, json!([{"type": "text", "content": text}]), "txt").await;
    assert_eq!(body["mappedFields"], json!({}), "{body}");
    let (_, out) = render(&app, body["code"].as_str().unwrap_or_default(), "txt").await;
    assert_eq!(out, format!("{text}\n"));
    let body = generate(
        &app,
        json!([{"type": "text", "content": "bank:accounts.holder_name"}]),
        "txt",
    )
    .await;
    let (_, out) = render(&app, body["code"].as_str().unwrap_or_default(), "txt").await;
    assert_eq!(out, "bank:accounts.holder_name\n");
}

/// Every message, the top-level `message` of generate-code's 400 included, follows
/// `Accept-Language`; Portuguese by default, with no English grammar text in it.
#[tokio::test]
async fn refusals_follow_accept_language() {
    let app = start().await;
    let blocks = json!([
        {"blockId": "x", "type": "chart"},
        {"blockId": "t", "type": "custom_tag", "tagName": "sum_by", "tagArgs": "bank.transactions"}
    ]);
    let pt = expect_error(
        post(&app, GEN, json!({"blocks": blocks.clone()}), None).await,
        400,
        "TPL-0090",
    )
    .await;
    assert_eq!(pt["message"], "os blocos tem 2 problema(s)");
    assert_eq!(pt["fields"]["x.type"], "Tipo de bloco invalido: chart");
    let tag = pt["fields"]["t.tagArgs"].as_str().expect("tagArgs message");
    assert!(
        tag.starts_with("argumentos de sum_by devem ser <colecao> by \"<campo>\" [if <condicao>]"),
        "{tag}"
    );
    for english in ["collection", "field", "condition", "must"] {
        assert!(!tag.contains(english), "{tag}");
    }
    let en = expect_error(
        post(&app, GEN, json!({"blocks": blocks}), Some("en")).await,
        400,
        "TPL-0090",
    )
    .await;
    assert_eq!(en["message"], "the blocks have 2 problem(s)");
    assert!(
        en["fields"]["t.tagArgs"]
            .as_str()
            .is_some_and(|m| m.starts_with("the arguments of sum_by must be <collection> by")),
        "{en}"
    );
    let empty = expect_error(
        post(&app, GEN, json!({"blocks": []}), None).await,
        400,
        "TPL-0001",
    )
    .await;
    assert_eq!(empty["message"], "a lista de blocos nao pode ser vazia");
    let none = expect_error(
        post(&app, GEN, json!({"format": "txt"}), None).await,
        400,
        "TPL-0001",
    )
    .await;
    assert_eq!(none["message"], "blocks e obrigatorio");
    let docx = json!({"blocks": [{"type": "text", "content": "x"}], "format": "docx"});
    let pt = expect_error(post(&app, GEN, docx.clone(), None).await, 400, "TPL-0003").await;
    assert_eq!(
        pt["message"],
        "formato 'docx' invalido (html, pdf, csv, xml ou txt)"
    );
    let en = expect_error(post(&app, GEN, docx, Some("en")).await, 400, "TPL-0003").await;
    assert_eq!(
        en["message"],
        "format 'docx' is not one of html, pdf, csv, xml, txt"
    );
}

/// A loop iterator, `with` variable or `as` name that is a data source's name would hide the
/// data source (and outside its scope the upload's analysis takes it for a local): refused.
#[tokio::test]
async fn bound_names_must_not_be_data_sources() {
    let app = start().await;
    let blocks = json!([
        {"blockId": "w", "type": "with", "variable": "bank", "assignment": "1", "children": [
            {"type": "text", "content": "x"}
        ]},
        {"blockId": "l", "type": "loop", "iterator": "bank", "collection": "bank.accounts", "children": [
            {"type": "text", "content": "y"}
        ]}
    ]);
    let v = validate(&app, blocks.clone()).await;
    assert_eq!(
        error_keys(&v),
        [("w", "variable"), ("l", "iterator")].map(|(a, b)| (a.to_owned(), b.to_owned()))
    );
    assert_eq!(
        v["errors"][0]["message"],
        "'bank' is the name of a data source and would hide it; choose another"
    );
    expect_error(
        post(&app, GEN, json!({"blocks": blocks}), None).await,
        400,
        "TPL-0090",
    )
    .await;
}

#[tokio::test]
async fn the_worked_example_uploads_and_renders() {
    let app = start().await;
    let body = generate(&app, worked_example(), "html").await;
    let code = body["code"].as_str().unwrap();
    let (uploaded, out) = render(&app, code, "html").await;
    assert_eq!(uploaded["mappedFields"], body["mappedFields"]);
    assert!(out.contains("<h1>EUR transactions</h1>"), "{out}");
    assert!(out.contains("<p>2024-01-02 1250</p>"), "{out}");
    assert!(!out.contains("GBP"), "{out}");
    assert!(out.contains("<p>Debits: "), "{out}");
}

/// Every block type and every construct the builder writes, in one tree: the engine parses
/// the code, extracts exactly the builder's `mappedFields`, and renders it.
#[tokio::test]
async fn every_construct_uploads_with_the_same_mapped_fields_and_renders() {
    let app = start().await;
    let text = |s: &str| json!({"type": "text", "content": s});
    let blocks = json!([
        {"type": "comment", "content": "every construct"},
        {"type": "date_time", "format": "YYYY-MM-dd", "trimWhitespace": true},
        {"type": "text", "content": "\n"},
        {"type": "variable", "variable": "bank:public.accounts.0.holder_name"},
        {"type": "variable", "variable": "bank.accounts.0.opened_on", "filters": [
            {"name": "date", "args": "02/01/2006"}, {"name": "replace", "args": "/:-"}, {"name": "slice_str", "args": "0:5"}
        ]},
        {"type": "calculation", "variable": "bank.balances.1.balance", "function": "floatformat"},
        {"type": "date_time", "variable": "bank.transactions.0.booked_on", "format": "2006"},
        {"type": "with", "variable": "mine", "trimWhitespace": true,
         "assignment": "filter(bank.transactions, \"account_id\", bank.accounts.0.account_id)", "children": [
            {"type": "loop", "iterator": "t", "collection": "mine", "trimWhitespace": true, "children": [
                {"type": "conditional", "inline": true,
                 "condition": "t.direction == \"debit\" and not forloop.Last",
                 "children": [{"type": "text", "content": "D", "inline": true}],
                 "elifBranches": [{"condition": "t.category in \"salary interest\"", "children": [text("S")]}],
                 "elseChildren": [{"type": "variable", "variable": "t.amount", "filters": [{"name": "percent_of", "args": "10000"}]}]},
                {"type": "counter", "properties": {"counterMode": "increment", "counterNames": ["lines"]}}
            ]}
        ]},
        {"type": "counter", "properties": {"counterMode": "show", "counterNames": ["lines", "none"]}},
        {"type": "aggregation", "collection": "bank.transactions", "function": "sum", "field": "amount"},
        {"type": "aggregation", "collection": "bank.transactions", "function": "count", "field": "category:rent"},
        {"type": "expression", "expression": "bank.accounts|where:\"currency:GBP\"|length * 2 + contains(bank.accounts.0.branch, \"Milan\")|length"},
        {"type": "expression", "expression": "bank.accounts.9.currency|default:\"none\""},
        {"type": "custom_tag", "tagName": "avg_by", "tagArgs": "bank.balances by \"balance\" if as_of == \"2024-03-31\""},
        {"type": "custom_tag", "tagName": "min_by", "tagArgs": "bank.transactions by 'amount'"},
        {"type": "custom_tag", "tagName": "max_by", "tagArgs": "bank.transactions by \"amount\" if currency == \"GBP\""},
        {"type": "custom_tag", "tagName": "calc", "tagArgs": "(bank.balances.0.balance + 1) * 2 ** 2 / 4 - 1"},
        {"type": "custom_tag", "tagName": "last_item_by_group", "inline": true,
         "tagArgs": "bank.balances group_by \"account_id\" order_by \"as_of\" as latest"},
        {"type": "section", "children": [
            {"type": "loop", "iterator": "b", "collection": "latest", "children": [
                {"type": "variable", "variable": "b.balance", "inline": true},
                {"type": "text", "content": ";", "inline": true}
            ]}
        ]}
    ]);
    // `bank:public.accounts` names a table the bundled source does not have: validation says
    // so, with the block and property; generate-code answers the upload's code.
    let v = validate(&app, blocks.clone()).await;
    assert_eq!(
        v["errors"],
        json!([{"blockId": "block-3", "field": "variable",
                "message": "table 'public__accounts' does not exist in data source 'bank'"}])
    );
    expect_error(
        post(
            &app,
            GEN,
            json!({"blocks": blocks.clone(), "format": "txt"}),
            None,
        )
        .await,
        400,
        "TPL-0030",
    )
    .await;
    // Without that block, the tree uploads and renders in every format.
    let mut blocks = blocks;
    blocks.as_array_mut().unwrap().remove(3);
    for format in ["txt", "html", "xml"] {
        let body = generate(&app, blocks.clone(), format).await;
        let code = body["code"].as_str().unwrap();
        assert_eq!(
            body["mappedFields"],
            json!({"bank": {
                "accounts": ["account_id", "branch", "currency", "opened_on"],
                "balances": ["account_id", "as_of", "balance"],
                "transactions": ["account_id", "amount", "booked_on", "category", "currency", "direction"]
            }}),
            "{code}"
        );
        let (uploaded, out) = render(&app, code, format).await;
        assert_eq!(uploaded["mappedFields"], body["mappedFields"], "{code}");
        // opened_on 2019-04-12 → 12/04/2019 → 12-04-2019 → 12-04; the sum of every amount;
        // calc (4820.15 + 1) * 2 ** 2 / 4 - 1; the latest balance of the last account.
        for want in ["12-04", "109730.73", "4820.15", "88450.05;"] {
            assert!(out.contains(want), "{want} missing from {out}");
        }
    }
}

#[test]
fn every_filter_the_builder_writes_exists_in_the_engine() {
    use reporter::app::builder::catalog::CatalogFilter;
    use reporter::app::builder::expr::EXPRESSION_FILTERS;
    let engine = reporter_adapter_pongo2::filters::NAMES;
    for f in EXPRESSION_FILTERS {
        assert!(engine.contains(f), "{f}");
    }
    for f in CatalogFilter::ALL {
        assert!(engine.contains(&f.as_str()), "{}", f.as_str());
    }
    assert!(!EXPRESSION_FILTERS.contains(&"safe"));
}

/// A data source that cannot be reached is a warning, as at upload: the code is generated and
/// the blocks are valid.
#[tokio::test]
async fn an_unreachable_data_source_is_a_warning() {
    let app = common::start_with(common::Options {
        env: vec![
            ("DATASOURCE_DOWN_TYPE".into(), "postgresql".into()),
            ("DATASOURCE_DOWN_HOST".into(), "127.0.0.1".into()),
            ("DATASOURCE_DOWN_PORT".into(), "1".into()),
            ("DATASOURCE_DOWN_DATABASE".into(), "nothing".into()),
        ],
        tweak: Some(|r| r.example_data_enabled = "true".into()),
        ..Default::default()
    })
    .await;
    let blocks = json!([
        {"type": "variable", "variable": "down.t.f"},
        {"type": "variable", "variable": "bank.accounts.0.currency"}
    ]);
    let body = generate(&app, blocks.clone(), "txt").await;
    assert_eq!(
        body["warnings"][0]["code"], "DATA_SOURCE_UNAVAILABLE",
        "{body}"
    );
    assert_eq!(body["warnings"][0]["field"], "down");
    assert_eq!(
        body["mappedFields"],
        json!({"bank": {"accounts": ["currency"]}, "down": {"t": ["f"]}})
    );
    let v = validate(&app, blocks).await;
    assert_eq!(v["valid"], true, "{v}");
    assert_eq!(v["warnings"][0]["code"], "DATA_SOURCE_UNAVAILABLE");
}

/// The comment the Console appends to a template it saves from the builder
/// (console/builder_marker.js): the blocks, base64url-encoded, after the generated code.
fn console_marker(blocks: &Value, format: &str, description: &str) -> String {
    use base64::Engine as _;
    let payload = json!({"blocks": blocks, "format": format, "description": description});
    let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(payload.to_string());
    format!("{{# reporter-console:builder v1 {encoded} #}}")
}

/// A builder-made template as the Console saves it (generate-code's output byte for byte,
/// then the comment carrying its blocks) is accepted by the upload checks, reads the fields
/// generate-code mapped, keeps its source exactly, and renders what the code alone renders.
#[tokio::test]
async fn the_consoles_blocks_comment_uploads_and_renders_to_nothing() {
    let app = start().await;
    let blocks = json!([
        {"blockId": "head", "type": "text", "content": "<html><body><h1>Accounts #} {{ x }}</h1>"},
        {"blockId": "rows", "type": "loop", "iterator": "a", "collection": "bank.accounts", "children": [
            {"blockId": "id", "type": "variable", "variable": "a.account_id"},
            {"blockId": "sep", "type": "text", "content": ";"}
        ]},
        {"blockId": "foot", "type": "text", "content": "</body></html>"}
    ]);
    assert_eq!(validate(&app, blocks.clone()).await["valid"], true);
    let generated = generate(&app, blocks.clone(), "html").await;
    let code = generated["code"].as_str().expect("code").to_owned();
    let marked = format!("{code}{}", console_marker(&blocks, "html", "Accounts «#}»"));
    let (plain_upload, plain) = render(&app, &code, "html").await;
    let (marked_upload, rendered) = render(&app, &marked, "html").await;
    assert_eq!(rendered, plain, "the comment renders to nothing");
    assert!(
        plain.contains("ACC-1001") && plain.contains("Accounts #}"),
        "{plain}"
    );
    assert_eq!(marked_upload["mappedFields"], generated["mappedFields"]);
    assert_eq!(plain_upload["mappedFields"], generated["mappedFields"]);
    let id = marked_upload["id"].as_str().expect("id");
    let resp = app
        .get(&token(), &format!("/v1/templates/{id}/source"))
        .await;
    resp.assert_status_is_ok();
    let source = resp.0.into_body().into_string().await.expect("text");
    assert_eq!(
        source, marked,
        "the source is kept as saved, comment included"
    );
}
