//! The `reporter` binary: help, config check, spec output and start-up banner.
use crate::common;

use std::process::Command;

/// Fails with the first differing line instead of dumping two whole documents.
fn assert_same(actual: &str, committed: &str, what: &str) {
    if actual == committed {
        return;
    }
    let line = actual
        .lines()
        .zip(committed.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| actual.lines().count().min(committed.lines().count()));
    panic!(
        "{what} drifted from the code at line {}:\n  generated: {:?}\n  committed: {:?}\nrun `just openapi` to regenerate openapi/",
        line + 1,
        actual.lines().nth(line),
        committed.lines().nth(line)
    );
}

fn reporter() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_reporter"));
    // Isolate from the caller's environment: only what each test sets.
    for (k, _) in std::env::vars() {
        if k.starts_with("DATASOURCE_")
            || k.starts_with("AUTH_")
            || k.starts_with("STREAMING_")
            || k.starts_with("MONGO")
            || k.starts_with("RABBITMQ")
        {
            c.env_remove(k);
        }
    }
    c.env("TMPDIR", common::children_tmpdir());
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
    assert!(
        err.contains(
            "MAX_PAGINATION_LIMIT: 'abc' is not an integer (rule: an integer between 1 and 1000)"
        ),
        "{err}"
    );
    assert!(
        err.contains("SERVER_ADDRESS: 'nowhere' is not a listen address"),
        "{err}"
    );
    assert!(err.contains("DATASOURCE_LEDGER_PATH: missing"), "{err}");
}

#[test]
fn config_check_accepts_the_defaults() {
    let out = reporter().args(["config", "check"]).output().expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_bad_value_stops_serve_naming_the_variable() {
    let out = reporter()
        .arg("serve")
        .env("AUTH_ENABLED", "maybe")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("AUTH_ENABLED: 'maybe' is not a boolean")
    );
}

#[test]
fn config_reference_prints_the_committed_page() {
    let out = reporter()
        .args(["config", "reference"])
        .output()
        .expect("runs");
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout)
            == include_str!("../../docs/src/operations/configuration.md"),
        "docs/src/operations/configuration.md is stale: run \
         `cargo run -q -- config reference > docs/src/operations/configuration.md`"
    );
}

#[test]
fn openapi_command_prints_the_committed_spec() {
    let out = reporter().arg("openapi").output().expect("runs");
    assert!(out.status.success());
    let committed = include_str!("../../openapi/reporter.json");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        committed,
        "run `just openapi` to regenerate openapi/"
    );
    let yaml = reporter()
        .args(["openapi", "--format", "yaml"])
        .output()
        .expect("runs");
    assert_eq!(
        String::from_utf8_lossy(&yaml.stdout),
        include_str!("../../openapi/reporter.yaml")
    );
}

/// Sends one HTTP/1.1 request over a plain socket and returns (status line, body).
#[test]
fn serve_with_no_configuration_prints_a_working_token() {
    use std::io::{BufRead, BufReader};
    let addr = common::free_addr();
    let mut child = reporter()
        .arg("serve")
        .env("SERVER_ADDRESS", &addr)
        .env("LOG_LEVEL", "warn")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    // The service's warnings, shown if its first request fails.
    let log = common::kept_log::KeptLog::keep(child.stderr.take().expect("stderr"));
    let stdout = child.stdout.take().unwrap();
    let mut token = None;
    let mut banner = String::new();
    for line in BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .take(30)
    {
        banner.push_str(&line);
        banner.push('\n');
        if let Some(t) = line.trim().strip_prefix("export TOKEN=") {
            token = Some(t.to_owned());
        }
        if line.contains("curl -s") {
            break;
        }
    }
    let token = token.unwrap_or_else(|| panic!("no token in banner:\n{banner}"));
    assert!(
        banner.contains(&format!("listening on http://{addr}")),
        "{banner}"
    );
    // The server may need a moment after printing the banner.
    common::wait_listening(&addr, &mut child, std::time::Duration::from_secs(5));
    let headers = "Content-Type: application/json\r\n";
    let answer = common::try_request_with(
        &addr,
        "GET",
        "/v1/data-sources/bank",
        &token,
        headers,
        b"",
    )
    .unwrap_or_else(|e| {
        let exited = child.try_wait();
        panic!(
            "GET /v1/data-sources/bank on {addr}: {e:?}; the service: {exited:?}; its log:\n{}",
            log.tail()
        )
    });
    let (status, body) = (answer.status, answer.body);
    let body = String::from_utf8_lossy(&body);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"transactions\""), "{body}");
    // The embedded worker generates a report from the bundled data set.
    let tpl = common::upload_txt_raw(
        &addr,
        &token,
        "{% for a in bank.accounts %}{{ a.account_id }};{% endfor %}",
        "e2e",
    );
    let id = common::request_report_raw(&addr, &token, &tpl);
    let status = common::wait_report_raw(&addr, &token, &id, 100)["status"].clone();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(
        status, "Finished",
        "reporter serve runs its embedded worker"
    );
}

