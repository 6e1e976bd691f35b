//! Rate limiting, Redis and the production checks (src/config/rate_limit.rs, production.rs).
use super::*;
use std::time::Duration;

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// The variables of every problem of `raw` under `env`; empty when it validates.
fn problems(raw: &RawConfig, env: &[(String, String)]) -> Vec<String> {
    match raw.validate(env) {
        Ok(_) => Vec::new(),
        Err(e) => e.0.into_iter().map(|p| p.variable).collect(),
    }
}

fn settings(raw: &RawConfig) -> RateLimitSettings {
    raw.validate(&[]).expect("valid").rate_limit
}

fn with(edit: impl FnOnce(&mut ProtectionRaw)) -> RawConfig {
    let mut raw = RawConfig::defaults();
    edit(&mut raw.protection);
    raw
}

#[test]
fn rate_limiting_defaults_to_the_original_tiers_and_is_off_outside_production() {
    let s = settings(&RawConfig::defaults());
    assert!(!s.enabled, "auto: off in development");
    assert_eq!((s.global, s.export, s.dispatch), (100, 10, 50));
    assert_eq!(s.window, Duration::from_secs(60));
    assert!(s.fail_open, "fails open outside production");
    assert_eq!(s.redis, None, "memory mode without REDIS_HOST");
    assert_eq!(s.redis_timeout, Duration::from_millis(500));
    let s = settings(&with(|p| p.rate_limit_enabled = "true".into()));
    assert!(s.enabled);
}

#[test]
fn tier_limits_and_the_window_are_bounded_as_the_original() {
    let raw = with(|p| {
        p.rate_limit_global = Some("0".into());
        p.rate_limit_export = "1001".into();
        p.rate_limit_dispatch = "5001".into();
        p.rate_limit_window_seconds = Some("0".into());
        p.rate_limit_redis_timeout_ms = "5".into();
        p.rate_limit_enabled = "sometimes".into();
    });
    let vars = problems(&raw, &[]);
    for v in [
        "RATE_LIMIT_GLOBAL",
        "RATE_LIMIT_EXPORT",
        "RATE_LIMIT_DISPATCH",
        "RATE_LIMIT_WINDOW_SECONDS",
        "RATE_LIMIT_REDIS_TIMEOUT_MS",
        "RATE_LIMIT_ENABLED",
    ] {
        assert!(vars.contains(&v.to_owned()), "{v} missing from {vars:?}");
    }
    assert_eq!(
        problems(&with(|p| p.rate_limit_global = Some("10001".into())), &[]),
        ["RATE_LIMIT_GLOBAL"]
    );
    let top = with(|p| {
        p.rate_limit_global = Some("10000".into());
        p.rate_limit_export = "1000".into();
        p.rate_limit_dispatch = "5000".into();
        p.rate_limit_window_seconds = Some("3600".into());
    });
    let s = settings(&top);
    assert_eq!((s.global, s.export, s.dispatch), (10000, 1000, 5000));
}

#[test]
fn lib_commons_names_map_or_are_refused_naming_the_variable_to_use() {
    // RATE_LIMIT_MAX / RATE_LIMIT_WINDOW_SEC stand in for the original's names when those are unset.
    let s = settings(&with(|p| {
        p.rate_limit_max = Some("500".into());
        p.rate_limit_window_sec = Some("30".into());
    }));
    assert_eq!((s.global, s.window), (500, Duration::from_secs(30)));
    let s = settings(&with(|p| {
        p.rate_limit_max = Some("500".into());
        p.rate_limit_global = Some("100".into());
        p.rate_limit_window_sec = Some("30".into());
        p.rate_limit_window_seconds = Some("60".into());
    }));
    assert_eq!(
        (s.global, s.window),
        (100, Duration::from_secs(60)),
        "the original's names win"
    );
    let s = settings(&with(|p| {
        p.rate_limit_redis_timeout_ms = "250".into();
        p.allow_ratelimit_fail_open = Some("false".into());
    }));
    assert_eq!(s.redis_timeout, Duration::from_millis(250));
    assert!(!s.fail_open, "ALLOW_RATELIMIT_FAIL_OPEN is honoured");
    // The chart's defaults of the tiers Reporter does not have are accepted (no effect).
    let defaults = with(|p| {
        p.aggressive_rate_limit_max = Some("100".into());
        p.aggressive_rate_limit_window_sec = Some("60".into());
        p.relaxed_rate_limit_max = Some("1000".into());
        p.relaxed_rate_limit_window_sec = Some("60".into());
    });
    assert_eq!(problems(&defaults, &[]), Vec::<String>::new());
    let other = with(|p| {
        p.aggressive_rate_limit_max = Some("20".into());
        p.relaxed_rate_limit_max = Some("2000".into());
        p.relaxed_rate_limit_window_sec = Some("300".into());
    });
    let errs = other.validate(&[]).unwrap_err().to_string();
    assert!(
        errs.contains("AGGRESSIVE_RATE_LIMIT_MAX") && errs.contains("RATE_LIMIT_EXPORT"),
        "{errs}"
    );
    assert!(
        errs.contains("RELAXED_RATE_LIMIT_MAX") && errs.contains("set RATE_LIMIT_GLOBAL"),
        "{errs}"
    );
    assert!(
        errs.contains("RELAXED_RATE_LIMIT_WINDOW_SEC")
            && errs.contains("RATE_LIMIT_WINDOW_SECONDS"),
        "{errs}"
    );
}

