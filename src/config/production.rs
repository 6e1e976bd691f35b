//! The checks of a production start (`ENV_NAME=production`, any case), the original's and
//! without its gaps: telemetry on (`ENABLE_TELEMETRY=true`); rate limiting on (auth is
//! checked in [`super::auth`]); no secret empty or left at the chart's `CHANGE_ME`
//! placeholder (the CRM keys only when a CRM source is configured); CORS origins set, none
//! `*` or `http://` (the last two in [`super::server`]); TLS to RabbitMQ, Redis and object
//! storage unless `ALLOW_INSECURE_TLS=true`; a plaintext OTLP exporter only with
//! `ALLOW_INSECURE_OTEL=true`. Every problem is reported, each naming its variable.
use super::deployment::{
    Connections, rabbitmq_tls_problems, redis_tls_problems, storage_tls_problems,
};
use super::{ConfigProblem, DataSourceSpec, EventBroker, JobQueueChoice, ObjectStorageChoice};
use super::{parse_bool, problem};

/// The placeholder the original's chart ships in its secrets.
pub const PLACEHOLDER: &str = "CHANGE_ME";

/// The rule of the TLS problems.
const TLS_RULE: &str = "ENV_NAME=production requires TLS to RabbitMQ, Redis and object storage (ALLOW_INSECURE_TLS=true allows plaintext)";

/// What the production checks look at besides the connections.
pub(super) struct ProductionInputs<'a> {
    /// Every environment variable (the telemetry and secret variables are read here).
    pub env: &'a [(String, String)],
    /// The connections (shared with the SaaS TLS rule).
    pub connections: Connections<'a>,
    /// `CORS_ALLOWED_ORIGINS`, parsed.
    pub cors_origins: &'a [String],
    /// `ALLOW_INSECURE_TLS`.
    pub allow_insecure_tls: bool,
    /// `ALLOW_INSECURE_OTEL`.
    pub allow_insecure_otel: bool,
}

impl ProductionInputs<'_> {
    fn var(&self, name: &str) -> Option<&str> {
        self.env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.trim())
            .filter(|v| !v.is_empty())
    }
}

/// Every problem of a production start (call only when `ENV_NAME=production`).
pub(super) fn production_problems(i: &ProductionInputs<'_>) -> Vec<ConfigProblem> {
    let mut out = Vec::new();
    if !i
        .var("ENABLE_TELEMETRY")
        .and_then(parse_bool)
        .unwrap_or(false)
    {
        out.push(problem(
            "ENABLE_TELEMETRY",
            "telemetry is off in production",
            "ENABLE_TELEMETRY=true when ENV_NAME=production",
        ));
    }
    out.extend(placeholder_problems(i.env));
    out.extend(empty_secret_problems(i));
    if i.cors_origins.is_empty() {
        out.push(problem(
            "CORS_ALLOWED_ORIGINS",
            "empty in production",
            "the https:// origins of the clients when ENV_NAME=production",
        ));
    }
    if !i.allow_insecure_tls {
        out.extend(rabbitmq_tls_problems(&i.connections, TLS_RULE));
        out.extend(storage_tls_problems(&i.connections, TLS_RULE));
        out.extend(redis_tls_problems(&i.connections, TLS_RULE));
    }
    out.extend(otel_problem(i));
    out
}

/// A variable that holds a secret, by its name.
fn is_secret_name(name: &str) -> bool {
    ["PASSWORD", "SECRET", "TOKEN", "CRYPTO_"]
        .iter()
        .any(|part| name.contains(part))
        || name.ends_with("_PASS")
}

