//! The released binary as a process: the CLI, `serve` and `api` + `worker` on MongoDB, and a MongoDB outage.
//!
//! One test binary per area (linking the service once, not once per suite); the
//! modules are the former per-suite binaries.

#[path = "../common/mod.rs"]
mod common;

mod cli;
mod console;
mod hardening;
mod lifecycle;
mod mongo_outage;
mod original_settings;
mod rate_limit;
mod secrets;
mod telemetry;
