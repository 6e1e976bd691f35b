//! Cross-cutting behaviour over HTTP: authentication and scopes, tenancy, idempotency, ops
//! endpoints, security headers, error normalisation and the served spec.
use crate::common;

use common::*;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use poem::http::StatusCode;
use reporter::http::auth::Claims;
use reporter_ports::TenantId;
use reporter_ports::ports::{IdempotencyBegin, IdempotencyOwner, IdempotencyScope};
use serde_json::json;

fn claims(exp_offset_secs: i64) -> Claims {
    Claims {
        sub: Some("t".into()),
        exp: chrono::Utc::now().timestamp() + exp_offset_secs,
        scope: Some("templates:read".into()),
        tenant_id: None,
        iss: None,
        aud: None,
        iat: None,
    }
}

#[tokio::test]
async fn missing_malformed_forged_and_expired_tokens_get_401() {
    let t = start().await;
    let resp = t.client.get("/v1/templates").send().await;
    resp.assert_header("www-authenticate", "Bearer");
    expect_error(resp, 401, "TPL-0401").await;
    expect_error(
        t.client
            .get("/v1/templates")
            .header("authorization", "Basic abc")
            .send()
            .await,
        401,
        "TPL-0401",
    )
    .await;
    expect_error(
        t.client
            .get("/v1/templates")
            .header("authorization", "Bearer not.a.jwt")
            .send()
            .await,
        401,
        "TPL-0401",
    )
    .await;
    let forged = jsonwebtoken::encode(
        &Header::default(),
        &claims(3600),
        &EncodingKey::from_secret(b"another-secret-another-secret-0000"),
    )
    .unwrap();
    let body = expect_error(
        t.client
            .get("/v1/templates")
            .header("authorization", bearer(&forged))
            .send()
            .await,
        401,
        "TPL-0401",
    )
    .await;
    assert!(
        body["message"].as_str().unwrap().contains("signature"),
        "{body}"
    );
    let expired = jsonwebtoken::encode(
        &Header::default(),
        &claims(-3600),
        &EncodingKey::from_secret(SECRET.as_bytes()),
    )
    .unwrap();
    let body = expect_error(
        t.client
            .get("/v1/templates")
            .header("authorization", bearer(&expired))
            .send()
            .await,
        401,
        "TPL-0401",
    )
    .await;
    assert!(
        body["message"].as_str().unwrap().contains("expired"),
        "{body}"
    );
    // exp is required.
    let no_exp = jsonwebtoken::encode(
        &Header::default(),
        &json!({"sub": "x", "scope": "templates:read"}),
        &EncodingKey::from_secret(SECRET.as_bytes()),
    )
    .unwrap();
    expect_error(
        t.client
            .get("/v1/templates")
            .header("authorization", bearer(&no_exp))
            .send()
            .await,
        401,
        "TPL-0401",
    )
    .await;
    // The valid token works.
    let ok = jsonwebtoken::encode(
        &Header::default(),
        &claims(3600),
        &EncodingKey::from_secret(SECRET.as_bytes()),
    )
    .unwrap();
    t.client
        .get("/v1/templates")
        .header("authorization", bearer(&ok))
        .send()
        .await
        .assert_status_is_ok();
}

#[tokio::test]
async fn each_operation_requires_its_scope() {
    let t = start().await;
    let read_only = token_for(Some("default"), &["templates:read"]);
    expect_error(t.get(&read_only, "/v1/deadlines").await, 403, "TPL-0403").await;
    expect_error(t.get(&read_only, "/v1/data-sources").await, 403, "TPL-0403").await;
    expect_error(t.get(&read_only, "/v1/metrics").await, 403, "TPL-0403").await;
    let form = Form::new()
        .file("template", "t.tpl", b"x")
        .text("outputFormat", "txt");
    let body = expect_error(t.upload(&read_only, form).await, 403, "TPL-0403").await;
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("templates:write")
    );
    t.get(&read_only, "/v1/templates")
        .await
        .assert_status_is_ok();
    let none = token_for(Some("default"), &[]);
    expect_error(t.get(&none, "/v1/templates").await, 403, "TPL-0403").await;
}

