//! MongoDB settings: the reference's connection variables (E.1) plus `MONGO_URI`.
//!
//! Two ways to name the server, never both:
//! - `MONGO_URI` is a complete connection string (`mongodb://…` or `mongodb+srv://…`);
//! - `MONGO_HOST` (with `MONGO_PORT`, `MONGO_USER`, `MONGO_PASSWORD`, `MONGO_PARAMETERS`)
//!   composes one, with `MONGO_URI` unset or naming only the scheme (`mongodb`,
//!   `mongodb+srv`), as the reference's deployments set it.
//!
//! The pool and TLS variables apply to either form and win over the string's own options.
use super::declared::WhenUnset;
use super::{Checker, RawConfig, problem, redact, secret};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reporter_adapter_mongo::MongoConnection;
use reporter_ports::Secret;
use std::path::PathBuf;
use std::time::Duration;

/// MongoDB settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MongoSettings {
    /// How to connect (connection string, pool, timeouts, TLS).
    pub connection: MongoConnection,
    /// Single-tenant database / tenant registry.
    pub database: String,
    /// Per-tenant database prefix.
    pub tenant_prefix: String,
}

/// Characters kept as they are in a user name or password (RFC 3986 unreserved).
const USERINFO: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// MongoDB's port while `MONGO_PORT` is unset (the driver's; the composed URI then names
/// none). No clap default: a `MONGO_PORT` set beside a complete `MONGO_URI` or with
/// `mongodb+srv` is refused, an unset one is not.
pub(super) const MONGO_PORT: WhenUnset<u16> = WhenUnset {
    env: "MONGO_PORT",
    value: 27017,
};

