//! [`MysqlConfig`]: how to reach one MySQL / MariaDB data source and how to guard it.
use reporter_ports::datasource::DataSourceId;
use reporter_ports::ports::DataSourceError;
use reporter_ports::source_breaker::BreakerConfig;
use reporter_sql_support::settings::{check_common, form_decode, redacted, refused};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

/// TLS mode (the `DATASOURCE_<NAME>_SSLMODE` setting), with libpq's names.
///
/// | mode | encrypted | certificate checked | host name checked |
/// |---|---|---|---|
/// | `disable` | no | – | – |
/// | `require` | yes | no (but see below) | no |
/// | `verify-ca` | yes | yes | no |
/// | `verify-full` | yes | yes | yes |
///
/// As in libpq, `require` with a CA file ([`MysqlConfig::ssl_root_cert`]) behaves as
/// `verify-ca`. The verifying modes trust the CA file when one is given, else the built-in
/// Mozilla roots. The go-sql-driver spellings the original's connection API used are accepted
/// too: `false` (disable), `skip-verify` (require), `true` (verify-full).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SslMode {
    /// Plain TCP. The default.
    #[default]
    Disable,
    /// TLS, certificate not verified (unless a CA file is given).
    Require,
    /// TLS, certificate chain verified against the CA, host name not checked.
    VerifyCa,
    /// TLS, certificate chain and host name verified.
    VerifyFull,
}

impl SslMode {
    /// The libpq spelling.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Disable => "disable",
            Self::Require => "require",
            Self::VerifyCa => "verify-ca",
            Self::VerifyFull => "verify-full",
        }
    }
}

impl FromStr for SslMode {
    type Err = String;
    /// Parses a libpq or go-sql-driver spelling, case-insensitively.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "disable" | "disabled" | "false" => Ok(Self::Disable),
            "require" | "required" | "skip-verify" => Ok(Self::Require),
            "verify-ca" | "verify_ca" => Ok(Self::VerifyCa),
            "verify-full" | "verify_identity" | "true" => Ok(Self::VerifyFull),
            other => Err(format!(
                "unknown sslmode {other:?} (disable, require, verify-ca, verify-full)"
            )),
        }
    }
}

/// Everything needed to serve one MySQL or MariaDB database as a data source.
///
/// Build it with [`MysqlConfig::new`] or [`MysqlConfig::from_url`] and adjust the public
/// fields. The `Debug` output never shows the password.
#[derive(Clone, PartialEq, Eq)]
pub struct MysqlConfig {
    /// Data source id (templates address the source by it).
    pub id: DataSourceId,
    /// Host name or IP address. Default `127.0.0.1`.
    pub host: String,
    /// TCP port. Default 3306.
    pub port: u16,
    /// User to connect as. Default `root`.
    pub user: String,
    /// Password, if the server asks for one. Default none.
    pub password: Option<reporter_ports::Secret>,
    /// Database (MySQL "schema") whose tables keep their bare name; also the descriptor's
    /// `external_name`.
    pub database: String,
    /// TLS mode. Default [`SslMode::Disable`].
    pub sslmode: SslMode,
    /// A PEM file of CA certificates to trust (`DATASOURCE_<NAME>_SSLROOTCERT`).
    pub ssl_root_cert: Option<PathBuf>,
    /// Databases to discover. Tables of [`MysqlConfig::database`] are named `table`, tables of
    /// any other listed database `database__table`. Default `[database]`; must not be empty.
    pub schemas: Vec<String>,
    /// Maximum pooled connections. Default 10; must be at least 1.
    pub pool_size: usize,
    /// Limit for one [`query`](reporter_ports::ports::DataSource::query), from taking a pooled
    /// connection to the last row. Default 10 s.
    pub query_timeout: Duration,
    /// Limit for one schema discovery. Default 30 s.
    pub discovery_timeout: Duration,
    /// Limit for opening one connection (TCP, TLS and login). Default 5 s.
    pub connect_timeout: Duration,
    /// Source-wide cap on rows per query; a query is limited by the smaller of this and its
    /// own `max_rows`. Default 100 000.
    pub max_rows: usize,
    /// Cap on the bytes of values one query may return (the reference's result cap).
    /// Default 100 MiB.
    pub max_bytes: usize,
    /// How long a discovered schema is reused before it is discovered again. Default 300 s.
    pub schema_ttl: Duration,
    /// Circuit breaker. Default [`BreakerConfig::default`].
    pub breaker: BreakerConfig,
}

