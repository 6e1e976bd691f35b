//! The integration tests of `rabbitmq`: one test binary (each module was a binary of
//! its own; one link instead of several on every edit).
mod binding;
mod common;
mod jobs;
mod publisher;
mod tail;
mod topology;
