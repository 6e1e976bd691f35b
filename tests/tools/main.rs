//! External tools and corpora against the service: schemathesis, generated SDK clients, the golden corpus through real data sources, hostile templates.
//!
//! One test binary per area (linking the service once, not once per suite); the
//! modules are the former per-suite binaries.

#[path = "../common/mod.rs"]
mod common;

mod api_contract;
mod golden_corpus;
mod hostile_templates;
mod sdk_clients;
