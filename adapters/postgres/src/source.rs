//! [`PostgresDataSource`]: the [`DataSource`] over one PostgreSQL database.
use crate::config::PostgresConfig;
use crate::decode;
use crate::schema::{self, ColumnRow, Discovered};
use crate::sql::{self, Param, Postgres};
use crate::tls::{self, Tls};
use async_trait::async_trait;
use deadpool_postgres::{
    Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod, Runtime,
};
use futures_util::TryStreamExt;
use reporter_ports::datasource::{DataSourceDescriptor, DataSourceKind, SourceSchema};
use reporter_ports::ports::{CollectRows, DataSource, DataSourceError, Row, RowSink, TableQuery};
use reporter_ports::source_breaker::BreakerState;
use reporter_sql_support::{Dialect, Guard, SchemaCache, is_outage};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use tokio_postgres::types::{ToSql, Type};

/// Columns of the configured schemas, in a stable order.
const DISCOVERY_SQL: &str = "SELECT table_schema::text, table_name::text, column_name::text, \
     data_type::text, udt_schema::text, udt_name::text \
     FROM information_schema.columns WHERE table_schema = ANY($1) \
     ORDER BY table_schema, table_name, ordinal_position";

/// A read-only [`DataSource`] over the tables and views of one PostgreSQL database.
///
/// See the crate docs for naming, filter semantics, value mapping, timeouts and the breaker.
///
/// # Contract
/// - [`PostgresDataSource::new`] validates the configuration and builds the pool; it does not
///   connect. Connections are opened on demand, at most `pool_size` at a time.
/// - [`DataSource::schema`] lists every table and view of the configured schemas visible to
///   the role, sorted, fields sorted; it is cached for `schema_ttl`.
/// - [`DataSource::query`] resolves table and fields against the (cached) schema before any
///   SQL is sent: unknown names fail with `UnknownTable` / `UnknownField`, malformed
///   conditions with `InvalidFilter`. Rows come in server order (unspecified), projected to
///   exactly the requested fields. More matching rows than the smaller of `query.max_rows`
///   and the source's `max_rows` fail with `RowLimit(that limit)`.
/// - Both fail with `Unavailable` when the server cannot be used or the breaker is open, and
///   with `Timeout` when the query (or discovery) exceeds its timeout.
pub struct PostgresDataSource {
    config: PostgresConfig,
    descriptor: DataSourceDescriptor,
    pool: Pool,
    tls: Tls,
    guard: Guard,
    cache: SchemaCache<Discovered>,
}

impl std::fmt::Debug for PostgresDataSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresDataSource")
            .field("config", &self.config)
            .field("breaker", &self.breaker_state())
            .finish_non_exhaustive()
    }
}

fn pool_error(error: PoolError) -> DataSourceError {
    match error {
        PoolError::Backend(e) => Postgres::map_error(&e).error,
        other => DataSourceError::Unavailable(format!("connection pool: {other}")),
    }
}