/// Every operation of the published document, with the scope it declares
/// (`x-required-scopes`): `(method, path with its parameters filled in, scope)`.
fn operations_and_scopes() -> Vec<(String, String, String)> {
    let spec = reporter::http::spec::value(reporter::http::spec::DEFAULT_LIMITS);
    let mut out = Vec::new();
    for (path, item) in spec["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("an operation map") {
            let Some(scopes) = op["x-required-scopes"].as_array() else {
                assert!(
                    op.get("security").is_none(),
                    "{method} {path} needs a token but declares no scope"
                );
                continue;
            };
            assert_eq!(scopes.len(), 1, "{method} {path}: {scopes:?}");
            let filled = path
                .replace("{id}", "019826f4-6a9c-7b31-9d40-2f1e8c5a4b77")
                .replace("{dataSourceId}", "bank");
            let scope = scopes[0].as_str().expect("a scope").to_owned();
            out.push((method.to_uppercase(), filled, scope));
        }
    }
    out
}

/// Finding 9 of the security probe: the scope is checked before the body is read, on every
/// operation; a caller without it gets 403 whatever it sends, and a caller with it never does.
#[tokio::test]
async fn every_operation_checks_its_scope_before_reading_the_body() {
    let t = start().await;
    let operations = operations_and_scopes();
    // Counted, not written: every `/v1` operation of the document, each of which MUST
    // declare a scope (an operation without one is missing from `operations`).
    let spec = reporter::http::spec::value(reporter::http::spec::DEFAULT_LIMITS);
    let v1_operations: usize = spec["paths"]
        .as_object()
        .expect("paths")
        .iter()
        .filter(|(path, _)| path.starts_with("/v1/"))
        .map(|(_, item)| item.as_object().map_or(0, |ops| ops.len()))
        .sum();
    assert!(v1_operations > 20, "the document's operations were read");
    assert_eq!(
        operations.len(),
        v1_operations,
        "every /v1 operation declares its scope"
    );
    for (method, path, scope) in operations {
        let others: Vec<&str> = all_scopes().into_iter().filter(|s| *s != scope).collect();
        let send = |token: String| {
            let method = poem::http::Method::from_bytes(method.as_bytes()).expect("a method");
            t.client
                .request(method, &path)
                .header("authorization", bearer(&token))
                .header("content-type", "multipart/form-data; boundary=x")
                .body("--x\r\nnot a multipart body {")
                .send()
        };
        let refused = expect_error(
            send(token_for(Some("default"), &others)).await,
            403,
            "TPL-0403",
        )
        .await;
        assert!(
            refused["message"].as_str().unwrap_or("").contains(&scope),
            "{method} {path}: {refused}"
        );
        let with_scope = send(token_for(Some("default"), &[scope.as_str()])).await;
        assert_ne!(
            with_scope.0.status().as_u16(),
            403,
            "{method} {path} with only '{scope}'"
        );
        expect_error(send("not-a-token".into()).await, 401, "TPL-0401").await;
    }
}

async fn asymmetric(alg: Algorithm, private: &str, public: &str) {
    let t = start_with(Options {
        tweak: Some(if alg == Algorithm::ES256 {
            |r| {
                r.auth_jwt_secret = None;
                r.auth_jwt_public_key = Some(
                    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ec-public.pem").into(),
                );
            }
        } else {
            |r| {
                r.auth_jwt_secret = None;
                r.auth_jwt_public_key = Some(include_str!("../fixtures/rsa-public.pem").into());
            }
        }),
        ..Default::default()
    })
    .await;
    let key = match alg {
        Algorithm::ES256 => EncodingKey::from_ec_pem(private.as_bytes()).unwrap(),
        _ => EncodingKey::from_rsa_pem(private.as_bytes()).unwrap(),
    };
    let tok = jsonwebtoken::encode(&Header::new(alg), &claims(3600), &key).unwrap();
    t.client
        .get("/v1/templates")
        .header("authorization", bearer(&tok))
        .send()
        .await
        .assert_status_is_ok();
    // An HS256 token signed with the public key text must not pass (algorithm confusion).
    let confused = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims(3600),
        &EncodingKey::from_secret(public.as_bytes()),
    )
    .unwrap();
    expect_error(
        t.client
            .get("/v1/templates")
            .header("authorization", bearer(&confused))
            .send()
            .await,
        401,
        "TPL-0401",
    )
    .await;
}

#[tokio::test]
async fn rs256_and_es256_public_keys_verify_tokens() {
    asymmetric(
        Algorithm::RS256,
        include_str!("../fixtures/rsa-private.pem"),
        include_str!("../fixtures/rsa-public.pem"),
    )
    .await;
    asymmetric(
        Algorithm::ES256,
        include_str!("../fixtures/ec-private.pem"),
        include_str!("../fixtures/ec-public.pem"),
    )
    .await;
}

