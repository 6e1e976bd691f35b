//! Settings the original Reporter reads under names of its own, honoured here with the
//! original's meaning (see docs/original-settings.md for every name of its Helm chart):
//! - `SERVER_PORT`: the API's port on every interface when `SERVER_ADDRESS` is not set;
//! - `RUN_MODE`: `api` | `worker` | `all`, the role `reporter` runs without a subcommand;
//! - `CORS_ALLOWED_METHODS` / `CORS_ALLOWED_HEADERS`: what a CORS preflight may ask for;
//! - `PLUGIN_AUTH_ENABLED`: `AUTH_ENABLED` when that is not set; `PLUGIN_AUTH_ADDRESS` /
//!   `PLUGIN_AUTH_HOST` (the Access Manager) are refused while auth is on without a key
//!   Reporter can verify tokens with;
//! - `RABBITMQ_NUMBERS_OF_WORKERS`: `WORKER_CONCURRENCY` when that is not set;
//! - `SWAGGER_ENABLED`: `false` stops serving `/swagger/` (the spec stays at `/openapi.json`);
//! - `OBJECT_STORAGE_ENDPOINT` without `OBJECT_STORAGE_BACKEND`: the S3 backend, as the
//!   original (which always stores in S3-compatible storage) reads it.
//!
//! A name set together with ours to a different value stops start-up naming both: neither
//! silently wins.
use super::declared::WhenUnset;
use super::{Checker, RawConfig, parse_bool, problem};
use clap::Args;
use std::net::{Ipv4Addr, SocketAddr};

/// The original's names (all optional: unset means "as ours say").
#[derive(Debug, Clone, Default, Args)]
pub struct OriginalNames {
    /// The original's API port: every interface on this port when SERVER_ADDRESS is not set.
    #[arg(long, env = "SERVER_PORT")]
    pub server_port: Option<String>,
    /// The original's process role when `reporter` runs without a subcommand: `api`,
    /// `worker` or `all` (= `serve`).
    #[arg(long, env = "RUN_MODE")]
    pub run_mode: Option<String>,
    /// Methods a CORS preflight may ask for, comma-separated (default: any).
    #[arg(long, env = "CORS_ALLOWED_METHODS")]
    pub cors_allowed_methods: Option<String>,
    /// Request headers a CORS preflight may ask for, comma-separated (default: any).
    #[arg(long, env = "CORS_ALLOWED_HEADERS")]
    pub cors_allowed_headers: Option<String>,
    /// The original's auth switch: AUTH_ENABLED when that is not set.
    #[arg(long, env = "PLUGIN_AUTH_ENABLED")]
    pub plugin_auth_enabled: Option<String>,
    /// The original's Access Manager address. Reporter verifies bearer tokens itself
    /// (AUTH_JWT_PUBLIC_KEY / AUTH_JWT_SECRET); refused while auth is on without one.
    #[arg(long, env = "PLUGIN_AUTH_ADDRESS")]
    pub plugin_auth_address: Option<String>,
    /// Older name of PLUGIN_AUTH_ADDRESS.
    #[arg(long, env = "PLUGIN_AUTH_HOST")]
    pub plugin_auth_host: Option<String>,
    /// The original's consumer count: WORKER_CONCURRENCY when that is not set.
    #[arg(long, env = "RABBITMQ_NUMBERS_OF_WORKERS")]
    pub rabbitmq_numbers_of_workers: Option<String>,
    // Whether Swagger UI is served: help text from SWAGGER_ENABLED.
    #[arg(
        long,
        env = "SWAGGER_ENABLED",
        help = SWAGGER_ENABLED.help(
            "`false` stops serving Swagger UI at /swagger/ (the spec stays at /openapi.json; \
             default {default})"
        )
    )]
    pub swagger_enabled: Option<String>,
}

/// The process role `RUN_MODE` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunMode {
    /// `api`: `reporter api`.
    Api,
    /// `worker`: `reporter worker`.
    Worker,
    /// `all`: `reporter serve`.
    All,
}

