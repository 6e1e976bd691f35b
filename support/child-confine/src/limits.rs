//! [`Limits`]: the resource limits and the priority a child sets on itself.
use rustix::process::{Resource, Rlimit, setrlimit};
use std::io;

/// Priority increment (to the lowest priority): a child's work yields the CPU to the service.
pub const NICENESS: i32 = 19;

/// The bounds a child applies to itself, and the parent it must die with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// CPU seconds: `RLIMIT_CPU` soft limit (`SIGXCPU`), the hard limit 2 s later (`SIGKILL`).
    pub cpu_seconds: u64,
    /// `RLIMIT_DATA` (bytes): the heap and the private mappings (thread stacks) together.
    pub data_bytes: u64,
    /// `RLIMIT_AS` (bytes): the whole address space (code, libraries, reservations).
    pub address_space_bytes: u64,
    /// `RLIMIT_STACK` (bytes); `None` leaves the inherited limit.
    pub stack_bytes: Option<u64>,
    /// `RLIMIT_NOFILE`: most open descriptors (the pipes and a few for the runtime).
    pub open_files: u64,
    /// The parent's pid: the child exits at once if its parent is already gone.
    pub parent_pid: u32,
}

impl Limits {
    /// The default `open_files`: stdin, stdout, stderr and a few for the runtime.
    pub const OPEN_FILES: u64 = 16;
}

/// Sets the lowest priority and the rlimits of `limits`, plus no core dumps and no file
/// writes (`RLIMIT_FSIZE` 0: a write past 0 bytes is `SIGXFSZ`). Soft and hard limits are
/// equal, except the CPU's (hard 2 s above soft).
pub(crate) fn apply(limits: &Limits) -> io::Result<()> {
    rustix::process::nice(NICENESS)?;
    let fixed = |n: u64| Rlimit {
        current: Some(n),
        maximum: Some(n),
    };
    setrlimit(Resource::Core, fixed(0))?;
    setrlimit(Resource::Fsize, fixed(0))?;
    setrlimit(Resource::Nofile, fixed(limits.open_files))?;
    if let Some(stack) = limits.stack_bytes {
        setrlimit(Resource::Stack, fixed(stack))?;
    }
    setrlimit(
        Resource::Cpu,
        Rlimit {
            current: Some(limits.cpu_seconds),
            maximum: Some(limits.cpu_seconds.saturating_add(2)),
        },
    )?;
    setrlimit(Resource::Data, fixed(limits.data_bytes))?;
    setrlimit(Resource::As, fixed(limits.address_space_bytes))?;
    Ok(())
}
