//! Shared harness of the end-to-end suites: the complete HTTP endpoint (every middleware,
//! the real wiring) driven through poem's test client, and a token minter.
#![allow(dead_code)]

use poem::Response;
use poem::endpoint::BoxEndpoint;
use poem::test::{TestClient, TestResponse};
use reporter::app::App;
use reporter::config::RawConfig;
use reporter::http::auth::{Claims, Scope, mint_hs256};
use std::sync::Arc;

/// The HS256 secret every test instance uses.
pub const SECRET: &str = "test-secret-test-secret-test-secret-0123";

/// A running instance.
pub struct TestApp {
    /// HTTP client bound to the endpoint.
    pub client: TestClient<BoxEndpoint<'static, Response>>,
    /// The application (to reach ports directly in white-box checks).
    pub app: Arc<App>,
    /// The in-memory broker, when streaming is on with `memory://`.
    pub broker: Option<reporter_adapter_memory::MemoryPublisher>,
    _example: Option<reporter::wiring::TempDirGuard>,
    _stop: tokio::sync::watch::Sender<bool>,
}

/// Options of an instance.
#[derive(Default, Clone)]
pub struct Options {
    /// Multi-tenant mode.
    pub multi_tenant: bool,
    /// `AUTH_ENABLED=false`.
    pub auth_off: bool,
    /// Extra `KEY=VALUE` environment (data sources).
    pub env: Vec<(String, String)>,
    /// Raw config tweak.
    pub tweak: Option<fn(&mut RawConfig)>,
    /// Publication on with the in-memory broker.
    pub streaming: bool,
}

/// Starts an instance with default options.
pub async fn start() -> TestApp {
    start_with(Options::default()).await
}

/// Starts an instance.
pub async fn start_with(opts: Options) -> TestApp {
    let mut raw = RawConfig::defaults();
    raw.auth_jwt_secret = Some(SECRET.into());
    if opts.multi_tenant {
        raw.multi_tenant_enabled = "true".into();
    }
    if opts.auth_off {
        raw.auth_enabled = "false".into();
    }
    raw.log_level = "warn".into();
    if opts.streaming {
        raw.streaming_enabled = "true".into();
        raw.events_exchange = Some("reporter.events".into());
        raw.streaming_brokers = Some("memory://".into());
        raw.streaming_source = Some("reporter".into());
        raw.streaming_dispatch_poll_ms = "50".into();
        raw.streaming_cb_min_requests = "4".into();
        raw.streaming_cb_timeout_s = "1".into();
    }
    if let Some(t) = opts.tweak {
        t(&mut raw);
    }
    let config = raw.validate(&opts.env).expect("valid test configuration");
    let built = reporter::wiring::build(&config, reporter::wiring::Role::Serve)
        .await
        .expect("wiring");
    let app = built.app.clone();
    let broker = built.http.streaming.memory_broker.clone();
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    if let Some(d) = built.dispatcher {
        tokio::spawn(d.run(stop_rx.clone()));
    }
    if let Some(w) = built.worker {
        tokio::spawn(w.run(stop_rx));
    }
    let endpoint = reporter::http::endpoint(built.app, built.http).expect("endpoint");
    TestApp {
        client: TestClient::new(endpoint),
        app,
        broker,
        _example: built.example_dir,
        _stop: stop,
    }
}

/// A token for `tenant` with the given scopes, valid for an hour.
pub fn token_for(tenant: Option<&str>, scopes: &[&str]) -> String {
    let claims = Claims {
        sub: Some("tester".into()),
        exp: (chrono::Utc::now() + chrono::Duration::hours(1)).timestamp(),
        scope: Some(scopes.join(" ")),
        tenant_id: tenant.map(str::to_owned),
        iss: None,
        aud: None,
    };
    mint_hs256(SECRET.as_bytes(), &claims).expect("mint")
}

/// A token with every scope.
pub fn token() -> String {
    let all: Vec<&str> = Scope::ALL.iter().map(|s| s.as_str()).collect();
    token_for(Some("default"), &all)
}

/// `Bearer <token>`.
pub fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// Reads a JSON body.
pub async fn json(resp: TestResponse) -> serde_json::Value {
    resp.0.into_body().into_json().await.expect("JSON body")
}

/// Asserts the status and the error code of an error response, returns the body.
pub async fn expect_error(resp: TestResponse, status: u16, code: &str) -> serde_json::Value {
    let actual = resp.0.status().as_u16();
    let body: serde_json::Value = resp
        .0
        .into_body()
        .into_json()
        .await
        .unwrap_or(serde_json::Value::Null);
    assert_eq!(actual, status, "unexpected status; body: {body}");
    assert_eq!(body["code"], code, "unexpected code; body: {body}");
    assert!(
        body["title"].is_string() && body["message"].is_string(),
        "error body shape: {body}"
    );
    body
}

