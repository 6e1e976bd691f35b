//! [`PostgresConfig`]: how to reach one PostgreSQL data source and how to guard it.
use reporter_ports::datasource::DataSourceId;
use reporter_ports::ports::DataSourceError;
use reporter_ports::source_breaker::BreakerConfig;
use reporter_sql_support::settings::{check_common, percent_decode, redacted, refused};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// TLS mode for the connection (the `DATASOURCE_<NAME>_SSLMODE` setting), as in libpq; see
/// the `tls` module for what each mode checks. With a CA file
/// ([`PostgresConfig::ssl_root_cert`]), `require` behaves as `verify-ca`, as in libpq.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SslMode {
    /// Plain TCP (or a Unix socket). The default.
    #[default]
    Disable,
    /// TLS when the server offers it, certificate not verified; else plain TCP.
    Prefer,
    /// TLS required, certificate not verified (unless a CA file is given).
    Require,
    /// TLS with a certificate chain leading to a trusted CA; host name not checked.
    VerifyCa,
    /// TLS with CA and host-name verification.
    VerifyFull,
}

impl SslMode {
    /// The libpq spelling (`disable`, `require`, `verify-ca`, `verify-full`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Disable => "disable",
            Self::Prefer => "prefer",
            Self::Require => "require",
            Self::VerifyCa => "verify-ca",
            Self::VerifyFull => "verify-full",
        }
    }
}

impl FromStr for SslMode {
    type Err = String;
    /// Parses the libpq spelling, case-insensitively.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "disable" => Ok(Self::Disable),
            "prefer" => Ok(Self::Prefer),
            "require" => Ok(Self::Require),
            "verify-ca" => Ok(Self::VerifyCa),
            "verify-full" => Ok(Self::VerifyFull),
            other => Err(format!(
                "unknown sslmode {other:?} (disable, prefer, require, verify-ca, verify-full)"
            )),
        }
    }
}

/// A URL without its `sslmode` and `sslrootcert` parameters (read apart, see
/// [`PostgresConfig::from_url`]); key=value strings are returned unchanged.
fn without_tls_params(url: &str) -> String {
    let Some((base, query)) = url.split_once('?') else {
        return url.to_owned();
    };
    let kept: Vec<&str> = query
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("sslmode=") && !p.starts_with("sslrootcert="))
        .collect();
    if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    }
}

/// Everything needed to serve one PostgreSQL database as a data source.
///
/// Build it with [`PostgresConfig::new`] or [`PostgresConfig::from_url`] and adjust the public
/// fields. The `Debug` output never shows the password.
#[derive(Clone, PartialEq, Eq)]
pub struct PostgresConfig {
    /// Data source id (templates address the source by it).
    pub id: DataSourceId,
    /// Host name or IP address; a value starting with `/` is a Unix-socket directory.
    /// Default `127.0.0.1`.
    pub host: String,
    /// TCP port. Default 5432.
    pub port: u16,
    /// Role to connect as. Default `postgres`.
    pub user: String,
    /// Password, if the server asks for one. Default none.
    pub password: Option<reporter_ports::Secret>,
    /// Database name; also the descriptor's `external_name`.
    pub database: String,
    /// TLS mode. Default [`SslMode::Disable`].
    pub sslmode: SslMode,
    /// A PEM file of CA certificates to trust (`DATASOURCE_<NAME>_SSLROOTCERT`); without
    /// one the verifying modes trust the built-in Mozilla roots.
    pub ssl_root_cert: Option<std::path::PathBuf>,
    /// Schemas to discover. Tables of `public` are named `table`, tables of any other schema
    /// `schema__table`. Default `["public"]`; must not be empty.
    pub schemas: Vec<String>,
    /// Maximum pooled connections. Default 10; must be at least 1.
    pub pool_size: usize,
    /// Limit for one [`query`](reporter_ports::ports::DataSource::query), from taking a pooled
    /// connection to the last row. Default 10 s.
    pub query_timeout: Duration,
    /// Limit for one schema discovery. Default 30 s.
    pub discovery_timeout: Duration,
    /// Limit for opening one connection. Default 5 s.
    pub connect_timeout: Duration,
    /// Source-wide cap on rows per query; a query is limited by the smaller of this and its
    /// own `max_rows`. Default 100 000.
    pub max_rows: usize,
    /// How long a discovered schema is reused before it is discovered again. Default 300 s.
    pub schema_ttl: Duration,
    /// Circuit breaker. Default [`BreakerConfig::default`].
    pub breaker: BreakerConfig,
}