impl PostgresDataSource {
    /// Validates `config` and prepares the pool (no connection is opened yet).
    ///
    /// Fails with [`DataSourceError::Unavailable`] on an unreadable CA file, an empty
    /// schema list or database name, a zero pool size or a zero timeout.
    pub fn new(config: PostgresConfig) -> Result<Self, DataSourceError> {
        config.validate()?;
        let tls = tls::tls(&config)?;
        // Server-side backstop: statements die even if the client never cancels them.
        let backstop = config.query_timeout.max(config.discovery_timeout);
        let mut pg = tokio_postgres::Config::new();
        pg.host(&config.host)
            .port(config.port)
            .user(&config.user)
            .dbname(&config.database)
            .application_name("reporter")
            .connect_timeout(config.connect_timeout)
            .ssl_mode(tls.mode)
            .options(format!(
                "-c statement_timeout={} -c TimeZone=UTC",
                backstop.as_millis().max(1)
            ));
        if let Some(password) = &config.password {
            pg.password(password.expose());
        }
        let manager = Manager::from_config(
            pg,
            tls.connector.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(config.pool_size)
            .runtime(Runtime::Tokio1)
            .create_timeout(Some(config.connect_timeout))
            .recycle_timeout(Some(config.connect_timeout))
            .build()
            .map_err(|e| DataSourceError::Unavailable(format!("{}: pool: {e}", config.id)))?;
        Ok(Self {
            descriptor: DataSourceDescriptor {
                id: config.id.clone(),
                external_name: config.database.clone(),
                kind: DataSourceKind::Postgresql,
            },
            guard: Guard::new(config.id.clone(), config.breaker),
            cache: SchemaCache::new(config.schema_ttl),
            config,
            pool,
            tls,
        })
    }

    /// The configuration this source was built with.
    pub fn config(&self) -> &PostgresConfig {
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

    /// The cached schema, discovered again when older than the TTL.
    async fn discovered(&self) -> Result<Arc<Discovered>, DataSourceError> {
        self.cache.get(|| self.discover_in_time()).await
    }

    /// Discovery, bounded by `discovery_timeout`.
    async fn discover_in_time(&self) -> Result<Discovered, DataSourceError> {
        let discovered = tokio::time::timeout(self.config.discovery_timeout, self.discover())
            .await
            .map_err(|_| DataSourceError::Timeout)??;
        tracing::info!(
            data_source = %self.descriptor.id,
            tables = discovered.len(),
            "postgres schema discovered"
        );
        Ok(discovered)
    }

    async fn discover(&self) -> Result<Discovered, DataSourceError> {
        let client = self.pool.get().await.map_err(pool_error)?;
        let rows = client
            .query_typed(DISCOVERY_SQL, &[(&self.config.schemas, Type::TEXT_ARRAY)])
            .await
            .map_err(|e| Postgres::map_error(&e).error)?;
        let text = |row: &tokio_postgres::Row, i: usize| {
            row.try_get::<_, String>(i)
                .map_err(|e| DataSourceError::Unavailable(format!("schema discovery: {e}")))
        };
        let mut columns = Vec::with_capacity(rows.len());
        for row in &rows {
            columns.push(ColumnRow {
                table_schema: text(row, 0)?,
                table_name: text(row, 1)?,
                column_name: text(row, 2)?,
                data_type: text(row, 3)?,
                udt_schema: text(row, 4)?,
                udt_name: text(row, 5)?,
            });
        }
        Ok(schema::discovered(columns))
    }

    /// Streams the rows of `query` into `sink` as they arrive from the server (the result is
    /// never collected). A query the sink stops, or that outlives its timeout, is cancelled
    /// on the server and its connection closed.
    async fn run_query(
        &self,
        query: &TableQuery,
        sink: &mut dyn RowSink,
    ) -> Result<(), DataSourceError> {
        let discovered = self.discovered().await?;
        let table = discovered
            .table(&query.table)
            .ok_or_else(|| DataSourceError::UnknownTable(query.table.clone()))?;
        let limit = query.max_rows.min(self.config.max_rows);
        let fetch = i64::try_from(limit).unwrap_or(i64::MAX).saturating_add(1);
        let statement = sql::build(query, table, fetch)?;
        let deadline = tokio::time::Instant::now() + self.config.query_timeout;
        let client = tokio::time::timeout_at(deadline, self.pool.get())
            .await
            .map_err(|_| DataSourceError::Timeout)?
            .map_err(pool_error)?;
        let streamed = tokio::time::timeout_at(
            deadline,
            stream_rows(&client, &statement, query, limit, sink),
        )
        .await;
        match streamed {
            Ok(Ok(())) => Ok(()),
            Ok(Err(Stop::Server(e))) => Err(self.cache.failed(Postgres::map_error(&e)).await),
            Ok(Err(Stop::RowLimit)) => Err(DataSourceError::RowLimit(limit)),
            Ok(Err(Stop::Early(error))) => {
                self.abandon(client);
                Err(error)
            }
            Err(_) => {
                self.abandon(client);
                Err(DataSourceError::Timeout)
            }
        }
    }

    /// Cancels the statement running on `client` and closes its connection instead of
    /// returning it to the pool.
    fn abandon(&self, client: Object) {
        let token = client.cancel_token();
        drop(Object::take(client));
        let id = self.descriptor.id.clone();
        let tls = self.tls.connector.clone();
        tokio::spawn(async move {
            if let Err(error) = token.cancel_query(tls).await {
                tracing::warn!(data_source = %id, %error, "cannot cancel a timed-out query");
            }
        });
    }
}

#[async_trait]
impl DataSource for PostgresDataSource {
    fn descriptor(&self) -> DataSourceDescriptor {
        self.descriptor.clone()
    }

    async fn schema(&self) -> Result<SourceSchema, DataSourceError> {
        self.guard
            .run(async { Ok(self.discovered().await?.source_schema()) })
            .await
    }

    async fn query(&self, query: &TableQuery) -> Result<Vec<Row>, DataSourceError> {
        let mut rows = CollectRows::default();
        self.guard.run(self.run_query(query, &mut rows)).await?;
        Ok(rows.0)
    }

    /// A timeout of a query whose sink held it back for at least half its deadline (a render
    /// busy with the rows it already has) is not counted against the source: the deadline
    /// counts that time, the breaker does not.
    async fn query_into(
        &self,
        query: &TableQuery,
        sink: &mut dyn RowSink,
    ) -> Result<(), DataSourceError> {
        let held = AtomicU64::new(0);
        let mut sink = HeldBack {
            inner: sink,
            held: &held,
        };
        let half = u64::try_from(self.config.query_timeout.as_micros() / 2).unwrap_or(u64::MAX);
        let outage = |e: &DataSourceError| {
            is_outage(e)
                && !(*e == DataSourceError::Timeout && held.load(Ordering::Relaxed) >= half)
        };
        self.guard
            .run_by(self.run_query(query, &mut sink), outage)
            .await
    }
}

/// A sink that adds up how long it held the query back ([`RowSink::ready`] pending), in µs.
struct HeldBack<'a> {
    inner: &'a mut dyn RowSink,
    held: &'a AtomicU64,
}

impl RowSink for HeldBack<'_> {
    fn push(&mut self, row: Row) -> Result<(), DataSourceError> {
        self.inner.push(row)
    }

