//! What each variable accepts, declared beside its clap attribute and keyed by its
//! environment name: integer bounds (the checker reads them from here, see
//! [`super::Checker::int`]), booleans, and closed sets of words. The default is not written
//! here: it is the clap attribute's (see [`super::declared`]).
//!
//! A variable without a row takes text whose form its help describes (addresses, URIs,
//! names); its check is the section's own.

/// The values one variable accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allowed {
    /// An integer in `min..=max`.
    Integer {
        /// Smallest accepted value.
        min: u64,
        /// Largest accepted value.
        max: u64,
    },
    /// A boolean: `true|false` (also 1/0, yes/no, on/off).
    Boolean,
    /// One of these words (any case).
    OneOf(&'static [&'static str]),
    /// lib-commons' allowance: a boolean, or any other text, a reason, which allows (logged).
    BooleanOrReason,
}

/// One variable's row.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// The environment variable.
    pub env: &'static str,
    /// What it accepts.
    pub allowed: Allowed,
    /// Words accepted besides (`auto`), each with its own meaning given in the help.
    pub also: &'static [&'static str],
}

const fn int(env: &'static str, min: u64, max: u64) -> Rule {
    Rule {
        env,
        allowed: Allowed::Integer { min, max },
        also: &[],
    }
}

const fn auto_or_int(env: &'static str, min: u64, max: u64) -> Rule {
    Rule {
        env,
        allowed: Allowed::Integer { min, max },
        also: &["auto"],
    }
}

const fn boolean(env: &'static str) -> Rule {
    Rule {
        env,
        allowed: Allowed::Boolean,
        also: &[],
    }
}