impl fmt::Debug for PostgresConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresConfig")
            .field("id", &self.id)
            .field("host", &self.host)
            .field("port", &self.port)
            .field("user", &self.user)
            .field("password", &redacted(self.password.as_ref()))
            .field("database", &self.database)
            .field("sslmode", &self.sslmode)
            .field("ssl_root_cert", &self.ssl_root_cert)
            .field("schemas", &self.schemas)
            .field("pool_size", &self.pool_size)
            .field("query_timeout", &self.query_timeout)
            .field("discovery_timeout", &self.discovery_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_rows", &self.max_rows)
            .field("schema_ttl", &self.schema_ttl)
            .field("breaker", &self.breaker)
            .finish()
    }
}

impl PostgresConfig {
    /// Defaults (documented on each field) for `database` on `127.0.0.1:5432` as `postgres`.
    pub fn new(id: DataSourceId, database: impl Into<String>) -> Self {
        Self {
            id,
            host: "127.0.0.1".to_owned(),
            port: 5432,
            user: "postgres".to_owned(),
            password: None,
            database: database.into(),
            sslmode: SslMode::Disable,
            ssl_root_cert: None,
            schemas: vec!["public".to_owned()],
            pool_size: 10,
            query_timeout: Duration::from_secs(10),
            discovery_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            max_rows: 100_000,
            schema_ttl: Duration::from_secs(300),
            breaker: BreakerConfig::default(),
        }
    }

