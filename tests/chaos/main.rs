//! Chaos: the broker, the processes and a scale-out fail under load; nothing is lost (private nodes, bounded, self-restoring).
//!
//! One test binary per area (linking the service once, not once per suite); the
//! modules are the former per-suite binaries.

#[path = "../common/mod.rs"]
mod common;

mod broker;
mod processes;
mod scale_out;
