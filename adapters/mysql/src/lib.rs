//! MySQL / MariaDB data source.
//!
//! The statement builder, filter semantics, table naming, schema cache and breaker guard are
//! `reporter-sql-support`'s, shared with the other SQL sources; this crate brings the driver
//! (pool, TLS, `KILL QUERY`, value decoding) and MySQL's `Dialect` (module `sql`).
//!
//! [`MysqlDataSource`] serves the tables and views of one database (and optionally more
//! databases of the same server) through the [`DataSource`](reporter_ports::ports::DataSource)
//! port, with a connection pool (mysql_async, rustls for TLS), a cached schema, per-query
//! time, row and byte limits, and a circuit breaker. It behaves like the PostgreSQL data
//! source; the differences are MySQL's.
//!
//! # Naming
//! Discovery reads `information_schema.COLUMNS` for the configured databases (`schemas`,
//! default just `database`), so it sees every table and view the user may read. Tables of
//! `database` are named `table`; tables of any other listed database `db__table`. If a table
//! of `database` is literally called `db__table` too, it wins and the other is skipped
//! (logged). The schema is cached for `schema_ttl` (default 300 s);
//! [`MysqlDataSource::refresh_schema`] discovers it again at once. A query against a table or
//! column dropped since discovery fails with `Unavailable` and drops the cache.
//!
//! # Safety of the SQL
//! Table and field names are accepted only when the discovered schema has them, and are
//! always written as backtick-quoted identifiers (embedded backticks doubled). Filter values
//! are never spliced into SQL: each is a bound parameter of a prepared statement.
//!
//! # Filters
//! The semantics follow the file and PostgreSQL data sources:
//! - `eq` and `in` hold when the column equals any listed value (`null` listed matches NULL);
//!   `nin` when it equals none (a NULL column qualifies unless `null` is listed).
//! - `gt`, `gte`, `lt`, `lte` compare with the first listed value, which must be a number or
//!   a string; `between` takes exactly two numbers or two strings (`>= low AND <= high`).
//!   NULL is in no range. Any non-scalar value, or anything else, is `InvalidFilter`.
//! - A JSON value whose type cannot match the column never matches (MySQL's own conversions,
//!   where `'abc' = 0` holds, never decide): numbers match integer, `bit`, `float`/`double`
//!   and `decimal` columns; strings match text, `enum`/`set`, binary, `decimal` (compared
//!   exactly, as `DECIMAL(65,30)`), `date`, `datetime` and `timestamp` columns; booleans
//!   match `tinyint(1)` (`BOOLEAN`) and `bit(1)` columns as 1/0; any scalar is offered to
//!   other types (`time`, spatial, …).
//! - A string the column type cannot take (`"2021-13-45"` for a date, `"ten"` for a decimal)
//!   fails the query with `InvalidFilter`, and so does any filter on a JSON column.
//! - Date strings: `YYYY-MM-DD`, `YYYY-MM-DD[T ]HH:MM[:SS[.f]]`, RFC 3339 with an offset
//!   (converted to UTC), or the printed form `2025-06-01 10:00:00 +0000 UTC`. Strings without
//!   an offset are UTC (each session runs with `time_zone = '+00:00'`).
//! - Text comparisons use the column's collation, as in MySQL (case-insensitive for the
//!   default `utf8mb4` collations).
//!
//! # Values
//! Rows are JSON objects with exactly the requested fields (crate `decode`):
//! integers of every width, signed or unsigned, and `year` → numbers (`bigint unsigned` up to
//! 2^64-1); `float`/`double` → numbers (non-finite as strings); `decimal` → a string with the
//! exact digits and scale (`"1250.10"`); `date` → midnight UTC in the same form (`"2024-03-31 00:00:00 +0000 UTC"`, as PostgreSQL); `datetime` and `timestamp`
//! → `"2025-06-01 10:00:00 +0000 UTC"` (Go's printing of a UTC time, as the original prints
//! timestamps; a fraction appears only when non-zero: `10:00:00.5`); `time` →
//! `"[-]HH:MM:SS[.ffffff]"`; `json` (MariaDB: a `json_valid`-checked `longtext`) → the nested
//! value; `bit(n)` → an unsigned number; binary strings and blobs → standard base64; other
//! strings, `enum` and `set` → strings; NULL → `null`.
//!
//! # Limits and timeouts
//! A query fetches `LIMIT limit + 1` rows, where `limit` is the smaller of the query's
//! `max_rows` and the source's `max_rows`, and fails with `RowLimit(limit)` if the extra row
//! arrives; rows are read one at a time, and more than `max_bytes` of values fail it with
//! `TooLarge`. `query_timeout` (default 10 s) bounds the whole query including taking a
//! pooled connection; on expiry the statement is killed on the server (`KILL QUERY`, from a
//! connection of its own) and the query fails with `Timeout`. The server stops it by itself
//! too (MariaDB `SET STATEMENT max_statement_time=… FOR`, MySQL `MAX_EXECUTION_TIME`).
//! Opening a connection is bounded by `connect_timeout`, discovery by `discovery_timeout`.
//!
//! # Circuit breaker
//! Each source has its own breaker ([`BreakerState`]): `failure_threshold` consecutive
//! outages (`Unavailable` or `Timeout`; refusals such as `UnknownField`, `InvalidFilter`,
//! `RowLimit` or `TooLarge` count as successes, the server answered) open it for `open_for`;
//! while open, `schema` and `query` fail fast with `Unavailable` without touching the
//! network; then one probe call decides between closing and reopening.
//!
//! # TLS
//! [`SslMode`]: `disable`, `require`, `verify-ca`, `verify-full` (libpq's names; see there),
//! with an optional CA file. rustls with the ring provider; no OpenSSL.
mod config;
mod decode;
mod schema;
mod source;
mod sql;
mod tls;

pub use config::{MysqlConfig, SslMode};
pub use reporter_ports::source_breaker::{BreakerConfig, BreakerState};
pub use source::MysqlDataSource;
