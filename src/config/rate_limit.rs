//! Rate limiting (`RATE_LIMIT_*`, the original's names and bounds), where its counters live
//! (`REDIS_*`, the original's names), who the client is (`TRUSTED_PROXIES`), and the
//! lib-commons names the original's Helm chart also sets (`RATE_LIMIT_MAX`, `AGGRESSIVE_*`,
//! `RELAXED_*`, `RATE_LIMIT_REDIS_TIMEOUT_MS`, `ALLOW_RATELIMIT_FAIL_OPEN`,
//! `ALLOW_RATELIMIT_DISABLED`): honoured where their meaning maps, refused naming the
//! variable to use where it does not. Also the production escape hatches `ALLOW_INSECURE_TLS`
//! and `ALLOW_INSECURE_OTEL` (checked in [`super::production`]).
use super::declared::WhenUnset;
use super::{Checker, problem};
use clap::Args;
use ipnet::IpNet;
use reporter_adapter_redis::RedisConnection;
use reporter_ports::Secret;
use std::net::IpAddr;
use std::time::Duration;

/// The raw settings of this module, flattened into [`super::RawConfig`].
#[derive(Debug, Clone, Args)]
pub struct ProtectionRaw {
    /// Rate limiting per client address: `true`, `false`, or `auto` (on when
    /// ENV_NAME=production, off otherwise).
    #[arg(long, env = "RATE_LIMIT_ENABLED", default_value = "auto")]
    pub rate_limit_enabled: String,
    // Requests per window of one client to the global tier: help text from RATE_LIMIT_GLOBAL.
    #[arg(
        long,
        env = "RATE_LIMIT_GLOBAL",
        help = RATE_LIMIT_GLOBAL.help(
            "Requests per window of one client to the global tier (1-10000; default {default}, \
             or RATE_LIMIT_MAX when only that is set)"
        )
    )]
    pub rate_limit_global: Option<String>,
    /// Requests per window of one client to the export tier, paths ending in /download (1-1000).
    #[arg(long, env = "RATE_LIMIT_EXPORT", default_value = "10")]
    pub rate_limit_export: String,
    /// Requests per window of one client to the dispatch tier, POST/PUT/PATCH/DELETE (1-5000).
    #[arg(long, env = "RATE_LIMIT_DISPATCH", default_value = "50")]
    pub rate_limit_dispatch: String,
    // Length of the fixed window: help text from RATE_LIMIT_WINDOW_SECONDS.
    #[arg(
        long,
        env = "RATE_LIMIT_WINDOW_SECONDS",
        help = RATE_LIMIT_WINDOW_SECONDS.help(
            "Length of the fixed window in seconds (1-3600; default {default}, or \
             RATE_LIMIT_WINDOW_SEC)"
        )
    )]
    pub rate_limit_window_seconds: Option<String>,
    /// lib-commons' default-tier maximum: the global tier's limit when RATE_LIMIT_GLOBAL is unset.
    #[arg(long, env = "RATE_LIMIT_MAX")]
    pub rate_limit_max: Option<String>,
    /// lib-commons' window: the window when RATE_LIMIT_WINDOW_SECONDS is unset.
    #[arg(long, env = "RATE_LIMIT_WINDOW_SEC")]
    pub rate_limit_window_sec: Option<String>,
    /// lib-commons' aggressive tier: only its default (100) is accepted; use RATE_LIMIT_EXPORT
    /// and RATE_LIMIT_DISPATCH.
    #[arg(long, env = "AGGRESSIVE_RATE_LIMIT_MAX")]
    pub aggressive_rate_limit_max: Option<String>,
    /// lib-commons' aggressive tier window: only the window (or 60) is accepted.
    #[arg(long, env = "AGGRESSIVE_RATE_LIMIT_WINDOW_SEC")]
    pub aggressive_rate_limit_window_sec: Option<String>,
    /// lib-commons' relaxed tier: only its default (1000) is accepted; use RATE_LIMIT_GLOBAL.
    #[arg(long, env = "RELAXED_RATE_LIMIT_MAX")]
    pub relaxed_rate_limit_max: Option<String>,
    /// lib-commons' relaxed tier window: only the window (or 60) is accepted.
    #[arg(long, env = "RELAXED_RATE_LIMIT_WINDOW_SEC")]
    pub relaxed_rate_limit_window_sec: Option<String>,
    /// Deadline of one Redis call of the rate limiter, in milliseconds (10-10000).
    #[arg(long, env = "RATE_LIMIT_REDIS_TIMEOUT_MS", default_value = "500")]
    pub rate_limit_redis_timeout_ms: String,
    /// When Redis does not answer: `true` lets requests pass (fail open), `false` answers 503
    /// (fail closed). Default: closed when ENV_NAME=production, open otherwise.
    #[arg(long, env = "ALLOW_RATELIMIT_FAIL_OPEN")]
    pub allow_ratelimit_fail_open: Option<String>,
    /// Allows RATE_LIMIT_ENABLED=false when ENV_NAME=production.
    #[arg(long, env = "ALLOW_RATELIMIT_DISABLED", default_value = "false")]
    pub allow_ratelimit_disabled: String,
    /// Proxies whose X-Forwarded-For is believed: comma-separated IPs or CIDRs. The client is
    /// the rightmost address of X-Forwarded-For not in this list, when the peer is in it.
    #[arg(long, env = "TRUSTED_PROXIES", default_value = "")]
    pub trusted_proxies: String,
    /// Redis / Valkey of the rate limiter: `host` or `host:port`. Unset: counters in process
    /// memory (each API process counts alone).
    #[arg(long, env = "REDIS_HOST")]
    pub redis_host: Option<String>,
    // Redis port when REDIS_HOST has none: help text from REDIS_PORT.
    #[arg(
        long,
        env = "REDIS_PORT",
        help = REDIS_PORT.help("Redis port when REDIS_HOST has none (default {default})")
    )]
    pub redis_port: Option<String>,
    /// Redis ACL user.
    #[arg(long, env = "REDIS_USER")]
    pub redis_user: Option<String>,
    /// Redis password.
    #[arg(long, env = "REDIS_PASSWORD", hide_env_values = true)]
    pub redis_password: Option<Secret>,
    /// Redis logical database (0-15).
    #[arg(long, env = "REDIS_DB", default_value = "0")]
    pub redis_db: String,
    /// TLS to Redis (`rediss://`).
    #[arg(long, env = "REDIS_TLS", default_value = "false")]
    pub redis_tls: String,
    /// Certificate authority of Redis's TLS: PEM text, base64 of the PEM, or a PEM file path.
    #[arg(long, env = "REDIS_CA_CERT", hide_env_values = true)]
    pub redis_ca_cert: Option<String>,
    /// Redis Sentinel master name: not supported (refused when set).
    #[arg(long, env = "REDIS_MASTER_NAME")]
    pub redis_master_name: Option<String>,
    /// RESP protocol version, 2 or 3 (accepted; the limiter's commands answer alike).
    #[arg(long, env = "REDIS_PROTOCOL")]
    pub redis_protocol: Option<String>,
    /// GCP IAM authentication to Memorystore: not supported (refused when true).
    #[arg(long, env = "REDIS_USE_GCP_IAM")]
    pub redis_use_gcp_iam: Option<String>,
    /// GCP service account of REDIS_USE_GCP_IAM: not supported (refused when set).
    #[arg(long, env = "REDIS_SERVICE_ACCOUNT")]
    pub redis_service_account: Option<String>,
    /// With ENV_NAME=production: allows connections to RabbitMQ, Redis and object storage
    /// without TLS.
    #[arg(long, env = "ALLOW_INSECURE_TLS", default_value = "false")]
    pub allow_insecure_tls: String,
    /// With ENV_NAME=production: allows a plaintext OTLP exporter.
    #[arg(long, env = "ALLOW_INSECURE_OTEL", default_value = "false")]
    pub allow_insecure_otel: String,
}

