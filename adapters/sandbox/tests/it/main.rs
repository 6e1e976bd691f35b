//! The integration tests of `sandbox`: one test binary (each module was a binary of
//! its own; one link instead of several on every edit).
mod confinement;
mod pool;