#[test]
fn asyncapi_command_prints_the_committed_document() {
    let out = reporter().arg("asyncapi").output().expect("runs");
    assert!(out.status.success());
    assert_same(
        &String::from_utf8_lossy(&out.stdout),
        include_str!("../../openapi/asyncapi.yaml"),
        "openapi/asyncapi.yaml",
    );
    let doc: serde_yaml::Value = serde_yaml::from_slice(&out.stdout).expect("YAML");
    assert_eq!(doc["asyncapi"].as_str(), Some("3.0.0"));
    assert_eq!(
        doc["channels"].as_mapping().map(|m| m.len()),
        Some(reporter_ports::events::EventKey::COUNT)
    );
    assert_eq!(
        doc["channels"]["ReportFinished"]["address"].as_str(),
        Some("report.finished")
    );
}

/// `reporter serve` on `addr` with its state in database `name` of `mongo` and artifacts in
/// GridFS, with `extra` variables; waits until it listens.
fn serve_on_mongo(
    addr: &str,
    mongo: &str,
    name: &str,
    extra: &[(&str, &str)],
) -> std::process::Child {
    let mut c = reporter();
    c.arg("serve")
        .env("SERVER_ADDRESS", addr)
        .env("AUTH_JWT_SECRET", common::SECRET)
        .env("MONGO_URI", mongo)
        .env("MONGO_NAME", name)
        .env("OBJECT_STORAGE_BACKEND", "gridfs")
        .env("LOG_LEVEL", "warn")
        .envs(extra.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().expect("spawn");
    // Index creation on a busy MongoDB stand-in can take a while.
    common::wait_listening(addr, &mut child, std::time::Duration::from_secs(60));
    child
}

/// `reporter serve` on MongoDB: data survives a restart, and `reporter outbox redrive` reaches
/// the durable outbox.
#[test]
fn serve_on_mongodb_keeps_data_across_a_restart() {
    let Some(mongo) = reporter_contract::services::service_url("MONGODB_URI", "MongoDB") else {
        return;
    };
    let name = reporter_contract::services::unique_name("e2e_restart");
    let addr = common::free_addr();
    let start = || {
        serve_on_mongo(
            &addr,
            &mongo,
            &name,
            &[
                ("STREAMING_ENABLED", "true"),
                ("RABBITMQ_REPORT_EVENTS_EXCHANGE", "reporter.events"),
                ("STREAMING_BROKERS", "memory://"),
                ("STREAMING_CLOUDEVENTS_SOURCE", "reporter"),
            ],
        )
    };
    let token = common::token();
    let mut first = start();
    let id = common::upload_txt_raw(
        &addr,
        &token,
        "hello {{ bank.accounts.0.branch }}",
        "survives",
    );
    let _ = first.kill();
    let _ = first.wait();
    let mut second = start();
    let (code, body) = common::request(
        &addr,
        "GET",
        &format!("/v1/templates/{id}"),
        &token,
        "application/json",
        b"",
    );
    let _ = second.kill();
    let _ = second.wait();
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&body).unwrap()["description"],
        "survives"
    );
    // The durable outbox is reachable from another process.
    let out = reporter()
        .args(["outbox", "redrive"])
        .env("MONGO_URI", &mongo)
        .env("MONGO_NAME", &name)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("redrove 0 parked event(s)"));
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        if let Ok(client) = mongodb::Client::with_uri_str(&mongo).await {
            let _ = client.database(&name).drop().await;
        }
    });
}

