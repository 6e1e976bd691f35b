//! [`confine`]: the steps a child takes, in order, before it reads anything.
use crate::confinement::Confinement;
use crate::limits::ChildLimits;
use crate::syscall_filter::FilterError;
use crate::{descriptors, identity, ruleset, syscall_filter};
use rustix::process::{Resource, Rlimit, setrlimit};
use std::io;

/// Most open file descriptors (stdin, stdout, stderr and a few for the runtime).
const MAX_OPEN_FILES: u64 = 16;
/// Priority increment (to the lowest priority): template work yields the CPU to the service.
const NICENESS: i32 = 19;

/// Why a child could not confine itself (it then exits without saying hello).
#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    /// Closing the inherited descriptors failed.
    #[error("closing inherited descriptors: {0}")]
    Descriptors(#[source] io::Error),
    /// A resource limit or the priority could not be set.
    #[error("resource limits: {0}")]
    Limits(#[source] io::Error),
    /// The change to an unprivileged user or the capability drop failed.
    #[error("dropping privileges: {0}")]
    Identity(#[source] io::Error),
    /// The parent-death signal or `no_new_privs` could not be set.
    #[error("process attributes: {0}")]
    Process(#[source] io::Error),
    /// The parent died before the parent-death signal was armed.
    #[error("the parent process is gone")]
    ParentGone,
    /// The Landlock ruleset could not be applied (a kernel without Landlock is no error).
    #[error("landlock: {0}")]
    Landlock(#[from] landlock::RulesetError),
    /// The seccomp filter could not be installed (a kernel without seccomp is no error).
    #[error(transparent)]
    Seccomp(#[from] FilterError),
}

/// Confines the current process and reports what the kernel enforces. In this order:
/// 1. closes every inherited descriptor but stdin, stdout and stderr;
/// 2. sets the rlimits of `limits` (no core, no file writes, 16 descriptors, stack, CPU,
///    data, address space) and the lowest priority;
/// 3. becomes unprivileged ([`identity`]: `nobody`/`nogroup` when root, no capabilities);
/// 4. arms the parent-death signal (a change of user clears it) and checks the parent is
///    still the one in `limits`;
/// 5. sets `no_new_privs`;
/// 6. applies the Landlock ruleset ([`ruleset`]: no filesystem access, no TCP, scoped);
/// 7. installs the seccomp filter ([`syscall_filter`]) last.
///
/// MUST run first in the child (before it opens a descriptor, starts a thread or reads any
/// input). A mechanism the kernel lacks is reported in the [`Confinement`], not an error;
/// any other failure is.
pub fn confine(limits: &ChildLimits) -> Result<Confinement, ConfineError> {
    descriptors::close_inherited().map_err(ConfineError::Descriptors)?;
    set_limits(limits).map_err(ConfineError::Limits)?;
    let who = identity::become_unprivileged().map_err(ConfineError::Identity)?;
    watch_parent(limits.parent_pid)?;
    rustix::thread::set_no_new_privs(true).map_err(|e| ConfineError::Process(e.into()))?;
    let landlock = ruleset::restrict()?;
    let seccomp = syscall_filter::install()?;
    Ok(Confinement {
        uid: who.uid,
        gid: who.gid,
        capabilities_dropped: who.capabilities_dropped,
        bounding_set_dropped: who.bounding_set_dropped,
        landlock_abi: landlock.abi,
        landlock: landlock.enforcement,
        seccomp,
    })
}

/// The child dies with its parent, and exits at once if the parent already died.
fn watch_parent(parent_pid: u32) -> Result<(), ConfineError> {
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
        .map_err(|e| ConfineError::Process(e.into()))?;
    // The parent may have died before the signal was armed: then nobody will read the answer.
    let parent = rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get());
    if u32::try_from(parent).ok() != Some(parent_pid) {
        return Err(ConfineError::ParentGone);
    }
    Ok(())
}

/// The rlimits of `limits` and the lowest priority.
fn set_limits(limits: &ChildLimits) -> io::Result<()> {
    rustix::process::nice(NICENESS)?;
    let fixed = |n: u64| Rlimit {
        current: Some(n),
        maximum: Some(n),
    };
    setrlimit(Resource::Core, fixed(0))?;
    setrlimit(Resource::Fsize, fixed(0))?;
    setrlimit(Resource::Nofile, fixed(MAX_OPEN_FILES))?;
    setrlimit(Resource::Stack, fixed(limits.stack_bytes))?;
    setrlimit(
        Resource::Cpu,
        Rlimit {
            current: Some(limits.cpu_seconds),
            maximum: Some(limits.cpu_seconds + 2),
        },
    )?;
    // The engine thread's stack is a private mapping too: the heap keeps `memory_bytes`.
    setrlimit(
        Resource::Data,
        fixed(limits.memory_bytes.saturating_add(limits.stack_bytes)),
    )?;
    setrlimit(
        Resource::As,
        fixed(
            limits
                .memory_bytes
                .saturating_add(limits.stack_bytes)
                .saturating_add(ChildLimits::ADDRESS_SPACE_SLACK),
        ),
    )?;
    Ok(())
}
