//! The Console of the released binary, as a person uses it: `reporter serve` in memory mode
//! (its generated key and development token, events published to `memory://`), its printed
//! console URL, the development token offered to this machine, and the browser journey of
//! tests/console/journey.py (Playwright driving the Debian chromium, axe-core on every
//! screen). The journey needs `PLAYWRIGHT_PYTHON` (a python3 with the `playwright` package,
//! exported by scripts/services.sh): without it the test is skipped with the reason, and
//! fails under `REPORTER_REQUIRE_SERVICES=1`.
use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `reporter serve` on `addr` in memory mode, publishing to the in-memory broker, with
/// `extra` variables; answers the process and its banner (up to the line naming the console).
fn serve(addr: &str, extra: &[(&str, &str)]) -> (Kill, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_reporter"));
    for (k, _) in std::env::vars() {
        if k.starts_with("DATASOURCE_")
            || k.starts_with("AUTH_")
            || k.starts_with("STREAMING_")
            || k.starts_with("MONGO")
            || k.starts_with("RABBITMQ")
            || k.starts_with("CONSOLE_")
        {
            c.env_remove(k);
        }
    }
    let mut child = c
        .arg("serve")
        .env("TMPDIR", common::children_tmpdir())
        .env("SERVER_ADDRESS", addr)
        .env("LOG_LEVEL", "warn")
        .env("STREAMING_ENABLED", "true")
        .env("STREAMING_BROKERS", "memory://")
        .env("RABBITMQ_REPORT_EVENTS_EXCHANGE", "reporter.events")
        .env("STREAMING_CLOUDEVENTS_SOURCE", "reporter")
        .envs(extra.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn reporter serve");
    let stdout = child.stdout.take().expect("stdout");
    let keyed = extra.iter().any(|(k, _)| *k == "AUTH_JWT_SECRET");
    let mut banner = String::new();
    let mut lines = BufReader::new(stdout).lines();
    for line in lines.by_ref().map_while(Result::ok).take(40) {
        banner.push_str(&line);
        banner.push('\n');
        // The last line: the curl line with a development token, the console's with a key.
        if line.contains("curl -s") || (keyed && line.contains("Console:")) {
            break;
        }
    }
    // Keep reading stdout so the process never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    let mut proc = Kill(child);
    common::wait_listening(addr, &mut proc.0, Duration::from_secs(20));
    (proc, banner)
}

#[test]
fn serve_prints_the_console_url_and_offers_the_dev_token_to_this_machine() {
    let addr = common::free_addr();
    let (_proc, banner) = serve(&addr, &[]);
    assert!(
        banner.contains(&format!("Console: http://{addr}/console/")),
        "{banner}"
    );
    let token = banner
        .lines()
        .find_map(|l| l.trim().strip_prefix("export TOKEN="))
        .unwrap_or_else(|| panic!("no token in the banner:\n{banner}"))
        .to_owned();
    let (status, body) = common::request(&addr, "GET", "/console/dev-token", "", "text/plain", b"");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(json["token"], token.as_str());
    let (status, body) = common::request(&addr, "GET", "/console/", "", "text/plain", b"");
    assert_eq!(status, 200);
    assert!(String::from_utf8_lossy(&body).contains("Reporter Console"));
}

#[test]
fn the_console_journey_in_a_real_browser() {
    let Some(python) =
        reporter_contract::services::service_url("PLAYWRIGHT_PYTHON", "Python with Playwright")
    else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let addr = common::free_addr();
    let (_proc, _banner) = serve(&addr, &[]);
    let shots = std::env::var("CONSOLE_SCREENSHOTS_DIR").map_or_else(
        |_| std::env::temp_dir().join(reporter_contract::services::unique_name("console_shots")),
        std::path::PathBuf::from,
    );
    let out = Command::new(&python)
        .arg(root.join("tests/console/journey.py"))
        .arg(format!("http://{addr}"))
        .arg(root.join("examples"))
        .arg(&shots)
        .arg(root.join("tests/console/axe.min.js"))
        .output()
        .expect("run the Playwright journey");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "the browser journey failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let figures: serde_json::Value = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no figures line in the journey's output:\n{stdout}"));
    let per_screen = |key: &str| {
        figures[key]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    };
    reporter_contract::figure!(
        "CONSOLE first contentful paint per screen, fresh load, headless Chromium (ms): {}\n\
         CONSOLE screen ready (its data shown) per screen (ms): {}\n\
         CONSOLE assets: {} files, {} bytes, {} bytes gzip-compressed (each file at level 9)",
        per_screen("firstContentfulPaintMs"),
        per_screen("screenReadyMs"),
        figures["assets"]["files"],
        figures["assets"]["bytes"],
        figures["assets"]["gzipBytes"],
    );
    if std::env::var("CONSOLE_SCREENSHOTS_DIR").is_err() {
        let _ = std::fs::remove_dir_all(&shots);
    }
}

