//! Process confinement shared by Reporter's child processes (the template sandbox's children
//! and the native PDF child). Adapters MUST NOT import each other; both import this crate,
//! which depends on no adapter, no driver and no runtime (only the kernel's interfaces, and
//! a runtime-free channel for [`ReapedChild`]'s status).
//!
//! - [`confine`]: what a child does to itself before it reads any input, in order: closes
//!   every inherited descriptor but stdin, stdout and stderr; sets its rlimits ([`Limits`]:
//!   CPU seconds, data segment, address space, stack, open files, no core dumps, no file
//!   writes) and a low priority; becomes unprivileged (`nobody`/`nogroup` under a root
//!   service, no capabilities, empty bounding set); arms a parent-death `SIGKILL`; sets
//!   `no_new_privs`; applies a Landlock ruleset (no filesystem access at all, no TCP bind or
//!   connect, signals and abstract Unix sockets scoped); installs a seccomp filter (no
//!   socket, exec, new process or change to a file: `EPERM`).
//! - [`Confinement`]: what the kernel enforces, as the child reports it to its parent
//!   ([`Confinement::missing`] names what is not).
//! - [`RunClock`]: the time a child's bound charges it, without the time it waited for a
//!   CPU (the scheduler's statistics of its threads).
//! - [`ReapedChild`] (the parent's side): a child waited for and reaped on a thread of its
//!   own, never on a worker of the async runtime (reaping runs the kernel's clean-up of the
//!   child's `/proc` entries in the reaping thread, at times for a hundred milliseconds and
//!   more).
//! - [`Death`]: how a child that gave no answer died, from its exit status and the tail of
//!   its stderr ([`StderrTail`]).
mod confine;
mod confinement;
mod death;
mod descriptors;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
mod identity;
mod limits;
mod reaped_child;
mod ruleset;
mod run_clock;
mod stderr_tail;
mod syscall_filter;

pub use confine::{ConfineError, confine};
pub use confinement::{Confinement, Enforcement, LastReport};
pub use death::Death;
pub use identity::{NOBODY, NOGROUP};
pub use limits::{Limits, NICENESS};
pub use reaped_child::ReapedChild;
pub use run_clock::RunClock;
pub use stderr_tail::StderrTail;
pub use syscall_filter::FilterError;
