//! How the service's heap gives memory back to the operating system.
//!
//! glibc's allocator serves a large buffer from `mmap` (returned on free) only below a
//! threshold that it raises, by default, to the size of every such buffer freed, up to 32 MiB:
//! after the first large report, the next report's multi-megabyte buffers (the render
//! context, the artifact) come from the arenas instead, and freed arena memory is kept for
//! reuse. It also keeps one arena per thread that allocated. So without these two measures RSS
//! climbs with every large report although nothing is retained (measured with P6: RSS after
//! ten 100k-row reports 1.24–1.44× RSS after one; with both, 1.01×).
use std::time::Duration;

/// Buffers from this size up are mapped on their own and unmapped when freed.
const MMAP_THRESHOLD: i32 = 128 * 1024;

/// Jobs that ran at least this long are followed by a trim: a short job allocates too little
/// to matter, and a trim costs a walk of every arena.
pub const TRIM_AFTER: Duration = Duration::from_millis(100);

/// Fixes glibc's mmap threshold at 128 KiB (its initial value) so that it no longer grows
/// with the buffers freed. MUST run before the process starts its threads; an operator's
/// own `MALLOC_MMAP_THRESHOLD_` is kept. Elsewhere than glibc it does nothing.
pub fn configure() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_none() {
        // SAFETY: mallopt only sets an allocator parameter; called before any other thread
        // exists, it races with nothing.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        }
    }
}

/// Least growth of a sandbox child's heap: its render grows the heap by tens of MiB in small
/// allocations (the context's tree, the output), so the heap is extended in a few large steps.
const SANDBOX_TOP_PAD: i32 = 4 * 1024 * 1024;

/// Buffers a sandbox child maps on their own, from this size up: below it, a chunk of rows
/// (256 KiB) and a piece of output (256 KiB) come from the heap and reuse the memory of the
/// ones freed before them. Setting [`SANDBOX_TOP_PAD`] fixes glibc's threshold at its initial
/// 128 KiB, so each of them was a fresh mapping whose pages the kernel zeroes on first write:
/// a tenth of a 100,000-row CSV render's CPU (`clear_page_erms`, page faults; `perf`).
const SANDBOX_MMAP_THRESHOLD: i32 = 4 * 1024 * 1024;

/// Free memory at the top of a sandbox child's heap that is kept rather than returned:
/// the child exits after one render, so returning memory it will allocate again next chunk
/// only costs page faults. Kept or returned, the heap counts against `RLIMIT_DATA` the same
/// way as mappings do, so the memory bound is unchanged.
const SANDBOX_TRIM_THRESHOLD: i32 = 64 * 1024 * 1024;

/// Heap settings of a template sandbox child, which parses and renders on a thread of its own
/// (for the stack size), and of a PDF child (`reporter pdf-render`, whose layout runs on a
/// thread of its own too): that thread allocates from the main arena, grown by `brk` in steps
/// of at least [`SANDBOX_TOP_PAD`], instead of a thread arena, which glibc extends with one
/// `mprotect` call per page needed (7,382 calls for one 100,000-row CSV render); buffers below
/// [`SANDBOX_MMAP_THRESHOLD`] come from that heap and freed memory is kept up to
/// [`SANDBOX_TRIM_THRESHOLD`]. The memory limit still holds: `RLIMIT_DATA` bounds `brk` as it bounds mappings, and an allocation it
/// refuses fails as before (at most one step early). MUST run before the child starts a
/// thread. Elsewhere than glibc it does nothing.
pub fn configure_sandbox_child() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; called before any other thread exists,
    // it races with nothing.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
        libc::mallopt(libc::M_TOP_PAD, SANDBOX_TOP_PAD);
        libc::mallopt(libc::M_MMAP_THRESHOLD, SANDBOX_MMAP_THRESHOLD);
        libc::mallopt(libc::M_TRIM_THRESHOLD, SANDBOX_TRIM_THRESHOLD);
    }
}

/// Releases the free pages of every allocator arena (on the blocking pool: the walk takes a few
/// milliseconds on a large heap). Elsewhere than glibc it does nothing.
pub async fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim has no preconditions; it is thread-safe (it takes each arena's
        // lock) and only returns free pages, never memory in use.
        let trimmed = tokio::task::spawn_blocking(|| unsafe { libc::malloc_trim(0) }).await;
        tracing::debug!(
            released = matches!(trimmed, Ok(1)),
            "freed heap trimmed after a large job"
        );
    }
}
