//! The `reporter` binary: help, config check, spec output and start-up banner.
use std::process::Command;

fn reporter() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_reporter"));
    // Isolate from the caller's environment: only what each test sets.
    for (k, _) in std::env::vars() {
        if k.starts_with("DATASOURCE_") || k.starts_with("AUTH_") || k.starts_with("STREAMING_") || k.starts_with("MONGO") || k.starts_with("RABBITMQ") {
            c.env_remove(k);
        }
    }
    c
}

#[test]
fn help_lists_every_variable_with_its_default() {
    let out = reporter().arg("--help").output().expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    for var in [
        "SERVER_ADDRESS",
        "AUTH_ENABLED",
        "AUTH_JWT_SECRET",
        "AUTH_JWT_PUBLIC_KEY",
        "MULTI_TENANT_ENABLED",
        "DEFAULT_TENANT_ID",
        "MAX_PAGINATION_LIMIT",
        "IDEMPOTENCY_TTL_SECONDS",
        "OBJECT_STORAGE_BACKEND",
        "DATASOURCE_<NAME>_TYPE",
    ] {
        assert!(text.contains(var), "--help does not mention {var}:\n{text}");
    }
    assert!(text.contains("[default: 127.0.0.1:4005]"), "{text}");
}

#[test]
fn config_check_lists_every_problem_and_fails() {
    let out = reporter()
        .args(["config", "check"])
        .env("MAX_PAGINATION_LIMIT", "abc")
        .env("SERVER_ADDRESS", "nowhere")
        .env("DATASOURCE_LEDGER_TYPE", "file")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("MAX_PAGINATION_LIMIT: 'abc' is not an integer (rule: an integer between 1 and 1000)"), "{err}");
    assert!(err.contains("SERVER_ADDRESS: 'nowhere' is not a socket address"), "{err}");
    assert!(err.contains("DATASOURCE_LEDGER_PATH: missing"), "{err}");
}

#[test]
fn config_check_accepts_the_defaults() {
    let out = reporter().args(["config", "check"]).output().expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_bad_value_stops_serve_naming_the_variable() {
    let out = reporter().arg("serve").env("AUTH_ENABLED", "maybe").output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("AUTH_ENABLED: 'maybe' is not a boolean"));
}

#[test]
fn openapi_command_prints_the_committed_spec() {
    let out = reporter().arg("openapi").output().expect("runs");
    assert!(out.status.success());
    let committed = include_str!("../openapi/reporter.json");
    assert_eq!(String::from_utf8_lossy(&out.stdout), committed, "run `just openapi` to regenerate openapi/");
    let yaml = reporter().args(["openapi", "--format", "yaml"]).output().expect("runs");
    assert_eq!(String::from_utf8_lossy(&yaml.stdout), include_str!("../openapi/reporter.yaml"));
}
