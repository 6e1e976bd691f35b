//! [`MysqlDataSource`]: the [`DataSource`] over one MySQL or MariaDB database.
use crate::config::MysqlConfig;
use crate::decode::{self, ColumnInfo};
use crate::schema::{ColumnKind, ColumnRow, Discovered, Flavor};
use crate::sql::{self, MySql, Statement};
use crate::tls;
use async_trait::async_trait;
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, OptsBuilder, Params, Pool, PoolConstraints, PoolOpts};
use reporter_ports::datasource::{DataSourceDescriptor, DataSourceKind, SourceSchema};
use reporter_ports::ports::{DataSource, DataSourceError, Row, TableQuery};
use reporter_ports::source_breaker::BreakerState;
use reporter_sql_support::{Dialect, Guard, Mapped, SchemaCache};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

/// Columns of the configured databases (tables and views), in a stable order.
fn discovery_sql(schemas: usize) -> String {
    format!(
        "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, DATA_TYPE, COLUMN_TYPE \
         FROM information_schema.COLUMNS WHERE TABLE_SCHEMA IN ({}) \
         ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION",
        vec!["?"; schemas].join(", ")
    )
}

/// MariaDB's JSON columns: `longtext` with a `json_valid(col)` check.
fn json_checks_sql(schemas: usize) -> String {
    format!(
        "SELECT CONSTRAINT_SCHEMA, TABLE_NAME, CHECK_CLAUSE \
         FROM information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA IN ({}) \
         AND CHECK_CLAUSE LIKE 'json_valid(%'",
        vec!["?"; schemas].join(", ")
    )
}

/// A read-only [`DataSource`] over the tables and views of one MySQL or MariaDB database
/// (and optionally more databases on the same server).
///
/// See the crate docs for naming, filter semantics, value mapping, limits and the breaker.
///
/// # Contract
/// - [`MysqlDataSource::new`] validates the configuration and builds the pool; it does not
///   connect. Connections are opened on demand, at most `pool_size` at a time.
/// - [`DataSource::schema`] lists every table and view of the configured databases visible to
///   the user, sorted, fields sorted; it is cached for `schema_ttl`.
/// - [`DataSource::query`] resolves table and fields against the (cached) schema before any
///   SQL is sent: unknown names fail with `UnknownTable` / `UnknownField`, malformed
///   conditions with `InvalidFilter`. Rows come in server order (unspecified), projected to
///   exactly the requested fields. More matching rows than the smaller of `query.max_rows`
///   and the source's `max_rows` fail with `RowLimit(that limit)`; more than `max_bytes` of
///   values with `TooLarge(max_bytes)`.
/// - Both fail with `Unavailable` when the server cannot be used or the breaker is open, and
///   with `Timeout` when the query (or discovery) exceeds its timeout.
pub struct MysqlDataSource {
    config: MysqlConfig,
    descriptor: DataSourceDescriptor,
    opts: Opts,
    pool: Pool,
    guard: Guard,
    cache: SchemaCache<Discovered>,
}

impl std::fmt::Debug for MysqlDataSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MysqlDataSource")
            .field("config", &self.config)
            .field("breaker", &self.breaker_state())
            .finish_non_exhaustive()
    }
}

fn text(value: &mysql_async::Value) -> String {
    match value {
        mysql_async::Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        mysql_async::Value::NULL => String::new(),
        other => other.as_sql(true),
    }
}

/// `json_valid(`col`)` → `col`.
fn json_checked_column(clause: &str) -> Option<String> {
    let inner = clause
        .trim()
        .strip_prefix("json_valid(`")?
        .strip_suffix("`)")?;
    Some(inner.replace("``", "`"))
}

impl MysqlDataSource {
    /// Validates `config` and prepares the pool (no connection is opened yet).
    ///
    /// Fails with [`DataSourceError::Unavailable`] on an empty database or schema list, a zero
    /// pool size or timeout, or a CA file that cannot be read.
    pub fn new(config: MysqlConfig) -> Result<Self, DataSourceError> {
        config.validate()?;
        let constraints = PoolConstraints::new(0, config.pool_size).ok_or_else(|| {
            DataSourceError::Unavailable(format!("{}: invalid pool size", config.id))
        })?;
        let pool_opts = PoolOpts::default()
            .with_constraints(constraints)
            .with_inactive_connection_ttl(Duration::from_secs(60));
        let opts: Opts = OptsBuilder::default()
            .ip_or_hostname(config.host.clone())
            .tcp_port(config.port)
            .user(Some(config.user.clone()))
            .pass(config.password.as_ref().map(|p| p.expose().to_owned()))
            .db_name(Some(config.database.clone()))
            .ssl_opts(tls::ssl_opts(&config))
            .pool_opts(pool_opts)
            // Every session in UTC: TIMESTAMP values and offset-less filters read as UTC.
            .setup(vec!["SET time_zone = '+00:00'"])
            .connect_attribute("program_name", "reporter")
            .into();
        let pool = Pool::new(opts.clone());
        Ok(Self {
            descriptor: DataSourceDescriptor {
                id: config.id.clone(),
                external_name: config.database.clone(),
                kind: DataSourceKind::Mysql,
            },
            guard: Guard::new(config.id.clone(), config.breaker),
            cache: SchemaCache::new(config.schema_ttl),
            config,
            opts,
            pool,
        })
    }

