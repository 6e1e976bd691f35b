//! [`SqlServerDataSource`]: the [`DataSource`] over one SQL Server database.
use crate::config::{SqlServerConfig, SslMode};
use crate::decode;
use crate::schema::{self, Discovered};
use crate::sql::{self, SqlServer, Statement};
use async_trait::async_trait;
use futures_util::TryStreamExt;
use reporter_ports::datasource::{DataSourceDescriptor, DataSourceKind, SourceSchema};
use reporter_ports::ports::{DataSource, DataSourceError, Row, TableQuery};
use reporter_ports::source_breaker::BreakerState;
use reporter_sql_support::{Dialect, Guard, Mapped, SchemaCache};
use std::sync::{Arc, Mutex, PoisonError};
use tiberius::{AuthMethod, Client, ColumnData, Config, EncryptionLevel, Query, QueryItem};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::compat::{Compat, TokioAsyncWriteCompatExt};

type Conn = Client<Compat<TcpStream>>;

/// Columns of the configured schemas (tables and views), in a stable order.
const DISCOVERY_SQL: &str = "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, DATA_TYPE \
     FROM INFORMATION_SCHEMA.COLUMNS \
     WHERE TABLE_SCHEMA IN (SELECT value FROM STRING_SPLIT(@P1, NCHAR(31))) \
     ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION";

/// At most `pool_size` open connections; idle ones are reused, broken ones dropped.
struct ConnPool {
    permits: Arc<Semaphore>,
    idle: Mutex<Vec<Conn>>,
}

/// A connection on loan; [`Loan::give_back`] returns it after a clean use.
struct Loan {
    conn: Conn,
    _permit: OwnedSemaphorePermit,
}

/// A read-only [`DataSource`] over the tables and views of one SQL Server database.
///
/// Same contract as the PostgreSQL and MySQL sources (see the crate docs): names resolved
/// against the cached schema before any SQL is sent, `RowLimit`, `TooLarge`, `Timeout`,
/// `Unavailable`, and a circuit breaker.
pub struct SqlServerDataSource {
    config: SqlServerConfig,
    descriptor: DataSourceDescriptor,
    tiberius: Config,
    pool: ConnPool,
    guard: Guard,
    cache: SchemaCache<Discovered>,
}

impl std::fmt::Debug for SqlServerDataSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlServerDataSource")
            .field("config", &self.config)
            .field("breaker", &self.breaker_state())
            .finish_non_exhaustive()
    }
}

/// A driver error as the port's error (see [`SqlServer::map_error`]).
fn ms_error(error: &tiberius::error::Error) -> DataSourceError {
    SqlServer::map_error(error).error
}

/// The tiberius configuration for `config`.
fn tiberius_config(config: &SqlServerConfig) -> Config {
    let mut c = Config::new();
    c.host(&config.host);
    c.port(config.port);
    c.database(&config.database);
    c.application_name("reporter");
    c.readonly(true);
    c.authentication(AuthMethod::sql_server(
        &config.user,
        config.password.as_ref().map_or("", |p| p.expose()),
    ));
    match (config.sslmode, &config.ssl_root_cert) {
        (SslMode::Disable, _) => c.encryption(EncryptionLevel::Off),
        (SslMode::Require, None) => {
            c.encryption(EncryptionLevel::Required);
            c.trust_cert();
        }
        (_, ca) => {
            c.encryption(EncryptionLevel::Required);
            if let Some(ca) = ca {
                c.trust_cert_ca(ca.display());
            }
        }
    }
    if config.sslmode == SslMode::Disable {
        // Only the login packet is encrypted; tiberius still needs to accept the server's
        // (usually self-signed) certificate for it.
        c.trust_cert();
    }
    c
}

impl SqlServerDataSource {
    /// Validates `config`; no connection is opened yet.
    ///
    /// Fails with [`DataSourceError::Unavailable`] on invalid settings.
    pub fn new(config: SqlServerConfig) -> Result<Self, DataSourceError> {
        config.validate()?;
        // tiberius asks rustls for the process-wide provider first.
        let _ = rustls::crypto::ring::default_provider().install_default();
        Ok(Self {
            descriptor: DataSourceDescriptor {
                id: config.id.clone(),
                external_name: config.database.clone(),
                kind: DataSourceKind::Sqlserver,
            },
            tiberius: tiberius_config(&config),
            pool: ConnPool {
                permits: Arc::new(Semaphore::new(config.pool_size)),
                idle: Mutex::new(Vec::new()),
            },
            guard: Guard::new(config.id.clone(), config.breaker),
            cache: SchemaCache::new(config.schema_ttl),
            config,
        })
    }

    /// The circuit breaker's current state.
    pub fn breaker_state(&self) -> BreakerState {
        self.guard.state()
    }

    /// Drops the cached schema and discovers it again now (through the breaker).
    pub async fn refresh_schema(&self) -> Result<SourceSchema, DataSourceError> {
        self.guard
            .run(async {
                let discovered = self.cache.refresh(|| self.discover_in_time()).await?;
                Ok(discovered.source_schema())
            })
            .await
    }

