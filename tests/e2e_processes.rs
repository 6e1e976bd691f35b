//! `reporter api` and `reporter worker` as two processes, sharing MongoDB (state, outbox,
//! GridFS artifacts) and RabbitMQ (jobs): upload, request, wait, download over real HTTP.
mod common;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn api_and_worker_as_two_processes() {
    let (Some(mongo), Some(rabbit)) = (
        reporter_contract::services::service_url("MONGODB_URI", "MongoDB"),
        reporter_contract::services::service_url("RABBITMQ_URI", "RabbitMQ"),
    ) else {
        return;
    };
    let name = reporter_contract::services::unique_name("e2e_proc");
    let dir = std::env::temp_dir().join(&name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("entries.csv"),
        "id,account,amount\n1,A,10.50\n2,B,3.25\n",
    )
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let health_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let health = format!("127.0.0.1:{health_port}");
    let spawn = |role: &str| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_reporter"));
        c.arg(role)
            .env("SERVER_ADDRESS", &addr)
            .env("HEALTH_ADDRESS", &health)
            .env("AUTH_JWT_SECRET", common::SECRET)
            .env("MONGO_URI", &mongo)
            .env("MONGO_NAME", &name)
            .env("OBJECT_STORAGE_BACKEND", "gridfs")
            .env("RABBITMQ_URI", &rabbit)
            .env("RABBITMQ_EXCHANGE", format!("{name}.jobs"))
            .env("RABBITMQ_GENERATE_REPORT_QUEUE", format!("{name}.queue"))
            .env("RABBITMQ_GENERATE_REPORT_KEY", format!("{name}.key"))
            .env("RABBITMQ_DLQ_QUEUE", format!("{name}.dlq"))
            .env("RABBITMQ_DLX", format!("{name}.dlx"))
            .env("DATASOURCE_LEDGER_TYPE", "file")
            .env("DATASOURCE_LEDGER_PATH", &dir)
            .env(
                "LOG_LEVEL",
                std::env::var("E2E_PROC_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        Kill(c.spawn().expect("spawn"))
    };
    let _api = spawn("api");
    let _worker = spawn("worker");
    let token = common::token();
    let mut up = false;
    for _ in 0..100 {
        if std::net::TcpStream::connect(&addr).is_ok() {
            up = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(up, "reporter api never listened");
    let form = common::Form::new()
        .file(
            "template",
            "t.tpl",
            b"{% for e in ledger.entries %}{{ e.id }}:{{ e.amount }};{% endfor %}",
        )
        .text("outputFormat", "txt");
    let ct = form.content_type();
    let (status, body) = common::request(
        &addr,
        "POST",
        "/v1/templates",
        &token,
        &ct,
        &form.into_body(),
    );
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let tpl: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let req = serde_json::json!({"templateId": tpl["id"], "filters": {}}).to_string();
    let (status, body) = common::request(
        &addr,
        "POST",
        "/v1/reports",
        &token,
        "application/json",
        req.as_bytes(),
    );
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let report: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let id = report["id"].as_str().unwrap().to_owned();
    let mut last = serde_json::Value::Null;
    for _ in 0..300 {
        let (_, body) = common::request(
            &addr,
            "GET",
            &format!("/v1/reports/{id}"),
            &token,
            "application/json",
            b"",
        );
        last = serde_json::from_slice(&body).unwrap();
        if last["status"] != "Processing" {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        last["status"], "Finished",
        "the worker process generated the report: {last}"
    );
    let (status, body) = common::request(
        &addr,
        "GET",
        &format!("/v1/reports/{id}/download"),
        &token,
        "application/json",
        b"",
    );
    assert_eq!(status, 200);
    assert_eq!(String::from_utf8(body).unwrap(), "1:10.50;2:3.25;");
    // The worker answers its ops endpoints only.
    let (status, _) = common::request(&health, "GET", "/readyz", &token, "application/json", b"");
    assert_eq!(status, 200);
    let (status, _) = common::request(
        &health,
        "GET",
        "/v1/templates",
        &token,
        "application/json",
        b"",
    );
    assert_eq!(status, 404);
    let _ = std::fs::remove_dir_all(&dir);
}
