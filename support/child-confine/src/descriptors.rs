//! The child's descriptors: only its pipes survive.
use std::io;

/// Closes every descriptor from 3 up: what the service held open without `O_CLOEXEC` when it
/// forked is inherited, and the child keeps only stdin, stdout and stderr (its pipes).
///
/// MUST run first in the child, before anything in it opens a descriptor (nothing owns the
/// descriptors it closes).
pub(crate) fn close_inherited() -> io::Result<()> {
    // SAFETY: close_range only closes descriptors; at this point of the child nothing in the
    // process refers to any of them (the standard library opens none before `main`).
    let closed = unsafe { libc::close_range(3, libc::c_uint::MAX, 0) };
    if closed == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