/// A multipart body built by hand (so tests control every byte).
pub struct Form {
    boundary: String,
    body: Vec<u8>,
}

impl Default for Form {
    fn default() -> Self {
        Self::new()
    }
}

impl Form {
    /// An empty form.
    pub fn new() -> Self {
        Self {
            boundary: format!("reporter-test-{}", uuid::Uuid::new_v4().simple()),
            body: Vec::new(),
        }
    }
    /// Adds a text field.
    pub fn text(mut self, name: &str, value: &str) -> Self {
        self.body.extend_from_slice(
            format!(
                "--{}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n",
                self.boundary
            )
            .as_bytes(),
        );
        self
    }
    /// Adds a file field.
    pub fn file(mut self, name: &str, file_name: &str, content: &[u8]) -> Self {
        self.body.extend_from_slice(
            format!(
                "--{}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{file_name}\"\r\nContent-Type: application/octet-stream\r\n\r\n",
                self.boundary
            )
            .as_bytes(),
        );
        self.body.extend_from_slice(content);
        self.body.extend_from_slice(b"\r\n");
        self
    }
    /// Content type header value.
    pub fn content_type(&self) -> String {
        format!("multipart/form-data; boundary={}", self.boundary)
    }
    /// Body bytes.
    pub fn into_body(mut self) -> Vec<u8> {
        self.body
            .extend_from_slice(format!("--{}--\r\n", self.boundary).as_bytes());
        self.body
    }
}

/// The sample HTML template shipped in `examples/templates`.
pub const STATEMENT_TPL: &str = include_str!("../../examples/templates/statement.html.tpl");
/// The sample CSV template.
pub const CSV_TPL: &str = include_str!("../../examples/templates/transactions.csv.tpl");

impl TestApp {
    /// Uploads a template; returns the raw response.
    pub async fn upload(&self, token: &str, form: Form) -> TestResponse {
        let ct = form.content_type();
        self.client
            .post("/v1/templates")
            .header("authorization", bearer(token))
            .content_type(ct)
            .body(form.into_body())
            .send()
            .await
    }

    /// Uploads the sample HTML template and returns its id.
    pub async fn create_template(&self, token: &str, description: &str) -> String {
        let form = Form::new()
            .file("template", "statement.tpl", STATEMENT_TPL.as_bytes())
            .text("outputFormat", "html")
            .text("description", description);
        let resp = self.upload(token, form).await;
        resp.assert_status(poem::http::StatusCode::CREATED);
        json(resp).await["id"].as_str().expect("id").to_owned()
    }

    /// GET with a token.
    pub async fn get(&self, token: &str, path: &str) -> TestResponse {
        self.client
            .get(path)
            .header("authorization", bearer(token))
            .send()
            .await
    }

    /// DELETE with a token.
    pub async fn delete(&self, token: &str, path: &str) -> TestResponse {
        self.client
            .delete(path)
            .header("authorization", bearer(token))
            .send()
            .await
    }

    /// POST JSON with a token.
    pub async fn post_json(
        &self,
        token: &str,
        path: &str,
        body: serde_json::Value,
    ) -> TestResponse {
        self.client
            .post(path)
            .header("authorization", bearer(token))
            .body_json(&body)
            .send()
            .await
    }

    /// PATCH JSON with a token.
    pub async fn patch_json(
        &self,
        token: &str,
        path: &str,
        body: serde_json::Value,
    ) -> TestResponse {
        self.client
            .patch(path)
            .header("authorization", bearer(token))
            .body_json(&body)
            .send()
            .await
    }

    /// Creates a deadline from a JSON body and returns the parsed response.
    pub async fn create_deadline(&self, token: &str, body: serde_json::Value) -> serde_json::Value {
        let resp = self.post_json(token, "/v1/deadlines", body).await;
        resp.assert_status(poem::http::StatusCode::CREATED);
        json(resp).await
    }
}

/// A valid deadline body due `days` from now.
pub fn deadline_body(days: i64) -> serde_json::Value {
    serde_json::json!({
        "name": "Liquidity report",
        "type": "regulatory",
        "dueDate": (chrono::Utc::now() + chrono::Duration::days(days)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "frequency": "once",
        "color": "#1E88E5",
        "notifyDaysBefore": 5
    })
}
