//! Template engine adapter: [`MiniJinjaEngine`], a sandboxed
//! [`TemplateEngine`](reporter_ports::ports::TemplateEngine) on minijinja 2 with the
//! reference's report helpers (`sum`, `where`, `count`, `sum_by`, `avg_by`, `calc`,
//! `last_item_by_group`, `counter`, …).
//!
//! Data addressing follows the reference: the context is
//! `{ "<ds>": { "<table>": [rows] } }`; a table is a [`Table`] that loops like a list and
//! answers `ds.table.field` with its first row's field.
//!
//! Money is exact: every numeric helper parses amounts (JSON strings like `"1250.00"` or
//! numbers) into `rust_decimal::Decimal`, never `f64`. See `README.md` for every helper.
mod calc;
mod context;
mod decimal;
mod engine;
mod helpers;

pub use context::{Table, context_value};
pub use engine::{EngineOptions, MiniJinjaEngine};