    /// The configuration this source was built with.
    pub fn config(&self) -> &MysqlConfig {
        &self.config
    }

    /// The circuit breaker's current state (for readiness and metrics).
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

    /// Closes the pooled connections. Later calls open new ones.
    pub async fn disconnect(&self) {
        if let Err(error) = self.pool.clone().disconnect().await {
            tracing::debug!(data_source = %self.descriptor.id, %error, "mysql pool disconnect");
        }
    }

    /// A pooled connection, opened within `deadline`.
    async fn connection(&self, deadline: tokio::time::Instant) -> Result<Conn, DataSourceError> {
        let connect_by = deadline.min(tokio::time::Instant::now() + self.config.connect_timeout);
        match tokio::time::timeout_at(connect_by, self.pool.get_conn()).await {
            Ok(Ok(conn)) => Ok(conn),
            Ok(Err(e)) => Err(MySql::map_error(&e).error),
            Err(_) if connect_by < deadline => Err(DataSourceError::Unavailable(format!(
                "no connection within {:?}",
                self.config.connect_timeout
            ))),
            Err(_) => Err(DataSourceError::Timeout),
        }
    }

    /// The cached schema, discovered again when older than the TTL.
    async fn discovered(&self) -> Result<Arc<Discovered>, DataSourceError> {
        self.cache.get(|| self.discover_in_time()).await
    }

    /// Discovery, bounded by `discovery_timeout`.
    async fn discover_in_time(&self) -> Result<Discovered, DataSourceError> {
        let deadline = tokio::time::Instant::now() + self.config.discovery_timeout;
        let discovered = tokio::time::timeout_at(deadline, self.discover(deadline))
            .await
            .map_err(|_| DataSourceError::Timeout)??;
        tracing::info!(
            data_source = %self.descriptor.id,
            tables = discovered.tables.len(),
            flavor = ?discovered.flavor,
            "mysql schema discovered"
        );
        Ok(discovered)
    }

    async fn discover(
        &self,
        deadline: tokio::time::Instant,
    ) -> Result<Discovered, DataSourceError> {
        let mut conn = self.connection(deadline).await?;
        let fail = |e: mysql_async::Error| MySql::map_error(&e).error;
        let version: Option<String> = conn.query_first("SELECT VERSION()").await.map_err(fail)?;
        let flavor = Flavor::from_version(version.as_deref().unwrap_or_default());
        let schemas: Vec<mysql_async::Value> = self
            .config
            .schemas
            .iter()
            .map(|s| mysql_async::Value::Bytes(s.as_bytes().to_vec()))
            .collect();
        let rows: Vec<mysql_async::Row> = conn
            .exec(
                discovery_sql(schemas.len()),
                Params::Positional(schemas.clone()),
            )
            .await
            .map_err(fail)?;
        let json = if flavor == Flavor::MariaDb {
            self.json_checks(&mut conn, schemas).await
        } else {
            BTreeSet::new()
        };
        let columns = rows.into_iter().map(|row| {
            let cell = |i: usize| row.as_ref(i).map(text).unwrap_or_default();
            let (table_schema, table_name, column_name) = (cell(0), cell(1), cell(2));
            let json_check = json.contains(&(
                table_schema.clone(),
                table_name.clone(),
                column_name.clone(),
            ));
            ColumnRow {
                table_schema,
                table_name,
                column_name,
                data_type: cell(3),
                column_type: cell(4),
                json_check,
            }
        });
        Ok(Discovered::from_rows(
            flavor,
            &self.config.database,
            columns,
        ))
    }

    /// MariaDB's `json_valid` column checks, as (schema, table, column). A server without the
    /// view (MariaDB before 10.2) has no JSON alias: an error reads as "none".
    async fn json_checks(
        &self,
        conn: &mut Conn,
        schemas: Vec<mysql_async::Value>,
    ) -> BTreeSet<(String, String, String)> {
        let rows: Vec<mysql_async::Row> = match conn
            .exec(json_checks_sql(schemas.len()), Params::Positional(schemas))
            .await
        {
            Ok(rows) => rows,
            Err(error) => {
                tracing::warn!(data_source = %self.descriptor.id, %error, "cannot read json_valid checks");
                return BTreeSet::new();
            }
        };
        rows.iter()
            .filter_map(|row| {
                let cell = |i: usize| row.as_ref(i).map(text).unwrap_or_default();
                json_checked_column(&cell(2)).map(|column| (cell(0), cell(1), column))
            })
            .collect()
    }