/// The validated rate-limit settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimitSettings {
    /// Requests are counted and limited.
    pub enabled: bool,
    /// Limit of the global tier (every request not in another tier).
    pub global: u32,
    /// Limit of the export tier (paths ending in `/download`).
    pub export: u32,
    /// Limit of the dispatch tier (POST, PUT, PATCH, DELETE).
    pub dispatch: u32,
    /// The fixed window.
    pub window: Duration,
    /// Proxies whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Vec<IpNet>,
    /// Requests pass when the counter's backend does not answer.
    pub fail_open: bool,
    /// The shared counters' Redis; `None`: in process memory.
    pub redis: Option<RedisConnection>,
    /// Deadline of one Redis call.
    pub redis_timeout: Duration,
}

/// The global tier's limit while neither `RATE_LIMIT_GLOBAL` nor `RATE_LIMIT_MAX` is set (no
/// clap default: a set `RATE_LIMIT_GLOBAL` wins over `RATE_LIMIT_MAX`, an unset one does not).
pub(super) const RATE_LIMIT_GLOBAL: WhenUnset<u32> = WhenUnset {
    env: "RATE_LIMIT_GLOBAL",
    value: 100,
};

/// The window, in seconds, while neither `RATE_LIMIT_WINDOW_SECONDS` nor lib-commons'
/// `RATE_LIMIT_WINDOW_SEC` is set (no clap default: a set one wins over lib-commons' name).
pub(super) const RATE_LIMIT_WINDOW_SECONDS: WhenUnset<u64> = WhenUnset {
    env: "RATE_LIMIT_WINDOW_SECONDS",
    value: 60,
};

