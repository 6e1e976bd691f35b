//! Filesystem adapters.
//!
//! - [`FileDataSource`]: a read-only [`DataSource`](reporter_ports::ports::DataSource) over a
//!   directory of `<table>.json` / `<table>.csv` files.
//! - [`LocalObjectStorage`]: an [`ObjectStorage`](reporter_ports::ports::ObjectStorage) in a
//!   local directory, with atomic writes.
//!
//! # CSV typing
//!
//! CSV has no types. Each column is typed as a whole from its non-empty cells, so a column
//! never mixes types (mixed types never match a filter):
//!
//! 1. an empty cell is always `null`;
//! 2. if every non-empty cell is `true` or `false` (exactly, lower case), the column holds
//!    booleans;
//! 3. if every non-empty cell is a *canonical* integer — the text is exactly what printing the
//!    parsed `i64` gives back, so `42` and `-7` qualify but `007`, `+5`, `-0` and `1_000` do
//!    not — or a *round-tripping* decimal — `-?digits.digits` whose `f64` value prints back to
//!    exactly the same text, so `12.5` and `0.1` qualify but `1250.00`, `0.50` and `1e3` do
//!    not — the column holds JSON numbers (integers as `i64`, decimals as `f64`);
//! 4. otherwise every non-empty cell of the column stays a string (verbatim, untrimmed).
//!
//! Rule 3 keeps money exact: a column holding `1250.00` (a trailing zero) or any value an
//! `f64` cannot print back verbatim stays text — all of it, not just that cell. Leading-zero
//! identifiers (`0042`) stay text too. Header names are trimmed.
//!
//! JSON files keep their values as `serde_json` parses them (no arbitrary precision), so
//! money belongs in strings there as well.
//!
//! # Filter semantics
//!
//! - A missing key reads as `null`.
//! - Numbers compare numerically (`2` equals `2.0`; integers exactly, otherwise as `f64`),
//!   strings lexicographically by code point (so ISO-8601 dates compare chronologically),
//!   booleans and nulls by equality only. Values of different types never match: `"80"` is
//!   neither equal to nor greater than `80`, and `null` is in no range.
//! - `eq` and `in` hold when the value equals any listed value; `nin` when it equals none.
//! - `gt`, `gte`, `lt`, `lte` compare with the first listed value, which must be a number or
//!   a string; `between` takes exactly two numbers or two strings and is inclusive. Anything
//!   else, and any non-scalar value, is [`InvalidFilter`](reporter_ports::ports::DataSourceError::InvalidFilter).
//! - An operator with an empty list is ignored; all operators and all fields must hold.
mod datasource;
mod filter;
mod load;
mod storage;
mod sweep;
mod upload;
mod writeback;

pub use datasource::FileDataSource;
pub use storage::{DEFAULT_CONTENT_TYPE, LocalObjectStorage};
