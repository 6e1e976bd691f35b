//! The child's identity: an unprivileged user without capabilities.
use rustix::process::{Gid, Uid};
use rustix::thread::{CapabilitySet, CapabilitySets};
use std::io;

/// The user a child of a root service runs as (`nobody`).
pub const NOBODY: u32 = 65534;
/// The group a child of a root service runs as (`nogroup`).
pub const NOGROUP: u32 = 65534;

/// Who the child became.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Identity {
    pub uid: u32,
    pub gid: u32,
    /// Effective, permitted, inheritable and ambient sets are empty.
    pub capabilities_dropped: bool,
    /// The bounding set is empty.
    pub bounding_set_dropped: bool,
}

/// Becomes unprivileged: when running as root, empties the capability bounding set, drops
/// the supplementary groups and takes [`NOGROUP`] and [`NOBODY`] as real, effective and
/// saved ids (which empties the other capability sets); in every case clears the ambient set
/// and empties the effective, permitted and inheritable sets. A root without the capability
/// a step needs (`CAP_SETPCAP`, `CAP_SETGID`, `CAP_SETUID`: a container that dropped them)
/// skips that step, and the report says so (the child then stays root, without capabilities).
///
/// MUST run while the process has a single thread (the calls apply to the calling thread)
/// and before the parent-death signal is armed (a change of user clears it).
pub(crate) fn become_unprivileged() -> io::Result<Identity> {
    let root = rustix::process::geteuid().is_root();
    let bounding_set_dropped = root && permitted(empty_bounding_set())?;
    if root {
        permitted(switch_user())?;
    }
    rustix::thread::clear_ambient_capability_set()?;
    rustix::thread::set_capabilities(
        None,
        CapabilitySets {
            effective: CapabilitySet::empty(),
            permitted: CapabilitySet::empty(),
            inheritable: CapabilitySet::empty(),
        },
    )?;
    let left = rustix::thread::capabilities(None)?;
    Ok(Identity {
        uid: rustix::process::geteuid().as_raw(),
        gid: rustix::process::getegid().as_raw(),
        capabilities_dropped: left.effective.is_empty()
            && left.permitted.is_empty()
            && left.inheritable.is_empty(),
        bounding_set_dropped,
    })
}

/// `Ok(true)` when `step` was done, `Ok(false)` when the process lacked the capability it
/// needs (`EPERM`).
fn permitted(step: rustix::io::Result<()>) -> io::Result<bool> {
    match step {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::PERM) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Drops the supplementary groups, then takes [`NOGROUP`] and [`NOBODY`] (needs
/// `CAP_SETGID` and `CAP_SETUID`).
fn switch_user() -> rustix::io::Result<()> {
    rustix::thread::set_thread_groups(&[])?;
    let gid = Gid::from_raw(NOGROUP);
    rustix::thread::set_thread_res_gid(gid, gid, gid)?;
    let uid = Uid::from_raw(NOBODY);
    rustix::thread::set_thread_res_uid(uid, uid, uid)
}

/// Drops every capability from the bounding set (needs `CAP_SETPCAP`).
fn empty_bounding_set() -> rustix::io::Result<()> {
    for bit in 0..64u32 {
        let cap = CapabilitySet::from_bits_retain(1 << bit);
        match rustix::thread::remove_capability_from_bounding_set(cap) {
            Ok(()) => {}
            // Past the kernel's last capability.
            Err(rustix::io::Errno::INVAL) => return Ok(()),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
