//! `reporter api` and `reporter worker` as two processes, sharing MongoDB (state, outbox,
//! GridFS artifacts) and RabbitMQ (jobs): upload, request, wait, download over real HTTP.
use crate::common;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `reporter <role>` on MongoDB database `name` (GridFS artifacts) with its report jobs on
/// RabbitMQ queues of its own, logging to stderr at `E2E_PROC_LOG` (default `warn`).
fn reporter_cmd(role: &str, name: &str, mongo: &str, rabbit: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_reporter"));
    c.arg(role)
        .env("TMPDIR", common::children_tmpdir())
        .env("AUTH_JWT_SECRET", common::SECRET)
        .env("MONGO_URI", mongo)
        .env("MONGO_NAME", name)
        .env("MONGO_TENANT_DB_PREFIX", name)
        .env("OBJECT_STORAGE_BACKEND", "gridfs")
        .env("RABBITMQ_URI", rabbit)
        .env("RABBITMQ_EXCHANGE", format!("{name}.jobs"))
        .env("RABBITMQ_GENERATE_REPORT_QUEUE", format!("{name}.queue"))
        .env("RABBITMQ_GENERATE_REPORT_KEY", format!("{name}.key"))
        .env("RABBITMQ_DLQ_QUEUE", format!("{name}.dlq"))
        .env("RABBITMQ_DLX", format!("{name}.dlx"))
        .env(
            "LOG_LEVEL",
            std::env::var("E2E_PROC_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    c
}

/// The job queues and exchanges [`reporter_cmd`] gives the processes of `name`, deleted
/// when dropped (also when the test fails).
fn job_topology(name: &str) -> common::RabbitTopology {
    common::RabbitTopology {
        queues: vec![
            format!("{name}.queue"),
            format!("{name}.queue.retry"),
            format!("{name}.dlq"),
        ],
        exchanges: vec![format!("{name}.jobs"), format!("{name}.dlx")],
    }
}

#[test]
fn api_and_worker_as_two_processes() {
    api_and_worker(false);
}

/// The same in multi-tenant mode: the api creates the tenant's own database and registers
/// it; the worker process finds it through the registry, generates into it, and its
/// dispatcher publishes from it.
#[test]
fn api_and_worker_as_two_processes_with_a_database_per_tenant() {
    api_and_worker(true);
}

fn api_and_worker(multi_tenant: bool) {
    let (Some(mongo), Some(rabbit)) = (
        reporter_contract::services::service_url("MONGODB_URI", "MongoDB"),
        reporter_contract::services::service_url("RABBITMQ_URI", "RabbitMQ"),
    ) else {
        return;
    };
    let name = reporter_contract::services::unique_name("e2e_proc");
    let _topology = job_topology(&name);
    let dir = std::env::temp_dir().join(&name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("entries.csv"),
        "id,account,amount\n1,A,10.50\n2,B,3.25\n",
    )
    .unwrap();
    let addr = common::free_addr();
    let health = common::free_addr();
    let spawn = |role: &str| {
        let mut c = reporter_cmd(role, &name, &mongo, &rabbit);
        c.env("SERVER_ADDRESS", &addr)
            .env("HEALTH_ADDRESS", &health)
            .env("MULTI_TENANT_ENABLED", multi_tenant.to_string())
            .env("DATASOURCE_LEDGER_TYPE", "file")
            .env("DATASOURCE_LEDGER_PATH", &dir);
        Kill(c.spawn().expect("spawn"))
    };
    let mut api = spawn("api");
    let _worker = spawn("worker");
    let token = if multi_tenant {
        let all: Vec<&str> = reporter::http::auth::Scope::ALL
            .iter()
            .map(|s| s.as_str())
            .collect();
        common::token_for(Some("acme-bank"), &all)
    } else {
        common::token()
    };
    common::wait_listening(&addr, &mut api.0, Duration::from_secs(10));
    let tpl = common::upload_txt_raw(
        &addr,
        &token,
        "{% for e in ledger.entries %}{{ e.id }}:{{ e.amount }};{% endfor %}",
        "e2e",
    );
    let id = common::request_report_raw(&addr, &token, &tpl);
    let last = common::wait_report_raw(&addr, &token, &id, 300);
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
    assert_eq!(String::from_utf8(body).unwrap(), "1:10.5;2:3.25;");
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
    // Where the report lives: the tenant's own database in multi-tenant mode, else MONGO_NAME.
    tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(async {
            use mongodb::bson::{Document, doc};
            let client = mongodb::Client::with_uri_str(&mongo).await.expect("client");
            let home = if multi_tenant {
                let tenant = reporter_ports::TenantId::parse("acme-bank").expect("tenant");
                reporter_adapter_mongo::tenant_database_name(&name, &tenant)
            } else {
                name.clone()
            };
            let count = |db: String| {
                let client = client.clone();
                let id = id.clone();
                async move {
                    client
                        .database(&db)
                        .collection::<Document>("reports")
                        .count_documents(doc! { "_id": id })
                        .await
                        .expect("count")
                }
            };
            assert_eq!(count(home.clone()).await, 1, "the report is not in {home}");
            if multi_tenant {
                assert_eq!(
                    count(name.clone()).await,
                    0,
                    "a tenant's report leaked into the registry database"
                );
            }
        });
    let _ = std::fs::remove_dir_all(&dir);
}

/// A dispatcher process is killed (SIGKILL) while it holds leases on outbox rows; a second
/// dispatcher process publishes every row, and the dead one's rows only after their lease
/// ended. Nothing is lost: every row ends published and the durable queue bound to the
/// exchange holds at least one message per row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_dispatcher_s_rows_are_published_by_another_after_the_lease() {
    use mongodb::bson::{Document, doc};
    use reporter_ports::ports::{UnitOfWork, UnitOfWorkPort};

    let (Some(mongo), Some(rabbit)) = (
        reporter_contract::services::service_url("MONGODB_URI", "MongoDB"),
        reporter_contract::services::service_url("RABBITMQ_URI", "RabbitMQ"),
    ) else {
        return;
    };
    const ROWS: usize = 300;
    let name = reporter_contract::services::unique_name("e2e_kill");
    let (exchange, alternate, queue) = (
        format!("{name}.events"),
        format!("{name}.ae"),
        format!("{name}.q"),
    );
    let mut _topology = job_topology(&name);
    _topology.queues.extend([queue.clone(), alternate.clone()]);
    _topology
        .exchanges
        .extend([exchange.clone(), alternate.clone()]);
    // The exchange, declared by the service's own publisher, and a durable queue bound to it.
    drop(
        common::start_raw(
            common::rabbit_raw(&rabbit, &exchange, &alternate),
            Vec::new(),
        )
        .await,
    );
    {
        let (q, x) = (queue.clone(), exchange.clone());
        tokio::task::spawn_blocking(move || common::rabbit_declare_bound_queue(&q, &x, "#"))
            .await
            .unwrap();
    }
    // The backlog: ROWS outbox rows over 30 aggregates, committed before any dispatcher runs.
    let store = reporter_adapter_mongo::MongoStore::connect(&mongo, &name)
        .await
        .expect("MongoDB");
    let tenant = reporter_contract::fixtures::tenant_a();
    let now = chrono::Utc::now();
    for chunk in 0..ROWS / 100 {
        let rows: Vec<_> = (0..100)
            .map(|i| {
                reporter_contract::fixtures::outbox_row(
                    &tenant,
                    &format!("agg-{}", (chunk * 100 + i) % 30),
                    now,
                )
            })
            .collect();
        store
            .commit(&tenant, UnitOfWork::new().with_outbox(rows))
            .await
            .expect("commit backlog");
    }
    let outbox = store.database().collection::<Document>("outbox");

    let spawn = |lease_s: &str| {
        let mut c = reporter_cmd("worker", &name, &mongo, &rabbit);
        c.env("HEALTH_ADDRESS", common::free_addr())
            .env("STREAMING_ENABLED", "true")
            .env("RABBITMQ_REPORT_EVENTS_EXCHANGE", &exchange)
            .env("STREAMING_ALTERNATE_EXCHANGE", &alternate)
            .env("STREAMING_BROKERS", &rabbit)
            .env("STREAMING_CLOUDEVENTS_SOURCE", "reporter")
            .env("STREAMING_DISPATCH_BATCH", "100")
            .env("STREAMING_DISPATCH_POLL_MS", "50")
            .env("STREAMING_OUTBOX_LEASE_S", lease_s);
        Kill(c.spawn().expect("spawn"))
    };
    let leased = doc! { "status": "pending", "lease_owner": { "$ne": null } };

    // A claims with 5 s leases; it is killed as soon as it holds some.
    let mut a = spawn("5");
    let started = std::time::Instant::now();
    loop {
        if outbox.count_documents(leased.clone()).await.expect("count") > 0 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "dispatcher A never claimed a row"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    a.0.kill().expect("SIGKILL");
    let _ = a.0.wait();
    let killed_at = chrono::Utc::now();
    let held: Vec<Document> = {
        use futures_util::TryStreamExt;
        outbox
            .find(leased.clone())
            .await
            .expect("find")
            .try_collect()
            .await
            .expect("collect")
    };
    assert!(!held.is_empty(), "the killed dispatcher held no lease");
    // (row id, lease end in ms since the epoch)
    let held: Vec<(String, i64)> = held
        .iter()
        .map(|d| {
            (
                d.get_str("_id").expect("_id").to_owned(),
                d.get_datetime("lease_until")
                    .expect("lease_until")
                    .timestamp_millis(),
            )
        })
        .collect();

    // B publishes everything, A's rows once their lease has ended.
    let _b = spawn("30");
    let started = std::time::Instant::now();
    loop {
        let left = outbox
            .count_documents(doc! { "status": { "$ne": "published" } })
            .await
            .expect("count");
        if left == 0 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "{left} rows still unpublished 120 s after dispatcher B started"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let drained = started.elapsed();
    for (id, lease_until) in &held {
        let row = outbox
            .find_one(doc! { "_id": id })
            .await
            .expect("find")
            .expect("row");
        let published = row
            .get_datetime("published_at")
            .expect("published_at")
            .timestamp_millis();
        assert!(
            published >= *lease_until,
            "row {id} of the dead dispatcher was republished at {published} ms, inside its \
             lease (until {lease_until} ms)"
        );
    }
    let depth = {
        let q = queue.clone();
        tokio::task::spawn_blocking(move || common::rabbit_queue_depth(&q))
            .await
            .unwrap()
    };
    assert!(
        depth.unwrap_or_default() >= ROWS as u64,
        "the queue holds {depth:?} messages for {ROWS} rows"
    );
    reporter_contract::figure!(
        "killed dispatcher: {} rows leased at the kill ({killed_at}); B drained {ROWS} rows in \
         {drained:?}; queue depth {depth:?} ({} duplicates from rows A published unsettled)",
        held.len(),
        depth.unwrap_or_default().saturating_sub(ROWS as u64)
    );
    // The databases stay: the stand-in's dropDatabase can stall while other tests run (see
    // tests/common/mod.rs); CI throws the stand-in away. The broker topology goes with
    // `_topology`, also when the test fails.
}
