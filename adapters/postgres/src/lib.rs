//! PostgreSQL data source.
//!
//! The statement builder, filter semantics, table naming, schema cache and breaker guard are
//! `reporter-sql-support`'s, shared with the other SQL sources; this crate brings the driver
//! (pool, TLS, streaming, value decoding) and PostgreSQL's `Dialect` (module `sql`).
//!
//! [`PostgresDataSource`] serves the tables and views of the configured schemas of one
//! database through the [`DataSource`](reporter_ports::ports::DataSource) port, with a
//! connection pool (deadpool-postgres over tokio-postgres), a cached schema, per-query
//! timeouts and a circuit breaker.
//!
//! # Naming
//! Schema discovery reads `information_schema.columns` for the configured schemas (default
//! `public`), so it sees every table and view the role may read. Tables of `public` are named
//! `table`; tables of any other schema `schema__table` (e.g. `other__ledger`). If a `public`
//! table is literally called `other__ledger` too, it wins and the other is skipped (logged).
//! The schema is cached for `schema_ttl` (default 300 s); [`PostgresDataSource::refresh_schema`]
//! discovers it again at once. A query against a table or column dropped since discovery
//! fails with `Unavailable` and drops the cache.
//!
//! # Safety of the SQL
//! Table and field names are accepted only when the discovered schema has them, and are
//! always written as quoted identifiers (embedded `"` doubled). Filter values are never
//! spliced into SQL: each is a bound parameter.
//!
//! # Filters
//! Every filter value is bound as `text` (lists as `text[]`) and cast on the server to the
//! column's own type — `col > $1::text::<type>`, `col = ANY($1::text[]::<type>[])` — so the
//! server parses it exactly as it would a literal of that type (dates, timestamps, uuids,
//! numerics, enums). Integer columns compare with `int8`, or `numeric` when a bound is
//! fractional or beyond `i64`. The semantics follow the file data source:
//! - `eq` and `in` hold when the column equals any listed value (`null` listed matches NULL);
//!   `nin` when it equals none (a NULL column qualifies unless `null` is listed).
//! - `gt`, `gte`, `lt`, `lte` compare with the first listed value, which must be a number or
//!   a string; `between` takes exactly two numbers or two strings (`>= low AND <= high`).
//!   NULL is in no range. Any non-scalar value, or anything else, is `InvalidFilter`.
//! - A JSON value whose type cannot match the column never matches (mixed types never
//!   match): numbers match only `smallint`/`integer`/`bigint`/`real`/`double precision`/
//!   `numeric` columns; strings match text, `numeric` (as a decimal, compared numerically —
//!   numerics are read as strings, so filters may quote them too), `date` and timestamp
//!   columns; booleans match `boolean` columns; any scalar is offered to other types.
//! - A value of a matching JSON type that the column type rejects (`"2021-13-45"` for a
//!   date, `"abc"` for a numeric or uuid, an out-of-range number) fails the query with
//!   `InvalidFilter`, as does comparing a type without the operator (e.g. `json`).
//! - Strings without an offset are read as UTC for `timestamp with time zone` columns (each
//!   session runs with `TimeZone=UTC`).
//!
//! # Values
//! Rows are JSON objects with exactly the requested fields: integers → numbers, `real` and
//! `double precision` → numbers (non-finite ones as strings), `numeric` → a string with the
//! exact digits and scale (`1250.10` stays `"1250.10"`: money never goes through a float),
//! `boolean` → boolean, `date`, `timestamp` and `timestamp with time zone` → the instant in
//! UTC in Go's `time.Time` print form, as the original's templates print them
//! (`2024-03-31 10:00:00 +0000 UTC`, `2024-03-31 00:00:00 +0000 UTC` for a date; a timestamp
//! without zone is taken as UTC), `json`/`jsonb` → the nested JSON value, NULL → `null`,
//! everything else (uuid, time, interval, enums, arrays, ...) → PostgreSQL's text form.
//! Infinite dates and timestamps cannot be read and fail the query with `Unavailable`.
//!
//! # Limits and timeouts
//! A query fetches `LIMIT limit + 1` rows, where `limit` is the smaller of the query's
//! `max_rows` and the source's `max_rows`, and fails with `RowLimit(limit)` if the extra row
//! arrives. `query_timeout` (default 10 s) bounds the whole query including taking a pooled
//! connection; on expiry the statement is cancelled on the server and its connection closed,
//! and the query fails with `Timeout`. Each session also runs with
//! `statement_timeout = max(query_timeout, discovery_timeout)` as a server-side backstop
//! (a server-side cancellation also reads as `Timeout`). Discovery is bounded by
//! `discovery_timeout` (default 30 s).
//!
//! # Circuit breaker
//! Each source has its own hand-written breaker ([`BreakerState`]): `failure_threshold`
//! consecutive outages (`Unavailable` or `Timeout` from `schema`/`query`; refusals such as
//! `UnknownField`, `InvalidFilter` or `RowLimit` count as successes, the server answered)
//! open it for `open_for`; while open, `schema` and `query` fail fast with `Unavailable`
//! without touching the network; then one probe call decides between closing and reopening.
//!
//! # TLS
//! `sslmode` `disable` (default), `prefer`, `require`, `verify-ca` or `verify-full`, with an
//! optional CA file (`ssl_root_cert`), as in libpq: rustls with the ring provider (see the
//! `tls` module for what each mode checks). Cancel requests use the same TLS settings.
mod config;
mod decode;
mod schema;
mod source;
mod sql;
mod tls;

pub use config::{PostgresConfig, SslMode};
pub use reporter_ports::source_breaker::{BreakerConfig, BreakerState};
pub use source::PostgresDataSource;
