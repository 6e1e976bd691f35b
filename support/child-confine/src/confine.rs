//! [`confine`]: the steps a child takes, in order, before it reads anything.
use crate::confinement::Confinement;
use crate::limits::{self, Limits};
use crate::syscall_filter::FilterError;
use crate::{descriptors, identity, ruleset, syscall_filter};
use std::io;

/// Why a child could not confine itself (it then exits without answering).
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
/// 2. sets the rlimits of `limits` (no core, no file writes, few descriptors, stack, CPU,
///    data, address space) and a low priority ([`NICENESS`](crate::NICENESS));
/// 3. becomes unprivileged (`nobody`/`nogroup` when root, no capabilities);
/// 4. arms the parent-death signal `SIGKILL` (a change of user clears it) and checks the
///    parent is still the one in `limits`;
/// 5. sets `no_new_privs`;
/// 6. applies the Landlock ruleset (no filesystem access at all, no TCP bind or connect,
///    signals and abstract Unix sockets scoped to the child);
/// 7. installs the seccomp filter last (no socket, exec, new process, change to a file).
///
/// MUST run first in the child: before it opens a descriptor, starts a thread or reads any
/// input (the steps apply to the calling thread; threads started later inherit them). A
/// mechanism the kernel lacks is reported in the [`Confinement`], not an error; any other
/// failure is, and the child MUST then exit without doing its work.
pub fn confine(limits: &Limits) -> Result<Confinement, ConfineError> {
    descriptors::close_inherited().map_err(ConfineError::Descriptors)?;
    limits::apply(limits).map_err(ConfineError::Limits)?;
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
