//! A team's Helm values from the original, every setting at the chart's default, given to
//! the released binary: each setting has the outcome docs/original-settings.md gives it.
use crate::common;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

/// The chart's defaults (tests/fixtures/helm/chart-defaults.env).
fn chart_defaults() -> Vec<(String, String)> {
    include_str!("../fixtures/helm/chart-defaults.env")
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// `docs/original-settings.md`'s rows: (setting, outcome).
fn documented() -> Vec<(String, String)> {
    include_str!("../../docs/original-settings.md")
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| {
            let (name, rest) = l.split_once("` | ")?;
            let outcome = rest.split(" |").next()?;
            Some((name.to_owned(), outcome.to_owned()))
        })
        .collect()
}

/// `reporter <args>` with only the chart's defaults and `overrides` in its environment.
fn reporter(args: &[&str], overrides: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_reporter"));
    c.args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("TMPDIR", common::children_tmpdir())
        .envs(chart_defaults())
        .envs(overrides.iter().copied());
    c.output().expect("runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The names `reporter config check` lists as having no effect.
fn listed_without_effect(out: &str) -> BTreeSet<String> {
    out.lines()
        .find_map(|l| l.split_once("no effect here (docs/original-settings.md): "))
        .map(|(_, names)| names.split(", ").map(str::to_owned).collect())
        .unwrap_or_default()
}

#[test]
fn the_charts_defaults_pass_and_each_setting_has_its_documented_outcome() {
    let docs = documented();
    assert_eq!(
        docs.len(),
        chart_defaults().len(),
        "one row per chart setting"
    );
    // The one restricted default: the event contract's ce-source is `reporter`.
    let out = reporter(&["config", "check"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let problems: Vec<String> = text(&out)
        .lines()
        .filter_map(|l| l.strip_prefix("  - "))
        .map(|l| l.split(':').next().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(problems, ["STREAMING_CLOUDEVENTS_SOURCE"], "{}", text(&out));
    let out = reporter(
        &["config", "check"],
        &[("STREAMING_CLOUDEVENTS_SOURCE", "reporter")],
    );
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    // Mapped: SERVER_PORT agrees with SERVER_ADDRESS=:4005, every interface.
    assert!(all.contains("listening on 0.0.0.0:4005"), "{all}");
    let set: BTreeSet<String> = chart_defaults()
        .into_iter()
        .filter(|(_, v)| !v.trim().is_empty())
        .map(|(k, _)| k)
        .collect();
    let expected: BTreeSet<String> = docs
        .iter()
        .filter(|(name, outcome)| {
            set.contains(name) && (outcome == "no effect" || outcome == "refused when")
        })
        .map(|(name, _)| name.clone())
        .collect();
    assert_eq!(listed_without_effect(&all), expected, "{all}");
    for (name, outcome) in &docs {
        assert!(
            outcome != "refused" || !set.contains(name),
            "{name} is refused by the docs but the chart's defaults passed"
        );
    }
}

#[test]
fn a_refused_when_setting_in_its_case_stops_start_up_naming_it() {
    let out = reporter(&["config", "check"], &[("FETCHER_ENABLED", "true")]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("FETCHER_ENABLED: 'true'"),
        "{}",
        text(&out)
    );
    let out = reporter(&["config", "check"], &[("PLUGIN_AUTH_ENABLED", "true")]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let all = text(&out);
    assert!(all.contains("PLUGIN_AUTH_ADDRESS:"), "{all}");
    assert!(all.contains("AUTH_JWT_PUBLIC_KEY"), "{all}");
}

#[test]
fn run_mode_chooses_the_role_and_a_disagreeing_subcommand_stops() {
    let out = reporter(&["serve"], &[("RUN_MODE", "worker")]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("RUN_MODE=worker asks for `reporter worker`"),
        "{}",
        text(&out)
    );
    let out = reporter(&["config", "check"], &[("RUN_MODE", "both")]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("RUN_MODE: 'both'"), "{}", text(&out));
}

/// `reporter` (no subcommand) in memory with `env`, killed when dropped.
struct Served {
    child: Child,
    addr: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn served(env: &[(&str, &str)]) -> Served {
    let addr = common::free_addr();
    let port = addr.rsplit(':').next().unwrap_or_default().to_owned();
    let mut c = Command::new(env!("CARGO_BIN_EXE_reporter"));
    c.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("TMPDIR", common::children_tmpdir())
        .env("AUTH_JWT_SECRET", common::SECRET)
        .env("LOG_LEVEL", "error")
        .env("SERVER_PORT", &port)
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = c.spawn().expect("spawn reporter");
    let local = format!("127.0.0.1:{port}");
    common::wait_listening(&local, &mut child, Duration::from_secs(60));
    Served { child, addr: local }
}

/// One request on a fresh connection: the status and the head.
fn request(addr: &str, head: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    s.write_all(format!("{head}Host: test\r\nConnection: close\r\n\r\n").as_bytes())
        .expect("send");
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let head = answer
        .split("\r\n\r\n")
        .next()
        .unwrap_or_default()
        .to_owned();
    (status, head.to_ascii_lowercase())
}

#[test]
fn server_port_swagger_enabled_and_cors_lists_shape_what_is_served() {
    let s = served(&[
        ("RUN_MODE", "all"),
        ("SWAGGER_ENABLED", "false"),
        ("CORS_ALLOWED_ORIGINS", "https://console.example.com"),
        ("CORS_ALLOWED_METHODS", "GET,POST"),
        ("CORS_ALLOWED_HEADERS", "Authorization,Content-Type"),
    ]);
    assert_eq!(request(&s.addr, "GET /swagger/ HTTP/1.1\r\n").0, 404);
    assert_eq!(request(&s.addr, "GET /openapi.json HTTP/1.1\r\n").0, 200);
    let preflight = |method: &str, header: &str| {
        request(
            &s.addr,
            &format!(
                "OPTIONS /v1/templates HTTP/1.1\r\nOrigin: https://console.example.com\r\n\
                 Access-Control-Request-Method: {method}\r\n\
                 Access-Control-Request-Headers: {header}\r\n"
            ),
        )
    };
    let (ok, head) = preflight("POST", "authorization");
    assert_eq!(ok, 200, "{head}");
    assert!(head.contains("access-control-allow-methods"), "{head}");
    assert_ne!(
        preflight("DELETE", "authorization").0,
        200,
        "a method not listed"
    );
    assert_ne!(preflight("POST", "x-other").0, 200, "a header not listed");
}

#[test]
fn swagger_is_served_by_default() {
    let s = served(&[]);
    assert_eq!(request(&s.addr, "GET /swagger/ HTTP/1.1\r\n").0, 200);
}
