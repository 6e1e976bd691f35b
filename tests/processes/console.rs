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
    let out = Command::new(&python)
        .arg(root.join("tests/console/scopes.py"))
        .arg(format!("http://{addr}"))
        .arg(&token)
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