#[test]
fn outbox_redrive_without_mongodb_explains_itself() {
    let out = reporter()
        .args(["outbox", "redrive"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("POST /v1/streaming/outbox/redrive"));
}

/// A MongoDB without transactions (a standalone server) is refused at start-up, with the
/// recipe for a single-node replica set, instead of failing on the first write.
#[test]
fn serve_refuses_a_standalone_mongodb_with_the_replica_set_recipe() {
    let Some(uri) = reporter_contract::services::service_url(
        "MONGODB_STANDALONE_URI",
        "MongoDB presenting itself as a standalone server",
    ) else {
        return;
    };
    let addr = common::free_addr();
    for mode in ["false", "true"] {
        let mut c = reporter();
        c.arg("serve")
            .env("SERVER_ADDRESS", &addr)
            .env("AUTH_JWT_SECRET", common::SECRET)
            .env("MULTI_TENANT_ENABLED", mode)
            .env("MONGO_URI", &uri)
            .env(
                "MONGO_NAME",
                reporter_contract::services::unique_name("standalone"),
            )
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        let mut child = c.spawn().expect("spawn");
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().expect("wait") {
                break s;
            }
            if started.elapsed() > std::time::Duration::from_secs(30) {
                let _ = child.kill();
                panic!("serve (multi-tenant {mode}) kept running on a standalone MongoDB");
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr)
            .expect("read stderr");
        assert!(!status.success(), "multi-tenant {mode}: {stderr}");
        for needle in [
            "standalone",
            "replica set",
            "--replSet rs0",
            "rs.initiate()",
        ] {
            assert!(
                stderr.contains(needle),
                "multi-tenant {mode}: the refusal does not say {needle:?}:\n{stderr}"
            );
        }
    }
}

/// The original's deployments write `SERVER_ADDRESS=:4005` (Go: every interface); `serve`
/// listens there, and answers on loopback.
#[test]
fn serve_listens_on_the_originals_colon_port_address() {
    let addr = common::free_addr();
    let port = addr.rsplit(':').next().expect("port").to_owned();
    let mut child = reporter()
        .arg("serve")
        .env("SERVER_ADDRESS", format!(":{port}"))
        .env("LOG_LEVEL", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    common::wait_listening(&addr, &mut child, std::time::Duration::from_secs(30));
    let (status, _) = common::request(&addr, "GET", "/health", "", "text/plain", b"");
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(status, 200);
}

/// Under concurrency every log line names the one request it belongs to: the request span is
/// attached to its own future (`instrument`), never left entered on a thread another request
/// then runs on.
#[test]
fn concurrent_requests_log_lines_name_one_request_each() {
    let addr = common::free_addr();
    let mut child = reporter()
        .arg("serve")
        .env("SERVER_ADDRESS", &addr)
        .env("AUTH_JWT_SECRET", common::SECRET)
        .env("LOG_FORMAT", "json")
        .env("LOG_LEVEL", "info")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start");
    common::wait_listening(&addr, &mut child, std::time::Duration::from_secs(60));
    let token = common::token();
    let sent: Vec<String> = (0..24).map(|i| format!("req-{i:02}")).collect();
    std::thread::scope(|s| {
        for id in &sent {
            let (addr, token) = (&addr, &token);
            s.spawn(move || {
                let form = common::Form::new()
                    .file("template", "t.tpl", b"{{ bank.accounts.0.branch }}")
                    .text("outputFormat", "txt")
                    .text("description", id);
                let ct = form.content_type();
                let body = form.into_body();
                let mut headers = format!("X-Request-Id: {id}\r\n");
                headers.push_str(&format!("Content-Type: {ct}\r\n"));
                let (status, _) =
                    common::request_with(addr, "POST", "/v1/templates", token, &headers, &body);
                assert_eq!(status, 201);
            });
        }
    });
    let _ = child.kill();
    let out = child.wait_with_output().expect("output");
    let logs = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut seen = std::collections::BTreeSet::new();
    for line in logs.lines().filter(|l| l.contains("template created")) {
        let v: serde_json::Value = serde_json::from_str(line).expect("a JSON log line");
        let ids: Vec<&str> = v["spans"]
            .as_array()
            .expect("spans")
            .iter()
            .filter(|s| s["name"] == "http")
            .filter_map(|s| s["request_id"].as_str())
            .collect();
        assert_eq!(ids.len(), 1, "one request per line: {line}");
        assert!(
            v["fields"]["template_id"].is_string(),
            "the use case's own event: {line}"
        );
        seen.insert(ids[0].to_owned());
    }
    let sent: std::collections::BTreeSet<String> = sent.into_iter().collect();
    assert_eq!(seen, sent, "every request's line names that request");
}

/// `reporter serve` on MongoDB killed between the commit of an idempotent request and its
/// answer (the `idempotency-after-commit` failpoint aborts the process there), then retried
/// with the same `X-Idempotency` key on a restarted process: the retry replays the committed
/// answer, and exactly one template and one report exist.
#[test]
fn an_api_killed_between_commit_and_answer_replays_on_retry() {
    let Some(mongo) = reporter_contract::services::service_url("MONGODB_URI", "MongoDB") else {
        return;
    };
    let name = reporter_contract::services::unique_name("e2e_idem_crash");
    let addr = common::free_addr();
    let start = |failpoint: bool| {
        let abort = [("FAILPOINTS", "idempotency-after-commit=return")];
        serve_on_mongo(&addr, &mongo, &name, if failpoint { &abort } else { &[] })
    };
    let token = common::token();
    let form = || {
        common::Form::new()
            .file(
                "template",
                "t.tpl",
                b"{% for a in bank.accounts %}{{ a.account_id }};{% endfor %}",
            )
            .text("outputFormat", "txt")
            .text("description", "crash")
    };
    let upload = || {
        let f = form();
        let headers = format!(
            "X-Idempotency: crash-template\r\nContent-Type: {}\r\n",
            f.content_type()
        );
        common::request_with(
            &addr,
            "POST",
            "/v1/templates",
            &token,
            &headers,
            &f.into_body(),
        )
    };
    let report = |template: &str| {
        let body = serde_json::json!({"templateId": template, "filters": {}}).to_string();
        let headers = "X-Idempotency: crash-report\r\nContent-Type: application/json\r\n";
        std::panic::catch_unwind(|| {
            common::request_with(
                &addr,
                "POST",
                "/v1/reports",
                &token,
                headers,
                body.as_bytes(),
            )
        })
    };
    let count = |path: &str| {
        let (code, body) = common::request(&addr, "GET", path, &token, "application/json", b"");
        assert_eq!(code, 200);
        serde_json::from_slice::<serde_json::Value>(&body).unwrap()["total"].clone()
    };

    // The template: the process dies after committing it, before answering.
    let mut dying = start(true);
    let lost = std::panic::catch_unwind(upload);
    assert!(lost.is_err(), "the first process answered: {lost:?}");
    let status = dying.wait().expect("wait");
    assert!(!status.success(), "aborted at the failpoint");
    let mut alive = start(false);
    let (code, body) = upload();
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&body));
    let template = serde_json::from_slice::<serde_json::Value>(&body).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(count("/v1/templates"), 1, "one template");
    let _ = alive.kill();
    let _ = alive.wait();

    // The report, the same way.
    let mut dying = start(true);
    assert!(report(&template).is_err(), "the first process answered");
    let _ = dying.wait();
    let mut alive = start(false);
    let (code, body) = report(&template).expect("the retry is answered");
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&body));
    let (code, again) = report(&template).expect("answered");
    assert_eq!(code, 201);
    let id = |b: &[u8]| serde_json::from_slice::<serde_json::Value>(b).unwrap()["id"].clone();
    assert_eq!(id(&body), id(&again), "replays the one report");
    assert_eq!(count("/v1/reports"), 1, "exactly one report");
    let _ = alive.kill();
    let _ = alive.wait();
}

