//! [`SqlServerConfig`]: how to reach one SQL Server data source and how to guard it.
use reporter_ports::datasource::DataSourceId;
use reporter_ports::ports::DataSourceError;
use reporter_ports::source_breaker::BreakerConfig;
use reporter_sql_support::settings::{check_common, percent_decode as decode, redacted, refused};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

/// TLS mode (the `DATASOURCE_<NAME>_SSLMODE` setting), with libpq's names, mapped onto TDS
/// encryption:
///
/// | mode | TDS encryption | certificate |
/// |---|---|---|
/// | `disable` | login packet only (`Off`), as SQL Server clients do by default | not checked |
/// | `require` | everything (`Required`) | not checked, unless a CA file is given |
/// | `verify-ca`, `verify-full` | everything (`Required`) | chain and host name checked (tiberius always checks the name) |
///
/// The verifying modes trust the CA file ([`SqlServerConfig::ssl_root_cert`]) in addition
/// to the system roots.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SslMode {
    /// Only the login is encrypted. The default.
    #[default]
    Disable,
    /// Encrypted, certificate not verified (unless a CA file is given).
    Require,
    /// Encrypted and verified (host name included: tiberius cannot skip it).
    VerifyCa,
    /// Encrypted and verified.
    VerifyFull,
}

impl FromStr for SslMode {
    type Err = String;
    /// Parses the libpq spelling, case-insensitively.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "disable" | "false" => Ok(Self::Disable),
            "require" | "skip-verify" => Ok(Self::Require),
            "verify-ca" => Ok(Self::VerifyCa),
            "verify-full" | "true" => Ok(Self::VerifyFull),
            other => Err(format!(
                "unknown sslmode {other:?} (disable, require, verify-ca, verify-full)"
            )),
        }
    }
}

/// Everything needed to serve one SQL Server database as a data source. The `Debug` output
/// never shows the password.
#[derive(Clone, PartialEq, Eq)]
pub struct SqlServerConfig {
    /// Data source id.
    pub id: DataSourceId,
    /// Host. Default `127.0.0.1`.
    pub host: String,
    /// TCP port. Default 1433.
    pub port: u16,
    /// SQL login. Default `sa`.
    pub user: String,
    /// Password. Default none.
    pub password: Option<reporter_ports::Secret>,
    /// Database; also the descriptor's `external_name`.
    pub database: String,
    /// TLS mode. Default [`SslMode::Disable`].
    pub sslmode: SslMode,
    /// A PEM or DER file of a CA to trust (`DATASOURCE_<NAME>_SSLROOTCERT`).
    pub ssl_root_cert: Option<PathBuf>,
    /// Schemas to discover. Tables of `dbo` are named `table`, tables of any other schema
    /// `schema__table`. Default `["dbo"]`.
    pub schemas: Vec<String>,
    /// Maximum open connections. Default 10.
    pub pool_size: usize,
    /// Limit for one query, from taking a connection to the last row. Default 10 s.
    pub query_timeout: Duration,
    /// Limit for one schema discovery. Default 30 s.
    pub discovery_timeout: Duration,
    /// Limit for opening one connection. Default 5 s.
    pub connect_timeout: Duration,
    /// Source-wide cap on rows per query. Default 100 000.
    pub max_rows: usize,
    /// Cap on the bytes of values one query may return. Default 100 MiB.
    pub max_bytes: usize,
    /// How long a discovered schema is reused. Default 300 s.
    pub schema_ttl: Duration,
    /// Circuit breaker.
    pub breaker: BreakerConfig,
}

impl fmt::Debug for SqlServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqlServerConfig")
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
            .field("max_rows", &self.max_rows)
            .field("max_bytes", &self.max_bytes)
            .finish_non_exhaustive()
    }
}

impl SqlServerConfig {
    /// Defaults (documented on each field) for `database`.
    pub fn new(id: DataSourceId, database: impl Into<String>) -> Self {
        Self {
            id,
            host: "127.0.0.1".to_owned(),
            port: 1433,
            user: "sa".to_owned(),
            password: None,
            database: database.into(),
            sslmode: SslMode::Disable,
            ssl_root_cert: None,
            schemas: vec!["dbo".to_owned()],
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

    /// Defaults with the parts of a `sqlserver://user:password@host:port/database?sslmode=…`
    /// URL (user and password percent-decoded).
    ///
    /// Fails with [`DataSourceError::Unavailable`] when the URL does not have that shape.
    pub fn from_url(id: DataSourceId, url: &str) -> Result<Self, DataSourceError> {
        let bad =
            |why: &str| DataSourceError::Unavailable(format!("invalid SQL Server URL: {why}"));
        let rest = url
            .strip_prefix("sqlserver://")
            .or_else(|| url.strip_prefix("mssql://"))
            .ok_or_else(|| bad("must start with sqlserver://"))?;
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, database) = rest.split_once('/').ok_or_else(|| bad("no database"))?;
        if database.is_empty() {
            return Err(bad("no database"));
        }
        let mut config = Self::new(id, decode(database));
        let (credentials, address) = match authority.rsplit_once('@') {
            Some((c, a)) => (Some(c), a),
            None => (None, authority),
        };
        if let Some(credentials) = credentials {
            let (user, password) = credentials.split_once(':').unwrap_or((credentials, ""));
            config.user = decode(user);
            config.password =
                (!password.is_empty()).then(|| reporter_ports::Secret::new(decode(password)));
        }
        let (host, port) = address.rsplit_once(':').unwrap_or((address, ""));
        if !host.is_empty() {
            config.host = host.to_owned();
        }
        if !port.is_empty() {
            config.port = port.parse().map_err(|_| bad("bad port"))?;
        }
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("sslmode", v)) => config.sslmode = v.parse().map_err(|e: String| bad(&e))?,
                Some(("sslrootcert", v)) => config.ssl_root_cert = Some(decode(v).into()),
                _ => {}
            }
        }
        Ok(config)
    }

    /// Checks the settings the source relies on.
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
        match &self.ssl_root_cert {
            Some(path) if !path.is_file() => {
                Err(refused(&self.id, "sslrootcert is not a readable file"))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> DataSourceId {
        DataSourceId::parse("ms").expect("id")
    }

    #[test]
    fn url_fills_connection_fields() {
        let c = SqlServerConfig::from_url(
            id(),
            "sqlserver://sa:p%40ss@db.local:14330/ledger?sslmode=require",
        )
        .expect("url");
        assert_eq!(
            (c.host.as_str(), c.port, c.user.as_str()),
            ("db.local", 14330, "sa")
        );
        assert_eq!(
            c.password.as_ref().map(reporter_ports::Secret::expose),
            Some("p@ss")
        );
        assert_eq!(c.database, "ledger");
        assert_eq!(c.sslmode, SslMode::Require);
        assert_eq!(c.schemas, ["dbo"]);
        assert!(!format!("{c:?}").contains("p@ss"));
        for bad in [
            "postgres://a@b/c",
            "sqlserver://a@b",
            "sqlserver://a@b:x/c",
            "sqlserver://a@b/c?sslmode=maybe",
        ] {
            assert!(SqlServerConfig::from_url(id(), bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn invalid_settings_are_refused() {
        let base = SqlServerConfig::new(id(), "db");
        assert!(base.validate().is_ok());
        let mut c = base.clone();
        c.pool_size = 0;
        assert!(c.validate().is_err());
        let mut c = base;
        c.ssl_root_cert = Some("/nonexistent/ca.pem".into());
        assert!(c.validate().is_err());
    }
}