#[tokio::test]
async fn auth_can_be_turned_off_explicitly() {
    let t = start_with(Options {
        auth_off: true,
        ..Default::default()
    })
    .await;
    t.client
        .get("/v1/templates")
        .send()
        .await
        .assert_status_is_ok();
    t.client
        .get("/v1/deadlines")
        .send()
        .await
        .assert_status_is_ok();
}

#[tokio::test]
async fn tenants_never_see_each_others_data() {
    let t = start_with(Options {
        multi_tenant: true,
        ..Default::default()
    })
    .await;
    let all: Vec<&str> = reporter::http::auth::Scope::ALL
        .iter()
        .map(|s| s.as_str())
        .collect();
    let a = token_for(Some("tenant-a"), &all);
    let b = token_for(Some("tenant-b"), &all);
    let id = t.create_template(&a, "A's template").await;
    // Multi-tenant keys carry the tenant segment.
    assert!(
        t.app
            .ports()
            .storage
            .get(&format!("tenant-a/templates/{id}.tpl"))
            .await
            .unwrap()
            .is_some()
    );
    let path = format!("/v1/templates/{id}");
    expect_error(t.get(&b, &path).await, 404, "TPL-0011").await;
    expect_error(t.delete(&b, &path).await, 404, "TPL-0011").await;
    let form = Form::new().text("description", "hijack");
    let ct = form.content_type();
    let resp = t
        .client
        .patch(&path)
        .header("authorization", bearer(&b))
        .content_type(ct)
        .body(form.into_body())
        .send()
        .await;
    expect_error(resp, 404, "TPL-0011").await;
    assert_eq!(json(t.get(&b, "/v1/templates").await).await["total"], 0);
    assert_eq!(json(t.get(&b, "/v1/metrics").await).await["templates"], 0);
    assert_eq!(json(t.get(&a, "/v1/templates").await).await["total"], 1);
    assert_eq!(
        json(t.get(&a, &path).await).await["description"],
        "A's template"
    );
    // A token without a tenant, or with a malformed one, is refused.
    expect_error(
        t.get(&token_for(None, &all), "/v1/templates").await,
        401,
        "TPL-0401",
    )
    .await;
    expect_error(
        t.get(&token_for(Some("../x"), &all), "/v1/templates").await,
        401,
        "TPL-0401",
    )
    .await;
}

#[tokio::test]
async fn idempotent_upload_replays_the_stored_response() {
    let t = start().await;
    let tok = token();
    let send = || {
        let form = Form::new()
            .file("template", "t.tpl", STATEMENT_TPL.as_bytes())
            .text("outputFormat", "html")
            .text("description", "idem");
        let ct = form.content_type();
        t.client
            .post("/v1/templates")
            .header("authorization", bearer(&tok))
            .header("x-idempotency", "key-1")
            .content_type(ct)
            .body(form.into_body())
            .send()
    };
    let first = send().await;
    first.assert_status(StatusCode::CREATED);
    assert!(first.0.headers().get("x-idempotency-replayed").is_none());
    let first = json(first).await;
    let second = send().await;
    second.assert_status(StatusCode::CREATED);
    second.assert_header("x-idempotency-replayed", "true");
    assert_eq!(json(second).await, first);
    assert_eq!(
        json(t.get(&tok, "/v1/templates").await).await["total"],
        1,
        "the replay created nothing"
    );
}

/// Reserves `scope` as a concurrent request (that never renews) would, for `lease_s` seconds.
async fn reserve(t: &TestApp, scope: &IdempotencyScope, lease_s: i64) {
    let now = chrono::Utc::now();
    let begun = t
        .app
        .ports()
        .idempotency
        .begin(
            scope,
            IdempotencyOwner::new(),
            now,
            now + chrono::Duration::seconds(lease_s),
        )
        .await
        .unwrap();
    assert_eq!(begun, IdempotencyBegin::Started);
}