#[test]
fn the_console_follows_the_tokens_scopes_in_a_real_browser() {
    let Some(python) =
        reporter_contract::services::service_url("PLAYWRIGHT_PYTHON", "Python with Playwright")
    else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let addr = common::free_addr();
    let (_proc, banner) = serve(&addr, &[("AUTH_JWT_SECRET", common::SECRET)]);
    assert!(!banner.contains("export TOKEN="), "{banner}");
    let (status, _) = common::request(&addr, "GET", "/console/dev-token", "", "text/plain", b"");
    assert_eq!(status, 204, "no development token with a configured key");
    let claims = reporter::http::auth::Claims {
        sub: Some("reader".into()),
        exp: (chrono::Utc::now() + chrono::Duration::hours(1)).timestamp(),
        scope: Some("templates:read".into()),
        tenant_id: None,
        iss: None,
        aud: None,
        iat: None,
    };
    let token = reporter::http::auth::mint_hs256(common::SECRET.as_bytes(), &claims).unwrap();
    let streaming_reader = reporter::http::auth::mint_hs256(
        common::SECRET.as_bytes(),
        &reporter::http::auth::Claims {
            scope: Some("streaming:read".into()),
            ..claims
        },
    )
    .unwrap();
    let out = Command::new(&python)
        .arg(root.join("tests/console/scopes.py"))
        .arg(format!("http://{addr}"))
        .arg(&token)
        .arg(&streaming_reader)
        .output()
        .expect("run the Playwright scopes check");
    assert!(
        out.status.success(),
        "the scopes check failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The broker's side of the parked-events journey: an events exchange declared by the test
/// the way an operator may have declared it, without `alternate-exchange` and with no
/// binding, so the broker returns every event (mandatory publish) and Reporter parks it; a
/// tail queue bound only when the test wants the redriven events to be routable.
struct UnroutableExchange {
    uri: String,
    exchange: String,
    rt: tokio::runtime::Runtime,
}

impl UnroutableExchange {
    fn declare(uri: &str) -> Self {
        use lapin::options::ExchangeDeclareOptions;
        let exchange = reporter_contract::services::unique_name("reporter_console_parked");
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let conn = lapin::Connection::connect(uri, lapin::ConnectionProperties::default())
                .await
                .expect("connect to RabbitMQ");
            let ch = conn.create_channel().await.expect("channel");
            ch.exchange_declare(
                exchange.as_str().into(),
                lapin::ExchangeKind::Topic,
                ExchangeDeclareOptions {
                    durable: true,
                    ..Default::default()
                },
                lapin::types::FieldTable::default(),
            )
            .await
            .expect("declare the exchange without alternate-exchange");
            let _ = conn.close(200, "declared".into()).await;
        });
        Self {
            uri: uri.to_owned(),
            exchange,
            rt,
        }
    }

    /// From now on every event is routable: a tail queue bound with `#`.
    fn tail(&self) -> reporter_adapter_rabbitmq::tail::Tail {
        self.rt
            .block_on(reporter_adapter_rabbitmq::tail::tail(
                &self.uri,
                &self.exchange,
                "#",
            ))
            .expect("tail")
    }
}

impl Drop for UnroutableExchange {
    /// Removes the exchange and what Reporter declared beside it (its alternate exchange and
    /// queue, `<exchange>.unroutable`, which this exchange never used).
    fn drop(&mut self) {
        use lapin::options::{ExchangeDeleteOptions, QueueDeleteOptions};
        let (uri, exchange) = (self.uri.clone(), self.exchange.clone());
        self.rt.block_on(async move {
            let Ok(conn) =
                lapin::Connection::connect(&uri, lapin::ConnectionProperties::default()).await
            else {
                return;
            };
            let alternate = format!("{exchange}.unroutable");
            if let Ok(ch) = conn.create_channel().await {
                let _ = ch
                    .queue_delete(alternate.as_str().into(), QueueDeleteOptions::default())
                    .await;
                for e in [&alternate, &exchange] {
                    let _ = ch
                        .exchange_delete(e.as_str().into(), ExchangeDeleteOptions::default())
                        .await;
                }
            }
            let _ = conn.close(200, "done".into()).await;
        });
    }
}

