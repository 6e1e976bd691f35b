//! Rate limiting and the production checks of the released binary (issue 32): two API
//! processes sharing one budget through the machine's Redis (`REDIS_URL`, skipped with a
//! printed reason when unset), Redis unreachable failing closed and open, and a production
//! start with problems listing them all.
use crate::common;

use reporter_contract::services::service_url;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

/// `reporter serve` in memory on a free port with `env`, killed when dropped.
fn serve(env: &[(&str, &str)]) -> common::served::IsolatedServe {
    common::served::IsolatedServe::start(env)
}

/// `GET path` as client `client` (an `X-Forwarded-For` the trusted loopback proxy adds).
fn get_as(addr: &str, path: &str, client: &str) -> common::Answer {
    let headers = format!("X-Forwarded-For: {client}\r\n");
    common::try_request_with(addr, "GET", path, &common::token(), &headers, b"")
        .unwrap_or_else(|e| panic!("GET {path} on {addr}: {e:?}"))
}

/// The value of header `name` in a response head.
fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

fn json(body: &[u8]) -> serde_json::Value {
    serde_json::from_slice(body).expect("JSON body")
}

/// `host:port` of a `redis://host:port[/db]` URL.
fn redis_host(url: &str) -> String {
    let rest = url
        .strip_prefix("redis://")
        .expect("REDIS_URL is redis://host:port");
    rest.split('/').next().unwrap_or(rest).to_owned()
}