#[tokio::test]
async fn a_duplicate_in_flight_gets_409_and_a_failure_releases_the_key() {
    let t = start().await;
    let tok = token();
    // Reserve the key as a concurrent request would.
    let scope = IdempotencyScope {
        tenant: TenantId::default_tenant(),
        operation: "POST /v1/templates".into(),
        key: "busy".into(),
    };
    reserve(&t, &scope, 60).await;
    let form = Form::new()
        .file("template", "t.tpl", b"x")
        .text("outputFormat", "txt");
    let ct = form.content_type();
    let resp = t
        .client
        .post("/v1/templates")
        .header("authorization", bearer(&tok))
        .header("x-idempotency", "busy")
        .content_type(ct)
        .body(form.into_body())
        .send()
        .await;
    expect_error(resp, 409, "TPL-0039").await;

    // A request that fails releases its key: the corrected retry with the same key runs.
    let bad = Form::new()
        .file("template", "t.tpl", b"")
        .text("outputFormat", "txt");
    let ct = bad.content_type();
    let resp = t
        .client
        .post("/v1/templates")
        .header("authorization", bearer(&tok))
        .header("x-idempotency", "retry-me")
        .content_type(ct)
        .body(bad.into_body())
        .send()
        .await;
    expect_error(resp, 400, "TPL-0006").await;
    let good = Form::new()
        .file("template", "t.tpl", b"hello")
        .text("outputFormat", "txt");
    let ct = good.content_type();
    let resp = t
        .client
        .post("/v1/templates")
        .header("authorization", bearer(&tok))
        .header("x-idempotency", "retry-me")
        .content_type(ct)
        .body(good.into_body())
        .send()
        .await;
    resp.assert_status(StatusCode::CREATED);
    // Keys are scoped by tenant and operation, and validated.
    let form = Form::new()
        .file("template", "t.tpl", b"hello")
        .text("outputFormat", "txt");
    let ct = form.content_type();
    let long = "k".repeat(256);
    let resp = t
        .client
        .post("/v1/templates")
        .header("authorization", bearer(&tok))
        .header("x-idempotency", long)
        .content_type(ct)
        .body(form.into_body())
        .send()
        .await;
    expect_error(resp, 400, "TPL-0017").await;
}

#[tokio::test]
async fn ops_endpoints_are_public() {
    let t = start().await;
    let h = json(t.client.get("/health").send().await).await;
    assert_eq!(h, json!({"status": "ok"}));
    let r = t.client.get("/readyz").send().await;
    r.assert_status_is_ok();
    let r = json(r).await;
    assert_eq!(r["status"], "healthy");
    for check in ["store", "objectStorage", "dataSource:bank"] {
        assert_eq!(r["checks"][check]["status"], "up", "{r}");
    }
    let v = json(t.client.get("/version").send().await).await;
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    let m = t.client.get("/metrics").send().await;
    m.assert_status_is_ok();
    let text = m.0.into_body().into_string().await.unwrap();
    assert!(text.contains("reporter_http_requests_total"), "{text}");
}

#[tokio::test]
async fn swagger_ui_and_the_spec_are_served_offline() {
    let t = start().await;
    let ui = t.client.get("/swagger").send().await;
    ui.assert_status_is_ok();
    let html = ui.0.into_body().into_string().await.unwrap();
    assert!(
        html.contains("swagger-ui") || html.contains("SwaggerUI"),
        "embedded UI"
    );
    assert!(
        !html.contains("https://cdn") && !html.contains("unpkg.com"),
        "no CDN assets"
    );
    let spec = t
        .client
        .get("/openapi.json")
        .send()
        .await
        .0
        .into_body()
        .into_string()
        .await
        .unwrap();
    assert!(
        spec == include_str!("../../openapi/reporter.json"),
        "the served spec is the committed one"
    );
    let yaml = t
        .client
        .get("/openapi.yaml")
        .send()
        .await
        .0
        .into_body()
        .into_string()
        .await
        .unwrap();
    assert!(
        yaml == include_str!("../../openapi/reporter.yaml"),
        "the served YAML is the committed one"
    );
}

#[tokio::test]
async fn every_response_has_security_headers_and_echoes_the_request_id() {
    let t = start().await;
    for resp in [
        t.client
            .get("/health")
            .header("x-request-id", "abc-123")
            .send()
            .await,
        t.client
            .get("/v1/templates")
            .header("x-request-id", "abc-123")
            .send()
            .await,
        t.client
            .get("/nowhere")
            .header("x-request-id", "abc-123")
            .send()
            .await,
    ] {
        resp.assert_header("x-content-type-options", "nosniff");
        resp.assert_header("x-frame-options", "DENY");
        resp.assert_header("x-xss-protection", "0");
        resp.assert_header(
            "strict-transport-security",
            "max-age=31536000; includeSubDomains",
        );
        resp.assert_header("x-request-id", "abc-123");
    }
    let generated = t.client.get("/health").send().await;
    let id = generated
        .0
        .headers()
        .get("x-request-id")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    assert!(uuid::Uuid::parse_str(&id).is_ok());
}

