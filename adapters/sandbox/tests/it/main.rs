//! The integration tests of `sandbox`: one test binary (each module was a binary of
//! its own; one link instead of several on every edit).
mod confinement;
mod pool;

use reporter_adapter_sandbox::PoolConfig;
use std::time::Duration;

/// A pool of `size` scripted children (`sandbox-fixture`) with bounds the tests stay inside.
fn fixture_config(name: &'static str, size: usize) -> PoolConfig {
    PoolConfig {
        name,
        exe: env!("CARGO_BIN_EXE_sandbox-fixture").into(),
        args: Vec::new(),
        size,
        memory_bytes: 128 * 1024 * 1024,
        cpu_seconds: 2,
        stack_bytes: 8 * 1024 * 1024,
        max_output_bytes: 1024 * 1024,
        time_bound: Duration::from_secs(5),
        queue_timeout: Some(Duration::from_secs(10)),
        start_timeout: Duration::from_secs(10),
    }
}
