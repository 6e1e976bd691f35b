//! The integration tests of `pdf`: one test binary (each module was a binary of
//! its own; one link instead of several on every edit).
mod chromium;
mod common;
mod confinement;
mod native;
