//! The released binary as a process: the CLI, `serve` and `api` + `worker` on MongoDB, and a MongoDB outage.

mod cli;
mod console;
mod hardening;
mod lifecycle;
mod mongo_outage;
mod original_settings;
mod rate_limit;
mod secrets;
mod telemetry;