#[test]
fn redis_is_named_the_original_way() {
    let s = settings(&with(|p| {
        p.redis_host = Some("cache.internal:6380".into());
        p.redis_password = Some("pw".into());
        p.redis_user = Some("app".into());
        p.redis_db = "3".into();
        p.redis_tls = "true".into();
        p.redis_protocol = Some("3".into());
    }));
    let r = s.redis.expect("redis");
    assert_eq!(
        (r.host.as_str(), r.port, r.db, r.tls),
        ("cache.internal", 6380, 3, true)
    );
    assert_eq!(r.user.as_deref(), Some("app"));
    let r = settings(&with(|p| {
        p.redis_host = Some("valkey".into());
        p.redis_port = Some("7000".into());
    }))
    .redis
    .expect("redis");
    assert_eq!((r.host.as_str(), r.port), ("valkey", 7000));
    let r = settings(&with(|p| p.redis_host = Some("[::1]:6390".into())))
        .redis
        .expect("redis");
    assert_eq!((r.host.as_str(), r.port), ("::1", 6390));
}

#[test]
fn redis_settings_reporter_cannot_honour_are_refused() {
    let raw = with(|p| {
        p.redis_host = Some("a:6379,b:6379".into());
        p.redis_master_name = Some("mymaster".into());
        p.redis_use_gcp_iam = Some("true".into());
        p.redis_service_account = Some("sa@project".into());
        p.redis_protocol = Some("4".into());
        p.redis_db = "16".into();
        p.redis_tls = "maybe".into();
        p.redis_ca_cert = Some("not a certificate".into());
    });
    let vars = problems(&raw, &[]);
    for v in [
        "REDIS_HOST",
        "REDIS_MASTER_NAME",
        "REDIS_USE_GCP_IAM",
        "REDIS_SERVICE_ACCOUNT",
        "REDIS_PROTOCOL",
        "REDIS_DB",
        "REDIS_TLS",
        "REDIS_CA_CERT",
    ] {
        assert!(vars.contains(&v.to_owned()), "{v} missing from {vars:?}");
    }
}

#[test]
fn trusted_proxies_are_ips_or_cidrs() {
    let s = settings(&with(|p| {
        p.trusted_proxies = "10.0.0.0/8, 192.168.1.10,::1".into()
    }));
    assert_eq!(s.trusted_proxies.len(), 3);
    assert_eq!(
        problems(
            &with(|p| p.trusted_proxies = "10.0.0.0/8,proxy.internal".into()),
            &[]
        ),
        ["TRUSTED_PROXIES"]
    );
}

// ---------------------------------------------------------------- production checks

const SECRET: &str = "0123456789abcdef0123456789abcdef";

/// A production configuration that passes every check.
fn production() -> (RawConfig, Vec<(String, String)>) {
    let mut raw = RawConfig::defaults();
    raw.env_name = "Production".into();
    raw.auth_jwt_secret = Some(SECRET.into());
    raw.cors_allowed_origins = "https://console.example.com".into();
    (raw, env(&[("ENABLE_TELEMETRY", "true")]))
}

fn production_problems(
    edit: impl FnOnce(&mut RawConfig, &mut Vec<(String, String)>),
) -> Vec<String> {
    let (mut raw, mut env) = production();
    edit(&mut raw, &mut env);
    problems(&raw, &env)
}

fn set(env: &mut Vec<(String, String)>, k: &str, v: &str) {
    env.retain(|(name, _)| name != k);
    env.push((k.to_owned(), v.to_owned()));
}

#[test]
fn a_complete_production_configuration_passes_with_rate_limiting_on() {
    let (raw, env) = production();
    let c = raw.validate(&env).expect("valid");
    assert!(c.production, "ENV_NAME is matched in any case");
    assert!(c.rate_limit.enabled, "auto: on in production");
    assert!(!c.rate_limit.fail_open, "fails closed in production");
}

#[test]
fn production_needs_telemetry() {
    assert_eq!(production_problems(|_, e| e.clear()), ["ENABLE_TELEMETRY"]);
    assert_eq!(
        production_problems(|_, e| set(e, "ENABLE_TELEMETRY", "false")),
        ["ENABLE_TELEMETRY"]
    );
}

