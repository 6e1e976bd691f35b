//! Configuration from environment variables.
//!
//! clap reads every variable (so `reporter --help` lists each with its default); values stay
//! raw strings there and [`RawConfig::validate`] checks them all at once, so a bad deployment
//! learns every problem in one start-up, each naming the variable, the problem and the rule.
mod datasources;

pub use datasources::{DataSourceConfig, DataSourceSpec};

use clap::Args;
use reporter_ports::TenantId;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Raw settings as read from the environment (or flags).
#[derive(Debug, Clone, Args)]
pub struct RawConfig {
    /// Address the HTTP API binds to.
    #[arg(long, env = "SERVER_ADDRESS", default_value = "127.0.0.1:4005")]
    pub server_address: String,
    /// Deployment environment name; `production` enables strict checks.
    #[arg(long, env = "ENV_NAME", default_value = "development")]
    pub env_name: String,
    /// Log filter (tracing EnvFilter syntax), e.g. `info` or `reporter=debug,info`.
    #[arg(long, env = "LOG_LEVEL", default_value = "info")]
    pub log_level: String,
    /// Log format: `text` or `json`.
    #[arg(long, env = "LOG_FORMAT", default_value = "text")]
    pub log_format: String,
    /// Require a bearer JWT on every /v1 operation. `false` turns auth off (logged as a warning).
    #[arg(long, env = "AUTH_ENABLED", default_value = "true")]
    pub auth_enabled: String,
    /// HS256 shared secret (at least 32 bytes). With neither key set, `serve` generates a
    /// random secret for the run and prints a development token.
    #[arg(long, env = "AUTH_JWT_SECRET", hide_env_values = true)]
    pub auth_jwt_secret: Option<String>,
    /// RS256/ES256 public key (PEM text, or a path to a PEM file).
    #[arg(long, env = "AUTH_JWT_PUBLIC_KEY", hide_env_values = true)]
    pub auth_jwt_public_key: Option<String>,
    /// Required `iss` claim, when set.
    #[arg(long, env = "AUTH_JWT_ISSUER")]
    pub auth_jwt_issuer: Option<String>,
    /// Required `aud` claim, when set.
    #[arg(long, env = "AUTH_JWT_AUDIENCE")]
    pub auth_jwt_audience: Option<String>,
    /// Clock skew tolerated on `exp`/`nbf`, in seconds (0-300).
    #[arg(long, env = "AUTH_JWT_LEEWAY_SECONDS", default_value = "30")]
    pub auth_jwt_leeway_seconds: String,
    /// Isolate every record, file and event by the token's `tenant_id` claim.
    #[arg(long, env = "MULTI_TENANT_ENABLED", default_value = "false")]
    pub multi_tenant_enabled: String,
    /// Tenant stamped on everything in single-tenant mode.
    #[arg(long, env = "DEFAULT_TENANT_ID", default_value = "default")]
    pub default_tenant_id: String,
    /// Largest `limit` a list accepts (1-1000).
    #[arg(long, env = "MAX_PAGINATION_LIMIT", default_value = "100")]
    pub max_pagination_limit: String,
    /// How long a completed idempotent response is replayed, in seconds.
    #[arg(long, env = "IDEMPOTENCY_TTL_SECONDS", default_value = "86400")]
    pub idempotency_ttl_seconds: String,
    /// How long an in-flight idempotency key stays reserved if its request never finishes.
    #[arg(long, env = "IDEMPOTENCY_IN_FLIGHT_SECONDS", default_value = "60")]
    pub idempotency_in_flight_seconds: String,
    /// Object storage for template files and report artifacts: `memory` or `fs`.
    #[arg(long, env = "OBJECT_STORAGE_BACKEND", default_value = "memory")]
    pub object_storage_backend: String,
    /// Root directory of the `fs` object storage.
    #[arg(long, env = "OBJECT_STORAGE_PATH", default_value = "./.data/objects")]
    pub object_storage_path: String,
    /// Register the bundled example data set as data source `bank` (default: only when no
    /// DATASOURCE_* variable is set).
    #[arg(long, env = "EXAMPLE_DATA_ENABLED", default_value = "auto")]
    pub example_data_enabled: String,
    /// Allowed CORS origins, comma-separated (`*` for any; empty disables CORS).
    #[arg(long, env = "CORS_ALLOWED_ORIGINS", default_value = "")]
    pub cors_allowed_origins: String,
    /// Largest accepted request body in bytes.
    #[arg(long, env = "MAX_REQUEST_BODY_BYTES", default_value = "2097152")]
    pub max_request_body_bytes: String,
}