#[tokio::test]
async fn unknown_routes_methods_and_malformed_bodies_get_clean_4xx() {
    let t = start().await;
    let tok = token();
    expect_error(
        t.client
            .get("/v1/nothing-here")
            .header("authorization", bearer(&tok))
            .send()
            .await,
        404,
        "TPL-0404",
    )
    .await;
    expect_error(
        t.client
            .put("/v1/templates")
            .header("authorization", bearer(&tok))
            .send()
            .await,
        405,
        "TPL-0405",
    )
    .await;
    let resp = t
        .client
        .post("/v1/deadlines")
        .header("authorization", bearer(&tok))
        .content_type("application/json")
        .body("{not json")
        .send()
        .await;
    expect_error(resp, 400, "TPL-0017").await;
    let resp = t
        .client
        .post("/v1/deadlines")
        .header("authorization", bearer(&tok))
        .content_type("application/json")
        .body("[1,2]")
        .send()
        .await;
    let status = resp.0.status().as_u16();
    assert_eq!(status, 400);
    let resp = t
        .client
        .post("/v1/deadlines")
        .header("authorization", bearer(&tok))
        .content_type("text/plain")
        .body("x")
        .send()
        .await;
    expect_error(resp, 400, "TPL-0415").await;
    let huge = vec![b'a'; 3 * 1024 * 1024];
    let resp = t
        .client
        .post("/v1/deadlines")
        .header("authorization", bearer(&tok))
        .content_type("application/json")
        .body(huge)
        .send()
        .await;
    expect_error(resp, 413, "TPL-0413").await;
}

#[tokio::test]
async fn method_not_allowed_lists_the_allowed_methods() {
    let t = start().await;
    let tok = token();
    for (method, path, allow) in [
        ("PUT", "/v1/templates", "GET, HEAD, POST"),
        (
            "POST",
            "/v1/deadlines/0198a1b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b",
            "DELETE, GET, HEAD, PATCH",
        ),
        ("DELETE", "/v1/deadlines/notifications", "GET, HEAD"),
        ("POST", "/health", "GET, HEAD"),
    ] {
        let req = match method {
            "PUT" => t.client.put(path),
            "POST" => t.client.post(path),
            _ => t.client.delete(path),
        };
        let resp = req.header("authorization", bearer(&tok)).send().await;
        resp.assert_header("allow", allow);
        expect_error(resp, 405, "TPL-0405").await;
    }
}

#[tokio::test]
async fn request_heads_over_their_bounds_get_the_error_body() {
    let t = start().await;
    let tok = token();
    let long = format!("/v1/templates?description={}", "a".repeat(9000));
    let body = expect_error(
        t.client
            .get(long)
            .header("authorization", bearer(&tok))
            .send()
            .await,
        414,
        "TPL-0414",
    )
    .await;
    assert_eq!(body["title"], "Request URI too long");
    let body = expect_error(
        t.client
            .get("/v1/templates")
            .header("authorization", bearer(&tok))
            .header("x-padding", "b".repeat(40_000))
            .send()
            .await,
        431,
        "TPL-0431",
    )
    .await;
    assert!(body["message"].as_str().unwrap().contains("32768"));
}

#[tokio::test]
async fn human_text_refuses_control_and_bidi_characters_everywhere() {
    let t = start().await;
    let tok = token();
    for bad in [
        "a\u{0}b",
        "esc\u{1b}[31m",
        "two\r\nlines",
        "tab\there",
        "x\u{202E}fdp.exe",
    ] {
        let mut body = deadline_body(30);
        body["name"] = json!(bad);
        let r = t.post_json(&tok, "/v1/deadlines", body).await;
        let e = expect_error(r, 400, "TPL-0064").await;
        assert!(e["fields"]["name"].is_string(), "{e}");
        let mut body = deadline_body(31);
        body["description"] = json!(bad);
        let r = t.post_json(&tok, "/v1/deadlines", body).await;
        expect_error(r, 400, "TPL-0064").await;
        let form = Form::new()
            .file("template", "t.tpl", b"{{ bank.accounts.0.branch }}")
            .text("outputFormat", "txt")
            .text("description", bad);
        let e = expect_error(t.upload(&tok, form).await, 400, "TPL-0064").await;
        assert!(e["fields"]["description"].is_string(), "{e}");
    }
    // Letters of every script, punctuation and emoji are text.
    let mut body = deadline_body(32);
    body["name"] = json!("Relatório — 你好 🙂");
    let r = t.post_json(&tok, "/v1/deadlines", body).await;
    r.assert_status(StatusCode::CREATED);
}

