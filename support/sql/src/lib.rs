//! What Reporter's SQL data sources (PostgreSQL, MySQL/MariaDB, SQL Server) share, written
//! once. An adapter brings its driver and a [`Dialect`]; this crate brings the rest:
//!
//! - [`Dialect`]: identifier quoting, placeholders and parameter binding, the row-limit
//!   clause, and the mapping of driver errors (stale schema, outage) — each adapter
//!   implements it for its driver;
//! - [`build`]: the one parameterised `SELECT` a [`TableQuery`](reporter_ports::ports::TableQuery)
//!   becomes — projection, the filter operators (`eq`, `in`, `nin`, `gt`, `gte`, `lt`, `lte`,
//!   `between`) with their NULL and mixed-type semantics, the row limit;
//! - [`Tables`]: discovered tables named for templates (`table` in the default schema,
//!   `schema__table` elsewhere, the default schema's table winning a clash);
//! - [`SchemaCache`]: the discovered schema, reused for a TTL and dropped when a query shows
//!   it stale;
//! - [`Guard`]: the circuit breaker around every call, with [`is_outage`];
//! - filter-value parsing ([`parse_moment`], [`is_decimal_text`]), values ([`json_float`]) and
//!   connection-setting helpers ([`settings`]).
//!
//! The crate depends on the ports and on no driver, runtime or I/O crate (the
//! dependency-direction test checks it): whatever needs a driver type stays in the adapter,
//! behind the [`Dialect`]'s associated types.
mod cache;
mod dialect;
mod filter;
mod guard;
mod moment;
pub mod settings;
mod statement;
mod tables;
mod values;

pub use cache::SchemaCache;
pub use dialect::{Bound, Dialect, Mapped, bind_all, quote_with};
pub use filter::invalid_filter;
pub use guard::{Guard, is_outage};
pub use moment::{Moment, parse_moment};
pub use statement::{Statement, build, select_from};
pub use tables::{Table, Tables, exposed_name};
pub use values::{is_decimal_text, json_float};