/// One configuration problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    /// The environment variable.
    pub variable: String,
    /// What is wrong with its value.
    pub problem: String,
    /// The rule it must follow.
    pub rule: String,
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} (rule: {})",
            self.variable, self.problem, self.rule
        )
    }
}

/// Every problem found, printed one per line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigErrors(pub Vec<ConfigProblem>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "invalid configuration ({} problem(s)):", self.0.len())?;
        for p in &self.0 {
            writeln!(f, "  - {p}")?;
        }
        Ok(())
    }
}

/// How bearer tokens are verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthKey {
    /// HS256 shared secret.
    Secret(Vec<u8>),
    /// RS256 or ES256 public key, PEM.
    PublicKeyPem(String),
    /// No key configured: `serve` generates one for the run.
    Generated,
}

/// Authentication settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthSettings {
    /// False only with `AUTH_ENABLED=false`.
    pub enabled: bool,
    /// Verification key.
    pub key: AuthKey,
    /// Required issuer.
    pub issuer: Option<String>,
    /// Required audience.
    pub audience: Option<String>,
    /// Leeway in seconds.
    pub leeway_seconds: u64,
}

/// Tenancy mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tenancy {
    /// Every record belongs to this tenant.
    Single(TenantId),
    /// The token's `tenant_id` claim decides.
    Multi,
}

/// Where objects are stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectStorageChoice {
    /// In process memory (lost on exit).
    Memory,
    /// Local filesystem under a root directory.
    Filesystem(PathBuf),
}

/// Validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Bind address.
    pub server_address: SocketAddr,
    /// True when `ENV_NAME=production`.
    pub production: bool,
    /// Log filter.
    pub log_level: String,
    /// JSON logs.
    pub log_json: bool,
    /// Auth.
    pub auth: AuthSettings,
    /// Tenancy.
    pub tenancy: Tenancy,
    /// Max page size.
    pub max_pagination_limit: u32,
    /// Idempotency replay window.
    pub idempotency_ttl: chrono::Duration,
    /// Idempotency in-flight reservation.
    pub idempotency_in_flight: chrono::Duration,
    /// Object storage.
    pub object_storage: ObjectStorageChoice,
    /// Data sources.
    pub data_sources: DataSourceConfig,
    /// CORS origins (empty: no CORS).
    pub cors_origins: Vec<String>,
    /// Request body limit.
    pub max_request_body_bytes: usize,
}

fn problem(var: &str, problem: impl Into<String>, rule: &str) -> ConfigProblem {
    ConfigProblem {
        variable: var.to_owned(),
        problem: problem.into(),
        rule: rule.to_owned(),
    }
}

