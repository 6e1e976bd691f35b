//! Chaos: the event broker fails under load.
//!
//! Its scenarios run side by side, as they were written to, and never beside another family's
//! (each takes [`crate::common::chaos::family`] first). Shared helpers are in `tests/common`.

mod broker;