#[test]
fn production_needs_auth() {
    assert!(
        production_problems(|r, _| r.auth_enabled = "false".into())
            .contains(&"AUTH_ENABLED".to_owned())
    );
}

#[test]
fn production_needs_rate_limiting_unless_explicitly_allowed_off() {
    assert_eq!(
        production_problems(|r, _| r.protection.rate_limit_enabled = "false".into()),
        ["RATE_LIMIT_ENABLED"]
    );
    assert_eq!(
        production_problems(|r, _| {
            r.protection.rate_limit_enabled = "false".into();
            r.protection.allow_ratelimit_disabled = "true".into();
        }),
        Vec::<String>::new()
    );
}

#[test]
fn production_refuses_the_change_me_placeholder_in_any_secret() {
    let vars = production_problems(|r, e| {
        set(e, "MONGO_PASSWORD", "CHANGE_ME");
        set(e, "DATASOURCE_LEDGER_PASSWORD", "change_me");
        set(e, "STREAMING_BROKERS", "amqps://u:CHANGE_ME@broker:5671");
        r.protection.redis_password = Some("CHANGE_ME".into());
        set(e, "REDIS_PASSWORD", "CHANGE_ME");
    });
    for v in [
        "MONGO_PASSWORD",
        "DATASOURCE_LEDGER_PASSWORD",
        "STREAMING_BROKERS",
        "REDIS_PASSWORD",
    ] {
        assert!(vars.contains(&v.to_owned()), "{v} missing from {vars:?}");
    }
}

#[test]
fn production_refuses_connections_without_a_password() {
    let vars = production_problems(|r, _| {
        r.rabbitmq_uri = Some("amqps://reporter@mq:5671/%2f".into());
        r.protection.redis_host = Some("cache:6379".into());
        r.protection.redis_tls = "true".into();
        r.object_storage_backend = "s3".into();
        r.s3_endpoint = Some("https://s3.example.com".into());
        r.s3_access_key_id = Some("AKIA".into());
    });
    for v in [
        "RABBITMQ_DEFAULT_PASS",
        "REDIS_PASSWORD",
        "OBJECT_STORAGE_SECRET_KEY",
    ] {
        assert!(vars.contains(&v.to_owned()), "{v} missing from {vars:?}");
    }
    let vars = production_problems(|r, _| {
        r.mongo_uri = Some("mongodb://mongo:27017/?replicaSet=rs0&tls=true".into());
    });
    assert!(vars.contains(&"MONGO_PASSWORD".to_owned()), "{vars:?}");
}

#[test]
fn production_needs_the_crm_keys_only_with_a_crm_source() {
    let crm = [
        ("DATASOURCE_PLUGIN_CRM_TYPE", "mongodb"),
        ("DATASOURCE_PLUGIN_CRM_CONFIG_NAME", "plugin_crm"),
        (
            "DATASOURCE_PLUGIN_CRM_URI",
            "mongodb://u:p@127.0.0.1:27017/?tls=true",
        ),
        ("DATASOURCE_PLUGIN_CRM_DATABASE", "crm"),
    ];
    let vars = production_problems(|_, e| e.extend(env(&crm)));
    assert_eq!(
        vars,
        [
            "CRYPTO_ENCRYPT_SECRET_KEY_CRM",
            "CRYPTO_HASH_SECRET_KEY_CRM"
        ]
    );
    let vars = production_problems(|_, e| {
        e.extend(env(&crm));
        set(
            e,
            "CRYPTO_ENCRYPT_SECRET_KEY_PLUGIN_CRM",
            "00112233445566778899aabbccddeeff",
        );
        set(e, "CRYPTO_HASH_SECRET_KEY_CRM", "CHANGE_ME");
    });
    assert_eq!(
        vars,
        ["CRYPTO_HASH_SECRET_KEY_CRM"],
        "the placeholder is refused too"
    );
    assert_eq!(
        production_problems(|_, _| {}),
        Vec::<String>::new(),
        "no CRM source: no keys needed"
    );
}

#[test]
fn production_needs_https_cors_origins() {
    assert_eq!(
        production_problems(|r, _| r.cors_allowed_origins.clear()),
        ["CORS_ALLOWED_ORIGINS"]
    );
    assert_eq!(
        production_problems(|r, _| r.cors_allowed_origins = "*".into()),
        ["CORS_ALLOWED_ORIGINS"]
    );
    assert_eq!(
        production_problems(
            |r, _| r.cors_allowed_origins = "https://a.example.com,http://b.example.com".into()
        ),
        ["CORS_ALLOWED_ORIGINS"]
    );
}