const fn one_of(env: &'static str, words: &'static [&'static str]) -> Rule {
    Rule {
        env,
        allowed: Allowed::OneOf(words),
        also: &[],
    }
}

const PORT: u64 = u16::MAX as u64;
const MIB: u64 = 1024 * 1024;
const DAY: u64 = 86_400;

/// Every variable with a declared set of values, roughly in the order of `reporter --help`.
pub const RULES: &[Rule] = &[
    one_of("RUN_MODE", &["api", "worker", "all"]),
    int("SERVER_PORT", 1, PORT),
    boolean("PLUGIN_AUTH_ENABLED"),
    int("RABBITMQ_NUMBERS_OF_WORKERS", 1, 256),
    boolean("SWAGGER_ENABLED"),
    int("HEALTH_PORT", 1, PORT),
    one_of("DEPLOYMENT_MODE", &["local", "byoc", "saas"]),
    int("SHUTDOWN_DRAIN_SECONDS", 0, 300),
    one_of("LOG_FORMAT", &["text", "json"]),
    boolean("AUTH_ENABLED"),
    int("AUTH_JWT_LEEWAY_SECONDS", 0, 300),
    int("AUTH_TOKEN_CACHE_SIZE", 0, 1_000_000),
    int("AUTH_MAX_TOKEN_LIFETIME_SECONDS", 300, 365 * DAY),
    boolean("MULTI_TENANT_ENABLED"),
    int("MAX_PAGINATION_LIMIT", 1, 1000),
    int("IDEMPOTENCY_TTL_SECONDS", 1, 30 * DAY),
    int("IDEMPOTENCY_IN_FLIGHT_SECONDS", 3, 3600),
    one_of(
        "OBJECT_STORAGE_BACKEND",
        &["memory", "fs", "filesystem", "gridfs", "s3"],
    ),
    int("OBJECT_STORAGE_ABANDONED_AFTER_SECONDS", 0, 30 * DAY),
    int("OBJECT_STORAGE_SWEEP_INTERVAL_SECONDS", 10, DAY),
    int("OBJECT_STORAGE_MEMORY_MAX_BYTES", 0, 1 << 50),
    auto_or_int("OBJECT_STORAGE_MEMORY_TENANT_MAX_BYTES", 0, 1 << 50),
    Rule {
        env: "EXAMPLE_DATA_ENABLED",
        allowed: Allowed::Boolean,
        also: &["auto"],
    },
    int("MAX_REQUEST_BODY_BYTES", 4096, 64 * MIB),
    int("HTTP_HEADER_READ_TIMEOUT_SECONDS", 1, 300),
    int("HTTP_BODY_READ_TIMEOUT_SECONDS", 1, 3600),
    int("HTTP_MAX_CONNECTIONS", 1, 1_000_000),
    boolean("STREAMING_ENABLED"),
    int("STREAMING_CB_MIN_REQUESTS", 1, 100_000),
    int("STREAMING_CB_TIMEOUT_S", 1, 3600),
    int("STREAMING_PUBLISH_TIMEOUT_MS", 100, 120_000),
    int("STREAMING_UNROUTABLE_TTL_SECONDS", 1, 365 * DAY),
    int("STREAMING_UNROUTABLE_MAX_LENGTH", 1, 10_000_000),
    int("STREAMING_OUTBOX_MAX_ATTEMPTS", 1, 1000),
    int("STREAMING_OUTBOX_RETENTION_HOURS", 1, 24 * 365),
    int("STREAMING_DISPATCH_BATCH", 1, 10_000),
    int("STREAMING_DISPATCH_POLL_MS", 10, 60_000),
    int("STREAMING_OUTBOX_LEASE_S", 1, 3600),
    int("STREAMING_OUTBOX_MEMORY_MAX_PUBLISHED", 1, 10_000_000),
    int("MONGO_PORT", 1, PORT),
    int("MONGO_MAX_POOL_SIZE", 1, 100_000),
    int("MONGO_MIN_POOL_SIZE", 0, 100_000),
    int("MONGO_SERVER_SELECTION_TIMEOUT_MS", 100, 300_000),
    int("RABBITMQ_PORT_AMQP", 1, PORT),
    boolean("RABBITMQ_TLS"),
    auto_or_int("RABBITMQ_PREFETCH", 1, 1000),
    int("WORKER_MAX_ATTEMPTS", 1, 100),
    int("WORKER_CONCURRENCY", 1, 256),
    int("WORKER_DRAIN_TIMEOUT_SEC", 1, 3600),
    int("ENGINE_TIMEOUT_SEC", 1, DAY),
    int("REPORT_REQUEUE_AFTER_SEC", 0, 30 * DAY),
    int("ENGINE_QUERY_TIMEOUT_SEC", 1, 3600),
    int("ENGINE_MAX_CONCURRENCY", 1, 64),
    int("ENGINE_MAX_ROWS", 1, 100_000_000),
    int("ENGINE_MAX_RESULT_BYTES", 1024, 16 * 1024 * MIB),
    int("ENGINE_RENDER_FUEL", 1000, 100_000_000_000),
    int("ENGINE_MAX_OUTPUT_BYTES", 1024, 4 * 1024 * MIB),
    int("TEMPLATE_SANDBOX_POOL_SIZE", 1, 64),
    int("TEMPLATE_RENDER_MEMORY_MIB", 64, MIB),
    int("TEMPLATE_RENDER_CPU_SECONDS", 1, DAY),
    int("TEMPLATE_RENDER_TIMEOUT_SEC", 1, DAY),
    int("TEMPLATE_PARSE_MEMORY_MIB", 32, MIB),
    int("TEMPLATE_PARSE_TIMEOUT_MS", 100, 600_000),
    one_of("PDF_RENDERER", &["native", "chromium"]),
    int("PDF_POOL_WORKERS", 1, 64),
    int("PDF_TIMEOUT_SECONDS", 1, 3600),
    int("PDF_MEMORY_MIB", 32, MIB),
    boolean("OBJECT_STORAGE_USE_PATH_STYLE"),
    boolean("OBJECT_STORAGE_DISABLE_SSL"),
    boolean("CONSOLE_ENABLED"),
    int("PREVIEW_TIMEOUT_SECONDS", 1, 300),
    int("PREVIEW_MAX_OUTPUT_BYTES", 1024, 64 * MIB),
    boolean("ENABLE_TELEMETRY"),
    int("OTEL_EXPORTER_OTLP_ENDPOINT_PORT", 1, PORT),
    one_of("OTEL_EXPORTER_OTLP_PROTOCOL", &["grpc", "http/protobuf"]),
    boolean("OTEL_INSECURE_EXPORTER"),
    boolean("OTEL_TRUST_INCOMING_TRACEPARENT"),
    int("OTEL_METRIC_EXPORT_INTERVAL", 1000, 3_600_000),
    Rule {
        env: "RATE_LIMIT_ENABLED",
        allowed: Allowed::Boolean,
        also: &["auto"],
    },
    int("RATE_LIMIT_GLOBAL", 1, 10_000),
    int("RATE_LIMIT_EXPORT", 1, 1000),
    int("RATE_LIMIT_DISPATCH", 1, 5000),
    int("RATE_LIMIT_WINDOW_SECONDS", 1, 3600),
    int("RATE_LIMIT_MAX", 1, 10_000),
    int("RATE_LIMIT_WINDOW_SEC", 1, 3600),
    int("RATE_LIMIT_REDIS_TIMEOUT_MS", 10, 10_000),
    Rule {
        env: "ALLOW_RATELIMIT_FAIL_OPEN",
        allowed: Allowed::BooleanOrReason,
        also: &[],
    },
    Rule {
        env: "ALLOW_RATELIMIT_DISABLED",
        allowed: Allowed::BooleanOrReason,
        also: &[],
    },
    int("REDIS_PORT", 1, PORT),
    int("REDIS_DB", 0, 15),
    boolean("REDIS_TLS"),
    one_of("REDIS_PROTOCOL", &["2", "3"]),
    boolean("REDIS_USE_GCP_IAM"),
    boolean("ALLOW_INSECURE_TLS"),
    boolean("ALLOW_INSECURE_OTEL"),
];

/// The row of `env`, if it has one.
pub fn rule(env: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.env == env)
}