/// The password of a `scheme://user:password@host…` URI (or of a `user:password@host`
/// entry), if it has one.
fn uri_password(uri: &str) -> Option<&str> {
    let start = uri.find("://").map_or(0, |s| s + 3);
    let rest = &uri[start..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let (userinfo, _) = authority.rsplit_once('@')?;
    userinfo.split_once(':').map(|(_, p)| p)
}

/// Secret variables, and passwords inside URIs, still set to [`PLACEHOLDER`].
fn placeholder_problems(env: &[(String, String)]) -> Vec<ConfigProblem> {
    let mut names: Vec<&str> = env
        .iter()
        .filter(|(k, v)| {
            let v = v.trim();
            (is_secret_name(k) && v.eq_ignore_ascii_case(PLACEHOLDER))
                || v.split(',').any(|entry| {
                    uri_password(entry.trim()).is_some_and(|p| p.eq_ignore_ascii_case(PLACEHOLDER))
                })
        })
        .map(|(k, _)| k.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .map(|k| {
            problem(
                k,
                format!("still the placeholder {PLACEHOLDER}"),
                "a real secret when ENV_NAME=production",
            )
        })
        .collect()
}

/// The credentials of every configured connection that has none.
fn empty_secret_problems(i: &ProductionInputs<'_>) -> Vec<ConfigProblem> {
    let c = &i.connections;
    let mut out = Vec::new();
    let missing = |var: &str, what: &str| {
        problem(
            var,
            format!("{what} has no password in production"),
            &format!("set {var} (not empty, not {PLACEHOLDER}) when ENV_NAME=production"),
        )
    };
    if let Some(m) = c.mongo
        && uri_password(m.connection.uri.expose()).is_none_or(str::is_empty)
        && !passwordless_mongo_auth(m.connection.uri.expose())
    {
        out.push(missing("MONGO_PASSWORD", "MongoDB"));
    }
    let rabbit_uris = match c.queue {
        JobQueueChoice::Rabbit { uri, .. } => vec![uri.expose()],
        JobQueueChoice::Memory => Vec::new(),
    };
    let broker_uris = match (&c.streaming.broker, c.streaming.enabled) {
        (EventBroker::Amqp(uris), true) => uris.iter().map(|u| u.expose()).collect(),
        _ => Vec::new(),
    };
    if rabbit_uris
        .iter()
        .chain(&broker_uris)
        .any(|u| uri_password(u).is_none_or(str::is_empty))
    {
        out.push(missing("RABBITMQ_DEFAULT_PASS", "RabbitMQ"));
    }
    if let Some(r) = c.redis
        && r.password.as_ref().is_none_or(|p| p.expose().is_empty())
    {
        out.push(missing("REDIS_PASSWORD", "the rate limiter's Redis"));
    }
    if let ObjectStorageChoice::S3(s) = c.storage
        && s.access_key_id.is_some()
        && s.secret_key
            .as_ref()
            .is_none_or(|k| k.expose().trim().is_empty())
    {
        out.push(missing("OBJECT_STORAGE_SECRET_KEY", "object storage"));
    }
    let crm = c
        .sources
        .sources
        .values()
        .any(|s| matches!(s, DataSourceSpec::Mongodb { crm: Some(_), .. }));
    if crm {
        for names in [super::crm::ENCRYPT_KEY_VARS, super::crm::HASH_KEY_VARS] {
            if names.iter().all(|n| i.var(n).is_none()) {
                out.push(problem(
                    names[0],
                    "the CRM source is configured but its key is not set",
                    &format!(
                        "set {} (or {}) when ENV_NAME=production and a CRM source is configured",
                        names[0], names[1]
                    ),
                ));
            }
        }
    }
    out
}

/// A MongoDB authentication mechanism without a password (X.509 certificates, AWS IAM).
fn passwordless_mongo_auth(uri: &str) -> bool {
    let lower = uri.to_ascii_lowercase();
    ["authmechanism=mongodb-x509", "authmechanism=mongodb-aws"]
        .iter()
        .any(|m| lower.contains(m))
}

/// A plaintext OTLP exporter without `ALLOW_INSECURE_OTEL=true`.
fn otel_problem(i: &ProductionInputs<'_>) -> Option<ConfigProblem> {
    if i.allow_insecure_otel {
        return None;
    }
    let endpoint = i.var("OTEL_EXPORTER_OTLP_ENDPOINT");
    let insecure = i
        .var("OTEL_INSECURE_EXPORTER")
        .and_then(parse_bool)
        .unwrap_or(false);
    let http = endpoint.is_some_and(|e| e.to_ascii_lowercase().starts_with("http://"));
    (insecure || http).then(|| {
        problem(
            if http {
                "OTEL_EXPORTER_OTLP_ENDPOINT"
            } else {
                "OTEL_INSECURE_EXPORTER"
            },
            "the OTLP exporter sends in plaintext in production",
            "an https:// endpoint and OTEL_INSECURE_EXPORTER=false when ENV_NAME=production, or ALLOW_INSECURE_OTEL=true",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::{is_secret_name, uri_password};

    #[test]
    fn passwords_are_read_from_uris() {
        assert_eq!(uri_password("amqp://u:p@h:5672/%2f"), Some("p"));
        assert_eq!(uri_password("mongodb://u:@h1,h2/?x=1"), Some(""));
        assert_eq!(uri_password("mongodb://h/?x=u:p@"), None);
        assert_eq!(uri_password("u:CHANGE_ME@rabbitmq:5672"), Some("CHANGE_ME"));
        assert_eq!(uri_password("redis://h:6379"), None);
        assert!(super::passwordless_mongo_auth(
            "mongodb://h/?tls=true&authMechanism=MONGODB-X509"
        ));
    }

    #[test]
    fn secret_names() {
        for n in [
            "MONGO_PASSWORD",
            "RABBITMQ_DEFAULT_PASS",
            "OBJECT_STORAGE_SECRET_KEY",
            "CRYPTO_HASH_SECRET_KEY_CRM",
            "AUTH_JWT_SECRET",
        ] {
            assert!(is_secret_name(n), "{n}");
        }
        assert!(!is_secret_name("RABBITMQ_GENERATE_REPORT_KEY"));
    }
}
