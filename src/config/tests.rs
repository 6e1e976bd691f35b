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
    assert_eq!(c.object_storage, ObjectStorageChoice::Memory);
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
        Row {
            enabled: "true",
            exchange: Some("reporter.events"),
            brokers: Some("kafka://x:9092"),
            source: ok,
            failing: &["STREAMING_BROKERS"],
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
