use super::*;

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn defaults_validate_to_in_memory_single_tenant() {
    let c = RawConfig::defaults()
        .validate(&[])
        .expect("defaults are valid");
    assert_eq!(c.server_address.to_string(), "127.0.0.1:4005");
    assert_eq!(c.tenancy, Tenancy::Single(TenantId::default_tenant()));
    assert_eq!(
        c.object_storage,
        ObjectStorageChoice::Memory {
            max_artifact_bytes: Some(256 * 1024 * 1024),
            tenant_max_bytes: None,
        }
    );
    assert!(c.data_sources.example);
    assert_eq!(c.auth.key, AuthKey::Generated);
    assert!(c.auth.enabled);
    assert_eq!(c.max_pagination_limit, 100);
}

#[test]
fn clap_defaults_match_defaults() {
    use clap::Parser;
    #[derive(Parser)]
    struct W {
        #[command(flatten)]
        raw: RawConfig,
    }
    let parsed = W::try_parse_from(["reporter"]).expect("parses").raw;
    let d = RawConfig::defaults();
    // Only compare fields no test environment sets.
    assert_eq!(parsed.max_pagination_limit, d.max_pagination_limit);
    assert_eq!(parsed.idempotency_ttl_seconds, d.idempotency_ttl_seconds);
    assert_eq!(parsed.example_data_enabled, d.example_data_enabled);
    assert_eq!(parsed.max_request_body_bytes, d.max_request_body_bytes);
}

#[test]
fn every_problem_is_listed_with_variable_problem_and_rule() {
    let mut raw = RawConfig::defaults();
    raw.server_address = "nowhere".into();
    raw.max_pagination_limit = "0".into();
    raw.auth_enabled = "maybe".into();
    raw.auth_jwt_secret = Some("short".into());
    raw.default_tenant_id = "bad/tenant".into();
    raw.object_storage_backend = "s4".into();
    let errs = raw
        .validate(&env(&[("DATASOURCE_X_TYPE", "oracle")]))
        .unwrap_err();
    let vars: Vec<&str> = errs.0.iter().map(|p| p.variable.as_str()).collect();
    for v in [
        "SERVER_ADDRESS",
        "MAX_PAGINATION_LIMIT",
        "AUTH_ENABLED",
        "AUTH_JWT_SECRET",
        "DEFAULT_TENANT_ID",
        "OBJECT_STORAGE_BACKEND",
        "DATASOURCE_X_TYPE",
    ] {
        assert!(vars.contains(&v), "{v} missing from {vars:?}");
    }
    let text = errs.to_string();
    assert!(
        text.contains(
            "MAX_PAGINATION_LIMIT: 0 is out of range (rule: an integer between 1 and 1000)"
        ),
        "{text}"
    );
}

#[test]
fn the_memory_storage_shares_its_bound_per_tenant_in_multi_tenant_mode() {
    let memory = |multi: bool, share: &str| {
        let mut raw = RawConfig::defaults();
        if multi {
            raw.multi_tenant_enabled = "true".into();
        }
        raw.object_storage_memory_tenant_max_bytes = share.into();
        raw.validate(&[]).map(|c| c.object_storage)
    };
    let storage = |tenant_max_bytes| ObjectStorageChoice::Memory {
        max_artifact_bytes: Some(256 << 20),
        tenant_max_bytes,
    };
    assert_eq!(memory(true, "auto").unwrap(), storage(Some(64 << 20)));
    assert_eq!(memory(false, "auto").unwrap(), storage(None));
    assert_eq!(memory(true, "0").unwrap(), storage(None));
    assert_eq!(memory(false, "2097152").unwrap(), storage(Some(2 << 20)));
    for bad in ["1000", "lots"] {
        let errs = memory(true, bad).unwrap_err();
        assert_eq!(
            errs.0[0].variable, "OBJECT_STORAGE_MEMORY_TENANT_MAX_BYTES",
            "{bad}"
        );
    }
}

#[test]
fn one_tenant_leaves_a_render_slot_to_the_others_in_multi_tenant_mode() {
    let bound = |multi: bool, value: &str, concurrency: &str, pool: &str| {
        let mut raw = RawConfig::defaults();
        if multi {
            raw.multi_tenant_enabled = "true".into();
        }
        raw.worker_max_jobs_per_tenant = value.into();
        raw.worker_concurrency = concurrency.into();
        raw.template_sandbox_pool_size = pool.into();
        raw.validate(&[])
            .map(|c| c.worker.settings.max_jobs_per_tenant)
    };
    assert_eq!(bound(true, "auto", "4", "4").unwrap(), 3);
    assert_eq!(
        bound(true, "auto", "8", "2").unwrap(),
        1,
        "the pool is the slots"
    );
    assert_eq!(bound(true, "auto", "1", "4").unwrap(), 1, "never 0");
    assert_eq!(bound(false, "auto", "4", "4").unwrap(), 4);
    assert_eq!(bound(true, "2", "4", "4").unwrap(), 2);
    for bad in ["0", "5", "many"] {
        let errs = bound(true, bad, "4", "4").unwrap_err();
        assert_eq!(errs.0[0].variable, "WORKER_MAX_JOBS_PER_TENANT", "{bad}");
    }
}