impl RunMode {
    /// Parses `api` | `worker` | `all` (any case); `None` for anything else.
    pub fn parse(raw: &str) -> Option<Self> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "api" => Some(Self::Api),
            "worker" => Some(Self::Worker),
            "all" => Some(Self::All),
            _ => None,
        }
    }

    /// The subcommand's name.
    pub fn command(self) -> &'static str {
        match self {
            Self::Api => "api",
            Self::Worker => "worker",
            Self::All => "serve",
        }
    }
}

/// What the original names add to the validated configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OriginalExtras {
    /// `CORS_ALLOWED_METHODS` (empty: any).
    pub cors_methods: Vec<String>,
    /// `CORS_ALLOWED_HEADERS` (empty: any).
    pub cors_headers: Vec<String>,
    /// `SWAGGER_ENABLED` (default: [`SWAGGER_ENABLED`]'s value).
    pub swagger_enabled: bool,
}

impl Default for OriginalExtras {
    /// Any method and header; Swagger UI served.
    fn default() -> Self {
        Self {
            cors_methods: Vec::new(),
            cors_headers: Vec::new(),
            swagger_enabled: SWAGGER_ENABLED.value,
        }
    }
}

/// Whether Swagger UI is served while `SWAGGER_ENABLED` is unset or blank. No clap default:
/// blank (as Helm writes an unset value) means the default here, where clap would pass the
/// blank text on (and the boolean check would refuse it).
pub(super) const SWAGGER_ENABLED: WhenUnset<bool> = WhenUnset {
    env: "SWAGGER_ENABLED",
    value: true,
};

