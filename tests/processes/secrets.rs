//! The binary at `LOG_LEVEL=debug` with every secret set prints none of them: not in
//! `config check`, not in `serve`'s banner, logs or start-up errors (issue 30).
use crate::common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Every secret value ends with this; alphanumeric, so percent-encoding keeps it.
const TAG: &str = "4d2f9e7b";

fn secret(name: &str) -> String {
    format!("Secret{name}{TAG}")
}

/// The binary, isolated from the caller's connection variables, logging at `debug`.
fn reporter(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_reporter"));
    for (k, _) in std::env::vars() {
        if [
            "DATASOURCE_",
            "AUTH_",
            "STREAMING_",
            "MONGO",
            "RABBITMQ",
            "OBJECT_STORAGE_",
        ]
        .iter()
        .any(|p| k.starts_with(p))
        {
            c.env_remove(k);
        }
    }
    c.args(args)
        .env("LOG_LEVEL", "debug")
        .env("SERVER_ADDRESS", common::free_addr())
        .env("HEALTH_ADDRESS", common::free_addr())
        .env(
            "AUTH_JWT_SECRET",
            format!("SecretJwtSecretJwtSecretJwt{TAG}"),
        );
    c
}

/// A closed port of this machine: every connection to it fails at once (and is logged).
fn closed_addr() -> String {
    common::free_addr()
}

/// SQL and MongoDB data sources with a password each, and S3 keys; `serve` starts with them
/// (the sources and the bucket are reached lazily).
fn with_sources_and_s3(c: &mut Command) {
    let closed = closed_addr();
    let port = closed.rsplit(':').next().unwrap_or("1").to_owned();
    for (name, kind) in [("PG", "postgresql"), ("MY", "mysql"), ("MS", "sqlserver")] {
        c.env(format!("DATASOURCE_{name}_TYPE"), kind)
            .env(format!("DATASOURCE_{name}_HOST"), "127.0.0.1")
            .env(format!("DATASOURCE_{name}_PORT"), &port)
            .env(format!("DATASOURCE_{name}_DATABASE"), "ledger")
            .env(
                format!("DATASOURCE_{name}_PASSWORD"),
                secret(&format!("Ds{name}Password")),
            );
    }
    c.env("DATASOURCE_DOCS_TYPE", "mongodb")
        .env("DATASOURCE_DOCS_DATABASE", "docs")
        .env(
            "DATASOURCE_DOCS_URI",
            format!(
                "mongodb://docs:{}@{closed}/?serverSelectionTimeoutMS=300",
                secret("DsMongoUri")
            ),
        )
        .env("OBJECT_STORAGE_BACKEND", "s3")
        .env("OBJECT_STORAGE_ENDPOINT", format!("http://{closed}"))
        .env("OBJECT_STORAGE_DISABLE_SSL", "true")
        .env("OBJECT_STORAGE_ACCESS_KEY_ID", secret("S3AccessKeyId"))
        .env("OBJECT_STORAGE_SECRET_KEY", secret("S3SecretKey"));
}

/// RabbitMQ composed from its parts (password in `RABBITMQ_DEFAULT_PASS`) and events to an
/// AMQP URI with a password; `serve` stops when the broker does not answer.
fn with_rabbitmq(c: &mut Command) {
    let closed = closed_addr();
    let port = closed.rsplit(':').next().unwrap_or("1").to_owned();
    c.env("RABBITMQ_URI", "amqp")
        .env("RABBITMQ_HOST", "127.0.0.1")
        .env("RABBITMQ_PORT_AMQP", &port)
        .env("RABBITMQ_DEFAULT_USER", "reporter")
        .env("RABBITMQ_DEFAULT_PASS", secret("RabbitPass"))
        .env("STREAMING_ENABLED", "true")
        .env("RABBITMQ_REPORT_EVENTS_EXCHANGE", "reporter.events")
        .env("STREAMING_CLOUDEVENTS_SOURCE", "reporter")
        .env(
            "STREAMING_BROKERS",
            format!("amqp://events:{}@{closed}/%2f", secret("Brokers")),
        );
}

