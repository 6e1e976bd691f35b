//! OpenTelemetry end to end: the released binary exports to a real OTLP receiver the test
//! starts (tests/common/otlp.rs decodes the standard protobuf messages). One trace links the
//! request (continued from the client's `traceparent`), the job's publish and processing and
//! the `report.finished` publication — in memory mode, and with the job and the event on
//! RabbitMQ, where the messages on the wire carry the trace context, and across a broker
//! outage through the outbox.
use crate::common;
use crate::common::otlp::{Receiver, Span};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";
/// A filter value no span attribute may carry.
const SECRET_FILTER: &str = "acct-7b1e-filter-marker";

/// `reporter serve` exporting to `receiver` over OTLP/HTTP, with a `file` data source.
fn serve(receiver: &Receiver, addr: &str, dir: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_reporter"));
    // State and jobs in memory unless a test points them elsewhere (the services' variables
    // of the test environment would send every process's jobs to one shared queue).
    c.env_remove("RABBITMQ_URI").env_remove("MONGO_URI");
    c.arg("serve")
        .env("TMPDIR", common::children_tmpdir())
        .env("AUTH_JWT_SECRET", common::SECRET)
        .env("SERVER_ADDRESS", addr)
        .env("DATASOURCE_LEDGER_TYPE", "file")
        .env("DATASOURCE_LEDGER_PATH", dir)
        .env("ENABLE_TELEMETRY", "true")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint)
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
        .env("OTEL_RESOURCE_SERVICE_NAME", "reporter-e2e")
        .env("OTEL_METRIC_EXPORT_INTERVAL", "1000")
        .env(
            "LOG_LEVEL",
            std::env::var("E2E_PROC_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    c
}

fn ledger_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(name);
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(
        dir.join("entries.csv"),
        "id,account,amount\n1,A,10.50\n2,B,3.25\n",
    )
    .expect("csv");
    dir
}

/// Uploads a template, requests its report with the client's `traceparent` and a filter,
/// waits for it to finish; the report id.
fn one_report(addr: &str) -> String {
    let token = common::token();
    let tpl = common::upload_txt_raw(
        addr,
        &token,
        "{% for e in ledger.entries %}{{ e.id }};{% endfor %}",
        "otel",
    );
    let body = serde_json::json!({
        "templateId": tpl,
        "filters": {"ledger": {"entries": {"account": {"eq": [SECRET_FILTER]}}}}
    })
    .to_string();
    let headers = format!(
        "Content-Type: application/json\r\ntraceparent: 00-{TRACE_ID}-{CLIENT_SPAN}-01\r\n"
    );
    let (status, answer) = common::request_with(
        addr,
        "POST",
        "/v1/reports",
        &token,
        &headers,
        body.as_bytes(),
    );
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&answer));
    let id = serde_json::from_slice::<serde_json::Value>(&answer).expect("JSON")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let last = common::wait_report_raw(addr, &token, &id, 1200);
    assert_ne!(last["status"], "Processing", "{last}");
    id
}

fn named<'a>(spans: &'a [Span], name: &str) -> Option<&'a Span> {
    spans.iter().find(|s| s.name == name)
}

/// Waits for the request's trace to hold the request, the job's publish and processing and
/// the `report.finished` publication; checks the links and that no attribute leaks the filter.
fn assert_one_trace(receiver: &Receiver) -> Vec<Span> {
    let wanted = [
        "POST /v1/reports",
        "report.job publish",
        "report.job process",
        "datasource query ledger",
        "report render",
        "report artifact write",
    ];
    let finished = |s: &Span| s.name.starts_with("report.finished ");
    let spans = receiver.wait_spans(Duration::from_secs(60), |spans| {
        let ours: Vec<&Span> = spans.iter().filter(|s| s.trace_id == TRACE_ID).collect();
        wanted.iter().all(|w| ours.iter().any(|s| s.name == *w)) && ours.iter().any(|s| finished(s))
    });
    let ours: Vec<Span> = spans
        .iter()
        .filter(|s| s.trace_id == TRACE_ID)
        .cloned()
        .collect();
    let names: Vec<&str> = ours.iter().map(|s| s.name.as_str()).collect();
    for w in wanted {
        assert!(
            names.contains(&w),
            "{w} is not in the trace: {names:?}; every span received: {:?}",
            spans
                .iter()
                .map(|s| (&s.name, &s.trace_id))
                .collect::<Vec<_>>()
        );
    }
    assert!(
        ours.iter().any(finished),
        "no report.finished publish in the trace: {names:?}"
    );
    let server = named(&ours, "POST /v1/reports").expect("server span");
    assert_eq!(
        server.parent, CLIENT_SPAN,
        "the client's traceparent continues"
    );
    assert_eq!(server.kind, 2, "server kind");
    assert_eq!(server.service, "reporter-e2e");
    assert_eq!(server.attributes["http.route"], "/v1/reports");
    assert_eq!(server.attributes["http.request.method"], "POST");
    assert_eq!(server.attributes["http.response.status_code"], "201");
    let publish = named(&ours, "report.job publish").expect("job publish");
    let process = named(&ours, "report.job process").expect("job process");
    assert_eq!(publish.kind, 4, "producer");
    assert_eq!(process.kind, 5, "consumer");
    assert_eq!(
        process.parent, publish.span_id,
        "the job continues its publish"
    );
    for s in &spans {
        for (k, v) in &s.attributes {
            assert!(
                !v.contains(SECRET_FILTER),
                "span {} attribute {k} carries a filter value: {v}",
                s.name
            );
        }
    }
    ours
}

