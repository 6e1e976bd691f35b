//! The integration tests of `pongo2`: one test binary (each module was a binary of
//! its own; one link instead of several on every edit).
mod examples;
mod faults;
mod fuzz;
mod golden;
mod hostile;