fn set(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

fn is_set(env: &[(String, String)], name: &str) -> bool {
    env.iter().any(|(k, v)| k == name && !v.trim().is_empty())
}

impl RawConfig {
    /// This configuration with the original's names applied to ours (`SERVER_PORT`,
    /// `PLUGIN_AUTH_ENABLED`, `RABBITMQ_NUMBERS_OF_WORKERS`). MUST report a problem, naming
    /// both variables, when an original name and ours are both set and disagree.
    pub(super) fn with_original_names(&self, env: &[(String, String)], c: &mut Checker) -> Self {
        let mut raw = self.clone();
        let o = &self.original;
        if let Some(port) = set(&o.server_port) {
            raw.server_address = self.mapped_server_port(port, env, c);
        }
        if let Some(enabled) = set(&o.plugin_auth_enabled) {
            let theirs = c.boolean("PLUGIN_AUTH_ENABLED", enabled);
            if is_set(env, "AUTH_ENABLED") {
                if parse_bool(&self.auth_enabled).is_some_and(|ours| ours != theirs) {
                    c.problems.push(problem(
                        "PLUGIN_AUTH_ENABLED",
                        format!(
                            "'{enabled}' disagrees with AUTH_ENABLED={}",
                            self.auth_enabled
                        ),
                        "set one of them (AUTH_ENABLED is Reporter's name), or both alike",
                    ));
                }
            } else {
                raw.auth_enabled = theirs.to_string();
            }
        }
        if let Some(workers) = set(&o.rabbitmq_numbers_of_workers) {
            if is_set(env, "WORKER_CONCURRENCY") {
                if workers != self.worker_concurrency.trim() {
                    c.problems.push(problem(
                        "RABBITMQ_NUMBERS_OF_WORKERS",
                        format!(
                            "'{workers}' disagrees with WORKER_CONCURRENCY={}",
                            self.worker_concurrency
                        ),
                        "set one of them (WORKER_CONCURRENCY is Reporter's name), or both alike",
                    ));
                }
            } else {
                raw.worker_concurrency = workers.to_owned();
            }
        }
        // The original always stores in object storage: its endpoint alone chooses S3.
        if !is_set(env, "OBJECT_STORAGE_BACKEND") && set(&self.s3_endpoint).is_some() {
            raw.object_storage_backend = "s3".into();
        }
        raw
    }

    /// `SERVER_PORT` → the listen address: every interface on it when `SERVER_ADDRESS` is
    /// not set, else `SERVER_ADDRESS` after checking the two name the same port.
    fn mapped_server_port(&self, port: &str, env: &[(String, String)], c: &mut Checker) -> String {
        let p = c.int_or::<u16>("SERVER_PORT", port, 4005);
        if !is_set(env, "SERVER_ADDRESS") {
            return SocketAddr::from((Ipv4Addr::UNSPECIFIED, p)).to_string();
        }
        let theirs = super::addresses::listen_address(&self.server_address).map(|a| a.port());
        if theirs.is_some_and(|a| a != p) {
            c.problems.push(problem(
                "SERVER_PORT",
                format!(
                    "'{port}' disagrees with SERVER_ADDRESS={}",
                    self.server_address
                ),
                "the same port in both, or only one of them",
            ));
        }
        self.server_address.clone()
    }

    /// `CORS_ALLOWED_METHODS`, `CORS_ALLOWED_HEADERS`, `SWAGGER_ENABLED`, `RUN_MODE`'s value
    /// and the refusal of the Access Manager's address while auth has no key.
    pub(super) fn original_extras(&self, c: &mut Checker, auth_enabled: bool) -> OriginalExtras {
        let o = &self.original;
        if let Some(mode) = set(&o.run_mode)
            && RunMode::parse(mode).is_none()
        {
            c.problems.push(problem(
                "RUN_MODE",
                format!("'{mode}' is not a run mode"),
                "api, worker or all (all = reporter serve)",
            ));
        }
        self.refuse_access_manager(c, auth_enabled);
        OriginalExtras {
            cors_methods: list(c, "CORS_ALLOWED_METHODS", &o.cors_allowed_methods, |m| {
                poem::http::Method::from_bytes(m.as_bytes()).is_ok()
            })
            .into_iter()
            .map(|m| m.to_ascii_uppercase())
            .collect(),
            cors_headers: list(c, "CORS_ALLOWED_HEADERS", &o.cors_allowed_headers, |h| {
                poem::http::HeaderName::from_bytes(h.as_bytes()).is_ok()
            }),
            swagger_enabled: SWAGGER_ENABLED
                .or_read(&o.swagger_enabled, |v| c.boolean(SWAGGER_ENABLED.env, v)),
        }
    }

    /// `PLUGIN_AUTH_ADDRESS` / `PLUGIN_AUTH_HOST` while auth is on and no key is set: tokens
    /// the Access Manager issues would all be refused, so start-up MUST stop and say which
    /// key to set.
    fn refuse_access_manager(&self, c: &mut Checker, auth_enabled: bool) {
        let has_key = super::secret(&self.auth_jwt_secret).is_some()
            || set(&self.auth_jwt_public_key).is_some();
        if !auth_enabled || has_key {
            return;
        }
        for (name, value) in [
            ("PLUGIN_AUTH_ADDRESS", &self.original.plugin_auth_address),
            ("PLUGIN_AUTH_HOST", &self.original.plugin_auth_host),
        ] {
            if let Some(v) = set(value) {
                c.problems.push(problem(
                    name,
                    format!("'{v}': Reporter does not call the Access Manager"),
                    "Reporter verifies bearer tokens itself: set AUTH_JWT_PUBLIC_KEY to the \
                     key that signs your tokens (or AUTH_JWT_SECRET), or AUTH_ENABLED=false",
                ));
            }
        }
    }
}

/// A comma-separated list whose every item passes `valid`; empty when unset.
fn list(c: &mut Checker, var: &str, raw: &Option<String>, valid: fn(&str) -> bool) -> Vec<String> {
    let Some(raw) = set(raw) else {
        return Vec::new();
    };
    let items: Vec<String> = raw
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    for bad in items.iter().filter(|i| !valid(i)) {
        c.problems.push(problem(
            var,
            format!("'{bad}' is not valid here"),
            "a comma-separated list of HTTP method or header names",
        ));
    }
    items
}