#[test]
fn production_needs_tls_to_rabbitmq_redis_and_object_storage_unless_allowed() {
    let insecure = |r: &mut RawConfig| {
        r.rabbitmq_uri = Some("amqp://u:p@mq:5672/%2f".into());
        r.protection.redis_host = Some("cache".into());
        r.protection.redis_password = Some("pw".into());
        r.object_storage_backend = "s3".into();
        r.s3_endpoint = Some("http://minio:9000".into());
    };
    let vars = production_problems(|r, _| insecure(r));
    assert_eq!(
        vars,
        ["RABBITMQ_URI", "OBJECT_STORAGE_ENDPOINT", "REDIS_TLS"]
    );
    let vars = production_problems(|r, _| {
        insecure(r);
        r.protection.allow_insecure_tls = "true".into();
    });
    assert_eq!(vars, Vec::<String>::new());
}

#[test]
fn saas_refuses_redis_without_tls_even_when_insecure_tls_is_allowed() {
    let vars = production_problems(|r, _| {
        r.deployment_mode = "saas".into();
        r.protection.redis_host = Some("cache".into());
        r.protection.redis_password = Some("pw".into());
        r.protection.allow_insecure_tls = "true".into();
    });
    assert_eq!(vars, ["REDIS_TLS"]);
}

#[test]
fn production_needs_allow_insecure_otel_for_a_plaintext_exporter() {
    assert_eq!(
        production_problems(|_, e| set(e, "OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317")),
        ["OTEL_EXPORTER_OTLP_ENDPOINT"]
    );
    assert_eq!(
        production_problems(|_, e| set(e, "OTEL_INSECURE_EXPORTER", "true")),
        ["OTEL_INSECURE_EXPORTER"]
    );
    assert_eq!(
        production_problems(|r, e| {
            set(e, "OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317");
            r.protection.allow_insecure_otel = "true".into();
        }),
        Vec::<String>::new()
    );
    assert_eq!(
        production_problems(|_, e| set(e, "OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector:4317")),
        Vec::<String>::new()
    );
}

#[test]
fn outside_production_none_of_the_production_checks_apply() {
    let mut raw = RawConfig::defaults();
    raw.rabbitmq_uri = Some("amqp://guest@mq:5672/%2f".into());
    let e = env(&[
        ("MONGO_PASSWORD", "CHANGE_ME"),
        ("OTEL_INSECURE_EXPORTER", "true"),
    ]);
    assert_eq!(problems(&raw, &e), Vec::<String>::new());
}

#[test]
fn every_production_problem_is_reported_at_once() {
    let mut raw = RawConfig::defaults();
    raw.env_name = "PRODUCTION".into();
    raw.auth_enabled = "false".into();
    raw.protection.rate_limit_enabled = "false".into();
    raw.rabbitmq_uri = Some("amqp://u:CHANGE_ME@mq:5672/%2f".into());
    let e = env(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317"),
        ("RABBITMQ_URI", "amqp://u:CHANGE_ME@mq:5672/%2f"),
    ]);
    let vars = problems(&raw, &e);
    for v in [
        "AUTH_ENABLED",
        "RATE_LIMIT_ENABLED",
        "ENABLE_TELEMETRY",
        "RABBITMQ_URI",
        "CORS_ALLOWED_ORIGINS",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    ] {
        assert!(vars.contains(&v.to_owned()), "{v} missing from {vars:?}");
    }
}

/// The chart writes `ALLOW_*` as "" when unset: blank is off, never a problem; lib-commons'
/// `ALLOW_RATELIMIT_*` take a reason text, which allows.
#[test]
fn blank_escape_hatches_are_off_and_a_reason_text_allows() {
    assert_eq!(
        production_problems(|r, _| {
            r.protection.rate_limit_enabled = "false".into();
            r.protection.allow_ratelimit_disabled = String::new();
        }),
        ["RATE_LIMIT_ENABLED"]
    );
    assert_eq!(
        production_problems(|r, _| {
            r.protection.rate_limit_enabled = "false".into();
            r.protection.allow_ratelimit_disabled = "load tests behind a gateway limit".into();
        }),
        Vec::<String>::new()
    );
    assert_eq!(
        production_problems(|r, e| {
            set(e, "OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317");
            r.protection.allow_insecure_otel = String::new();
            r.protection.allow_insecure_tls = String::new();
        }),
        ["OTEL_EXPORTER_OTLP_ENDPOINT"]
    );
    let (mut raw, env) = production();
    raw.protection.allow_ratelimit_fail_open = Some("a shared gateway limits too".into());
    assert!(raw.validate(&env).expect("valid").rate_limit.fail_open);
    raw.protection.allow_insecure_tls = "sometimes".into();
    let errs = raw.validate(&env).unwrap_err();
    assert!(
        errs.0.iter().any(|p| p.variable == "ALLOW_INSECURE_TLS"),
        "{errs:?}"
    );
}