#[test]
fn the_rabbitmq_prefetch_leaves_room_for_held_back_jobs_in_multi_tenant_mode() {
    let prefetch = |multi: bool, value: &str, concurrency: &str| {
        let mut raw = RawConfig::defaults();
        raw.rabbitmq_uri = Some("amqp://localhost:5672/%2f".into());
        if multi {
            raw.multi_tenant_enabled = "true".into();
        }
        raw.rabbitmq_prefetch = value.into();
        raw.worker_concurrency = concurrency.into();
        match raw.validate(&[]).unwrap().worker.queue {
            JobQueueChoice::Rabbit { prefetch, .. } => prefetch,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(prefetch(true, "auto", "4"), 8);
    assert_eq!(prefetch(false, "auto", "4"), 4, "the reference's value");
    assert_eq!(
        prefetch(true, "auto", "1"),
        4,
        "a bound of 1 of 1 holds nothing back"
    );
    assert_eq!(prefetch(true, "3", "4"), 3, "as set");
}

#[test]
fn multi_tenant_needs_auth_and_production_needs_a_key() {
    let mut raw = RawConfig::defaults();
    raw.multi_tenant_enabled = "true".into();
    raw.auth_enabled = "false".into();
    let errs = raw.validate(&[]).unwrap_err();
    assert_eq!(errs.0[0].variable, "MULTI_TENANT_ENABLED");

    let mut raw = RawConfig::defaults();
    raw.env_name = "production".into();
    let errs = raw.validate(&[]).unwrap_err();
    assert!(errs.0.iter().any(|p| p.variable == "AUTH_JWT_SECRET"));
}

#[test]
fn file_data_sources() {
    let c = RawConfig::defaults()
        .validate(&env(&[
            ("DATASOURCE_LEDGER_TYPE", "file"),
            ("DATASOURCE_LEDGER_PATH", "/data/ledger"),
        ]))
        .unwrap();
    let id = DataSourceId::parse("ledger").unwrap();
    assert_eq!(
        c.data_sources.sources.get(&id),
        Some(&DataSourceSpec::File {
            path: "/data/ledger".into()
        })
    );
    assert!(
        !c.data_sources.example,
        "the example is off when a source is configured"
    );

    let errs = RawConfig::defaults()
        .validate(&env(&[("DATASOURCE_LEDGER_TYPE", "file")]))
        .unwrap_err();
    assert_eq!(errs.0[0].variable, "DATASOURCE_LEDGER_PATH");
    let errs = RawConfig::defaults()
        .validate(&env(&[("DATASOURCE_LEDGER_PATHS", "x")]))
        .unwrap_err();
    assert_eq!(errs.0[0].variable, "DATASOURCE_LEDGER_PATHS");
}

use reporter_ports::datasource::DataSourceId;

/// The seed's configuration table, row by row.
#[test]
fn streaming_configuration_table() {
    struct Row {
        enabled: &'static str,
        exchange: Option<&'static str>,
        brokers: Option<&'static str>,
        source: Option<&'static str>,
        failing: &'static [&'static str],
    }
    let ok = Some("reporter");
    let rows = [
        // Off: the source may be unset or blank, the others are not needed.
        Row {
            enabled: "false",
            exchange: None,
            brokers: None,
            source: None,
            failing: &[],
        },
        Row {
            enabled: "false",
            exchange: None,
            brokers: None,
            source: Some(""),
            failing: &[],
        },
        Row {
            enabled: "false",
            exchange: None,
            brokers: None,
            source: Some("  "),
            failing: &[],
        },
        Row {
            enabled: "false",
            exchange: None,
            brokers: None,
            source: ok,
            failing: &[],
        },
        // Off, but a non-empty source other than `reporter` still fails.
        Row {
            enabled: "false",
            exchange: None,
            brokers: None,
            source: Some("//lerian.reporter"),
            failing: &["STREAMING_CLOUDEVENTS_SOURCE"],
        },
        Row {
            enabled: "false",
            exchange: None,
            brokers: None,
            source: Some("Reporter"),
            failing: &["STREAMING_CLOUDEVENTS_SOURCE"],
        },
        // On: all three must be non-blank and the source exactly `reporter`.
        Row {
            enabled: "true",
            exchange: Some("reporter.events"),
            brokers: Some("memory://"),
            source: ok,
            failing: &[],
        },
        Row {
            enabled: "true",
            exchange: Some("reporter.events"),
            brokers: Some("amqp://guest:guest@127.0.0.1:5672/%2f"),
            source: ok,
            failing: &[],
        },
        Row {
            enabled: "true",
            exchange: None,
            brokers: Some("memory://"),
            source: ok,
            failing: &["RABBITMQ_REPORT_EVENTS_EXCHANGE"],
        },
        Row {
            enabled: "true",
            exchange: Some(" "),
            brokers: Some("memory://"),
            source: ok,
            failing: &["RABBITMQ_REPORT_EVENTS_EXCHANGE"],
        },
        Row {
            enabled: "true",
            exchange: Some("reporter.events"),
            brokers: None,
            source: ok,
            failing: &["STREAMING_BROKERS"],
        },
        Row {
            enabled: "true",
            exchange: Some("reporter.events"),
            brokers: Some(""),
            source: ok,
            failing: &["STREAMING_BROKERS"],
        },
        Row {
            enabled: "true",
            exchange: Some("reporter.events"),
            brokers: Some("memory://"),
            source: None,
            failing: &["STREAMING_CLOUDEVENTS_SOURCE"],
        },
        Row {
            enabled: "true",
            exchange: Some("reporter.events"),
            brokers: Some("memory://"),
            source: Some(""),
            failing: &["STREAMING_CLOUDEVENTS_SOURCE"],
        },
        Row {
            enabled: "true",
            exchange: Some("reporter.events"),
            brokers: Some("memory://"),
            source: Some("reporter-x"),
            failing: &["STREAMING_CLOUDEVENTS_SOURCE"],
        },
        Row {
            enabled: "true",
            exchange: None,
            brokers: None,
            source: None,
            failing: &[
                "RABBITMQ_REPORT_EVENTS_EXCHANGE",
                "STREAMING_BROKERS",
                "STREAMING_CLOUDEVENTS_SOURCE",
            ],
        },
        // Any non-empty value is accepted; one that names no AMQP URI needs RABBITMQ_URI.
        Row {
            enabled: "true",
            exchange: Some("reporter.events"),
            brokers: Some("kafka://x:9092"),
            source: ok,
            failing: &["RABBITMQ_URI"],
        },
        Row {
            enabled: "true",
            exchange: Some("reporter.events"),
            brokers: Some("rabbitmq:5672"),
            source: ok,
            failing: &["RABBITMQ_URI"],
        },
        Row {
            enabled: "false",
            exchange: None,
            brokers: Some("rabbitmq:5672"),
            source: None,
            failing: &[],
        },
        Row {
            enabled: "yes-please",
            exchange: None,
            brokers: None,
            source: None,
            failing: &["STREAMING_ENABLED"],
        },
    ];
    for (i, row) in rows.iter().enumerate() {
        let mut raw = RawConfig::defaults();
        raw.streaming_enabled = row.enabled.into();
        raw.events_exchange = row.exchange.map(Into::into);
        raw.streaming_brokers = row.brokers.map(Into::into);
        raw.streaming_source = row.source.map(Into::into);
        let mut failing: Vec<String> = match raw.validate(&[]) {
            Ok(c) => {
                assert_eq!(c.streaming.enabled, row.enabled == "true", "row {i}");
                Vec::new()
            }
            Err(e) => e.0.into_iter().map(|p| p.variable).collect(),
        };
        failing.sort();
        failing.dedup();
        assert_eq!(
            failing,
            row.failing
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>(),
            "row {i}"
        );
    }
}

#[test]
fn redact_hides_passwords() {
    assert_eq!(
        redact("amqp://guest:secret@host:5672/%2f"),
        "amqp://guest:***@host:5672/%2f"
    );
    assert_eq!(redact("amqp://host"), "amqp://host");
    assert_eq!(
        redact("amqp://a:pw1@h1:5672/%2f, amqps://b:pw2@h2"),
        "amqp://a:***@h1:5672/%2f, amqps://b:***@h2"
    );
    assert_eq!(redact("u:pw@rabbitmq:5672"), "u:***@rabbitmq:5672");
    assert_eq!(redact("rabbitmq:5672"), "rabbitmq:5672");
}

#[test]
fn report_requeue_after_is_off_or_above_the_job_deadline() {
    let check = |after: &str, engine: &str| {
        let mut raw = RawConfig::defaults();
        raw.report_requeue_after_sec = after.into();
        raw.engine_timeout_sec = engine.into();
        raw.validate(&[])
    };
    let c = check("900", "300").expect("default");
    assert_eq!(
        c.worker.settings.requeue_after,
        Some(std::time::Duration::from_secs(900))
    );
    assert_eq!(
        check("0", "300")
            .expect("off")
            .worker
            .settings
            .requeue_after,
        None
    );
    for (after, engine) in [("300", "300"), ("30", "10"), ("soon", "300")] {
        let errs = check(after, engine).expect_err(after);
        assert!(
            errs.0
                .iter()
                .any(|p| p.variable == "REPORT_REQUEUE_AFTER_SEC"),
            "{after}/{engine}: {errs:?}"
        );
    }
}

#[test]
fn the_abandoned_upload_sweep_is_off_or_above_the_job_deadline() {
    let check = |after: &str, every: &str, backend: &str| {
        let mut raw = RawConfig::defaults();
        raw.object_storage_abandoned_after_seconds = after.into();
        raw.object_storage_sweep_interval_seconds = every.into();
        raw.object_storage_backend = backend.into();
        raw.object_storage_path = "/srv/objects".into();
        raw.validate(&[])
    };
    let c = check("3600", "600", "fs").expect("default");
    assert_eq!(
        c.worker.settings.storage_sweep,
        Some(crate::worker::StorageSweepSettings {
            older_than: std::time::Duration::from_secs(3600),
            every: std::time::Duration::from_secs(600),
            backend: "fs",
        })
    );
    for (after, backend) in [("0", "fs"), ("3600", "memory")] {
        let c = check(after, "600", backend).expect("off");
        assert_eq!(c.worker.settings.storage_sweep, None, "{after} {backend}");
    }
    for (after, every) in [
        ("300", "600"),
        ("30", "600"),
        ("soon", "600"),
        ("3600", "5"),
    ] {
        let errs = check(after, every, "fs").expect_err(after);
        assert!(
            errs.0
                .iter()
                .any(|p| p.variable.starts_with("OBJECT_STORAGE_")),
            "{after}/{every}: {errs:?}"
        );
    }
}

#[test]
fn sql_data_sources_with_tls() {
    let ca = std::env::temp_dir().join(format!("reporter-test-ca-{}.pem", std::process::id()));
    std::fs::write(&ca, "not checked here").unwrap();
    let ca_path = ca.to_str().unwrap().to_owned();
    let c = RawConfig::defaults()
        .validate(&env(&[
            ("DATASOURCE_LEDGER_TYPE", "mysql"),
            ("DATASOURCE_LEDGER_HOST", "db.local"),
            ("DATASOURCE_LEDGER_PASSWORD", "s3cret"),
            ("DATASOURCE_LEDGER_DATABASE", "ledger"),
            ("DATASOURCE_LEDGER_SSLMODE", "verify-full"),
            ("DATASOURCE_LEDGER_SSLROOTCERT", &ca_path),
            ("DATASOURCE_PG_TYPE", "postgresql"),
            ("DATASOURCE_PG_DATABASE", "core"),
            ("DATASOURCE_PG_SSLMODE", "require"),
            ("DATASOURCE_MS_TYPE", "sqlserver"),
            ("DATASOURCE_MS_DATABASE", "erp"),
            ("DATASOURCE_MS_SCHEMAS", "dbo, sales"),
        ]))
        .unwrap();
    let get = |id: &str| c.data_sources.sources[&DataSourceId::parse(id).unwrap()].clone();
    let DataSourceSpec::Mysql(my) = get("ledger") else {
        panic!("mysql");
    };
    assert_eq!(
        (my.host.as_str(), my.port, my.user.as_str()),
        ("db.local", 3306, "root")
    );
    assert_eq!(my.password.as_ref().map(Secret::expose), Some("s3cret"));
    assert_eq!(my.schemas, ["ledger"], "the database itself by default");
    assert_eq!(my.tls.mode, reporter_adapter_mysql::SslMode::VerifyFull);
    assert_eq!(
        my.tls.root_cert,
        Some(super::RootCert::File(ca.clone())),
        "the CA file"
    );
    let DataSourceSpec::Postgresql(super::SqlConnection { tls, port, .. }) = get("pg") else {
        panic!("postgresql");
    };
    assert_eq!(port, 5432);
    assert_eq!(tls.mode, reporter_adapter_postgres::SslMode::Require);
    let DataSourceSpec::Sqlserver(ms) = get("ms") else {
        panic!("sqlserver");
    };
    assert_eq!((ms.port, ms.user.as_str()), (1433, "sa"));
    assert_eq!(ms.schemas, ["dbo", "sales"]);

    let errs = RawConfig::defaults()
        .validate(&env(&[
            ("DATASOURCE_A_TYPE", "mysql"),
            ("DATASOURCE_A_DATABASE", "x"),
            ("DATASOURCE_A_SSLMODE", "sometimes"),
            ("DATASOURCE_B_TYPE", "postgresql"),
            ("DATASOURCE_B_DATABASE", "x"),
            ("DATASOURCE_B_SSLROOTCERT", "/nonexistent/ca.pem"),
            ("DATASOURCE_C_TYPE", "mysql"),
            ("DATASOURCE_D_TYPE", "oracle"),
        ]))
        .unwrap_err();
    let vars: Vec<&str> = errs.0.iter().map(|p| p.variable.as_str()).collect();
    for v in [
        "DATASOURCE_A_SSLMODE",
        "DATASOURCE_B_SSLROOTCERT",
        "DATASOURCE_C_DATABASE",
        "DATASOURCE_D_TYPE",
    ] {
        assert!(vars.contains(&v), "{v} missing from {vars:?}");
    }
    assert!(
        errs.to_string().contains("Oracle's client libraries"),
        "{errs}"
    );
    let _ = std::fs::remove_file(ca);
}

/// The original's deployments set `STREAMING_BROKERS` to a broker list (`rabbitmq:5672`) and
/// name the AMQP server in `RABBITMQ_URI`.
#[test]
fn streaming_brokers_without_an_amqp_uri_publish_to_rabbitmq_uri() {
    let mut raw = RawConfig::defaults();
    raw.streaming_enabled = "true".into();
    raw.events_exchange = Some("reporter.events".into());
    raw.streaming_source = Some("reporter".into());
    raw.streaming_brokers = Some("rabbitmq:5672".into());
    raw.rabbitmq_uri = Some("amqp://guest:secret@rabbitmq:5672/%2f".into());
    let c = raw.validate(&[]).expect("valid");
    assert_eq!(
        c.streaming.broker,
        EventBroker::Amqp(vec!["amqp://guest:secret@rabbitmq:5672/%2f".into()])
    );
    assert_eq!(
        c.streaming.broker_origin,
        BrokerOrigin::RabbitmqUri {
            brokers: "rabbitmq:5672".into()
        }
    );
    let said = c.streaming.describe();
    assert!(said.contains("from RABBITMQ_URI"), "{said}");
    assert!(
        said.contains("rabbitmq:5672") && !said.contains("secret"),
        "{said}"
    );

    // AMQP URIs in STREAMING_BROKERS win, whatever else the list holds.
    raw.streaming_brokers = Some("rabbitmq:5672, amqp://a:b@other:5672/%2f".into());
    let c = raw.validate(&[]).expect("valid");
    assert_eq!(
        c.streaming.broker,
        EventBroker::Amqp(vec!["amqp://a:b@other:5672/%2f".into()])
    );
    assert_eq!(c.streaming.broker_origin, BrokerOrigin::StreamingBrokers);
    assert!(c.streaming.describe().contains("from STREAMING_BROKERS"));

    raw.streaming_brokers = Some("memory://".into());
    let c = raw.validate(&[]).expect("valid");
    assert_eq!(c.streaming.broker, EventBroker::Memory);
    assert!(c.streaming.describe().contains("in-memory"));
    raw.streaming_enabled = "false".into();
    assert!(
        raw.validate(&[])
            .unwrap()
            .streaming
            .describe()
            .contains("off")
    );
}

#[test]
fn unroutable_queue_bounds_default_to_the_original_dlq_and_are_checked() {
    let c = RawConfig::defaults().validate(&[]).unwrap();
    assert_eq!(
        c.streaming.unroutable_ttl,
        std::time::Duration::from_secs(7 * 86_400)
    );
    assert_eq!(c.streaming.unroutable_max_length, 10_000);
    for (ttl, max, bad) in [
        ("0", "10", "STREAMING_UNROUTABLE_TTL_SECONDS"),
        ("60", "0", "STREAMING_UNROUTABLE_MAX_LENGTH"),
        ("x", "10", "STREAMING_UNROUTABLE_TTL_SECONDS"),
    ] {
        let mut raw = RawConfig::defaults();
        raw.streaming_unroutable_ttl_seconds = ttl.into();
        raw.streaming_unroutable_max_length = max.into();
        let e = raw.validate(&[]).unwrap_err();
        assert_eq!(e.0.len(), 1, "{e}");
        assert_eq!(e.0[0].variable, bad);
    }
}

#[test]
fn deployment_mode_and_drain() {
    let c = RawConfig::defaults().validate(&[]).unwrap();
    assert_eq!(c.deployment_mode, DeploymentMode::Local);
    assert_eq!(c.shutdown_drain, std::time::Duration::ZERO);
    let mut raw = RawConfig::defaults();
    raw.deployment_mode = "BYOC".into();
    raw.shutdown_drain_seconds = "7".into();
    let c = raw.validate(&[]).unwrap();
    assert_eq!(c.deployment_mode.as_str(), "byoc");
    assert_eq!(c.shutdown_drain, std::time::Duration::from_secs(7));
    raw.deployment_mode = "cloud".into();
    raw.shutdown_drain_seconds = "301".into();
    let mut vars: Vec<String> = raw
        .validate(&[])
        .unwrap_err()
        .0
        .into_iter()
        .map(|p| p.variable)
        .collect();
    vars.sort();
    assert_eq!(vars, ["DEPLOYMENT_MODE", "SHUTDOWN_DRAIN_SECONDS"]);
}

/// As the original: `saas` refuses any connection without TLS.
#[test]
fn saas_requires_tls_on_every_connection() {
    let mut raw = RawConfig::defaults();
    raw.deployment_mode = "saas".into();
    assert!(raw.validate(&[]).is_ok(), "in memory: nothing to encrypt");
    raw.mongo_uri = Some("mongodb://db:27017/?replicaSet=rs0".into());
    raw.rabbitmq_uri = Some("amqp://u:p@mq:5672/%2f".into());
    raw.streaming_enabled = "true".into();
    raw.events_exchange = Some("reporter.events".into());
    raw.streaming_source = Some("reporter".into());
    raw.streaming_brokers = Some("rabbitmq:5672".into());
    raw.object_storage_backend = "s3".into();
    raw.s3_endpoint = Some("http://seaweedfs:8333".into());
    let mut env = vec![
        ("DATASOURCE_LEDGER_TYPE".to_owned(), "postgresql".to_owned()),
        ("DATASOURCE_LEDGER_DATABASE".to_owned(), "ledger".to_owned()),
        ("DATASOURCE_SHOP_TYPE".to_owned(), "mysql".to_owned()),
        ("DATASOURCE_SHOP_DATABASE".to_owned(), "shop".to_owned()),
    ];
    let mut vars: Vec<String> = raw
        .validate(&env)
        .unwrap_err()
        .0
        .into_iter()
        .map(|p| p.variable)
        .collect();
    vars.sort();
    assert_eq!(
        vars,
        [
            "DATASOURCE_LEDGER_SSLMODE",
            "DATASOURCE_SHOP_SSLMODE",
            "MONGO_URI",
            "OBJECT_STORAGE_ENDPOINT",
            "RABBITMQ_URI",
            "STREAMING_BROKERS"
        ]
    );
    raw.mongo_uri = Some("mongodb://db:27017/?replicaSet=rs0&tls=true".into());
    raw.rabbitmq_uri = Some("amqps://u:p@mq:5671/%2f".into());
    raw.s3_endpoint = Some("https://s3.example".into());
    assert!(raw.validate(&[]).is_ok(), "{:?}", raw.validate(&[]).err());
    env.push(("DATASOURCE_LEDGER_SSLMODE".into(), "verify-full".into()));
    env.push(("DATASOURCE_SHOP_SSLMODE".into(), "require".into()));
    assert!(raw.validate(&env).is_ok(), "{:?}", raw.validate(&env).err());
}

#[test]
fn sandbox_bounds_are_validated() {
    let c = RawConfig::defaults().validate(&[]).expect("defaults");
    assert_eq!(c.sandbox.pool_size, 4);
    assert_eq!(c.sandbox.render_memory_bytes, 1024 * 1024 * 1024);
    assert_eq!(c.sandbox.parse_memory_bytes, 256 * 1024 * 1024);
    assert_eq!(c.sandbox.render_cpu_seconds, 120);
    assert_eq!(c.sandbox.render_timeout.as_secs(), 120);
    assert_eq!(c.sandbox.parse_timeout.as_millis(), 10_000);
    assert_eq!(c.sandbox.max_output_bytes, 67_108_864);
    assert_eq!(c.sandbox.exe, None);
    let mut raw = RawConfig::defaults();
    raw.template_sandbox_pool_size = "0".into();
    raw.template_render_memory_mib = "1".into();
    raw.template_render_cpu_seconds = "x".into();
    raw.template_render_timeout_sec = "0".into();
    raw.template_parse_memory_mib = "8".into();
    raw.template_parse_timeout_ms = "5".into();
    raw.template_sandbox_exe = Some("/nonexistent/reporter".into());
    let errs = raw.validate(&[]).unwrap_err();
    let vars: Vec<&str> = errs.0.iter().map(|p| p.variable.as_str()).collect();
    for v in [
        "TEMPLATE_SANDBOX_POOL_SIZE",
        "TEMPLATE_RENDER_MEMORY_MIB",
        "TEMPLATE_RENDER_CPU_SECONDS",
        "TEMPLATE_RENDER_TIMEOUT_SEC",
        "TEMPLATE_PARSE_MEMORY_MIB",
        "TEMPLATE_PARSE_TIMEOUT_MS",
        "TEMPLATE_SANDBOX_EXE",
    ] {
        assert!(vars.contains(&v), "{v} not reported: {errs}");
    }
}

/// `REPORT_HTML_ALLOWED_ORIGINS`: none by default; origins are normalized; anything that is
/// not an http(s) origin is refused, naming the variable.
#[test]
fn html_allowed_origins_are_validated() {
    let c = RawConfig::defaults().validate(&[]).expect("defaults");
    assert!(c.sandbox.html_allowed_origins.is_empty());
    let mut raw = RawConfig::defaults();
    raw.report_html_allowed_origins = " https://CDN.example.com/ , http://10.0.0.5:8080,".into();
    let c = raw.validate(&[]).expect("valid origins");
    assert_eq!(
        c.sandbox.html_allowed_origins.iter().collect::<Vec<_>>(),
        ["http://10.0.0.5:8080", "https://cdn.example.com"]
    );
    for bad in [
        "cdn.example.com",
        "https://cdn.example.com/fonts",
        "ftp://x.example",
    ] {
        let mut raw = RawConfig::defaults();
        raw.report_html_allowed_origins = bad.into();
        let errs = raw.validate(&[]).unwrap_err();
        assert_eq!(errs.0.len(), 1, "{errs}");
        assert_eq!(errs.0[0].variable, "REPORT_HTML_ALLOWED_ORIGINS", "{bad}");
    }
}

/// `STREAMING_EVENT_POLICIES`: Helm's empty default starts; an override the fixed policies
/// cannot honour stops start-up naming the variable, never silently ignored.
#[test]
fn streaming_event_policies_are_refused_unless_empty() {
    let check = |value: Option<&str>| {
        let mut raw = RawConfig::defaults();
        raw.streaming_enabled = "true".into();
        raw.events_exchange = Some("reporter.events".into());
        raw.streaming_source = Some("reporter".into());
        raw.streaming_brokers = Some("memory://".into());
        raw.streaming_event_policies = value.map(Into::into);
        raw.validate(&[])
    };
    for ok in [None, Some(""), Some("  ")] {
        assert!(check(ok).is_ok(), "{ok:?}");
    }
    let errs = check(Some("report.finished.enabled=false")).unwrap_err();
    assert_eq!(errs.0.len(), 1, "{errs}");
    assert_eq!(errs.0[0].variable, "STREAMING_EVENT_POLICIES");
    assert!(errs.to_string().contains("fixed per event class"), "{errs}");
}

/// The original's TLS variables of a data source (reference E.1), one row each: what a
/// PostgreSQL source makes of them, or which variable the refusal names.
#[test]
fn the_original_s_data_source_tls_variables() {
    use super::RootCert;
    use base64::Engine as _;
    use reporter_adapter_postgres::SslMode;
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let ca = std::env::temp_dir().join(format!("reporter-test-ca2-{}.pem", std::process::id()));
    let pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    std::fs::write(&ca, pem).unwrap();
    let ca_path = ca.to_str().unwrap().to_owned();
    let other = "/etc/hostname".to_owned();
    // A DER certificate's first bytes: SEQUENCE with a two-byte length, then padding.
    let mut der = vec![0x30, 0x82, 0x01, 0x0a];
    der.extend(std::iter::repeat_n(0x5a, 266));
    let pem_b64 = b64(pem.as_bytes());
    let der_b64 = b64(&der);
    let not_a_cert = b64(b"hello");
    type Want = Result<(SslMode, Option<RootCert>), &'static str>;
    let rows: Vec<(Vec<(&str, &str)>, Want)> = vec![
        (vec![("SSL", "true")], Ok((SslMode::Require, None))),
        (vec![("SSL", "TRUE")], Ok((SslMode::Require, None))),
        (vec![("SSL", "false")], Ok((SslMode::Disable, None))),
        (
            vec![("SSL", "true"), ("SSLMODE", "verify-full")],
            Ok((SslMode::VerifyFull, None)),
        ),
        (vec![("SSL", "true"), ("SSLMODE", "disable")], Err("SSL")),
        (vec![("SSL", "false"), ("SSLMODE", "require")], Err("SSL")),
        (vec![("SSL", "sometimes")], Err("SSL")),
        (
            vec![("SSLMODE", "verify-ca"), ("SSLCA", &ca_path)],
            Ok((SslMode::VerifyCa, Some(RootCert::File(ca.clone())))),
        ),
        (
            vec![("SSLCA", &ca_path), ("SSLROOTCERT", &ca_path)],
            Ok((SslMode::Disable, Some(RootCert::File(ca.clone())))),
        ),
        (
            vec![("SSLCA", &ca_path), ("SSLROOTCERT", &other)],
            Err("SSLCA"),
        ),
        (vec![("SSLCA", "/nonexistent/ca.pem")], Err("SSLCA")),
        (
            vec![("SSL", "true"), ("SSLCA_BASE64", &pem_b64)],
            Ok((
                SslMode::Require,
                Some(RootCert::Pem(pem.as_bytes().to_vec())),
            )),
        ),
        (vec![("SSLCA_BASE64", "%%%")], Err("SSLCA_BASE64")),
        (vec![("SSLCA_BASE64", &not_a_cert)], Err("SSLCA_BASE64")),
        (
            vec![("SSLCA_BASE64", &pem_b64), ("SSLCA", &ca_path)],
            Err("SSLCA_BASE64"),
        ),
        (vec![("OPTIONS", "")], Ok((SslMode::Disable, None))),
        (vec![("OPTIONS", "sslmode=require")], Err("OPTIONS")),
    ];
    for (i, (vars, want)) in rows.into_iter().enumerate() {
        let mut pairs: Vec<(String, String)> = vec![
            ("DATASOURCE_PG_TYPE".into(), "postgresql".into()),
            ("DATASOURCE_PG_DATABASE".into(), "core".into()),
        ];
        pairs.extend(
            vars.iter()
                .map(|(k, v)| (format!("DATASOURCE_PG_{k}"), v.to_string())),
        );
        let got = RawConfig::defaults().validate(&pairs);
        match (got, want) {
            (Ok(c), Ok((mode, root))) => {
                let DataSourceSpec::Postgresql(super::SqlConnection { tls, .. }) =
                    &c.data_sources.sources[&DataSourceId::parse("pg").unwrap()]
                else {
                    panic!("row {i}: not PostgreSQL");
                };
                assert_eq!(
                    (tls.mode, &tls.root_cert),
                    (mode, &root),
                    "row {i}: {vars:?}"
                );
            }
            (Err(e), Err(var)) => {
                let named: Vec<&str> = e.0.iter().map(|p| p.variable.as_str()).collect();
                assert_eq!(named, [format!("DATASOURCE_PG_{var}")], "row {i}: {vars:?}");
            }
            (got, want) => panic!("row {i} {vars:?}: got {got:?}, want {want:?}"),
        }
    }
    // A DER certificate given inline becomes PEM.
    let c = RawConfig::defaults()
        .validate(&env(&[
            ("DATASOURCE_PG_TYPE", "postgresql"),
            ("DATASOURCE_PG_DATABASE", "core"),
            ("DATASOURCE_PG_SSLCA_BASE64", &der_b64),
        ]))
        .expect("DER");
    let DataSourceSpec::Postgresql(super::SqlConnection { tls, .. }) =
        &c.data_sources.sources[&DataSourceId::parse("pg").unwrap()]
    else {
        panic!("PostgreSQL");
    };
    let Some(RootCert::Pem(text)) = &tls.root_cert else {
        panic!("inline CA: {tls:?}");
    };
    let text = String::from_utf8(text.clone()).unwrap();
    assert!(text.starts_with("-----BEGIN CERTIFICATE-----\n"), "{text}");
    let body: String = text.lines().filter(|l| !l.starts_with("-----")).collect();
    assert_eq!(
        base64::engine::general_purpose::STANDARD
            .decode(body)
            .unwrap(),
        der
    );
    let _ = std::fs::remove_file(ca);
}

/// The unknown-setting problem lists every accepted suffix; a MongoDB source asking for TLS
/// outside its URI is refused, a "no TLS" leftover is not.
#[test]
fn data_source_setting_errors_name_what_is_accepted() {
    let errs = RawConfig::defaults()
        .validate(&env(&[
            ("DATASOURCE_PG_TYPE", "postgresql"),
            ("DATASOURCE_PG_DATABASE", "core"),
            ("DATASOURCE_PG_SSLKEY", "/k.pem"),
        ]))
        .unwrap_err();
    let text = errs.to_string();
    for suffix in [
        "SSLMODE",
        "SSLROOTCERT",
        "SSLCA_BASE64",
        "SSLCA",
        "SSL,",
        "OPTIONS",
        "HOST",
        "URI",
    ] {
        assert!(text.contains(suffix), "{suffix} missing: {text}");
    }
    let mongo = |k: &str, v: &str| {
        RawConfig::defaults().validate(&env(&[
            ("DATASOURCE_M_TYPE", "mongodb"),
            ("DATASOURCE_M_URI", "mongodb://h:27017"),
            ("DATASOURCE_M_DATABASE", "d"),
            (k, v),
        ]))
    };
    assert!(mongo("DATASOURCE_M_SSLMODE", "disable").is_ok());
    assert!(mongo("DATASOURCE_M_SSL", "false").is_ok());
    let errs = mongo("DATASOURCE_M_SSL", "true").unwrap_err();
    assert_eq!(errs.0[0].variable, "DATASOURCE_M_SSL");
    assert!(errs.to_string().contains("tls=true"), "{errs}");
}

/// `PDF_MEMORY_MIB`: 1 GiB by default, in bytes; below 32 MiB refused naming the variable.
#[test]
fn pdf_memory_bound_is_validated() {
    let c = RawConfig::defaults().validate(&[]).expect("defaults");
    assert_eq!(c.worker.pdf_memory_bytes, 1024 * 1024 * 1024);
    let mut raw = RawConfig::defaults();
    raw.pdf_memory_mib = "64".into();
    assert_eq!(
        raw.validate(&[]).expect("64 MiB").worker.pdf_memory_bytes,
        64 * 1024 * 1024
    );
    for bad in ["16", "x", ""] {
        raw.pdf_memory_mib = bad.into();
        let errs = raw.validate(&[]).unwrap_err();
        assert!(
            errs.0.iter().any(|p| p.variable == "PDF_MEMORY_MIB"),
            "{bad:?}: {errs}"
        );
    }
}

#[test]
fn the_crm_source_reads_its_keys_under_both_names_and_its_organization() {
    let mongo = [
        ("DATASOURCE_PLUGIN_CRM_TYPE", "mongodb"),
        ("DATASOURCE_PLUGIN_CRM_CONFIG_NAME", "plugin_crm"),
        ("DATASOURCE_PLUGIN_CRM_URI", "mongodb://127.0.0.1:27017"),
        ("DATASOURCE_PLUGIN_CRM_DATABASE", "crm"),
    ];
    let key = "000102030405060708090a0b0c0d0e0f";
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut all = mongo.to_vec();
        all.extend_from_slice(extra);
        RawConfig::defaults().validate(&env(&all))
    };
    let crm_of = |c: Config| match c
        .data_sources
        .sources
        .get(&DataSourceId::parse("plugin_crm").unwrap())
    {
        Some(DataSourceSpec::Mongodb { crm, .. }) => crm.clone(),
        other => panic!("{other:?}"),
    };
    for (enc, hash) in [
        (
            "CRYPTO_ENCRYPT_SECRET_KEY_PLUGIN_CRM",
            "CRYPTO_HASH_SECRET_KEY_PLUGIN_CRM",
        ),
        (
            "CRYPTO_ENCRYPT_SECRET_KEY_CRM",
            "CRYPTO_HASH_SECRET_KEY_CRM",
        ),
    ] {
        let spec = crm_of(
            with(&[
                (enc, key),
                (hash, "raw text"),
                ("DATASOURCE_PLUGIN_CRM_MIDAZ_ORGANIZATION_ID", "org-1"),
            ])
            .unwrap(),
        )
        .expect("the CRM source");
        assert_eq!(spec.encrypt_key, Some(hex::decode(key).unwrap()));
        assert_eq!(spec.hash_key, Some(b"raw text".to_vec()));
        assert_eq!(spec.organization_id.as_deref(), Some("org-1"));
        let shown = format!("{spec:?}");
        assert!(
            !shown.contains("raw text") && !shown.contains("0, 1, 2"),
            "{shown}"
        );
    }
    // Without keys the source still starts (encrypted fields fail their section).
    assert_eq!(crm_of(with(&[]).unwrap()), Some(CrmSpec::default()));
    for (bad, var) in [
        (
            &[("CRYPTO_ENCRYPT_SECRET_KEY_CRM", "zz")][..],
            "CRYPTO_ENCRYPT_SECRET_KEY_CRM",
        ),
        (
            &[("CRYPTO_ENCRYPT_SECRET_KEY_CRM", "0011")][..],
            "CRYPTO_ENCRYPT_SECRET_KEY_CRM",
        ),
        (
            &[
                ("CRYPTO_ENCRYPT_SECRET_KEY_CRM", key),
                (
                    "CRYPTO_ENCRYPT_SECRET_KEY_PLUGIN_CRM",
                    "ffffffffffffffffffffffffffffffff",
                ),
            ][..],
            "CRYPTO_ENCRYPT_SECRET_KEY_PLUGIN_CRM",
        ),
    ] {
        let errs = with(bad).unwrap_err();
        assert_eq!(errs.0[0].variable, var, "{errs:?}");
        assert!(
            !errs.to_string().contains("ffff"),
            "the key is shown: {errs}"
        );
    }
    // Any other source: no CRM handling, and the organization setting stops start-up.
    let other = RawConfig::defaults()
        .validate(&env(&[
            ("DATASOURCE_DOCS_TYPE", "mongodb"),
            ("DATASOURCE_DOCS_URI", "mongodb://127.0.0.1:27017"),
            ("DATASOURCE_DOCS_DATABASE", "docs"),
        ]))
        .unwrap();
    assert!(matches!(
        other
            .data_sources
            .sources
            .get(&DataSourceId::parse("docs").unwrap()),
        Some(DataSourceSpec::Mongodb { crm: None, .. })
    ));
    let errs = RawConfig::defaults()
        .validate(&env(&[
            ("DATASOURCE_PG_TYPE", "postgresql"),
            ("DATASOURCE_PG_DATABASE", "core"),
            ("DATASOURCE_PG_MIDAZ_ORGANIZATION_ID", "org-1"),
        ]))
        .unwrap_err();
    assert_eq!(errs.0[0].variable, "DATASOURCE_PG_MIDAZ_ORGANIZATION_ID");
}
