//! [`Limits`]: the resource limits and the priority a child sets on itself.
use rustix::process::{Resource, Rlimit, setrlimit};
use std::io;

/// The children's priority (nice 19, the lowest): a child's work yields the CPU to the
/// service, so the API stays fast while templates run. On a host other processes keep busy a
/// child then waits for a CPU; its bound does not count that wait ([`RunClock`](crate::RunClock)).
/// Nice 10 was tried: eight concurrent reports were no faster, and its one run on a loaded host
/// saw `/health` at 228 ms beside an endless template (that run's test wrote the service's log
/// to a file, which a later run suggests may be the cause).
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

/// Sets the children's priority ([`NICENESS`]) and the rlimits of `limits`, plus no core dumps and no file
/// writes (`RLIMIT_FSIZE` 0: a write past 0 bytes is `SIGXFSZ`). Soft and hard limits are
/// equal, except the CPU's (hard 2 s above soft).
pub(crate) fn apply(limits: &Limits) -> io::Result<()> {
    lower_priority()?;
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

/// Takes the priority down to [`NICENESS`], never up: a child of a service that already runs
/// at a lower priority keeps that one (raising it would need a privilege). An absolute value,
/// not an increment: the child may inherit [`NICENESS`] from the thread that forked it.
fn lower_priority() -> io::Result<()> {
    let current = rustix::process::getpriority_process(None)?;
    if current < NICENESS {
        rustix::process::setpriority_process(None, NICENESS)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::process::{getpriority_process, setpriority_process};

    /// Linux keeps a priority per thread: each case runs on its own thread.
    fn on_a_thread_at(start: i32) -> i32 {
        std::thread::spawn(move || {
            setpriority_process(None, start).expect("lower this thread");
            lower_priority().expect("lowered");
            getpriority_process(None).expect("read")
        })
        .join()
        .expect("thread")
    }

    #[test]
    fn the_priority_is_set_as_a_value_and_never_raised() {
        let current = getpriority_process(None).expect("read");
        assert_eq!(on_a_thread_at(current.max(0)), NICENESS.max(current));
        // Inherited at the children's priority (the spawner's): it stays there.
        assert_eq!(on_a_thread_at(NICENESS), NICENESS);
        // A service already below it keeps its own (19 is the lowest there is).
        assert_eq!(on_a_thread_at(19), 19);
    }
}