fn set(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

impl RawConfig {
    /// The MongoDB settings; `None` when neither `MONGO_URI` nor `MONGO_HOST` is set (state
    /// in memory). Every problem is pushed to `c`.
    pub(super) fn mongo(&self, c: &mut Checker) -> Option<MongoSettings> {
        let uri = self.mongo_uri(c)?;
        let name = self.mongo_database(c);
        let max_pool = set(&self.mongo_max_pool_size)
            .map(|raw| c.int_or::<u32>("MONGO_MAX_POOL_SIZE", raw, 100));
        let min_pool = set(&self.mongo_min_pool_size)
            .map(|raw| c.int_or::<u32>("MONGO_MIN_POOL_SIZE", raw, 0));
        if let (Some(min), Some(max)) = (min_pool, max_pool)
            && min > max
        {
            c.problems.push(problem(
                "MONGO_MIN_POOL_SIZE",
                format!("{min} is above MONGO_MAX_POOL_SIZE {max}"),
                "at most MONGO_MAX_POOL_SIZE",
            ));
        }
        let max_idle = set(&self.mongo_max_conn_idle_time)
            .map(|raw| duration(c, "MONGO_MAX_CONN_IDLE_TIME", raw));
        let tls_ca_file = set(&self.mongo_tls_ca_cert).map(|path| {
            let path = PathBuf::from(path);
            if !path.is_file() {
                c.problems.push(problem(
                    "MONGO_TLS_CA_CERT",
                    format!("{} is not a readable file", path.display()),
                    "the path of a PEM file holding the certificate authority",
                ));
            }
            path
        });
        let selection_ms = c.int::<u64>(
            "MONGO_SERVER_SELECTION_TIMEOUT_MS",
            &self.mongo_server_selection_timeout_ms,
        );
        Some(MongoSettings {
            connection: MongoConnection {
                uri: Secret::new(uri),
                max_pool_size: max_pool,
                min_pool_size: min_pool,
                max_idle_time: max_idle,
                tls_ca_file,
                server_selection_timeout: Some(Duration::from_millis(selection_ms)),
            },
            database: name,
            tenant_prefix: self.mongo_tenant_prefix.trim().to_owned(),
        })
    }

    /// The connection string: a complete `MONGO_URI`, or one composed from `MONGO_HOST` and
    /// its companions (with `MONGO_URI` unset or only the scheme). `None` when neither is set.
    fn mongo_uri(&self, c: &mut Checker) -> Option<String> {
        let uri = secret(&self.mongo_uri);
        let host = set(&self.mongo_host);
        Some(match (uri, host) {
            (None, None) => return None,
            (Some(u), None) if u.contains("://") => self.complete_uri(c, u),
            (Some(u), Some(_)) if u.contains("://") => {
                c.problems.push(problem(
                    "MONGO_HOST",
                    "set together with a complete MONGO_URI",
                    "either a complete MONGO_URI, or MONGO_HOST (+ MONGO_PORT, MONGO_USER, \
                     MONGO_PASSWORD) with MONGO_URI unset or set to the scheme",
                ));
                u.to_owned()
            }
            (Some(scheme), None) => {
                c.problems.push(problem(
                    "MONGO_HOST",
                    format!(
                        "MONGO_URI is the scheme '{}' but MONGO_HOST is not set",
                        redact(scheme)
                    ),
                    "MONGO_HOST names the server when MONGO_URI is only the scheme",
                ));
                String::new()
            }
            (scheme, Some(host)) => self.compose(c, scheme.unwrap_or("mongodb"), host),
        })
    }

    /// A complete `MONGO_URI` `u`, with the E.1 parameters appended. MUST report a scheme
    /// other than MongoDB's, and each of `MONGO_PORT`/`MONGO_USER`/`MONGO_PASSWORD` set
    /// beside it (it would not change the URI).
    fn complete_uri(&self, c: &mut Checker, u: &str) -> String {
        if !(u.starts_with("mongodb://") || u.starts_with("mongodb+srv://")) {
            c.problems.push(problem(
                "MONGO_URI",
                format!("'{}' is not a MongoDB connection string", redact(u)),
                "mongodb://host:port/?replicaSet=rs0 or mongodb+srv://…",
            ));
        }
        for (var, value) in [
            ("MONGO_PORT", &self.mongo_port),
            ("MONGO_USER", &self.mongo_user),
            (
                "MONGO_PASSWORD",
                &self.mongo_password.as_ref().map(|p| p.expose().to_owned()),
            ),
        ] {
            if set(value).is_some() {
                c.problems.push(problem(
                    var,
                    "set together with a complete MONGO_URI, which it would not change",
                    "put it in MONGO_URI, or set MONGO_HOST and MONGO_URI=mongodb",
                ));
            }
        }
        self.with_parameters(u)
    }

    /// `MONGO_NAME`, trimmed. MUST report a name MongoDB would refuse.
    fn mongo_database(&self, c: &mut Checker) -> String {
        let name = self.mongo_name.trim();
        if name.is_empty()
            || name.len() > 63
            || name.chars().any(|ch| {
                matches!(
                    ch,
                    '/' | '\\' | '.' | ' ' | '"' | '$' | '*' | '<' | '>' | ':' | '|' | '?'
                )
            })
        {
            c.problems.push(problem(
                "MONGO_NAME",
                format!("'{name}' is not a valid database name"),
                "1-63 characters without / \\ . space \" $ * < > : | ?",
            ));
        }
        name.to_owned()
    }

    /// `scheme://[user[:password]@]host[:port]/[?parameters]` from the E.1 variables.
    fn compose(&self, c: &mut Checker, scheme: &str, host: &str) -> String {
        if scheme != "mongodb" && scheme != "mongodb+srv" {
            c.problems.push(problem(
                "MONGO_URI",
                format!(
                    "'{}' is neither a connection string nor a MongoDB scheme",
                    redact(scheme)
                ),
                "mongodb, mongodb+srv, or a complete mongodb://… string",
            ));
        }
        if host.contains(['/', '@', '?']) {
            c.problems.push(problem(
                "MONGO_HOST",
                format!("'{host}' is not a host name"),
                "a host name or address (several as h1,h2 for a replica set)",
            ));
        }
        let port = set(&self.mongo_port).map(|raw| c.int::<u16>(MONGO_PORT.env, raw));
        if port.is_some() && scheme == "mongodb+srv" {
            c.problems.push(problem(
                "MONGO_PORT",
                "set with the mongodb+srv scheme",
                "mongodb+srv takes the port from DNS; unset MONGO_PORT",
            ));
        }
        if set(&self.mongo_user).is_none() && secret(&self.mongo_password).is_some() {
            c.problems.push(problem(
                "MONGO_PASSWORD",
                "set without MONGO_USER",
                "MONGO_USER names the account the password belongs to",
            ));
        }
        let mut uri = format!("{scheme}://");
        if let Some(user) = set(&self.mongo_user) {
            uri.push_str(&utf8_percent_encode(user, USERINFO).to_string());
            if let Some(pw) = self
                .mongo_password
                .as_ref()
                .map(Secret::expose)
                .filter(|p| !p.is_empty())
            {
                uri.push(':');
                uri.push_str(&utf8_percent_encode(pw, USERINFO).to_string());
            }
            uri.push('@');
        }
        uri.push_str(host);
        if let Some(p) = port.filter(|_| !host.contains(',') && !host.contains(':')) {
            uri.push_str(&format!(":{p}"));
        }
        uri.push('/');
        self.with_parameters(&uri)
    }

    /// `uri` with `MONGO_PARAMETERS` appended to its query.
    fn with_parameters(&self, uri: &str) -> String {
        let Some(params) = set(&self.mongo_parameters) else {
            return uri.to_owned();
        };
        let params = params.trim_start_matches(['?', '&']);
        let sep = if uri.contains('?') {
            "&"
        } else if uri.ends_with('/') || uri.matches('/').count() > 2 {
            "?"
        } else {
            "/?"
        };
        format!("{uri}{sep}{params}")
    }
}

/// A duration: `90s`, `5m`, `1500ms` (humantime), or a bare number of seconds.
fn duration(c: &mut Checker, var: &str, raw: &str) -> Duration {
    if let Ok(secs) = raw.parse::<u64>() {
        return Duration::from_secs(secs);
    }
    humantime::parse_duration(raw).unwrap_or_else(|_| {
        c.problems.push(problem(
            var,
            format!("'{raw}' is not a duration"),
            "seconds, or a duration such as 90s, 5m, 1500ms",
        ));
        Duration::ZERO
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mongo(edit: impl FnOnce(&mut RawConfig)) -> Result<Option<MongoSettings>, Vec<String>> {
        let mut raw = RawConfig::defaults();
        edit(&mut raw);
        raw.validate(&[])
            .map(|c| c.mongo)
            .map_err(|e| e.0.into_iter().map(|p| p.variable).collect())
    }

    fn uri(edit: impl FnOnce(&mut RawConfig)) -> String {
        mongo(edit)
            .expect("valid")
            .expect("mongo configured")
            .connection
            .uri
            .expose()
            .to_owned()
    }

    #[test]
    fn unset_means_memory() {
        assert_eq!(mongo(|_| {}), Ok(None));
        assert_eq!(mongo(|r| r.mongo_uri = Some("  ".into())), Ok(None));
    }

    #[test]
    fn a_complete_uri_is_kept_and_parameters_are_appended() {
        let full = "mongodb://db1:27017,db2:27017/?replicaSet=rs0";
        assert_eq!(uri(|r| r.mongo_uri = Some(full.into())), full);
        assert_eq!(
            uri(|r| {
                r.mongo_uri = Some(full.into());
                r.mongo_parameters = Some("authSource=admin".into());
            }),
            "mongodb://db1:27017,db2:27017/?replicaSet=rs0&authSource=admin"
        );
        assert_eq!(
            uri(|r| {
                r.mongo_uri = Some("mongodb://db1".into());
                r.mongo_parameters = Some("?w=majority".into());
            }),
            "mongodb://db1/?w=majority"
        );
    }

    #[test]
    fn the_reference_variables_compose_the_uri() {
        assert_eq!(
            uri(|r| {
                r.mongo_uri = Some("mongodb".into());
                r.mongo_host = Some("mongo.internal".into());
                r.mongo_port = Some("5708".into());
                r.mongo_user = Some("rep orter".into());
                r.mongo_password = Some("p@ss:w/rd%".into());
                r.mongo_parameters = Some("replicaSet=rs0".into());
            }),
            "mongodb://rep%20orter:p%40ss%3Aw%2Frd%25@mongo.internal:5708/?replicaSet=rs0"
        );
        // MONGO_URI unset: the scheme defaults to mongodb; no user: no userinfo.
        assert_eq!(
            uri(|r| r.mongo_host = Some("127.0.0.1".into())),
            "mongodb://127.0.0.1/"
        );
        assert_eq!(
            uri(|r| {
                r.mongo_uri = Some("mongodb+srv".into());
                r.mongo_host = Some("cluster0.example.net".into());
            }),
            "mongodb+srv://cluster0.example.net/"
        );
    }

    #[test]
    fn pool_tls_and_timeouts_are_carried() {
        let ca = std::env::temp_dir().join(format!("reporter-ca-{}.pem", std::process::id()));
        std::fs::write(&ca, "-----BEGIN CERTIFICATE-----\n").expect("write");
        let s = mongo(|r| {
            r.mongo_uri = Some("mongodb://db".into());
            r.mongo_max_pool_size = Some("20".into());
            r.mongo_min_pool_size = Some("2".into());
            r.mongo_max_conn_idle_time = Some("90s".into());
            r.mongo_tls_ca_cert = Some(ca.display().to_string());
            r.mongo_server_selection_timeout_ms = "1500".into();
        })
        .expect("valid")
        .expect("configured");
        std::fs::remove_file(&ca).expect("remove");
        let c = s.connection;
        assert_eq!(c.max_pool_size, Some(20));
        assert_eq!(c.min_pool_size, Some(2));
        assert_eq!(c.max_idle_time, Some(Duration::from_secs(90)));
        assert_eq!(c.tls_ca_file, Some(ca));
        assert_eq!(
            c.server_selection_timeout,
            Some(Duration::from_millis(1500))
        );
        assert_eq!(s.database, "reporter-db");
        // A bare number of seconds is a duration too.
        let s = mongo(|r| {
            r.mongo_uri = Some("mongodb://db".into());
            r.mongo_max_conn_idle_time = Some("60".into());
        })
        .expect("valid")
        .expect("configured");
        assert_eq!(s.connection.max_idle_time, Some(Duration::from_secs(60)));
    }

    type Edit = fn(&mut RawConfig);

    #[test]
    fn every_mistake_names_its_variable() {
        let cases: Vec<(&str, Edit)> = vec![
            ("MONGO_URI", (|r| r.mongo_uri = Some("postgres://x".into()))),
            (
                "MONGO_URI",
                (|r| {
                    r.mongo_uri = Some("mysql".into());
                    r.mongo_host = Some("h".into());
                }),
            ),
            (
                "MONGO_HOST",
                (|r| {
                    r.mongo_uri = Some("mongodb://a".into());
                    r.mongo_host = Some("b".into());
                }),
            ),
            ("MONGO_HOST", (|r| r.mongo_uri = Some("mongodb".into()))),
            ("MONGO_HOST", (|r| r.mongo_host = Some("user@h".into()))),
            (
                "MONGO_PORT",
                (|r| {
                    r.mongo_uri = Some("mongodb://a".into());
                    r.mongo_port = Some("27017".into());
                }),
            ),
            (
                "MONGO_PORT",
                (|r| {
                    r.mongo_host = Some("h".into());
                    r.mongo_port = Some("70000".into());
                }),
            ),
            (
                "MONGO_PORT",
                (|r| {
                    r.mongo_uri = Some("mongodb+srv".into());
                    r.mongo_host = Some("h".into());
                    r.mongo_port = Some("27017".into());
                }),
            ),
            (
                "MONGO_PASSWORD",
                (|r| {
                    r.mongo_host = Some("h".into());
                    r.mongo_password = Some("pw".into());
                }),
            ),
            (
                "MONGO_NAME",
                (|r| {
                    r.mongo_uri = Some("mongodb://a".into());
                    r.mongo_name = "bad.name".into();
                }),
            ),
            (
                "MONGO_MAX_POOL_SIZE",
                (|r| {
                    r.mongo_uri = Some("mongodb://a".into());
                    r.mongo_max_pool_size = Some("0".into());
                }),
            ),
            (
                "MONGO_MIN_POOL_SIZE",
                (|r| {
                    r.mongo_uri = Some("mongodb://a".into());
                    r.mongo_max_pool_size = Some("5".into());
                    r.mongo_min_pool_size = Some("6".into());
                }),
            ),
            (
                "MONGO_MAX_CONN_IDLE_TIME",
                (|r| {
                    r.mongo_uri = Some("mongodb://a".into());
                    r.mongo_max_conn_idle_time = Some("soon".into());
                }),
            ),
            (
                "MONGO_TLS_CA_CERT",
                (|r| {
                    r.mongo_uri = Some("mongodb://a".into());
                    r.mongo_tls_ca_cert = Some("/nonexistent/ca.pem".into());
                }),
            ),
            (
                "MONGO_SERVER_SELECTION_TIMEOUT_MS",
                (|r| {
                    r.mongo_uri = Some("mongodb://a".into());
                    r.mongo_server_selection_timeout_ms = "10".into();
                }),
            ),
        ];
        for (var, edit) in cases {
            let vars = mongo(edit).expect_err(var);
            assert!(vars.iter().any(|v| v == var), "{var} not in {vars:?}");
        }
    }
}