    /// Defaults, with host, port, user, password, database and `sslmode` taken from a
    /// `postgres://user:password@host:port/database?sslmode=...` URL (or a libpq key=value
    /// string). Parts the URL leaves out keep the defaults of [`PostgresConfig::new`]; the
    /// database defaults to the user name, as libpq does.
    ///
    /// Fails with [`DataSourceError::Unavailable`] when the URL does not parse or names more
    /// than one host.
    pub fn from_url(id: DataSourceId, url: &str) -> Result<Self, DataSourceError> {
        let parsed = tokio_postgres::Config::from_str(&without_tls_params(url))
            .map_err(|e| DataSourceError::Unavailable(format!("invalid PostgreSQL URL: {e}")))?;
        let mut config = Self::new(id, "");
        match parsed.get_hosts() {
            [] => {}
            [tokio_postgres::config::Host::Tcp(host)] => config.host = host.clone(),
            #[cfg(unix)]
            [tokio_postgres::config::Host::Unix(path)] => {
                config.host = path.to_string_lossy().into_owned();
            }
            _ => {
                return Err(DataSourceError::Unavailable(
                    "PostgreSQL URL must name exactly one host".to_owned(),
                ));
            }
        }
        if let Some(port) = parsed.get_ports().first() {
            config.port = *port;
        }
        if let Some(user) = parsed.get_user() {
            config.user = user.to_owned();
        }
        if let Some(password) = parsed.get_password() {
            config.password = Some(reporter_ports::Secret::new(
                String::from_utf8_lossy(password).into_owned(),
            ));
        }
        config.database = parsed
            .get_dbname()
            .map_or_else(|| config.user.clone(), str::to_owned);
        config.sslmode = match parsed.get_ssl_mode() {
            tokio_postgres::config::SslMode::Require => SslMode::Require,
            tokio_postgres::config::SslMode::Prefer => SslMode::Prefer,
            _ => SslMode::Disable,
        };
        // tokio-postgres knows neither verify-ca / verify-full nor sslrootcert: read both
        // from the URL itself.
        for (key, value) in url
            .split_once('?')
            .map(|(_, q)| {
                q.split('&')
                    .filter_map(|p| p.split_once('='))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
        {
            match key {
                "sslmode" => {
                    config.sslmode = value.parse().map_err(|e: String| {
                        DataSourceError::Unavailable(format!("invalid PostgreSQL URL: {e}"))
                    })?;
                }
                "sslrootcert" => {
                    config.ssl_root_cert = Some(percent_decode(value).into());
                }
                _ => {}
            }
        }
        Ok(config)
    }

    /// The TLS mode in force: `require` with a CA file is `verify-ca`, as in libpq.
    pub fn effective_sslmode(&self) -> SslMode {
        match (self.sslmode, &self.ssl_root_cert) {
            (SslMode::Require, Some(_)) => SslMode::VerifyCa,
            (mode, _) => mode,
        }
    }

    /// Checks the settings that [`PostgresDataSource::new`](crate::PostgresDataSource::new) relies on.
    pub(crate) fn validate(&self) -> Result<(), DataSourceError> {
        if self.ssl_root_cert.is_some() && matches!(self.sslmode, SslMode::Disable) {
            return Err(refused(
                &self.id,
                "sslrootcert is set but sslmode is disable",
            ));
        }
        check_common(
            &self.id,
            &self.database,
            &self.schemas,
            self.pool_size,
            &[self.query_timeout, self.discovery_timeout],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> DataSourceId {
        DataSourceId::parse("pg").expect("id")
    }

    #[test]
    fn url_fills_connection_fields_and_keeps_defaults() {
        let c = PostgresConfig::from_url(id(), "postgres://alice:s3cret@db.local:6543/ledger")
            .expect("url");
        assert_eq!(c.host, "db.local");
        assert_eq!(c.port, 6543);
        assert_eq!(c.user, "alice");
        assert_eq!(
            c.password.as_ref().map(reporter_ports::Secret::expose),
            Some("s3cret")
        );
        assert_eq!(c.database, "ledger");
        assert_eq!(c.schemas, ["public"]);
        assert_eq!(c.query_timeout, Duration::from_secs(10));
        assert!(!format!("{c:?}").contains("s3cret"), "Debug must redact");

        let c = PostgresConfig::from_url(id(), "postgres://bob@127.0.0.1").expect("url");
        assert_eq!((c.port, c.database.as_str()), (5432, "bob"));
        assert!(PostgresConfig::from_url(id(), "postgres://a@h1,h2/db").is_err());
        assert!(PostgresConfig::from_url(id(), "not a url at all=").is_err());
    }

    #[test]
    fn tls_modes_parse_from_settings_and_urls() {
        let mut c = PostgresConfig::new(id(), "db");
        c.sslmode = "verify-full".parse().expect("mode");
        assert!(c.validate().is_ok());
        assert!("bogus".parse::<SslMode>().is_err());
        for (url, mode) in [
            ("postgres://a@h/db?sslmode=require", SslMode::Require),
            ("postgres://a@h/db?sslmode=prefer", SslMode::Prefer),
            ("postgres://a@h/db?sslmode=verify-ca", SslMode::VerifyCa),
            ("postgres://a@h/db?sslmode=verify-full", SslMode::VerifyFull),
            ("postgres://a@h/db", SslMode::Prefer),
            ("postgres://a@h/db?sslmode=disable", SslMode::Disable),
        ] {
            assert_eq!(
                PostgresConfig::from_url(id(), url).expect("url").sslmode,
                mode,
                "{url}"
            );
        }
        let c = PostgresConfig::from_url(
            id(),
            "postgres://a@h/db?sslmode=require&sslrootcert=/ca.pem",
        )
        .expect("url");
        assert_eq!(
            c.ssl_root_cert.as_deref(),
            Some(std::path::Path::new("/ca.pem"))
        );
        assert_eq!(
            c.effective_sslmode(),
            SslMode::VerifyCa,
            "require + CA file, as libpq"
        );
        let mut c = PostgresConfig::new(id(), "db");
        c.ssl_root_cert = Some("/ca.pem".into());
        assert!(c.validate().is_err(), "a CA file without TLS is a mistake");
    }

    #[test]
    fn invalid_settings_are_refused() {
        let base = PostgresConfig::new(id(), "db");
        let mut cases = Vec::new();
        let mut c = base.clone();
        c.schemas.clear();
        cases.push(c);
        let mut c = base.clone();
        c.pool_size = 0;
        cases.push(c);
        let mut c = base.clone();
        c.query_timeout = Duration::ZERO;
        cases.push(c);
        let mut c = base;
        c.database.clear();
        cases.push(c);
        for c in cases {
            assert!(c.validate().is_err(), "{c:?}");
        }
    }
}
