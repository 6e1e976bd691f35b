//! The service's integration tests: one test binary (one link of the service on every edit),
//! one module per area, and the chaos scenarios apart (`tests/chaos`).
//!
//! - `api`: end-to-end suites over HTTP, one module per resource or concern (in memory; on
//!   MongoDB with `REPORTER_E2E_BACKEND=mongo`: `cargo test -p reporter --test suite api::`);
//! - `processes`: the released binary as a process (`serve`, `api` + `worker`, the CLI);
//! - `tools`: external tools and corpora against the service (schemathesis, SDK clients, the
//!   golden corpus, hostile templates).
#![recursion_limit = "256"]

mod common;

mod api;
mod processes;
mod tools;