#[tokio::test]
async fn wrong_json_types_are_400_not_coerced() {
    let t = start().await;
    let tok = token();
    for (field, value) in [
        ("name", json!(123)),
        ("color", json!(true)),
        ("type", json!(["regulatory"])),
    ] {
        let mut body = deadline_body(40);
        body[field] = value;
        let r = t.post_json(&tok, "/v1/deadlines", body).await;
        let e = expect_error(r, 400, "TPL-0017").await;
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains("Expected input type"),
            "{field}: {e}"
        );
    }
    let r = t
        .post_json(
            &tok,
            "/v1/reports",
            json!({"templateId": 42, "filters": {}}),
        )
        .await;
    expect_error(r, 400, "TPL-0017").await;
}

#[tokio::test]
async fn headers_are_checked_once_where_the_request_enters() {
    let t = start().await;
    let tok = token();
    let id = t.create_template(&tok, "headers").await;
    for key in ["two words", " lead", &"k".repeat(256)] {
        let resp = t
            .client
            .post("/v1/reports")
            .header("authorization", bearer(&tok))
            .header("x-idempotency", key)
            .content_type("application/json")
            .body(json!({"templateId": id, "filters": {}}).to_string())
            .send()
            .await;
        let e = expect_error(resp, 400, "TPL-0017").await;
        assert!(e["fields"]["X-Idempotency"].is_string(), "{e}");
    }
    // A request id over the rule is replaced by a generated one, which is echoed and carried
    // to the report's job.
    let long = "r".repeat(10_000);
    let resp = t
        .client
        .post("/v1/reports")
        .header("authorization", bearer(&tok))
        .header("x-request-id", long.as_str())
        .content_type("application/json")
        .body(json!({"templateId": id, "filters": {}}).to_string())
        .send()
        .await;
    resp.assert_status(StatusCode::CREATED);
    let echoed = resp.0.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(uuid::Uuid::parse_str(&echoed).is_ok(), "{echoed}");
}

#[tokio::test]
async fn the_served_spec_points_at_the_server_that_serves_it() {
    let t = start().await;
    let spec = json(t.client.get("/openapi.json").send().await).await;
    assert_eq!(
        spec["servers"],
        json!([{"url": "/", "description": "the server serving this document"}])
    );
    let ui = t.client.get("/swagger/").send().await;
    ui.assert_status_is_ok();
    let html = ui.0.into_body().into_string().await.unwrap();
    assert!(
        html.contains(r#""url": "/""#),
        "Swagger UI uses the relative server"
    );
    assert!(!html.contains("127.0.0.1:4005"));
}

/// A reservation is a lease: a key whose holder stopped renewing it (its process died) is free
/// again once the lease ends, not after a fixed minute, and the retry runs once.
#[tokio::test]
async fn a_dead_holders_key_is_free_after_its_lease() {
    let t = start().await;
    let tok = token();
    let scope = IdempotencyScope {
        tenant: TenantId::default_tenant(),
        operation: "POST /v1/templates".into(),
        key: "orphan".into(),
    };
    // Reserved by a holder that never renews, with a lease ending in a second.
    reserve(&t, &scope, 1).await;
    let upload = || {
        let form = Form::new()
            .file("template", "t.tpl", b"hello")
            .text("outputFormat", "txt");
        let ct = form.content_type();
        t.client
            .post("/v1/templates")
            .header("authorization", bearer(&tok))
            .header("x-idempotency", "orphan")
            .content_type(ct)
            .body(form.into_body())
            .send()
    };
    expect_error(upload().await, 409, "TPL-0039").await;
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    let first = upload().await;
    first.assert_status(StatusCode::CREATED);
    let id = json(first).await["id"].clone();
    let replay = upload().await;
    replay.assert_header("x-idempotency-replayed", "true");
    assert_eq!(json(replay).await["id"], id, "the same template, once");
}