    async fn run_query(&self, query: &TableQuery) -> Result<Vec<Row>, DataSourceError> {
        let discovered = self.discovered().await?;
        let table = discovered
            .table(&query.table)
            .ok_or_else(|| DataSourceError::UnknownTable(query.table.clone()))?;
        let limit = query.max_rows.min(self.config.max_rows);
        let fetch = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
        let backstop = self.config.query_timeout;
        let statement = sql::build(query, table, fetch, discovered.flavor, backstop)?;
        let kinds: Vec<ColumnKind> = statement
            .fields
            .iter()
            .map(|f| table.columns.get(f).map_or(ColumnKind::Other, |c| c.kind))
            .collect();

        let deadline = tokio::time::Instant::now() + self.config.query_timeout;
        let mut conn = self.connection(deadline).await?;
        let connection_id = conn.id();
        let outcome =
            tokio::time::timeout_at(deadline, self.read(&mut conn, &statement, &kinds, limit))
                .await;
        match outcome {
            Ok(Ok(rows)) => Ok(rows),
            Ok(Err(mapped)) => Err(self.cache.failed(mapped).await),
            Err(_) => {
                self.kill(connection_id);
                drop(conn);
                Err(DataSourceError::Timeout)
            }
        }
    }

    /// Runs `statement` and reads at most `limit` rows (one more is `RowLimit`).
    async fn read(
        &self,
        conn: &mut Conn,
        statement: &Statement,
        kinds: &[ColumnKind],
        limit: usize,
    ) -> Result<Vec<Row>, Mapped> {
        let fail = |e: mysql_async::Error| MySql::map_error(&e);
        let params = Params::Positional(statement.params.clone());
        let mut result = conn
            .exec_iter(statement.sql.as_str(), params)
            .await
            .map_err(fail)?;
        let columns: Vec<ColumnInfo> = result
            .columns_ref()
            .iter()
            .zip(kinds)
            .map(|(c, kind)| ColumnInfo::new(c, *kind))
            .collect();
        let mut out = Vec::new();
        let mut bytes = 0usize;
        while let Some(row) = result.next().await.map_err(fail)? {
            if out.len() == limit {
                return Err(Mapped::error(DataSourceError::RowLimit(limit)));
            }
            let mut object = Row::new();
            for ((field, column), cell) in statement.fields.iter().zip(&columns).zip(row.unwrap()) {
                bytes = bytes.saturating_add(decode::size(&cell) + field.len());
                object.insert(field.clone(), decode::value(column, cell));
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

    /// Stops the statement running on connection `id` (`KILL QUERY`) from a connection of its
    /// own, in the background: the pool may be exhausted, and the caller must not wait.
    fn kill(&self, id: u32) {
        let opts = self.opts.clone();
        let source = self.descriptor.id.clone();
        let connect_timeout = self.config.connect_timeout;
        tokio::spawn(async move {
            let killed = tokio::time::timeout(connect_timeout * 2, async move {
                let mut conn = Conn::new(opts).await?;
                conn.query_drop(format!("KILL QUERY {id}")).await?;
                conn.disconnect().await
            })
            .await;
            match killed {
                Ok(Ok(())) => tracing::debug!(data_source = %source, id, "timed-out query killed"),
                Ok(Err(error)) => {
                    tracing::warn!(data_source = %source, id, %error, "cannot kill a timed-out query");
                }
                Err(_) => {
                    tracing::warn!(data_source = %source, id, "cannot kill a timed-out query in time")
                }
            }
        });
    }
}

#[async_trait]
impl DataSource for MysqlDataSource {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::quote_ident;

    #[test]
    fn json_check_clauses() {
        assert_eq!(
            json_checked_column("json_valid(`meta`)"),
            Some("meta".into())
        );
        assert_eq!(
            json_checked_column("json_valid(`a``b`)"),
            Some("a`b".into())
        );
        assert_eq!(json_checked_column("json_valid(`a`) and 1"), None);
        assert_eq!(json_checked_column("`x` > 0"), None);
        assert_eq!(quote_ident("a`b"), "`a``b`");
    }

    fn my_error(error: &mysql_async::Error) -> (DataSourceError, bool) {
        MySql::map_error(error).pair()
    }

    #[test]
    fn interrupted_and_stale_errors() {
        let server = |code: u16| {
            mysql_async::Error::Server(mysql_async::ServerError {
                code,
                message: "m".into(),
                state: "HY000".into(),
            })
        };
        assert_eq!(my_error(&server(1317)), (DataSourceError::Timeout, false));
        assert_eq!(my_error(&server(1969)), (DataSourceError::Timeout, false));
        assert!(my_error(&server(1146)).1);
        assert!(matches!(
            my_error(&server(1045)),
            (DataSourceError::Unavailable(_), false)
        ));
    }
}
