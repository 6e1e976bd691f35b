//! The template builder: a catalogue of blocks and filters, and blocks → template code in the
//! original's dialect, with validation. A pure compiler: no I/O, no runtime; the application
//! (`reporter`'s `app::builder`) runs its stages with the ones that need I/O (data sources'
//! schemas, the sandbox's parse) and maps its refusals to error codes.
//!
//! - [`catalog`]: block types, their properties and labels; the filter catalogue; [`Locale`].
//! - [`model`]: blocks as sent ([`BlockSpec`]) and as validated ([`model::Node`]).
//! - [`expr`]: the expression, path and name grammar of block properties.
//! - [`validate`]: structure and limits; [`fields`]: the data a tree reads.
//! - [`codegen`] and [`escape`]: code generation, where every user string is escaped.
//! - [`stages`]: the pure stages of the check, in order; [`refusal`]: findings as answers,
//!   in the asked language.
//!
//! Validation runs in stages, each only when the previous found nothing: limits (block count,
//! depth), structure (every block and property), names and data sources (no bound name is a
//! data source's; every data source, table and field exists, as at upload), the template as a
//! whole (script, output format, size — the upload's rules), the sandbox's parse and analysis
//! of the code (the upload's: its bounds on nesting, chains, time and memory).
pub mod catalog;
pub mod codegen;
pub mod escape;
pub mod expr;
pub mod fields;
pub mod messages;
pub mod model;
pub mod refusal;
pub mod stages;
pub mod validate;

pub use catalog::{BlockDefinition, FilterDefinition, Locale, PropertyDef};
pub use messages::{Class, Finding, FormatIssue, Msg};
pub use model::{BlockSpec, ElifSpec, FilterSpec};
pub use refusal::{Refusal, RefusalCode};
pub use validate::{MAX_BLOCKS, MAX_DEPTH};

use reporter_ports::template::OutputFormat;

/// A problem found in the blocks, in the requested language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockProblem {
    /// Block id (`""` for the template as a whole).
    pub block_id: String,
    /// Property.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

/// The output format `raw` names: `Ok(None)` when absent or blank, `Err(raw)` (trimmed) when
/// it names none.
pub fn parse_format(raw: Option<&str>) -> Result<Option<OutputFormat>, String> {
    match raw.map(str::trim).filter(|f| !f.is_empty()) {
        None => Ok(None),
        Some(f) => OutputFormat::parse(f).map(Some).ok_or_else(|| f.to_owned()),
    }
}

/// Blocks from JSON (tests).
#[cfg(test)]
pub(crate) fn specs_from_json(v: serde_json::Value) -> Vec<BlockSpec> {
    serde_json::from_value(v).expect("block specs")
}
