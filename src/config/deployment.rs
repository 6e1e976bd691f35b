//! `DEPLOYMENT_MODE=saas`: as in the original, every connection to a datastore must use TLS,
//! so a service operated for others never talks to its databases or brokers in clear text.
use super::{
    ConfigProblem, DataSourceConfig, DataSourceSpec, DeploymentMode, EventBroker, JobQueueChoice,
    MongoSettings, ObjectStorageChoice, StreamingSettings, problem,
};

/// The rule every problem of this module names.
const RULE: &str = "DEPLOYMENT_MODE=saas requires TLS on every connection";

/// What the TLS rule looks at.
pub(super) struct Connections<'a> {
    pub mongo: Option<&'a MongoSettings>,
    pub queue: &'a JobQueueChoice,
    pub streaming: &'a StreamingSettings,
    pub storage: &'a ObjectStorageChoice,
    pub sources: &'a DataSourceConfig,
    /// The rate limiter's Redis, when configured and rate limiting is on.
    pub redis: Option<&'a reporter_adapter_redis::RedisConnection>,
}

/// True when a MongoDB connection string turns TLS on (`mongodb+srv://` does by default).
fn mongo_uri_has_tls(uri: &str) -> bool {
    let lower = uri.to_ascii_lowercase();
    let query = lower.split_once('?').map(|(_, q)| q).unwrap_or("");
    let on = query
        .split('&')
        .any(|p| matches!(p, "tls=true" | "ssl=true"));
    let off = query
        .split('&')
        .any(|p| matches!(p, "tls=false" | "ssl=false"));
    (lower.starts_with("mongodb+srv://") && !off) || on
}

/// The rules that involve several sections: in SaaS mode every connection uses TLS (also the
/// rate limiter's Redis); GridFS needs MongoDB.
pub(super) fn cross_section_problems(
    mode: DeploymentMode,
    c: &Connections<'_>,
) -> Vec<ConfigProblem> {
    let mut out = Vec::new();
    if mode == DeploymentMode::Saas {
        out.extend(saas_tls_problems(c));
    }
    if matches!(c.storage, ObjectStorageChoice::GridFs) && c.mongo.is_none() {
        out.push(problem(
            "OBJECT_STORAGE_BACKEND",
            "gridfs without MONGO_URI",
            "set MONGO_URI to use GridFS",
        ));
    }
    out
}

/// Every connection of `c` that does not use TLS, as configuration problems.
pub(super) fn saas_tls_problems(c: &Connections<'_>) -> Vec<ConfigProblem> {
    let mut out = Vec::new();
    if let Some(m) = c.mongo
        && m.connection.tls_ca_file.is_none()
        && !mongo_uri_has_tls(m.connection.uri.expose())
    {
        out.push(problem(
            "MONGO_URI",
            "the MongoDB connection does not use TLS",
            &format!("{RULE}: tls=true in MONGO_PARAMETERS or the URI, or MONGO_TLS_CA_CERT"),
        ));
    }
    out.extend(rabbitmq_tls_problems(c, RULE));
    out.extend(storage_tls_problems(c, RULE));
    out.extend(redis_tls_problems(c, RULE));
    for (id, spec) in &c.sources.sources {
        let var = format!("DATASOURCE_{}", id.as_str().to_ascii_uppercase());
        match spec {
            DataSourceSpec::File { .. } => {}
            DataSourceSpec::Postgresql(c) => {
                use reporter_adapter_postgres::SslMode;
                if matches!(c.tls.mode, SslMode::Disable | SslMode::Prefer) {
                    out.push(sql_without_tls(&var, "PostgreSQL"));
                }
            }
            DataSourceSpec::Mysql(c) => {
                if c.tls.mode == reporter_adapter_mysql::SslMode::Disable {
                    out.push(sql_without_tls(&var, "MySQL"));
                }
            }
            DataSourceSpec::Sqlserver(c) => {
                if c.tls.mode == reporter_adapter_sqlserver::SslMode::Disable {
                    out.push(sql_without_tls(&var, "SQL Server"));
                }
            }
            DataSourceSpec::Mongodb { uri, .. } => {
                if !mongo_uri_has_tls(uri.expose()) {
                    out.push(problem(
                        &format!("{var}_URI"),
                        "the MongoDB data source does not use TLS",
                        &format!("{RULE}: tls=true in the connection string"),
                    ));
                }
            }
        }
    }
    out
}

/// RabbitMQ (the job queue and the event broker) reached without `amqps://`, as problems
/// citing `rule` (the SaaS rule, or the production rule of [`super::production`]).
pub(super) fn rabbitmq_tls_problems(c: &Connections<'_>, rule: &str) -> Vec<ConfigProblem> {
    let mut out = Vec::new();
    if let JobQueueChoice::Rabbit { uri, .. } = c.queue
        && !uri.expose().starts_with("amqps://")
    {
        out.push(problem(
            "RABBITMQ_URI",
            "not an amqps:// URI",
            &format!("{rule}: amqps://"),
        ));
    }
    if c.streaming.enabled
        && let EventBroker::Amqp(uris) = &c.streaming.broker
        && uris.iter().any(|u| !u.expose().starts_with("amqps://"))
    {
        out.push(problem(
            "STREAMING_BROKERS",
            "the event broker is not reached over amqps://",
            &format!("{rule}: amqps://"),
        ));
    }
    out
}

/// S3 object storage reached over plain http, as a problem citing `rule`.
pub(super) fn storage_tls_problems(c: &Connections<'_>, rule: &str) -> Option<ConfigProblem> {
    match c.storage {
        ObjectStorageChoice::S3(s)
            if s.allow_http
                || s.endpoint
                    .as_deref()
                    .is_some_and(|e| e.trim_start().starts_with("http://")) =>
        {
            Some(problem(
                "OBJECT_STORAGE_ENDPOINT",
                "object storage is reached over plain http",
                &format!("{rule}: an https:// endpoint and OBJECT_STORAGE_DISABLE_SSL=false"),
            ))
        }
        _ => None,
    }
}

/// The rate limiter's Redis reached without TLS, as a problem citing `rule`.
pub(super) fn redis_tls_problems(c: &Connections<'_>, rule: &str) -> Option<ConfigProblem> {
    c.redis.filter(|r| !r.tls).map(|_| {
        problem(
            "REDIS_TLS",
            "the rate limiter's Redis is reached without TLS",
            &format!("{rule}: REDIS_TLS=true"),
        )
    })
}

/// A SQL data source whose TLS mode does not guarantee an encrypted connection.
fn sql_without_tls(var: &str, kind: &str) -> ConfigProblem {
    problem(
        &format!("{var}_SSLMODE"),
        format!("the {kind} data source may be reached without TLS"),
        &format!("{RULE}: require, verify-ca or verify-full"),
    )
}

#[cfg(test)]
mod tests {
    use super::mongo_uri_has_tls;

    #[test]
    fn mongo_tls_is_read_from_the_connection_string() {
        assert!(mongo_uri_has_tls("mongodb+srv://u:p@cluster/x"));
        assert!(!mongo_uri_has_tls("mongodb+srv://cluster/?tls=false"));
        assert!(mongo_uri_has_tls(
            "mongodb://h:27017/?replicaSet=rs0&TLS=true"
        ));
        assert!(mongo_uri_has_tls("mongodb://h/?ssl=true"));
        assert!(!mongo_uri_has_tls("mongodb://h:27017/?replicaSet=rs0"));
    }
}