/// A client address no other run uses (documentation range), so a rerun within the window
/// starts with a fresh budget.
fn fresh_client() -> String {
    let u = uuid::Uuid::now_v7().as_u128();
    format!(
        "2001:db8:{:x}:{:x}::{:x}",
        (u >> 16) as u16,
        u as u16,
        (u >> 32) as u16
    )
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

#[test]
fn two_api_processes_share_one_budget_through_redis() {
    let Some(url) = service_url("REDIS_URL", "Redis") else {
        return;
    };
    let host = redis_host(&url);
    let env = [
        ("RATE_LIMIT_ENABLED", "true"),
        ("RATE_LIMIT_GLOBAL", "5"),
        ("RATE_LIMIT_WINDOW_SECONDS", "600"),
        ("REDIS_HOST", host.as_str()),
        ("TRUSTED_PROXIES", "127.0.0.1/32"),
        ("ALLOW_RATELIMIT_FAIL_OPEN", "false"),
    ];
    let (a, b) = (serve(&env), serve(&env));
    let client = fresh_client();
    // Five requests alternating between the processes: all pass, one budget counts down.
    for (i, addr) in [&a.addr, &b.addr, &a.addr, &b.addr, &a.addr]
        .iter()
        .enumerate()
    {
        let r = get_as(addr, "/v1/templates", &client);
        assert_eq!(
            r.status,
            200,
            "request {} of 5: {}",
            i + 1,
            String::from_utf8_lossy(&r.body)
        );
        assert_eq!(
            header(&r.head, "x-ratelimit-limit"),
            Some("5"),
            "{}",
            r.head
        );
        let remaining = (4 - i).to_string();
        assert_eq!(
            header(&r.head, "x-ratelimit-remaining"),
            Some(remaining.as_str()),
            "the processes count one budget: {}",
            r.head
        );
        let reset: u64 = header(&r.head, "x-ratelimit-reset")
            .expect("reset")
            .parse()
            .expect("seconds");
        assert!((1..=600).contains(&reset), "{reset}");
    }
    // The sixth, on the other process, is refused.
    let r = get_as(&b.addr, "/v1/templates", &client);
    assert_eq!(r.status, 429, "{}", String::from_utf8_lossy(&r.body));
    let body = json(&r.body);
    assert_eq!(body["code"], "TPL-0429");
    assert_eq!(body["title"], "Too Many Requests");
    let retry: u64 = header(&r.head, "retry-after")
        .expect("Retry-After")
        .parse()
        .expect("seconds");
    assert!((1..=600).contains(&retry), "{retry}");
    assert_eq!(
        body["message"],
        format!("Rate limit exceeded. Please retry after {retry} seconds.")
    );
    assert_eq!(header(&r.head, "x-ratelimit-limit"), Some("5"));
    assert_eq!(header(&r.head, "x-ratelimit-remaining"), Some("0"));
    assert!(header(&r.head, "x-ratelimit-reset").is_some());
    // Another client (the rightmost untrusted address) has its own budget, whatever a
    // client writes left of it.
    let other = get_as(
        &a.addr,
        "/v1/templates",
        &format!("{client}, {}", fresh_client()),
    );
    assert_eq!(other.status, 200);
    let forged = get_as(
        &a.addr,
        "/v1/templates",
        &format!("{}, {client}", fresh_client()),
    );
    assert_eq!(
        forged.status, 429,
        "a forged left part does not buy a fresh budget"
    );
    // The ops endpoints are exempt; readiness shows the limiter.
    assert_eq!(get_as(&a.addr, "/health", &client).status, 200);
    assert_eq!(get_as(&a.addr, "/version", &client).status, 200);
    let ready = get_as(&a.addr, "/readyz", &client);
    assert_eq!(
        ready.status,
        200,
        "{}",
        String::from_utf8_lossy(&ready.body)
    );
    assert_eq!(json(&ready.body)["checks"]["rateLimiter"]["status"], "up");
    let metrics = get_as(&b.addr, "/metrics", &client);
    let text = String::from_utf8_lossy(&metrics.body);
    assert!(
        text.contains(r#"reporter_rate_limit_refused_total{tier="global"} 1"#),
        "{text}"
    );
}

#[test]
fn unreachable_redis_fails_closed_with_503_and_is_counted() {
    let port = closed_port().to_string();
    let host = format!("127.0.0.1:{port}");
    let s = serve(&[
        ("RATE_LIMIT_ENABLED", "true"),
        ("REDIS_HOST", host.as_str()),
        ("RATE_LIMIT_REDIS_TIMEOUT_MS", "200"),
        ("ALLOW_RATELIMIT_FAIL_OPEN", "false"),
    ]);
    let client = fresh_client();
    let r = get_as(&s.addr, "/v1/templates", &client);
    assert_eq!(r.status, 503, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(json(&r.body)["code"], "TPL-0503");
    assert!(header(&r.head, "retry-after").is_some(), "{}", r.head);
    assert_eq!(get_as(&s.addr, "/health", &client).status, 200, "exempt");
    let ready = get_as(&s.addr, "/readyz", &client);
    assert_eq!(ready.status, 503);
    let check = &json(&ready.body)["checks"]["rateLimiter"];
    assert_eq!(check["status"], "down", "{check}");
    assert!(
        check["error"]
            .as_str()
            .unwrap_or("")
            .contains("fail closed"),
        "{check}"
    );
    let text = String::from_utf8_lossy(&get_as(&s.addr, "/metrics", &client).body).to_string();
    assert!(
        text.contains(r#"reporter_rate_limit_backend_errors_total{outcome="refused"} 1"#),
        "{text}"
    );
}

#[test]
fn unreachable_redis_fails_open_when_allowed_and_is_counted() {
    let port = closed_port().to_string();
    let host = format!("127.0.0.1:{port}");
    let s = serve(&[
        ("RATE_LIMIT_ENABLED", "true"),
        ("RATE_LIMIT_GLOBAL", "1"),
        ("REDIS_HOST", host.as_str()),
        ("RATE_LIMIT_REDIS_TIMEOUT_MS", "200"),
        ("ALLOW_RATELIMIT_FAIL_OPEN", "true"),
    ]);
    let client = fresh_client();
    for _ in 0..3 {
        let r = get_as(&s.addr, "/v1/templates", &client);
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        assert_eq!(
            header(&r.head, "x-ratelimit-limit"),
            None,
            "nothing was counted"
        );
    }
    let ready = get_as(&s.addr, "/readyz", &client);
    assert_eq!(
        ready.status, 200,
        "a limiter failing open does not fail readiness"
    );
    assert_eq!(
        json(&ready.body)["checks"]["rateLimiter"]["status"],
        "degraded"
    );
    let text = String::from_utf8_lossy(&get_as(&s.addr, "/metrics", &client).body).to_string();
    assert!(
        text.contains(r#"reporter_rate_limit_backend_errors_total{outcome="allowed"} 3"#),
        "{text}"
    );
}

#[test]
fn the_memory_limiter_refuses_past_the_limit_in_one_process() {
    let s = serve(&[
        ("RATE_LIMIT_ENABLED", "true"),
        ("RATE_LIMIT_DISPATCH", "2"),
        ("RATE_LIMIT_EXPORT", "1"),
    ]);
    let token = common::token();
    for expected in [404, 404, 429] {
        let r = common::try_request_with(
            &s.addr,
            "DELETE",
            "/v1/templates/00000000-0000-4000-8000-000000000000",
            &token,
            "",
            b"",
        )
        .expect("answer");
        assert_eq!(
            r.status,
            expected,
            "dispatch tier: {}",
            String::from_utf8_lossy(&r.body)
        );
    }
    let path = "/v1/reports/00000000-0000-4000-8000-000000000000/download";
    let first = common::try_request_with(&s.addr, "GET", path, &token, "", b"").expect("answer");
    assert_eq!(first.status, 404);
    let second = common::try_request_with(&s.addr, "GET", path, &token, "", b"").expect("answer");
    assert_eq!(second.status, 429, "export tier");
    let ready = get_as(&s.addr, "/readyz", "203.0.113.1");
    assert_eq!(json(&ready.body)["checks"]["rateLimiter"]["status"], "up");
}

#[test]
fn a_production_start_with_problems_exits_listing_them_all() {
    let mut c = Command::new(env!("CARGO_BIN_EXE_reporter"));
    let mut child = c
        .arg("serve")
        .env("TMPDIR", common::children_tmpdir())
        .env("SERVER_ADDRESS", common::free_addr())
        .env_remove("MONGO_URI")
        .env_remove("STREAMING_ENABLED")
        .env("ENV_NAME", "Production")
        .env("AUTH_ENABLED", "false")
        .env("RATE_LIMIT_ENABLED", "false")
        .env("ENABLE_TELEMETRY", "false")
        .env("RABBITMQ_URI", "amqp://reporter:CHANGE_ME@mq:5672/%2f")
        .env("CORS_ALLOWED_ORIGINS", "*")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317")
        .env("REDIS_HOST", "cache:6379")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("a production start with problems kept running");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("read");
    assert_eq!(status.code(), Some(2), "{err}");
    for var in [
        "AUTH_ENABLED:",
        "RATE_LIMIT_ENABLED:",
        "ENABLE_TELEMETRY:",
        "RABBITMQ_URI: still the placeholder CHANGE_ME",
        "RABBITMQ_URI: not an amqps:// URI",
        "CORS_ALLOWED_ORIGINS:",
        "OTEL_EXPORTER_OTLP_ENDPOINT:",
    ] {
        assert!(err.contains(var), "{var} missing from:\n{err}");
    }
}
