//! Chaos: a scale-out loses a worker and an API mid-load.
//!
//! Each chaos family is a test binary of its own, so one family's load and faults cannot
//! perturb another's timing (their scenarios run in parallel within the family only, as they
//! were written to). Shared helpers are in `tests/common`.

#[path = "../common/mod.rs"]
mod common;

mod scale_out;