/// MongoDB state with the password in `MONGO_URI`; `serve` stops when it finds no server.
fn with_mongo(c: &mut Command) {
    c.env(
        "MONGO_URI",
        format!(
            "mongodb://reporter:{}@{}/",
            secret("MongoUri"),
            closed_addr()
        ),
    )
    .env("MONGO_SERVER_SELECTION_TIMEOUT_MS", "300");
}

/// Runs `c` until it exits or `limit` passes (then kills it); its stdout and stderr.
fn output_within(mut c: Command, limit: Duration) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let mut child = c
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).expect("stdout file"))
        .stderr(std::fs::File::create(&err).expect("stderr file"))
        .spawn()
        .expect("spawn");
    let started = Instant::now();
    while started.elapsed() < limit {
        if child.try_wait().expect("try_wait").is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    let read = |p: &std::path::Path| std::fs::read_to_string(p).unwrap_or_default();
    format!("{}\n{}", read(&out), read(&err))
}

fn assert_no_secret(what: &str, text: &str) {
    assert!(!text.contains(TAG), "{what} prints a secret:\n{text}");
}

#[test]
fn config_check_prints_no_secret() {
    let mut c = reporter(&["config", "check"]);
    with_sources_and_s3(&mut c);
    with_rabbitmq(&mut c);
    with_mongo(&mut c);
    let text = output_within(c, Duration::from_secs(20));
    assert!(text.contains("configuration OK"), "{text}");
    assert_no_secret("config check", &text);
}

#[test]
fn serve_at_debug_prints_no_secret_and_no_token() {
    let c = reporter(&["serve"]);
    let text = output_within(c, Duration::from_secs(6));
    assert!(text.contains("listening on http://"), "{text}");
    assert!(text.contains("DEBUG"), "debug logs expected:\n{text}");
    assert!(
        !text.contains("TOKEN="),
        "a key is configured: no token\n{text}"
    );
    assert_no_secret("serve", &text);
}

/// `serve` with data sources and S3 it cannot reach: its banner, and its logs while
/// `/readyz` probes them.
#[test]
fn serve_probing_unreachable_sources_prints_no_secret() {
    let addr = common::free_addr();
    let mut c = reporter(&["serve"]);
    c.env("SERVER_ADDRESS", &addr);
    with_sources_and_s3(&mut c);
    let probe = std::thread::spawn(move || {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(6) {
            if std::net::TcpStream::connect(&addr).is_ok() {
                common::request(&addr, "GET", "/readyz", "", "application/json", b"");
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    });
    let text = output_within(c, Duration::from_secs(10));
    assert!(probe.join().unwrap_or(false), "never listened:\n{text}");
    assert!(text.contains("data source 'pg': PostgreSQL"), "{text}");
    assert!(text.contains("DEBUG"), "debug logs expected:\n{text}");
    assert!(!text.contains("TOKEN="), "{text}");
    assert_no_secret("serve", &text);
}

/// `serve` stopping because RabbitMQ, or MongoDB, does not answer: its logs and the error.
#[test]
fn serve_failing_to_reach_its_servers_prints_no_secret() {
    for (what, setup, expected) in [
        (
            "RabbitMQ",
            with_rabbitmq as fn(&mut Command),
            "start-up failed: RABBITMQ_URI",
        ),
        ("MongoDB", with_mongo, "start-up failed: MongoDB"),
    ] {
        let mut c = reporter(&["serve"]);
        setup(&mut c);
        let text = output_within(c, Duration::from_secs(12));
        assert!(
            text.contains(expected),
            "{what}: {expected} expected:\n{text}"
        );
        assert!(!text.contains("TOKEN="), "{text}");
        assert_no_secret(what, &text);
    }
}
