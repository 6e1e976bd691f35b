//! The integration tests of `ammonia`: one test binary (each module was a binary of
//! its own; one link instead of several on every edit).
mod browser_parse;
mod sanitize;
