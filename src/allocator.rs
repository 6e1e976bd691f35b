//! The process's memory allocator, chosen by its role: jemalloc (`tikv-jemallocator`) for the
//! service, glibc's for the template sandbox and PDF children.
//!
//! Why two: the service's request path allocates and frees many small blocks on several
//! threads and hands some to others (spans to the export thread, rows to the artifact
//! writer). Under glibc, P3's request path took 5.3 µs of CPU in process against 4.0 under
//! jemalloc, and 10.4 µs against 7.0 with telemetry on (glibc's arena locks), issue 34
//! (docs/src/compatibility/known-limits.md). The children were measured and bounded with
//! glibc: their memory limit is `RLIMIT_DATA` on a heap `heap::configure_sandbox_child` tunes,
//! and their CPU per report with those settings; they keep it.
//!
//! The choice is made once, at the process's first allocation, from its command line
//! (`/proc/self/cmdline`, read with no allocation): argument 1 is `template-sandbox` or
//! `pdf-render` for a child. Every later allocation, free and resize goes to the allocator
//! chosen then, so no block ever reaches an allocator that did not make it. Without `/proc`
//! the process keeps glibc's.
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU8, Ordering};

/// The allocator the process's `#[global_allocator]` MUST be (in every binary that runs the
/// service: `reporter`, and the bench's in-process tools).
pub struct RoleAllocator;

/// Not chosen yet.
const UNDECIDED: u8 = 0;
/// One thread is reading the command line.
const CHOOSING: u8 = 1;
/// jemalloc: the service.
const JEMALLOC: u8 = 2;
/// glibc's: a child, or no `/proc`.
const SYSTEM: u8 = 3;

static CHOSEN: AtomicU8 = AtomicU8::new(UNDECIDED);

/// The arguments a child is started with (`wiring::SANDBOX_SUBCOMMAND`, `PDF_SUBCOMMAND`).
const CHILD_SUBCOMMANDS: [&[u8]; 2] = [b"template-sandbox", b"pdf-render"];

/// True when this process runs jemalloc (the service): what `heap` asks before it trims.
pub fn is_jemalloc() -> bool {
    chosen() == JEMALLOC
}

/// The allocator this process runs, as the service's banner names it.
pub fn name() -> &'static str {
    if is_jemalloc() {
        "jemalloc"
    } else {
        "the system's (glibc)"
    }
}

#[inline]
fn chosen() -> u8 {
    match CHOSEN.load(Ordering::Acquire) {
        UNDECIDED | CHOOSING => choose(),
        chosen => chosen,
    }
}

/// Chooses once; a thread that finds another choosing waits for its answer.
#[cold]
fn choose() -> u8 {
    if CHOSEN
        .compare_exchange(UNDECIDED, CHOOSING, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
    {
        let chosen = match started_as_child() {
            Some(false) => JEMALLOC,
            Some(true) | None => SYSTEM,
        };
        CHOSEN.store(chosen, Ordering::Release);
        return chosen;
    }
    loop {
        match CHOSEN.load(Ordering::Acquire) {
            UNDECIDED | CHOOSING => std::hint::spin_loop(),
            chosen => return chosen,
        }
    }
}

/// Whether argument 1 of this process names a child's subcommand; `None` when the command
/// line cannot be read. MUST NOT allocate (it runs inside the first allocation).
fn started_as_child() -> Option<bool> {
    let mut buf = [0u8; 512];
    // SAFETY: the path is a NUL-terminated literal; the descriptor is closed below.
    let fd = unsafe {
        libc::open(
            c"/proc/self/cmdline".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: `buf` is writable for its whole length; `fd` is open.
    let read = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    // SAFETY: `fd` is ours and closed once.
    unsafe { libc::close(fd) };
    let read = usize::try_from(read).ok()?;
    Some(is_child_command_line(buf.get(..read)?))
}

/// Whether a NUL-separated command line's argument 1 is a child's subcommand.
fn is_child_command_line(cmdline: &[u8]) -> bool {
    cmdline
        .split(|b| *b == 0)
        .nth(1)
        .is_some_and(|arg| CHILD_SUBCOMMANDS.contains(&arg))
}

// SAFETY: every call goes to the allocator chosen before the first allocation, which made
// every block this process frees or resizes; both allocators uphold `GlobalAlloc`'s contract.
unsafe impl GlobalAlloc for RoleAllocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe {
            if chosen() == JEMALLOC {
                tikv_jemallocator::Jemalloc.alloc(layout)
            } else {
                System.alloc(layout)
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe {
            if chosen() == JEMALLOC {
                tikv_jemallocator::Jemalloc.alloc_zeroed(layout)
            } else {
                System.alloc_zeroed(layout)
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees; `ptr` came from the same allocator.
        unsafe {
            if chosen() == JEMALLOC {
                tikv_jemallocator::Jemalloc.dealloc(ptr, layout)
            } else {
                System.dealloc(ptr, layout)
            }
        }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees; `ptr` came from the same allocator.
        unsafe {
            if chosen() == JEMALLOC {
                tikv_jemallocator::Jemalloc.realloc(ptr, layout, new_size)
            } else {
                System.realloc(ptr, layout, new_size)
            }
        }
    }
}

/// Returns the free pages of every jemalloc arena to the operating system
/// (`arena.<MALLCTL_ARENAS_ALL>.purge`). Blocking: a walk of the arenas. Nothing when the
/// process runs glibc's allocator.
pub fn purge_jemalloc() -> bool {
    if !is_jemalloc() {
        return false;
    }
    // "arena.4096.purge": 4096 is jemalloc's MALLCTL_ARENAS_ALL.
    let name = c"arena.4096.purge";
    // SAFETY: a NUL-terminated name; the purge reads and writes no value.
    let rc = unsafe {
        tikv_jemalloc_sys::mallctl(
            name.as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        )
    };
    rc == 0
}

#[cfg(test)]
mod tests {
    use super::is_child_command_line;

    #[test]
    fn a_child_is_known_by_argument_one() {
        assert!(is_child_command_line(
            b"/usr/bin/reporter\0template-sandbox\0--heap=1\0"
        ));
        assert!(is_child_command_line(b"reporter\0pdf-render\0"));
        assert!(!is_child_command_line(b"reporter\0serve\0"));
        assert!(!is_child_command_line(b"reporter\0"));
        assert!(!is_child_command_line(
            b"reporter\0serve\0template-sandbox\0"
        ));
        assert!(!is_child_command_line(b"reporter\0template-sandboxes\0"));
        assert!(!is_child_command_line(b""));
    }
}
