//! SQL Server data source (tiberius, rustls).
//!
//! The statement builder, filter semantics, table naming, schema cache and breaker guard are
//! `reporter-sql-support`'s, shared with the other SQL sources; this crate brings the driver
//! (connections, TLS, value decoding) and SQL Server's `Dialect` (module `sql`).
//!
//! **Untested against a server on our machines** (none can run here): the unit tests cover
//! configuration, SQL building and value mapping, and the integration tests (the data-source
//! contract suite, injection, timeouts, an unreachable server) run only when
//! `SQLSERVER_URL` names a server (docs/src/templates/data-sources.md).
//!
//! [`SqlServerDataSource`] behaves like the PostgreSQL and MySQL sources:
//!
//! - **Naming**: discovery reads `INFORMATION_SCHEMA.COLUMNS` for the configured schemas
//!   (default `dbo`; SQL Server 2016 or later); `dbo` tables keep their bare name, others are
//!   `schema__table`. Cached for `schema_ttl`.
//! - **Safety**: identifiers only from the discovered schema, bracket-quoted (`]` doubled);
//!   every filter value a bound `@Pn` parameter.
//! - **Filters**: the same operators and semantics; numbers match integer, `bit` (0/1),
//!   `real`/`float` and `decimal`/`money` columns; strings match text, decimal (exactly, as
//!   `DECIMAL(38,18)`), `date`, `datetime`/`datetime2`/`smalldatetime` and
//!   `datetimeoffset` columns (offset-less strings are UTC); booleans match `bit`; other types
//!   take any scalar. At most 2 000 filter values per query (SQL Server's 2 100 parameters).
//! - **Values**: integers → numbers, `bit` → booleans, `real`/`float` → numbers,
//!   `decimal`/`numeric`/`money` → exact strings, `date` → midnight UTC (`"2024-03-31 00:00:00 +0000 UTC"`), the date-time
//!   types → `"2025-06-01 10:00:00 +0000 UTC"` (`datetimeoffset` converted to UTC), `time` →
//!   `"HH:MM:SS[.f]"`, `uniqueidentifier` → its text, binary → base64, `xml` → text, NULL →
//!   `null`.
//! - **Limits**: `SELECT TOP (limit + 1)` → `RowLimit`; `max_bytes` → `TooLarge`;
//!   `query_timeout` → `Timeout` (the connection is closed, which makes the server abandon
//!   the request; there is no server-side backstop); `connect_timeout` bounds opening a
//!   connection. A small pool keeps at most `pool_size` connections.
//! - **Breaker**: as the other SQL sources.
//! - **TLS**: see [`SslMode`].
mod config;
mod decode;
mod schema;
mod source;
mod sql;

pub use config::{SqlServerConfig, SslMode};
pub use reporter_ports::source_breaker::{BreakerConfig, BreakerState};
pub use source::SqlServerDataSource;