/// SIGTERM to `reporter serve` while a job runs (on MongoDB, so the outcome outlives the
/// process): readiness turns 503 `draining`, the job — longer than SHUTDOWN_DRAIN_SECONDS,
/// shorter than WORKER_DRAIN_TIMEOUT_SEC — finishes and is recorded `Finished`, the process
/// exits 0, and its temporary directory (example data included) is empty afterwards.
#[test]
fn sigterm_drains_a_running_job_and_leaves_nothing_behind() {
    use std::time::{Duration, Instant};
    let Some(mongo) = reporter_contract::services::service_url("MONGODB_URI", "MongoDB") else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let Some(pg) = rt.block_on(common::ScratchPostgres::create("sigterm")) else {
        return;
    };
    rt.block_on(pg.create_slow_view(3.0));
    let tmp = std::env::temp_dir().join(reporter_contract::services::unique_name("sigterm_tmp"));
    std::fs::create_dir(&tmp).expect("private TMPDIR");
    let name = reporter_contract::services::unique_name("e2e_sigterm");
    let tmp_s = tmp.display().to_string();
    let mut vars: Vec<(String, String)> = pg.source_env("SLOW");
    vars.extend(
        [
            ("TMPDIR", tmp_s.as_str()),
            ("EXAMPLE_DATA_ENABLED", "true"),
            ("SHUTDOWN_DRAIN_SECONDS", "1"),
            ("WORKER_DRAIN_TIMEOUT_SEC", "30"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned())),
    );
    let extra: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let addr = common::free_addr();
    let mut child = serve_on_mongo(&addr, &mongo, &name, &extra);
    assert!(
        std::fs::read_dir(&tmp).expect("TMPDIR").count() > 0,
        "the example data lives in the process's temporary directory while it runs"
    );
    let token = common::token();
    let tpl = common::upload_txt_raw(&addr, &token, "{{ slow.slow.0.id }}", "drained");
    let report = common::request_report_raw(&addr, &token, &tpl);
    let waiting = Instant::now();
    while !rt.block_on(pg.slow_query_running()) {
        assert!(
            waiting.elapsed() < Duration::from_secs(60),
            "the job never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let signalled = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill -TERM");
    assert!(signalled.success());
    // Draining within the HTTP drain period (the signal lands asynchronously).
    let signalled_at = Instant::now();
    let draining = loop {
        let (status, body) =
            common::request(&addr, "GET", "/readyz", &token, "application/json", b"");
        if status == 503 || signalled_at.elapsed() > Duration::from_millis(900) {
            break (status, String::from_utf8_lossy(&body).into_owned());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(draining.0, 503, "{}", draining.1);
    assert!(draining.1.contains("draining"), "{}", draining.1);
    let exit_by = Instant::now() + Duration::from_secs(40);
    let code = loop {
        if let Some(code) = child.try_wait().expect("wait") {
            break code;
        }
        assert!(
            Instant::now() < exit_by,
            "the process did not exit after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(code.success(), "exit status {code}");
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .expect("TMPDIR")
        .map(|e| e.map(|e| e.file_name()))
        .collect();
    assert!(left.is_empty(), "left in the temporary directory: {left:?}");
    // The drained job's result is stored: another process reads it.
    let addr2 = common::free_addr();
    let mut again = serve_on_mongo(&addr2, &mongo, &name, &extra);
    let r = common::wait_report_raw(&addr2, &token, &report, 1);
    let _ = again.kill();
    let _ = again.wait();
    assert_eq!(
        r["status"], "Finished",
        "the running job finished during the drain: {r}"
    );
    rt.block_on(async {
        if let Ok(client) = mongodb::Client::with_uri_str(&mongo).await {
            let _ = client.database(&name).drop().await;
        }
        pg.remove().await;
    });
    let _ = std::fs::remove_dir_all(&tmp);
}

/// Logs written to a pipe or a file carry no terminal colour codes (they are noise to a log
/// collector, and writing them cost every request's log spans).
#[test]
fn logs_to_a_pipe_are_plain_text() {
    use std::io::{BufRead, BufReader};
    let addr = common::free_addr();
    let mut child = reporter()
        .arg("serve")
        .env("SERVER_ADDRESS", &addr)
        .env("LOG_LEVEL", "info")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = Vec::new();
    for line in BufReader::new(stderr)
        .lines()
        .map_while(Result::ok)
        .take(50)
    {
        let info = line.contains("INFO");
        lines.push(line);
        if info {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let all = lines.join("\n");
    assert!(all.contains("INFO"), "info lines were logged: {all}");
    assert!(!all.contains('\u{1b}'), "no escape codes: {all:?}");
}