    fn push_json(&mut self, json: &[u8]) -> Result<(), DataSourceError> {
        self.inner.push_json(json)
    }

    fn ready(&mut self) -> Option<reporter_ports::ports::SinkReady<'_>> {
        let wait = self.inner.ready()?;
        let held = self.held;
        Some(Box::pin(async move {
            let started = Instant::now();
            let ready = wait.await;
            let waited = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
            held.fetch_add(waited, Ordering::Relaxed);
            ready
        }))
    }
}

/// Why a streamed query stopped before its last row.
enum Stop {
    /// The server answered an error (before or between rows).
    Server(tokio_postgres::Error),
    /// More rows matched than the limit (the statement fetches at most one more).
    RowLimit,
    /// The sink refused a row, or a value could not be read: the rest is not wanted.
    Early(DataSourceError),
}

/// Sends `statement` and pushes each row, decoded and projected, into `sink` as it arrives.
async fn stream_rows(
    client: &Object,
    statement: &sql::Statement,
    query: &TableQuery,
    limit: usize,
    sink: &mut dyn RowSink,
) -> Result<(), Stop> {
    let params = statement.params.iter().map(|p| match p {
        Param::Text(s) => (s as &(dyn ToSql + Sync), Type::TEXT),
        Param::TextArray(v) => (v as &(dyn ToSql + Sync), Type::TEXT_ARRAY),
        Param::Int8(n) => (n as &(dyn ToSql + Sync), Type::INT8),
    });
    let rows = client
        .query_typed_raw(&statement.sql, params)
        .await
        .map_err(Stop::Server)?;
    let mut rows = std::pin::pin!(rows);
    let mut count = 0usize;
    let mut json = RowJson::new(&statement.fields);
    while let Some(row) = rows.try_next().await.map_err(Stop::Server)? {
        count += 1;
        if count > limit {
            return Err(Stop::RowLimit);
        }
        match json.as_mut() {
            Some(json) => {
                let text = json
                    .write(&row, statement, &query.table)
                    .map_err(Stop::Early)?;
                sink.push_json(text).map_err(Stop::Early)?;
            }
            None => {
                let object = project(&row, statement, &query.table).map_err(Stop::Early)?;
                sink.push(object).map_err(Stop::Early)?;
            }
        }
        // The wire row is freed before the next one is read.
        drop(row);
        if let Some(ready) = sink.ready() {
            ready.await.map_err(Stop::Early)?;
        }
    }
    Ok(())
}

/// A row's JSON text (`RowSink::push_json`), written field by field from the wire row into
/// one buffer reused for every row, each key escaped once per statement.
struct RowJson {
    /// Per field: `{"name":` for the first, `,"name":` for the others.
    keys: Vec<Vec<u8>>,
    buf: Vec<u8>,
}

impl RowJson {
    /// `None` when a field name repeats: a row map would keep one of them, so such a
    /// statement's rows go through the map.
    fn new(fields: &[String]) -> Option<Self> {
        let distinct: std::collections::HashSet<&String> = fields.iter().collect();
        if distinct.len() != fields.len() {
            return None;
        }
        let keys = fields
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let mut k = vec![if i == 0 { b'{' } else { b',' }];
                // A &str always serializes.
                let _ = serde_json::to_writer(&mut k, f);
                k.push(b':');
                k
            })
            .collect();
        Some(Self {
            keys,
            buf: Vec::new(),
        })
    }

    /// The JSON text of `row`: the statement's fields, decoded (JSON columns parsed).
    fn write(
        &mut self,
        row: &tokio_postgres::Row,
        statement: &sql::Statement,
        table: &str,
    ) -> Result<&[u8], DataSourceError> {
        self.buf.clear();
        if self.keys.is_empty() {
            self.buf.push(b'{');
        }
        for (i, key) in self.keys.iter().enumerate() {
            self.buf.extend_from_slice(key);
            let json_column = statement.json.get(i).copied().unwrap_or(false);
            decode::write_value(row, i, json_column, &mut self.buf).map_err(|e| {
                let field = statement.fields.get(i).map_or("?", String::as_str);
                DataSourceError::Unavailable(format!("cannot read {table}.{field}: {e}"))
            })?;
        }
        self.buf.push(b'}');
        Ok(&self.buf)
    }
}

/// One wire row as a port row: the statement's fields, decoded (JSON columns parsed).
fn project(
    row: &tokio_postgres::Row,
    statement: &sql::Statement,
    table: &str,
) -> Result<Row, DataSourceError> {
    let mut object = Row::with_capacity(statement.fields.len());
    for (i, field) in statement.fields.iter().enumerate() {
        let mut value = decode::value(row, i).map_err(|e| {
            DataSourceError::Unavailable(format!("cannot read {table}.{field}: {e}"))
        })?;
        if statement.json.get(i).copied().unwrap_or(false) {
            value = decode::json_text(value);
        }
        object.insert(field.clone(), value);
    }
    Ok(object)
}