/// `GET` `path` as JSON with `token`.
fn get_json(addr: &str, token: &str, path: &str) -> serde_json::Value {
    let (status, body) = common::request(addr, "GET", path, token, "application/json", b"");
    assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).expect("JSON")
}

/// Parked events in a real `reporter serve` (memory state, events to a real RabbitMQ): the
/// events exchange has no `alternate-exchange` and no binding, so the broker returns a new
/// deadline's event and, with `STREAMING_OUTBOX_MAX_ATTEMPTS=1`, Reporter parks it. Then the
/// test binds a queue (the event becomes routable) and tests/console/parked.py, in Chromium,
/// signs in, sees the parked event on the Events screen (its ce-id, key, reason), checks the
/// screen with axe-core and redrives it; the list empties and the event reaches the queue
/// with its original ce-id.
#[test]
fn the_events_screen_shows_a_parked_event_and_redrives_it_in_a_real_browser() {
    let (Some(python), Some(uri)) = (
        reporter_contract::services::service_url("PLAYWRIGHT_PYTHON", "Python with Playwright"),
        reporter_contract::services::service_url("RABBITMQ_URI", "RabbitMQ"),
    ) else {
        return;
    };
    use futures_util::StreamExt;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let broker = UnroutableExchange::declare(&uri);
    let addr = common::free_addr();
    let (_proc, banner) = serve(
        &addr,
        &[
            ("STREAMING_BROKERS", uri.as_str()),
            ("RABBITMQ_REPORT_EVENTS_EXCHANGE", broker.exchange.as_str()),
            ("STREAMING_OUTBOX_MAX_ATTEMPTS", "1"),
        ],
    );
    let token = banner
        .lines()
        .find_map(|l| l.trim().strip_prefix("export TOKEN="))
        .unwrap_or_else(|| panic!("no token in the banner:\n{banner}"))
        .to_owned();
    let due = (chrono::Utc::now() + chrono::Duration::days(20))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let body = serde_json::json!({
        "name": "Parked in the console", "type": "regulatory", "dueDate": due,
        "frequency": "once", "color": "#1E88E5"
    });
    let (status, created) = common::request(
        &addr,
        "POST",
        "/v1/deadlines",
        &token,
        "application/json",
        body.to_string().as_bytes(),
    );
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&created));
    let deadline: serde_json::Value = serde_json::from_slice(&created).unwrap();
    let deadline_id = deadline["id"].as_str().unwrap().to_owned();
    let mut parked = serde_json::Value::Null;
    for _ in 0..200 {
        parked = get_json(&addr, &token, "/v1/streaming/outbox/parked");
        if parked["items"].as_array().is_some_and(|a| !a.is_empty()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let items = parked["items"].as_array().expect("items");
    assert_eq!(items.len(), 1, "the returned event is parked: {parked}");
    assert_eq!(items[0]["eventKey"], "deadline.created", "{parked}");
    assert_eq!(items[0]["subject"], deadline_id.as_str(), "{parked}");
    let ce_id = items[0]["ceId"].as_str().unwrap().to_owned();
    let reason = items[0]["reason"].as_str().unwrap_or_default().to_owned();
    assert!(reason.contains("NO_ROUTE"), "the broker's return: {reason}");

    let mut tail = broker.tail();
    let mut check = Command::new(&python);
    check
        .arg(root.join("tests/console/parked.py"))
        .arg(format!("http://{addr}"))
        .arg(&ce_id)
        .arg(root.join("tests/console/axe.min.js"));
    if let Ok(shots) = std::env::var("CONSOLE_SCREENSHOTS_DIR") {
        check.arg(shots);
    }
    let out = check
        .output()
        .expect("run the Playwright parked-events check");
    assert!(
        out.status.success(),
        "the parked-events check failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let after = get_json(&addr, &token, "/v1/streaming/outbox/parked");
    assert_eq!(after, serde_json::json!({"items": []}), "redriven");
    let got = broker.rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(30), tail.next())
            .await
            .expect("the redriven event reaches the queue")
            .expect("tail open")
            .expect("tail event")
    });
    assert_eq!(got.routing_key, "deadline.created");
    assert_eq!(got.headers["ce-id"], ce_id, "the original ce-id");
    assert_eq!(got.headers["ce-subject"], deadline_id);
}