/// Redis's port while `REDIS_PORT` is unset or blank and `REDIS_HOST` names none. No clap
/// default: blank (as Helm writes an unset value) means the default here, where clap would
/// pass the blank text on (and the integer check would refuse it).
pub(super) const REDIS_PORT: WhenUnset<u16> = WhenUnset {
    env: "REDIS_PORT",
    value: 6379,
};

/// `lib-commons`' default of the aggressive tier, the only value accepted.
const AGGRESSIVE_DEFAULT: u32 = 100;
/// `lib-commons`' default of the relaxed tier, the only value accepted.
const RELAXED_DEFAULT: u32 = 1000;

fn set(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

impl ProtectionRaw {
    /// Validates the rate-limit and Redis settings; `production` picks the defaults of
    /// `RATE_LIMIT_ENABLED=auto` and of failing open.
    pub(super) fn rate_limit(&self, c: &mut Checker, production: bool) -> RateLimitSettings {
        let enabled = match self.rate_limit_enabled.trim() {
            v if v.eq_ignore_ascii_case("auto") => production,
            v => c.boolean("RATE_LIMIT_ENABLED", v),
        };
        let global = match (set(&self.rate_limit_global), set(&self.rate_limit_max)) {
            (Some(v), _) => c.int::<u32>(RATE_LIMIT_GLOBAL.env, v),
            (None, Some(v)) => c.int_or::<u32>("RATE_LIMIT_MAX", v, RATE_LIMIT_GLOBAL.value),
            (None, None) => RATE_LIMIT_GLOBAL.value,
        };
        let export = c.int::<u32>("RATE_LIMIT_EXPORT", &self.rate_limit_export);
        let dispatch = c.int::<u32>("RATE_LIMIT_DISPATCH", &self.rate_limit_dispatch);
        let window_secs = match (
            set(&self.rate_limit_window_seconds),
            set(&self.rate_limit_window_sec),
        ) {
            (Some(v), _) => c.int::<u64>(RATE_LIMIT_WINDOW_SECONDS.env, v),
            (None, Some(v)) => {
                c.int_or::<u64>("RATE_LIMIT_WINDOW_SEC", v, RATE_LIMIT_WINDOW_SECONDS.value)
            }
            (None, None) => RATE_LIMIT_WINDOW_SECONDS.value,
        };
        self.lib_commons_tiers(c, window_secs);
        let fail_open = match set(&self.allow_ratelimit_fail_open) {
            Some(v) => c.allowance("ALLOW_RATELIMIT_FAIL_OPEN", v),
            None => !production,
        };
        let disabled_allowed =
            c.allowance("ALLOW_RATELIMIT_DISABLED", &self.allow_ratelimit_disabled);
        if production && !enabled && !disabled_allowed {
            c.problems.push(problem(
                "RATE_LIMIT_ENABLED",
                "rate limiting is off in production",
                "RATE_LIMIT_ENABLED=true (or auto) when ENV_NAME=production, or ALLOW_RATELIMIT_DISABLED=true",
            ));
        }
        RateLimitSettings {
            enabled,
            global,
            export,
            dispatch,
            window: Duration::from_secs(window_secs),
            trusted_proxies: self.trusted(c),
            fail_open,
            redis: self.redis(c),
            redis_timeout: Duration::from_millis(c.int::<u64>(
                "RATE_LIMIT_REDIS_TIMEOUT_MS",
                &self.rate_limit_redis_timeout_ms,
            )),
        }
    }

    /// lib-commons' aggressive and relaxed tiers have no route here (the tiers are the
    /// original Reporter's): their defaults are accepted, any other value refused naming
    /// the variable that sets the limit meant.
    fn lib_commons_tiers(&self, c: &mut Checker, window: u64) {
        let tiers = [
            (
                "AGGRESSIVE_RATE_LIMIT_MAX",
                &self.aggressive_rate_limit_max,
                u64::from(AGGRESSIVE_DEFAULT),
                "RATE_LIMIT_EXPORT (downloads) or RATE_LIMIT_DISPATCH (POST/PUT/PATCH/DELETE)",
            ),
            (
                "RELAXED_RATE_LIMIT_MAX",
                &self.relaxed_rate_limit_max,
                u64::from(RELAXED_DEFAULT),
                "RATE_LIMIT_GLOBAL",
            ),
        ];
        for (var, value, default, instead) in tiers {
            if let Some(v) = set(value)
                && v.parse::<u64>() != Ok(default)
            {
                c.problems.push(problem(
                    var,
                    format!("'{v}': lib-commons' tier has no routes in Reporter"),
                    &format!("unset or {default} (lib-commons' default, no effect); set {instead} instead"),
                ));
            }
        }
        for var in [
            (
                "AGGRESSIVE_RATE_LIMIT_WINDOW_SEC",
                &self.aggressive_rate_limit_window_sec,
            ),
            (
                "RELAXED_RATE_LIMIT_WINDOW_SEC",
                &self.relaxed_rate_limit_window_sec,
            ),
        ] {
            if let Some(v) = set(var.1)
                && !matches!(v.parse::<u64>(), Ok(w) if w == window || w == 60)
            {
                c.problems.push(problem(
                    var.0,
                    format!("'{v}': every tier shares one window in Reporter"),
                    "unset, 60 or the window (no effect); set RATE_LIMIT_WINDOW_SECONDS instead",
                ));
            }
        }
    }

    /// `TRUSTED_PROXIES`: comma-separated IPs or CIDRs.
    fn trusted(&self, c: &mut Checker) -> Vec<IpNet> {
        let mut out = Vec::new();
        for entry in self
            .trusted_proxies
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            match entry
                .parse::<IpNet>()
                .or_else(|_| entry.parse::<IpAddr>().map(IpNet::from))
            {
                Ok(net) => out.push(net),
                Err(_) => c.problems.push(problem(
                    "TRUSTED_PROXIES",
                    format!("'{entry}' is not an IP address or CIDR"),
                    "comma-separated IPs or CIDRs, e.g. 10.0.0.0/8,192.168.1.10",
                )),
            }
        }
        out
    }

    /// The Redis connection from `REDIS_*`, or `None` when `REDIS_HOST` is unset.
    fn redis(&self, c: &mut Checker) -> Option<RedisConnection> {
        if let Some(m) = set(&self.redis_master_name) {
            c.problems.push(problem(
                "REDIS_MASTER_NAME",
                format!("'{m}': Redis Sentinel is not supported"),
                "unset; point REDIS_HOST at the primary (or a proxy in front of the Sentinel group)",
            ));
        }
        if let Some(v) = set(&self.redis_use_gcp_iam)
            && c.boolean("REDIS_USE_GCP_IAM", v)
        {
            c.problems.push(problem(
                "REDIS_USE_GCP_IAM",
                "GCP IAM authentication is not supported",
                "false or unset; authenticate with REDIS_USER / REDIS_PASSWORD",
            ));
        }
        if set(&self.redis_service_account).is_some() {
            c.problems.push(problem(
                "REDIS_SERVICE_ACCOUNT",
                "GCP IAM authentication is not supported",
                "unset; authenticate with REDIS_USER / REDIS_PASSWORD",
            ));
        }
        if let Some(p) = set(&self.redis_protocol)
            && !matches!(p, "2" | "3" | "resp2" | "resp3")
        {
            c.problems.push(problem(
                "REDIS_PROTOCOL",
                format!("'{p}' is not a RESP version"),
                "2 or 3",
            ));
        }
        let tls = c.boolean("REDIS_TLS", &self.redis_tls);
        let db = c.int::<u32>("REDIS_DB", &self.redis_db);
        let host = set(&self.redis_host)?;
        let (host, port) = self.redis_address(c, host);
        Some(RedisConnection {
            host,
            port,
            user: set(&self.redis_user).map(str::to_owned),
            password: super::secret(&self.redis_password).map(Secret::from),
            db,
            tls,
            ca_pem: self.redis_ca(c),
        })
    }

    /// `REDIS_HOST` as `host` or `host:port` (`[v6]:port`), else `REDIS_PORT`, else
    /// [`REDIS_PORT`]'s value.
    fn redis_address(&self, c: &mut Checker, raw: &str) -> (String, u16) {
        const RULE: &str =
            "one host, host:port or [ipv6]:port (a list means a cluster, which is not supported)";
        let default_port = REDIS_PORT.or_read(&self.redis_port, |p| c.int(REDIS_PORT.env, p));
        if raw.contains([',', '/', '@', ' ']) {
            c.problems.push(problem(
                "REDIS_HOST",
                format!("'{raw}' is not one host"),
                RULE,
            ));
            return (raw.to_owned(), default_port);
        }
        if let Ok(ip) = raw.parse::<IpAddr>() {
            return (ip.to_string(), default_port);
        }
        let split = match raw.strip_prefix('[') {
            Some(rest) => rest
                .split_once("]:")
                .map(|(h, p)| (h, Some(p)))
                .or_else(|| rest.strip_suffix(']').map(|h| (h, None))),
            None => Some(match raw.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (raw, None),
            }),
        };
        match split {
            Some((h, Some(p))) if !h.is_empty() => (
                h.to_owned(),
                c.number("REDIS_HOST", p, 1u16, u16::MAX, REDIS_PORT.value),
            ),
            Some((h, None)) if !h.is_empty() => (h.to_owned(), default_port),
            _ => {
                c.problems.push(problem(
                    "REDIS_HOST",
                    format!("'{raw}' is not a host"),
                    RULE,
                ));
                (raw.to_owned(), default_port)
            }
        }
    }

    /// `REDIS_CA_CERT`: PEM text, base64 of the PEM, or a PEM file.
    fn redis_ca(&self, c: &mut Checker) -> Option<Vec<u8>> {
        use base64::Engine;
        let raw = set(&self.redis_ca_cert)?;
        let pem = if raw.contains("-----BEGIN") {
            Some(raw.as_bytes().to_vec())
        } else if let Ok(bytes) = std::fs::read(raw) {
            Some(bytes)
        } else {
            base64::engine::general_purpose::STANDARD
                .decode(raw)
                .ok()
                .filter(|b| b.windows(10).any(|w| w == b"-----BEGIN"))
        };
        if pem.is_none() {
            c.problems.push(problem(
                "REDIS_CA_CERT",
                "neither PEM text, base64 of a PEM, nor a readable PEM file",
                "the CA certificate of Redis's TLS as PEM text, its base64, or a file path",
            ));
        }
        pem
    }
}
