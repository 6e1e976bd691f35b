//! Every setting the original Reporter's Helm chart allows (its `schema-keys.txt`), and what
//! Reporter does with each: the table a team moving from the original reads
//! (docs/original-settings.md is generated from it, and a test keeps the two equal).
//!
//! A name is never silently ignored: it is read with the original's meaning, mapped to
//! Reporter's name, refused at start-up with what to use instead, or accepted with no effect
//! (it configures another product) and listed at start-up and by `reporter config check`.
use super::{Checker, problem};

/// What Reporter does with one of the original's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Treatment {
    /// Read under this very name, with the original's meaning.
    Honoured,
    /// Read, and applied to Reporter's setting named in the text.
    Mapped(&'static str),
    /// Read with the original's meaning, but only the values the text names are accepted:
    /// another stops start-up.
    Restricted(&'static str),
    /// Refused at start-up when its value is the one the text names (what to use instead);
    /// otherwise it has no effect.
    RefusedWhen(&'static str),
    /// Refused at start-up whenever set: the text says what to use instead.
    Refused(&'static str),
    /// Accepted, with no effect here: the text says why.
    NoEffect(&'static str),
}

impl Treatment {
    /// The docs table's "outcome" word.
    pub fn outcome(self) -> &'static str {
        match self {
            Self::Honoured => "honoured",
            Self::Mapped(_) => "mapped",
            Self::Restricted(_) => "restricted",
            Self::RefusedWhen(_) => "refused when",
            Self::Refused(_) => "refused",
            Self::NoEffect(_) => "no effect",
        }
    }

    /// The explanation (empty for [`Treatment::Honoured`]).
    pub fn note(self) -> &'static str {
        match self {
            Self::Honoured => "",
            Self::Mapped(t)
            | Self::Restricted(t)
            | Self::RefusedWhen(t)
            | Self::Refused(t)
            | Self::NoEffect(t) => t,
        }
    }
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct OriginalSetting {
    /// The variable's name.
    pub name: &'static str,
    /// What Reporter does with it.
    pub treatment: Treatment,
}

const fn row(name: &'static str, treatment: Treatment) -> OriginalSetting {
    OriginalSetting { name, treatment }
}

use Treatment::{Honoured, Mapped, NoEffect, Refused, RefusedWhen, Restricted};

const FETCHER: &str = "configures the original's Fetcher service; Reporter extracts from its \
                       data sources itself";
const TENANT_MANAGER: &str = "configures the original's tenant-manager client (a database and \
    a vhost per tenant); Reporter keeps every tenant in one store, isolated by the token's \
    tenant_id claim (MULTI_TENANT_ENABLED)";
const VHOST_PER_TENANT: &str = "the original discovered a RabbitMQ vhost per tenant; Reporter \
                                keeps every tenant on one vhost, the tenant in each message";
const SERVICE_DISCOVERY: &str = "Consul service discovery is not built in: register the \
                                 service with your platform's discovery";
const SWAGGER_COSMETIC: &str = "decorates the original's generated Swagger document; \
                                Reporter's spec is generated from its code (openapi/)";
const KAFKA: &str = "a Kafka producer setting of lib-streaming; Reporter publishes its events \
                     over RabbitMQ, each persistent and confirmed by the broker";
const ACCESS_MANAGER: &str = "AUTH_ENABLED is on (or PLUGIN_AUTH_ENABLED=true) and neither \
    AUTH_JWT_PUBLIC_KEY nor AUTH_JWT_SECRET is set: Reporter verifies bearer tokens itself, \
    so set AUTH_JWT_PUBLIC_KEY to the key that signs your tokens; otherwise no effect";

const EXTRA_TIER_MAX: &str = "a value other than lib-commons' default (100 aggressive, 1000 \
    relaxed): these tiers have no routes here; use RATE_LIMIT_EXPORT / RATE_LIMIT_DISPATCH \
    (aggressive) or RATE_LIMIT_GLOBAL (relaxed); otherwise no effect";
const EXTRA_TIER_WINDOW: &str = "a value other than 60 or RATE_LIMIT_WINDOW_SECONDS: one window \
    serves every tier (RATE_LIMIT_WINDOW_SECONDS); otherwise no effect";

/// Every name of the chart's list, in its order.
pub const ORIGINAL_SETTINGS: &[OriginalSetting] = &[
    row("AGGRESSIVE_RATE_LIMIT_MAX", RefusedWhen(EXTRA_TIER_MAX)),
    row(
        "AGGRESSIVE_RATE_LIMIT_WINDOW_SEC",
        RefusedWhen(EXTRA_TIER_WINDOW),
    ),
    row("ALLOW_INSECURE_OTEL", Honoured),
    row("ALLOW_INSECURE_TLS", Honoured),
    row("ALLOW_RATELIMIT_DISABLED", Honoured),
    row("ALLOW_RATELIMIT_FAIL_OPEN", Honoured),
    row(
        "APP_CONTEXT",
        NoEffect("informational in the original (its route prefix); Reporter serves /v1"),
    ),
    row(
        "APP_ENC_KEY",
        NoEffect(
            "decrypts payloads of the original's Fetcher service, which Reporter does not use",
        ),
    ),
    row("CORS_ALLOWED_HEADERS", Honoured),
    row("CORS_ALLOWED_METHODS", Honoured),
    row("CORS_ALLOWED_ORIGINS", Honoured),
    row("CRYPTO_ENCRYPT_SECRET_KEY_CRM", Honoured),
    row("CRYPTO_HASH_SECRET_KEY_CRM", Honoured),
    row("DATASOURCE_EXTERNAL_CONFIG_NAME", Honoured),
    row("DATASOURCE_EXTERNAL_DATABASE", Honoured),
    row(
        "DATASOURCE_EXTERNAL_DB_SCHEMAS",
        Mapped("DATASOURCE_EXTERNAL_SCHEMAS (setting both stops start-up)"),
    ),
    row("DATASOURCE_EXTERNAL_HOST", Honoured),
    row("DATASOURCE_EXTERNAL_PASSWORD", Honoured),
    row("DATASOURCE_EXTERNAL_PORT", Honoured),
    row("DATASOURCE_EXTERNAL_SSLMODE", Honoured),
    row("DATASOURCE_EXTERNAL_SSLROOTCERT", Honoured),
    row("DATASOURCE_EXTERNAL_TYPE", Honoured),
    row("DATASOURCE_EXTERNAL_USER", Honoured),
    row("DATASOURCE_ONBOARDING_CONFIG_NAME", Honoured),
    row("DATASOURCE_ONBOARDING_DATABASE", Honoured),
    row("DATASOURCE_ONBOARDING_HOST", Honoured),
    row("DATASOURCE_ONBOARDING_PASSWORD", Honoured),
    row("DATASOURCE_ONBOARDING_PORT", Honoured),
    row("DATASOURCE_ONBOARDING_SSLMODE", Honoured),
    row("DATASOURCE_ONBOARDING_SSLROOTCERT", Honoured),
    row("DATASOURCE_ONBOARDING_TYPE", Honoured),
    row("DATASOURCE_ONBOARDING_USER", Honoured),
    row("DEPLOYMENT_MODE", Honoured),
    row("ENABLE_TELEMETRY", Honoured),
    row("ENV_NAME", Honoured),
    row(
        "FETCHER_ENABLED",
        RefusedWhen(
            "true: Reporter extracts from its data sources itself (DATASOURCE_*); there is no Fetcher service to delegate to",
        ),
    ),
    row("FETCHER_NOTIFICATION_EXCHANGE", NoEffect(FETCHER)),
    row("FETCHER_NOTIFICATION_QUEUE", NoEffect(FETCHER)),
    row("FETCHER_STORAGE_BUCKET", NoEffect(FETCHER)),
    row("FETCHER_URL", NoEffect(FETCHER)),
    row(
        "GOOGLE_APPLICATION_CREDENTIALS",
        NoEffect(
            "the GCP credentials of REDIS_USE_GCP_IAM, which is not supported (refused when true)",
        ),
    ),
    row("HEALTH_PORT", Honoured),
    row("LOG_LEVEL", Honoured),
    row("MONGO_HOST", Honoured),
    row("MONGO_MAX_POOL_SIZE", Honoured),
    row("MONGO_NAME", Honoured),
    row("MONGO_PARAMETERS", Honoured),
    row("MONGO_PASSWORD", Honoured),
    row("MONGO_PORT", Honoured),
    row("MONGO_TLS_CA_CERT", Honoured),
    row("MONGO_URI", Honoured),
    row("MONGO_USER", Honoured),
    row("MULTI_TENANT_ALLOW_INSECURE_HTTP", NoEffect(TENANT_MANAGER)),
    row("MULTI_TENANT_CACHE_TTL_SEC", NoEffect(TENANT_MANAGER)),
    row(
        "MULTI_TENANT_CIRCUIT_BREAKER_THRESHOLD",
        NoEffect(TENANT_MANAGER),
    ),
    row(
        "MULTI_TENANT_CIRCUIT_BREAKER_TIMEOUT_SEC",
        NoEffect(TENANT_MANAGER),
    ),
    row("MULTI_TENANT_ENABLED", Honoured),
    row("MULTI_TENANT_ENVIRONMENT", NoEffect(TENANT_MANAGER)),
    row("MULTI_TENANT_IDLE_TIMEOUT_SEC", NoEffect(TENANT_MANAGER)),
    row("MULTI_TENANT_MAX_TENANT_POOLS", NoEffect(TENANT_MANAGER)),
    row("MULTI_TENANT_REDIS_CA_CERT", NoEffect(TENANT_MANAGER)),
    row("MULTI_TENANT_REDIS_HOST", NoEffect(TENANT_MANAGER)),
    row("MULTI_TENANT_REDIS_PASSWORD", NoEffect(TENANT_MANAGER)),
    row("MULTI_TENANT_REDIS_PORT", NoEffect(TENANT_MANAGER)),
    row("MULTI_TENANT_REDIS_TLS", NoEffect(TENANT_MANAGER)),
    row("MULTI_TENANT_SERVICE_API_KEY", NoEffect(TENANT_MANAGER)),
    row("MULTI_TENANT_TIMEOUT", NoEffect(TENANT_MANAGER)),
    row("MULTI_TENANT_URL", NoEffect(TENANT_MANAGER)),
    row("OBJECT_STORAGE_ACCESS_KEY_ID", Honoured),
    row("OBJECT_STORAGE_BUCKET", Honoured),
    row("OBJECT_STORAGE_DISABLE_SSL", Honoured),
    row("OBJECT_STORAGE_ENDPOINT", Honoured),
    row("OBJECT_STORAGE_REGION", Honoured),
    row("OBJECT_STORAGE_SECRET_KEY", Honoured),
    row("OBJECT_STORAGE_USE_PATH_STYLE", Honoured),
    row("OTEL_EXPORTER_OTLP_ENDPOINT", Honoured),
    row("OTEL_EXPORTER_OTLP_ENDPOINT_PORT", Honoured),
    row("OTEL_INSECURE_EXPORTER", Honoured),
    row("OTEL_LIBRARY_NAME", Honoured),
    row("OTEL_RESOURCE_DEPLOYMENT_ENVIRONMENT", Honoured),
    row("OTEL_RESOURCE_SERVICE_NAME", Honoured),
    row("OTEL_RESOURCE_SERVICE_VERSION", Honoured),
    row("PDF_POOL_WORKERS", Honoured),
    row("PDF_TIMEOUT_SECONDS", Honoured),
    row("PLUGIN_AUTH_ADDRESS", RefusedWhen(ACCESS_MANAGER)),
    row(
        "PLUGIN_AUTH_ENABLED",
        Mapped("AUTH_ENABLED when that is not set (both set and different stops start-up)"),
    ),
    row("PLUGIN_AUTH_HOST", RefusedWhen(ACCESS_MANAGER)),
    row("RABBITMQ_DEFAULT_PASS", Honoured),
    row("RABBITMQ_DEFAULT_USER", Honoured),
    row("RABBITMQ_DLQ_QUEUE", Honoured),
    row(
        "RABBITMQ_ERLANG_COOKIE",
        NoEffect("the broker's own clustering secret"),
    ),
    row("RABBITMQ_EXCHANGE", Honoured),
    row("RABBITMQ_GENERATE_REPORT_KEY", Honoured),
    row("RABBITMQ_GENERATE_REPORT_QUEUE", Honoured),
    row(
        "RABBITMQ_HEALTH_CHECK_URL",
        NoEffect(
            "the original probed RabbitMQ's management API; /readyz checks the AMQP connection itself",
        ),
    ),
    row("RABBITMQ_HOST", Honoured),
    row(
        "RABBITMQ_MULTI_TENANT_DISCOVERY_TIMEOUT",
        NoEffect(VHOST_PER_TENANT),
    ),
    row(
        "RABBITMQ_MULTI_TENANT_SYNC_INTERVAL",
        NoEffect(VHOST_PER_TENANT),
    ),
    row(
        "RABBITMQ_NUMBERS_OF_WORKERS",
        Mapped("WORKER_CONCURRENCY when that is not set (both set and different stops start-up)"),
    ),
    row("RABBITMQ_PORT_AMQP", Honoured),
    row(
        "RABBITMQ_PORT_HOST",
        NoEffect("RabbitMQ's management port, used only by the original's health check"),
    ),
    row("RABBITMQ_REPORT_EVENTS_EXCHANGE", Honoured),
    row("RABBITMQ_TLS", Honoured),
    row("RABBITMQ_URI", Honoured),
    row("RATE_LIMIT_DISPATCH", Honoured),
    row("RATE_LIMIT_ENABLED", Honoured),
    row("RATE_LIMIT_EXPORT", Honoured),
    row("RATE_LIMIT_GLOBAL", Honoured),
    row(
        "RATE_LIMIT_MAX",
        Mapped("RATE_LIMIT_GLOBAL when that is not set (lib-commons' name)"),
    ),
    row("RATE_LIMIT_REDIS_TIMEOUT_MS", Honoured),
    row(
        "RATE_LIMIT_WINDOW_SEC",
        Mapped("RATE_LIMIT_WINDOW_SECONDS when that is not set (lib-commons' name)"),
    ),
    row("RATE_LIMIT_WINDOW_SECONDS", Honoured),
    row("REDIS_CA_CERT", Honoured),
    row("REDIS_DB", Honoured),
    row("REDIS_HOST", Honoured),
    row(
        "REDIS_MASTER_NAME",
        RefusedWhen("set: Sentinel is not supported; point REDIS_HOST at the primary"),
    ),
    row("REDIS_PASSWORD", Honoured),
    row(
        "REDIS_PROTOCOL",
        RefusedWhen(
            "a value other than 2 or 3; otherwise no effect: the limiter's commands answer alike in RESP2 and RESP3",
        ),
    ),
    row(
        "REDIS_SERVICE_ACCOUNT",
        RefusedWhen(
            "set: GCP IAM authentication is not supported; use REDIS_USER / REDIS_PASSWORD",
        ),
    ),
    row("REDIS_TLS", Honoured),
    row("REDIS_USER", Honoured),
    row(
        "REDIS_USE_GCP_IAM",
        RefusedWhen(
            "true: GCP IAM authentication is not supported; use REDIS_USER / REDIS_PASSWORD",
        ),
    ),
    row("RELAXED_RATE_LIMIT_MAX", RefusedWhen(EXTRA_TIER_MAX)),
    row(
        "RELAXED_RATE_LIMIT_WINDOW_SEC",
        RefusedWhen(EXTRA_TIER_WINDOW),
    ),
    row(
        "RUN_MODE",
        Mapped(
            "the role `reporter` runs without a subcommand: api, worker, all (= serve); a subcommand that disagrees stops start-up",
        ),
    ),
    row("SD_ADDRESS", NoEffect(SERVICE_DISCOVERY)),
    row("SD_ADVERTISE_ADDRESS", NoEffect(SERVICE_DISCOVERY)),
    row("SD_ADVERTISE_PORT", NoEffect(SERVICE_DISCOVERY)),
    row("SD_ENABLED", NoEffect(SERVICE_DISCOVERY)),
    row("SD_TLS", NoEffect(SERVICE_DISCOVERY)),
    row("SD_TLS_SKIP_VERIFY", NoEffect(SERVICE_DISCOVERY)),
    row("SD_TOKEN", NoEffect(SERVICE_DISCOVERY)),
    row("SD_WORKLOAD", NoEffect(SERVICE_DISCOVERY)),
    row("SERVER_ADDRESS", Honoured),
    row(
        "SERVER_PORT",
        Mapped(
            "every interface on this port when SERVER_ADDRESS is not set (a different port in both stops start-up)",
        ),
    ),
    row("STREAMING_BROKERS", Honoured),
    row("STREAMING_CLIENT_ID", NoEffect(KAFKA)),
    row(
        "STREAMING_CLOUDEVENTS_SOURCE",
        Restricted(
            "`reporter` only: the event contract fixes ce-source to `reporter`, so the chart's default `//lerian.reporter` must be changed",
        ),
    ),
    row("STREAMING_COMPRESSION", NoEffect(KAFKA)),
    row("STREAMING_ENABLED", Honoured),
    row("STREAMING_REQUIRED_ACKS", NoEffect(KAFKA)),
    row("SWAGGER_BASE_PATH", NoEffect(SWAGGER_COSMETIC)),
    row("SWAGGER_DESCRIPTION", NoEffect(SWAGGER_COSMETIC)),
    row("SWAGGER_ENABLED", Honoured),
    row("SWAGGER_HOST", NoEffect(SWAGGER_COSMETIC)),
    row("SWAGGER_LEFT_DELIMITER", NoEffect(SWAGGER_COSMETIC)),
    row("SWAGGER_RIGHT_DELIMITER", NoEffect(SWAGGER_COSMETIC)),
    row("SWAGGER_SCHEMES", NoEffect(SWAGGER_COSMETIC)),
    row("SWAGGER_TITLE", NoEffect(SWAGGER_COSMETIC)),
    row("SWAGGER_VERSION", NoEffect(SWAGGER_COSMETIC)),
    row("TRUSTED_PROXIES", Honoured),
    row(
        "VERSION",
        NoEffect("the original's version string; /version reports the binary's own build"),
    ),
];

/// The row of `name`, if the chart lists it.
pub fn lookup(name: &str) -> Option<&'static OriginalSetting> {
    ORIGINAL_SETTINGS.iter().find(|s| s.name == name)
}

/// The chart's settings present (non-blank) in `env`, each with its row, in table order.
pub fn present(env: &[(String, String)]) -> Vec<(&'static OriginalSetting, &str)> {
    ORIGINAL_SETTINGS
        .iter()
        .filter_map(|s| {
            env.iter()
                .find(|(k, v)| k == s.name && !v.trim().is_empty())
                .map(|(_, v)| (s, v.as_str()))
        })
        .collect()
}

/// Pushes a problem for every [`Treatment::Refused`] name set, and for `FETCHER_ENABLED`
/// set to true (the other [`Treatment::RefusedWhen`] rows are checked where their condition
/// is known).
pub(super) fn refusals(env: &[(String, String)], c: &mut Checker) {
    for (setting, value) in present(env) {
        match setting.treatment {
            Refused(instead) => c.problems.push(problem(
                setting.name,
                "is the original's setting, not supported here",
                instead,
            )),
            RefusedWhen(instead)
                if setting.name == "FETCHER_ENABLED"
                    && super::parse_bool(value).unwrap_or(true) =>
            {
                c.problems
                    .push(problem(setting.name, format!("'{value}'"), instead));
            }
            _ => {}
        }
    }
}

/// The settings present in `env` that have no effect here, for the start-up log and
/// `reporter config check`: the no-effect rows, and the refused-when rows (when their case
/// holds, start-up stops anyway).
pub fn without_effect(env: &[(String, String)]) -> Vec<&'static str> {
    present(env)
        .into_iter()
        .filter(|(s, _)| matches!(s.treatment, NoEffect(_) | RefusedWhen(_)))
        .map(|(s, _)| s.name)
        .collect()
}

/// The markdown table of docs/original-settings.md.
pub fn markdown() -> String {
    let mut out = String::from(
        "# The original's settings\n\n\
         Every setting the original Reporter's Helm chart allows (its `schema-keys.txt`), and \
         what Reporter does with it. Generated from `src/config/original_settings.rs` by \
         `reporter config original-settings`; a test keeps this file equal to it.\n\n\
         - **honoured**: read under this name with the original's meaning (see the \
         configuration table, [docs/src/operations/configuration.md](src/operations/configuration.md));\n\
         - **mapped**: read and applied to Reporter's setting named;\n\
         - **restricted**: read with the original's meaning, but only the values named are \
         accepted: another stops start-up;\n\
         - **refused when**: start-up stops, naming what to use instead, in the case named; \
         otherwise no effect;\n\
         - **refused**: start-up stops whenever it is set, naming what to use instead;\n\
         - **no effect**: accepted; it configures another product. `reporter config check` \
         and the start-up log list the ones set.\n\n\
         | Setting | Outcome | Note |\n|---|---|---|\n",
    );
    for s in ORIGINAL_SETTINGS {
        out.push_str(&format!(
            "| `{}` | {} | {} |\n",
            s.name,
            s.treatment.outcome(),
            s.treatment.note()
        ));
    }
    out
}

#[cfg(test)]
#[path = "original_settings_tests.rs"]
mod tests;