    /// A connection: an idle one, or a new one opened within `connect_timeout`.
    async fn connection(&self, deadline: tokio::time::Instant) -> Result<Loan, DataSourceError> {
        let permit =
            tokio::time::timeout_at(deadline, Arc::clone(&self.pool.permits).acquire_owned())
                .await
                .map_err(|_| DataSourceError::Timeout)?
                .map_err(|e| DataSourceError::Unavailable(e.to_string()))?;
        let idle = self
            .pool
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        if let Some(conn) = idle {
            return Ok(Loan {
                conn,
                _permit: permit,
            });
        }
        let connect = async {
            let tcp = TcpStream::connect((self.config.host.as_str(), self.config.port))
                .await
                .map_err(|e| DataSourceError::Unavailable(e.to_string()))?;
            tcp.set_nodelay(true)
                .map_err(|e| DataSourceError::Unavailable(e.to_string()))?;
            Client::connect(self.tiberius.clone(), tcp.compat_write())
                .await
                .map_err(|e| ms_error(&e))
        };
        let conn = tokio::time::timeout(self.config.connect_timeout, connect)
            .await
            .map_err(|_| {
                DataSourceError::Unavailable(format!(
                    "no connection within {:?}",
                    self.config.connect_timeout
                ))
            })??;
        Ok(Loan {
            conn,
            _permit: permit,
        })
    }

    fn give_back(&self, loan: Loan) {
        self.pool
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(loan.conn);
    }

    /// The cached schema, discovered again when older than the TTL.
    async fn discovered(&self) -> Result<Arc<Discovered>, DataSourceError> {
        self.cache.get(|| self.discover_in_time()).await
    }

    /// Discovery, bounded by `discovery_timeout`.
    async fn discover_in_time(&self) -> Result<Discovered, DataSourceError> {
        let deadline = tokio::time::Instant::now() + self.config.discovery_timeout;
        tokio::time::timeout_at(deadline, self.discover(deadline))
            .await
            .map_err(|_| DataSourceError::Timeout)?
    }

    async fn discover(
        &self,
        deadline: tokio::time::Instant,
    ) -> Result<Discovered, DataSourceError> {
        let mut loan = self.connection(deadline).await?;
        let mut query = Query::new(DISCOVERY_SQL);
        query.bind(self.config.schemas.join("\u{1f}"));
        let rows = query
            .query(&mut loan.conn)
            .await
            .map_err(|e| ms_error(&e))?
            .into_first_result()
            .await
            .map_err(|e| ms_error(&e))?;
        let text = |row: &tiberius::Row, i: usize| {
            row.try_get::<&str, _>(i)
                .ok()
                .flatten()
                .unwrap_or_default()
                .to_owned()
        };
        let discovered = schema::discovered(
            rows.iter()
                .map(|r| [text(r, 0), text(r, 1), text(r, 2), text(r, 3)]),
        );
        self.give_back(loan);
        Ok(discovered)
    }

    async fn run_query(&self, query: &TableQuery) -> Result<Vec<Row>, DataSourceError> {
        let discovered = self.discovered().await?;
        let table = discovered
            .table(&query.table)
            .ok_or_else(|| DataSourceError::UnknownTable(query.table.clone()))?;
        let limit = query.max_rows.min(self.config.max_rows);
        let fetch = i64::try_from(limit).unwrap_or(i64::MAX).saturating_add(1);
        let statement = sql::build(query, table, fetch)?;
        let deadline = tokio::time::Instant::now() + self.config.query_timeout;
        let mut loan = self.connection(deadline).await?;
        match tokio::time::timeout_at(deadline, self.read(&mut loan.conn, &statement, limit)).await
        {
            Ok(Ok(rows)) => {
                self.give_back(loan);
                Ok(rows)
            }
            // A refused result may leave rows unread: the connection is not reused.
            Ok(Err(mapped)) => Err(self.cache.failed(mapped).await),
            // Dropping the connection closes it; SQL Server abandons the request.
            Err(_) => Err(DataSourceError::Timeout),
        }
    }

    async fn read(
        &self,
        conn: &mut Conn,
        statement: &Statement,
        limit: usize,
    ) -> Result<Vec<Row>, Mapped> {
        let fail = |e: tiberius::error::Error| SqlServer::map_error(&e);
        let mut query = Query::new(statement.sql.as_str());
        for param in &statement.params {
            query.bind(param.clone());
        }
        let mut stream = query.query(conn).await.map_err(fail)?;
        let mut out = Vec::new();
        let mut bytes = 0usize;
        while let Some(item) = stream.try_next().await.map_err(fail)? {
            let QueryItem::Row(row) = item else {
                continue;
            };
            if out.len() == limit {
                return Err(Mapped::error(DataSourceError::RowLimit(limit)));
            }
            let mut object = Row::new();
            let cells: Vec<ColumnData<'static>> = row.into_iter().collect();
            for (field, cell) in statement.fields.iter().zip(&cells) {
                bytes = bytes.saturating_add(decode::size(cell) + field.len());
                object.insert(field.clone(), decode::value(cell));
            }
            if bytes > self.config.max_bytes {
                return Err(Mapped::error(DataSourceError::TooLarge(
                    self.config.max_bytes,
                )));
            }
            out.push(object);
        }
        Ok(out)
    }
}

#[async_trait]
impl DataSource for SqlServerDataSource {
    fn descriptor(&self) -> DataSourceDescriptor {
        self.descriptor.clone()
    }

    async fn schema(&self) -> Result<SourceSchema, DataSourceError> {
        self.guard
            .run(async { Ok(self.discovered().await?.source_schema()) })
            .await
    }

    async fn query(&self, query: &TableQuery) -> Result<Vec<Row>, DataSourceError> {
        self.guard.run(self.run_query(query)).await
    }
}