impl fmt::Debug for MysqlConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MysqlConfig")
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
            .field("max_bytes", &self.max_bytes)
            .field("schema_ttl", &self.schema_ttl)
            .field("breaker", &self.breaker)
            .finish()
    }
}

impl MysqlConfig {
    /// Defaults (documented on each field) for `database` on `127.0.0.1:3306` as `root`.
    pub fn new(id: DataSourceId, database: impl Into<String>) -> Self {
        let database = database.into();
        Self {
            id,
            host: "127.0.0.1".to_owned(),
            port: 3306,
            user: "root".to_owned(),
            password: None,
            schemas: vec![database.clone()],
            database,
            sslmode: SslMode::Disable,
            ssl_root_cert: None,
            pool_size: 10,
            query_timeout: Duration::from_secs(10),
            discovery_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            max_rows: 100_000,
            max_bytes: 100 * 1024 * 1024,
            schema_ttl: Duration::from_secs(300),
            breaker: BreakerConfig::default(),
        }
    }

    /// Defaults, with host, port, user, password, database and TLS taken from a
    /// `mysql://user:password@host:port/database?sslmode=...&sslrootcert=...` URL (the
    /// password percent-decoded). Parts the URL leaves out keep the defaults of
    /// [`MysqlConfig::new`].
    ///
    /// Fails with [`DataSourceError::Unavailable`] when the URL does not parse, names no
    /// database, or carries an unknown `sslmode`.
    pub fn from_url(id: DataSourceId, url: &str) -> Result<Self, DataSourceError> {
        let bad = |why: String| DataSourceError::Unavailable(format!("invalid MySQL URL: {why}"));
        let opts = mysql_async::Opts::from_url(strip_own_params(url).as_str())
            .map_err(|e| bad(e.to_string()))?;
        let database = opts
            .db_name()
            .filter(|d| !d.is_empty())
            .ok_or_else(|| bad("no database in the path".to_owned()))?;
        let mut config = Self::new(id, database);
        config.host = opts.ip_or_hostname().to_owned();
        config.port = opts.tcp_port();
        if let Some(user) = opts.user() {
            config.user = user.to_owned();
        }
        config.password = opts.pass().map(reporter_ports::Secret::from);
        for (key, value) in query_pairs(url) {
            match key.as_str() {
                "sslmode" | "ssl-mode" | "tls" => config.sslmode = value.parse().map_err(bad)?,
                "sslrootcert" | "ssl-ca" => config.ssl_root_cert = Some(PathBuf::from(value)),
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

    /// Checks the settings that [`MysqlDataSource::new`](crate::MysqlDataSource::new) relies on.
    pub(crate) fn validate(&self) -> Result<(), DataSourceError> {
        check_common(
            &self.id,
            &self.database,
            &self.schemas,
            self.pool_size,
            &[
                self.query_timeout,
                self.discovery_timeout,
                self.connect_timeout,
            ],
        )?;
        if let Some(path) = &self.ssl_root_cert {
            if self.sslmode == SslMode::Disable {
                return Err(refused(
                    &self.id,
                    "sslrootcert is set but sslmode is disable",
                ));
            }
            if !path.is_file() {
                return Err(refused(
                    &self.id,
                    format!("sslrootcert {} is not a readable file", path.display()),
                ));
            }
        }
        Ok(())
    }
}

/// `key=value` pairs of the URL's query, percent-decoded.
fn query_pairs(url: &str) -> Vec<(String, String)> {
    let Some((_, query)) = url.split_once('?') else {
        return Vec::new();
    };
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (form_decode(k).to_ascii_lowercase(), form_decode(v)))
        .collect()
}

/// The URL without the query parameters this crate reads itself (the driver rejects unknown
/// ones).
fn strip_own_params(url: &str) -> String {
    let Some((base, query)) = url.split_once('?') else {
        return url.to_owned();
    };
    let own = ["sslmode", "ssl-mode", "tls", "sslrootcert", "ssl-ca"];
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| {
            let key = pair.split('=').next().unwrap_or("").to_ascii_lowercase();
            !pair.is_empty() && !own.contains(&key.as_str())
        })
        .collect();
    if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> DataSourceId {
        DataSourceId::parse("my").expect("id")
    }

    #[test]
    fn url_fills_connection_fields_and_keeps_defaults() {
        let c = MysqlConfig::from_url(id(), "mysql://alice:s%40cret@db.local:3307/ledger")
            .expect("url");
        assert_eq!(c.host, "db.local");
        assert_eq!(c.port, 3307);
        assert_eq!(c.user, "alice");
        assert_eq!(
            c.password.as_ref().map(reporter_ports::Secret::expose),
            Some("s@cret")
        );
        assert_eq!(c.database, "ledger");
        assert_eq!(c.schemas, ["ledger"]);
        assert_eq!(c.sslmode, SslMode::Disable);
        assert!(!format!("{c:?}").contains("s@cret"), "Debug must redact");

        let c = MysqlConfig::from_url(id(), "mysql://root@127.0.0.1/test").expect("url");
        assert_eq!((c.port, c.user.as_str(), c.password), (3306, "root", None));
        assert!(MysqlConfig::from_url(id(), "mysql://root@127.0.0.1").is_err());
        assert!(MysqlConfig::from_url(id(), "postgres://x@y/z").is_err());
    }

    #[test]
    fn tls_settings_from_the_url_and_their_spellings() {
        let c = MysqlConfig::from_url(
            id(),
            "mysql://u@h/db?sslmode=verify-full&sslrootcert=%2Ftmp%2Fca.pem",
        )
        .expect("url");
        assert_eq!(c.sslmode, SslMode::VerifyFull);
        assert_eq!(c.ssl_root_cert, Some(PathBuf::from("/tmp/ca.pem")));
        for (raw, mode) in [
            ("disable", SslMode::Disable),
            ("false", SslMode::Disable),
            ("REQUIRE", SslMode::Require),
            ("skip-verify", SslMode::Require),
            ("verify-ca", SslMode::VerifyCa),
            ("verify-full", SslMode::VerifyFull),
            ("true", SslMode::VerifyFull),
        ] {
            assert_eq!(raw.parse::<SslMode>(), Ok(mode), "{raw}");
        }
        assert!("preferred".parse::<SslMode>().is_err());
        assert!(MysqlConfig::from_url(id(), "mysql://u@h/db?sslmode=maybe").is_err());
    }

    #[test]
    fn require_with_a_ca_file_verifies_the_chain() {
        let mut c = MysqlConfig::new(id(), "db");
        c.sslmode = SslMode::Require;
        assert_eq!(c.effective_sslmode(), SslMode::Require);
        c.ssl_root_cert = Some(PathBuf::from("/ca.pem"));
        assert_eq!(c.effective_sslmode(), SslMode::VerifyCa);
    }

    #[test]
    fn invalid_settings_are_refused() {
        let base = MysqlConfig::new(id(), "db");
        assert!(base.validate().is_ok());
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
        let mut c = base.clone();
        c.database.clear();
        cases.push(c);
        let mut c = base.clone();
        c.ssl_root_cert = Some(PathBuf::from("/nonexistent/ca.pem"));
        c.sslmode = SslMode::VerifyFull;
        cases.push(c);
        let mut c = base;
        c.ssl_root_cert = Some(PathBuf::from("/etc/hostname"));
        cases.push(c);
        for c in cases {
            assert!(c.validate().is_err(), "{c:?}");
        }
    }
}