#[test]
fn one_trace_links_request_job_render_and_event_in_memory_mode() {
    let receiver = Receiver::start();
    let name = reporter_contract::services::unique_name("otel_mem");
    let dir = ledger_dir(&name);
    let addr = common::free_addr();
    let mut c = serve(&receiver, &addr, &dir);
    // JSON logs, kept in a file: the lines logged inside the request name its trace.
    let log = dir.join("stderr.log");
    c.env("STREAMING_ENABLED", "true")
        .env("STREAMING_BROKERS", "memory://")
        .env("RABBITMQ_REPORT_EVENTS_EXCHANGE", "reporter.events")
        .env("STREAMING_CLOUDEVENTS_SOURCE", "reporter")
        .env("LOG_FORMAT", "json")
        .env("LOG_LEVEL", "info")
        .stderr(std::fs::File::create(&log).expect("log file"));
    let mut p = Kill(c.spawn().expect("spawn"));
    common::wait_listening(&addr, &mut p.0, Duration::from_secs(60));
    one_report(&addr);
    let ours = assert_one_trace(&receiver);
    let logs = std::fs::read_to_string(&log).expect("logs");
    let requested = logs
        .lines()
        .find(|l| l.contains("report requested"))
        .unwrap_or_else(|| panic!("no 'report requested' line: {logs}"));
    let line: serde_json::Value = serde_json::from_str(requested).expect("a JSON line");
    let server = named(&ours, "POST /v1/reports").expect("server span");
    assert!(
        line["spans"].as_array().is_some_and(|spans| spans
            .iter()
            .any(|s| { s["trace_id"] == TRACE_ID && s["span_id"] == server.span_id.as_str() })),
        "the line names the request's trace_id and span_id: {line}"
    );
    eprintln!("the trace as received:");
    for s in &ours {
        eprintln!("  {} span={} parent={}", s.name, s.span_id, s.parent);
    }
    // The Prometheus metrics travel over OTLP too.
    let start = std::time::Instant::now();
    while !receiver
        .metric_names()
        .iter()
        .any(|m| m == "reporter_http_requests_total")
        && start.elapsed() < Duration::from_secs(60)
    {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        receiver
            .metric_names()
            .iter()
            .any(|m| m == "reporter_http_requests_total"),
        "metrics received: {:?}",
        receiver.metric_names()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn with_rabbitmq_the_job_and_the_cloudevent_carry_the_trace() {
    let Some(rabbit) = reporter_contract::services::service_url("RABBITMQ_URI", "RabbitMQ") else {
        return;
    };
    let receiver = Receiver::start();
    let name = reporter_contract::services::unique_name("otel_rmq");
    let exchange = format!("{name}.events");
    let queue = format!("{name}.durable");
    let _topology = common::RabbitTopology {
        queues: vec![
            queue.clone(),
            format!("{exchange}.unroutable"),
            format!("{name}.queue"),
            format!("{name}.queue.retry"),
            format!("{name}.dlq"),
        ],
        exchanges: vec![
            exchange.clone(),
            format!("{exchange}.unroutable"),
            format!("{name}.jobs"),
            format!("{name}.dlx"),
        ],
    };
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(common::chaos::durable_queue(&rabbit, &exchange, &queue));
    let dir = ledger_dir(&name);
    let addr = common::free_addr();
    let mut c = serve(&receiver, &addr, &dir);
    common::processes::job_queue(&mut c, &name, &rabbit);
    c.env("STREAMING_ENABLED", "true")
        .env("STREAMING_BROKERS", &rabbit)
        .env("RABBITMQ_REPORT_EVENTS_EXCHANGE", &exchange)
        .env(
            "STREAMING_ALTERNATE_EXCHANGE",
            format!("{exchange}.unroutable"),
        )
        .env("STREAMING_CLOUDEVENTS_SOURCE", "reporter");
    let mut p = Kill(c.spawn().expect("spawn"));
    common::wait_listening(&addr, &mut p.0, Duration::from_secs(60));
    let id = one_report(&addr);
    let ours = assert_one_trace(&receiver);
    // The report.finished CloudEvent on the wire carries the trace (plain `traceparent`
    // header after the ce-* ones), pointing at a span of the same trace.
    let headers = runtime.block_on(finished_headers(&rabbit, &queue, &id));
    let tp = headers
        .get("traceparent")
        .unwrap_or_else(|| panic!("no traceparent header: {headers:?}"));
    let parts: Vec<&str> = tp.split('-').collect();
    assert_eq!(parts.len(), 4, "{tp}");
    assert_eq!(
        parts[1], TRACE_ID,
        "the event continues the request's trace"
    );
    assert!(
        ours.iter().any(|s| s.span_id == parts[2]),
        "the event's parent span {} was exported",
        parts[2]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `uri` with its host and port replaced by `proxy`.
fn through(uri: &str, proxy: std::net::SocketAddr) -> String {
    let parsed: lapin::uri::AMQPUri = uri.parse().expect("RABBITMQ_URI");
    format!(
        "amqp://{}:{}@{proxy}/{}",
        parsed.authority.userinfo.username,
        parsed.authority.userinfo.password,
        parsed.vhost.replace('%', "%25").replace('/', "%2f")
    )
}

fn amqp_addr(uri: &str) -> std::net::SocketAddr {
    use std::net::ToSocketAddrs;
    let parsed: lapin::uri::AMQPUri = uri.parse().expect("RABBITMQ_URI");
    (parsed.authority.host.as_str(), parsed.authority.port)
        .to_socket_addrs()
        .expect("resolve")
        .next()
        .expect("an address")
}

/// The event broker is cut (a proxy drops every connection) while the report runs: its
/// `report.finished` waits in the outbox, and once the broker is back the dispatcher
/// publishes it still in the request's trace — the message's `traceparent` names the
/// dispatch span, a child of the change that emitted the event.
#[test]
fn an_event_published_after_a_broker_outage_continues_the_request_s_trace() {
    let Some(rabbit) = reporter_contract::services::service_url("RABBITMQ_URI", "RabbitMQ") else {
        return;
    };
    let receiver = Receiver::start();
    let name = reporter_contract::services::unique_name("otel_cut");
    let exchange = format!("{name}.events");
    let queue = format!("{name}.durable");
    let _topology = common::RabbitTopology {
        queues: vec![queue.clone(), format!("{exchange}.unroutable")],
        exchanges: vec![exchange.clone(), format!("{exchange}.unroutable")],
    };
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(common::chaos::durable_queue(&rabbit, &exchange, &queue));
    let proxy = runtime.block_on(common::cut_proxy::CutProxy::start(amqp_addr(&rabbit)));
    let dir = ledger_dir(&name);
    let addr = common::free_addr();
    let mut c = serve(&receiver, &addr, &dir);
    c.env("STREAMING_ENABLED", "true")
        .env("STREAMING_BROKERS", through(&rabbit, proxy.addr()))
        .env("RABBITMQ_REPORT_EVENTS_EXCHANGE", &exchange)
        .env(
            "STREAMING_ALTERNATE_EXCHANGE",
            format!("{exchange}.unroutable"),
        )
        .env("STREAMING_CLOUDEVENTS_SOURCE", "reporter")
        .env("STREAMING_PUBLISH_TIMEOUT_MS", "1000")
        .env("STREAMING_DISPATCH_POLL_MS", "200");
    let mut p = Kill(c.spawn().expect("spawn"));
    common::wait_listening(&addr, &mut p.0, Duration::from_secs(60));
    // The service declared its topology through the proxy; now the broker goes away.
    runtime.block_on(proxy.cut());
    let id = one_report(&addr);
    // The report is stored while its event cannot leave: give the dispatcher failed attempts.
    std::thread::sleep(Duration::from_secs(3));
    runtime.block_on(proxy.restore());
    let headers = runtime.block_on(finished_headers(&rabbit, &queue, &id));
    let tp = headers
        .get("traceparent")
        .unwrap_or_else(|| panic!("no traceparent header: {headers:?}"));
    let parts: Vec<&str> = tp.split('-').collect();
    assert_eq!(parts.len(), 4, "{tp}");
    assert_eq!(
        parts[1], TRACE_ID,
        "the event continues the request's trace"
    );
    let dispatch = receiver.wait_spans(Duration::from_secs(60), |spans| {
        spans.iter().any(|s| s.span_id == parts[2])
    });
    let dispatch = dispatch
        .iter()
        .find(|s| s.span_id == parts[2])
        .expect("the event's span was exported");
    assert_eq!(dispatch.name, "report.finished outbox dispatch");
    assert_eq!(dispatch.trace_id, TRACE_ID);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `OTEL_TRUST_INCOMING_TRACEPARENT=false`: a client's `traceparent` starts no trace of its own
/// in the service (the request's span is a new root).
#[test]
fn an_untrusted_traceparent_starts_a_new_trace() {
    let receiver = Receiver::start();
    let name = reporter_contract::services::unique_name("otel_untrusted");
    let dir = ledger_dir(&name);
    let addr = common::free_addr();
    let mut c = serve(&receiver, &addr, &dir);
    c.env("OTEL_TRUST_INCOMING_TRACEPARENT", "false");
    let mut p = Kill(c.spawn().expect("spawn"));
    common::wait_listening(&addr, &mut p.0, Duration::from_secs(60));
    let headers = format!("traceparent: 00-{TRACE_ID}-{CLIENT_SPAN}-01\r\n");
    let (status, _) = common::request_with(
        &addr,
        "GET",
        "/v1/templates",
        &common::token(),
        &headers,
        b"",
    );
    assert_eq!(status, 200);
    let spans = receiver.wait_spans(Duration::from_secs(60), |spans| {
        spans.iter().any(|s| s.name == "GET /v1/templates")
    });
    let server = named(&spans, "GET /v1/templates").expect("the request's span");
    assert_ne!(server.trace_id, TRACE_ID);
    assert!(server.parent.is_empty(), "a root span: {server:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Telemetry's settings are checked at start-up with every other problem.
#[test]
fn telemetry_settings_are_checked_at_start_up() {
    let out = Command::new(env!("CARGO_BIN_EXE_reporter"))
        .args(["config", "check"])
        .env("TMPDIR", common::children_tmpdir())
        .env("ENABLE_TELEMETRY", "true")
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
        .env("MAX_PAGINATION_LIMIT", "abc")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    for want in [
        "OTEL_EXPORTER_OTLP_ENDPOINT: is not set while ENABLE_TELEMETRY=true",
        "OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' is not a supported OTLP protocol",
        "MAX_PAGINATION_LIMIT",
    ] {
        assert!(err.contains(want), "{want} missing: {err}");
    }
}

/// The original's transport: OTLP/gRPC (the default protocol). The same trace arrives.
#[test]
fn over_grpc_the_same_trace_arrives() {
    let receiver = Receiver::start_grpc();
    let name = reporter_contract::services::unique_name("otel_grpc");
    let dir = ledger_dir(&name);
    let addr = common::free_addr();
    let mut c = serve(&receiver, &addr, &dir);
    c.env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        .env("STREAMING_ENABLED", "true")
        .env("STREAMING_BROKERS", "memory://")
        .env("RABBITMQ_REPORT_EVENTS_EXCHANGE", "reporter.events")
        .env("STREAMING_CLOUDEVENTS_SOURCE", "reporter");
    let mut p = Kill(c.spawn().expect("spawn"));
    common::wait_listening(&addr, &mut p.0, Duration::from_secs(60));
    one_report(&addr);
    assert_one_trace(&receiver);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The text headers of the `report.finished` message of report `id` on `queue`.
async fn finished_headers(
    rabbit: &str,
    queue: &str,
    id: &str,
) -> std::collections::BTreeMap<String, String> {
    use lapin::options::{BasicAckOptions, BasicGetOptions};
    use lapin::types::AMQPValue;
    let conn = lapin::Connection::connect(rabbit, lapin::ConnectionProperties::default())
        .await
        .expect("connect");
    let ch = conn.create_channel().await.expect("channel");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        let Some(msg) = ch
            .basic_get(queue.into(), BasicGetOptions::default())
            .await
            .expect("get")
        else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        let _ = msg.ack(BasicAckOptions::default()).await;
        let headers: std::collections::BTreeMap<String, String> = msg
            .properties
            .headers()
            .as_ref()
            .map(|h| {
                h.inner()
                    .iter()
                    .filter_map(|(k, v)| match v {
                        AMQPValue::LongString(s) => Some((
                            k.to_string(),
                            String::from_utf8_lossy(s.as_bytes()).into_owned(),
                        )),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        if headers.get("ce-type").map(String::as_str)
            == Some("studio.lerian.reporter.report.finished")
            && headers.get("ce-subject").map(String::as_str) == Some(id)
        {
            return headers;
        }
    }
    panic!("no report.finished event of {id} on {queue}");
}