/// The integer bounds of `env`, if it declares them.
pub fn bounds(env: &str) -> Option<(u64, u64)> {
    match rule(env)?.allowed {
        Allowed::Integer { min, max } => Some((min, max)),
        Allowed::Boolean | Allowed::OneOf(_) | Allowed::BooleanOrReason => None,
    }
}

impl Rule {
    /// The reference's "Allowed" cell: `1–1000`, `boolean`, `` `a`, `b` ``, with the extra
    /// words first.
    pub fn describe(&self) -> String {
        let main = match self.allowed {
            Allowed::Integer { min, max } => format!("{min}–{max}"),
            Allowed::Boolean => "boolean".to_owned(),
            Allowed::BooleanOrReason => "boolean, or a reason (any other text: allows)".to_owned(),
            Allowed::OneOf(words) => words
                .iter()
                .map(|w| format!("`{w}`"))
                .collect::<Vec<_>>()
                .join(", "),
        };
        if self.also.is_empty() {
            return main;
        }
        let also: Vec<String> = self.also.iter().map(|w| format!("`{w}`")).collect();
        format!("{}, or {main}", also.join(", "))
    }

    /// Whether `value` is accepted (ignoring cross-variable rules such as "above
    /// ENGINE_TIMEOUT_SEC").
    pub fn accepts(&self, value: &str) -> bool {
        let v = value.trim();
        if self.also.iter().any(|w| w.eq_ignore_ascii_case(v)) {
            return true;
        }
        match self.allowed {
            Allowed::Integer { min, max } => v.parse::<u64>().is_ok_and(|n| n >= min && n <= max),
            Allowed::Boolean => super::parse_bool(v).is_some(),
            Allowed::OneOf(words) => words.iter().any(|w| w.eq_ignore_ascii_case(v)),
            Allowed::BooleanOrReason => true,
        }
    }
}