/// Parses a boolean the way operators write them.
pub fn parse_bool(raw: &str) -> Option<bool> {
    match raw.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

struct Checker {
    problems: Vec<ConfigProblem>,
}

impl Checker {
    fn boolean(&mut self, var: &str, raw: &str) -> bool {
        parse_bool(raw).unwrap_or_else(|| {
            self.problems.push(problem(
                var,
                format!("'{raw}' is not a boolean"),
                "true|false (also 1/0, yes/no, on/off)",
            ));
            false
        })
    }

    fn number<T: std::str::FromStr + PartialOrd + fmt::Display + Copy>(
        &mut self,
        var: &str,
        raw: &str,
        min: T,
        max: T,
        fallback: T,
    ) -> T {
        match raw.trim().parse::<T>() {
            Ok(v) if v >= min && v <= max => v,
            Ok(_) => {
                self.problems.push(problem(
                    var,
                    format!("{raw} is out of range"),
                    &format!("an integer between {min} and {max}"),
                ));
                fallback
            }
            Err(_) => {
                self.problems.push(problem(
                    var,
                    format!("'{raw}' is not an integer"),
                    &format!("an integer between {min} and {max}"),
                ));
                fallback
            }
        }
    }
}

impl RawConfig {
    /// The settings as if no variable were set (every default).
    /// Mirrors the clap defaults above; a unit test keeps the two in step.
    pub fn defaults() -> Self {
        RawConfig {
            server_address: "127.0.0.1:4005".into(),
            env_name: "development".into(),
            log_level: "info".into(),
            log_format: "text".into(),
            auth_enabled: "true".into(),
            auth_jwt_secret: None,
            auth_jwt_public_key: None,
            auth_jwt_issuer: None,
            auth_jwt_audience: None,
            auth_jwt_leeway_seconds: "30".into(),
            multi_tenant_enabled: "false".into(),
            default_tenant_id: "default".into(),
            max_pagination_limit: "100".into(),
            idempotency_ttl_seconds: "86400".into(),
            idempotency_in_flight_seconds: "60".into(),
            object_storage_backend: "memory".into(),
            object_storage_path: "./.data/objects".into(),
            example_data_enabled: "auto".into(),
            cors_allowed_origins: String::new(),
            max_request_body_bytes: "2097152".into(),
        }
    }

    /// Validates every value and reports every problem.
    pub fn validate(&self, env: &[(String, String)]) -> Result<Config, ConfigErrors> {
        let mut c = Checker {
            problems: Vec::new(),
        };
        let server_address = self
            .server_address
            .trim()
            .parse::<SocketAddr>()
            .unwrap_or_else(|_| {
                c.problems.push(problem(
                    "SERVER_ADDRESS",
                    format!("'{}' is not a socket address", self.server_address),
                    "host:port with an IP host, e.g. 127.0.0.1:4005 or 0.0.0.0:4005",
                ));
                SocketAddr::from(([127, 0, 0, 1], 4005))
            });
        let production = self.env_name.trim().eq_ignore_ascii_case("production");
        let log_json = match self.log_format.trim().to_ascii_lowercase().as_str() {
            "text" => false,
            "json" => true,
            other => {
                c.problems.push(problem(
                    "LOG_FORMAT",
                    format!("'{other}' is not a log format"),
                    "text|json",
                ));
                false
            }
        };
        if tracing_subscriber::EnvFilter::try_new(&self.log_level).is_err() {
            c.problems.push(problem(
                "LOG_LEVEL",
                format!("'{}' is not a valid filter", self.log_level),
                "a tracing filter such as info or reporter=debug,info",
            ));
        }

        let auth_enabled = c.boolean("AUTH_ENABLED", &self.auth_enabled);
        let secret = self
            .auth_jwt_secret
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty());
        let public_key = self
            .auth_jwt_public_key
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty());
        let key = match (secret, public_key) {
            (Some(_), Some(_)) => {
                c.problems.push(problem(
                    "AUTH_JWT_SECRET",
                    "both AUTH_JWT_SECRET and AUTH_JWT_PUBLIC_KEY are set",
                    "set exactly one verification key",
                ));
                AuthKey::Generated
            }
            (Some(s), None) => {
                if s.len() < 32 {
                    c.problems.push(problem(
                        "AUTH_JWT_SECRET",
                        format!("the secret is {} bytes long", s.len()),
                        "at least 32 bytes",
                    ));
                }
                AuthKey::Secret(s.as_bytes().to_vec())
            }
            (None, Some(k)) => {
                let pem = if k.starts_with("-----BEGIN") {
                    Some(k.to_owned())
                } else {
                    std::fs::read_to_string(k).ok()
                };
                match pem {
                    Some(pem) if crate::http::auth::public_key_is_usable(&pem) => {
                        AuthKey::PublicKeyPem(pem)
                    }
                    Some(_) => {
                        c.problems.push(problem(
                            "AUTH_JWT_PUBLIC_KEY",
                            "the PEM is not an RSA or EC (P-256) public key",
                            "a PEM public key for RS256 or ES256",
                        ));
                        AuthKey::Generated
                    }
                    None => {
                        c.problems.push(problem(
                            "AUTH_JWT_PUBLIC_KEY",
                            format!("'{k}' is neither PEM text nor a readable file"),
                            "PEM text or a path to a PEM file",
                        ));
                        AuthKey::Generated
                    }
                }
            }
            (None, None) => {
                if production && auth_enabled {
                    c.problems.push(problem(
                        "AUTH_JWT_SECRET",
                        "no verification key is configured in production",
                        "set AUTH_JWT_SECRET or AUTH_JWT_PUBLIC_KEY when ENV_NAME=production",
                    ));
                }
                AuthKey::Generated
            }
        };
        if production && !auth_enabled {
            c.problems.push(problem(
                "AUTH_ENABLED",
                "auth is off in production",
                "AUTH_ENABLED must be true when ENV_NAME=production",
            ));
        }
        let leeway_seconds = c.number(
            "AUTH_JWT_LEEWAY_SECONDS",
            &self.auth_jwt_leeway_seconds,
            0u64,
            300,
            30,
        );

        let multi = c.boolean("MULTI_TENANT_ENABLED", &self.multi_tenant_enabled);
        let tenancy = if multi {
            if !auth_enabled {
                c.problems.push(problem(
                    "MULTI_TENANT_ENABLED",
                    "multi-tenant mode with AUTH_ENABLED=false",
                    "multi-tenant mode takes the tenant from the token, so it needs AUTH_ENABLED=true",
                ));
            }
            Tenancy::Multi
        } else {
            match TenantId::parse(self.default_tenant_id.trim()) {
                Ok(t) => Tenancy::Single(t),
                Err(e) => {
                    c.problems.push(problem(
                        "DEFAULT_TENANT_ID",
                        format!("'{}' is not a valid tenant id", self.default_tenant_id),
                        &e.to_string(),
                    ));
                    Tenancy::Single(TenantId::default_tenant())
                }
            }
        };
        let max_pagination_limit = c.number(
            "MAX_PAGINATION_LIMIT",
            &self.max_pagination_limit,
            1u32,
            1000,
            100,
        );
        let ttl = c.number(
            "IDEMPOTENCY_TTL_SECONDS",
            &self.idempotency_ttl_seconds,
            1i64,
            30 * 86400,
            86400,
        );
        let in_flight = c.number(
            "IDEMPOTENCY_IN_FLIGHT_SECONDS",
            &self.idempotency_in_flight_seconds,
            1i64,
            3600,
            60,
        );
        let object_storage = match self
            .object_storage_backend
            .trim()
            .to_ascii_lowercase()
            .as_str()
        {
            "memory" => ObjectStorageChoice::Memory,
            "fs" | "filesystem" => {
                if self.object_storage_path.trim().is_empty() {
                    c.problems
                        .push(problem("OBJECT_STORAGE_PATH", "empty", "a directory path"));
                }
                ObjectStorageChoice::Filesystem(PathBuf::from(self.object_storage_path.trim()))
            }
            other => {
                c.problems.push(problem(
                    "OBJECT_STORAGE_BACKEND",
                    format!("'{other}' is not a storage backend"),
                    "memory|fs",
                ));
                ObjectStorageChoice::Memory
            }
        };
        let example = match self
            .example_data_enabled
            .trim()
            .to_ascii_lowercase()
            .as_str()
        {
            "auto" => None,
            other => match parse_bool(other) {
                Some(b) => Some(b),
                None => {
                    c.problems.push(problem(
                        "EXAMPLE_DATA_ENABLED",
                        format!("'{other}' is not auto or a boolean"),
                        "auto|true|false",
                    ));
                    None
                }
            },
        };
        let data_sources = DataSourceConfig::from_env(env, example, &mut c.problems);
        let cors_origins: Vec<String> = self
            .cors_allowed_origins
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        for o in &cors_origins {
            if o != "*" && !(o.starts_with("http://") || o.starts_with("https://")) {
                c.problems.push(problem(
                    "CORS_ALLOWED_ORIGINS",
                    format!("'{o}' is not an origin"),
                    "comma-separated http(s)://host[:port] origins, or *",
                ));
            }
            if production && (o == "*" || o.starts_with("http://")) {
                c.problems.push(problem(
                    "CORS_ALLOWED_ORIGINS",
                    format!("'{o}' is not allowed in production"),
                    "https:// origins only when ENV_NAME=production",
                ));
            }
        }
        let max_request_body_bytes = c.number(
            "MAX_REQUEST_BODY_BYTES",
            &self.max_request_body_bytes,
            4096usize,
            64 * 1024 * 1024,
            2 * 1024 * 1024,
        );

        if !c.problems.is_empty() {
            return Err(ConfigErrors(c.problems));
        }
        Ok(Config {
            server_address,
            production,
            log_level: self.log_level.clone(),
            log_json,
            auth: AuthSettings {
                enabled: auth_enabled,
                key,
                issuer: self
                    .auth_jwt_issuer
                    .clone()
                    .filter(|s| !s.trim().is_empty()),
                audience: self
                    .auth_jwt_audience
                    .clone()
                    .filter(|s| !s.trim().is_empty()),
                leeway_seconds,
            },
            tenancy,
            max_pagination_limit,
            idempotency_ttl: chrono::Duration::seconds(ttl),
            idempotency_in_flight: chrono::Duration::seconds(in_flight),
            object_storage,
            data_sources,
            cors_origins,
            max_request_body_bytes,
        })
    }
}

#[cfg(test)]
mod tests;
