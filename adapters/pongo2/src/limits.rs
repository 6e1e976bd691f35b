//! The bounds of one parse or render: fuel, dynamic depth, memory and output.
//!
//! Memory is accounted *live*: every string, list or map a template creates is reserved here
//! BEFORE it is allocated ([`Budget::reserve`]) and wrapped in a [`Tracked`] box that gives its
//! bytes back when the last reference to it is dropped. The counter is thread-local because a
//! render is synchronous and single-threaded: [`MemoryScope`] installs a fresh counter for the
//! duration of one render and restores the previous one afterwards.
use reporter_ports::ports::{RenderError, RenderLimits};
use std::cell::Cell;
use std::ops::Deref;

thread_local! {
    static LIVE_BYTES: Cell<usize> = const { Cell::new(0) };
}

/// Bytes of template-created values alive on this thread.
fn live() -> usize {
    LIVE_BYTES.with(Cell::get)
}

fn add_live(n: usize) {
    LIVE_BYTES.with(|c| c.set(c.get().saturating_add(n)));
}

fn sub_live(n: usize) {
    LIVE_BYTES.with(|c| c.set(c.get().saturating_sub(n)));
}

/// Resets the live-byte counter for one render and restores the previous value on drop.
pub(crate) struct MemoryScope {
    saved: usize,
}

impl MemoryScope {
    pub(crate) fn enter() -> Self {
        let saved = LIVE_BYTES.with(|c| c.replace(0));
        Self { saved }
    }
}

impl Drop for MemoryScope {
    fn drop(&mut self) {
        LIVE_BYTES.with(|c| c.set(self.saved));
    }
}

/// A value whose bytes are counted against the render's memory budget while it is alive.
#[derive(Debug)]
pub struct Tracked<T> {
    bytes: usize,
    inner: T,
}

impl<T> Tracked<T> {
    /// Wraps `inner`, whose `bytes` were already reserved with [`Budget::reserve`].
    pub(crate) fn adopt(inner: T, bytes: usize) -> Self {
        Self { bytes, inner }
    }

    /// Wraps a value created outside any render budget (e.g. constants); counts nothing.
    pub(crate) fn untracked(inner: T) -> Self {
        add_live(0);
        Self { bytes: 0, inner }
    }
}

impl<T> Deref for Tracked<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T> Drop for Tracked<T> {
    fn drop(&mut self) {
        sub_live(self.bytes);
    }
}

/// Fuel units one allocated or copied byte costs (one unit per this many bytes).
const BYTES_PER_FUEL: usize = 64;

/// The running budget of one render.
#[derive(Debug)]
pub(crate) struct Budget {
    fuel_left: u64,
    pub(crate) limits: RenderLimits,
    depth: usize,
    max_depth: usize,
}

impl Budget {
    pub(crate) fn new(limits: &RenderLimits) -> Self {
        Self {
            fuel_left: limits.fuel,
            limits: *limits,
            depth: 0,
            // Dynamic depth: block and expression nesting times macro levels, capped so that
            // a render never needs more than a few hundred KiB of stack.
            max_depth: limits
                .max_nesting_depth
                .saturating_mul(4)
                .saturating_add(64)
                .min(2048),
        }
    }

    /// Charges `units` of fuel.
    pub(crate) fn fuel(&mut self, units: u64) -> Result<(), RenderError> {
        if self.fuel_left < units {
            self.fuel_left = 0;
            return Err(RenderError::FuelExhausted);
        }
        self.fuel_left -= units;
        Ok(())
    }

    /// Charges fuel for processing `bytes` bytes (copying, scanning).
    pub(crate) fn fuel_bytes(&mut self, bytes: usize) -> Result<(), RenderError> {
        self.fuel((bytes / BYTES_PER_FUEL) as u64)
    }

    /// Reserves `bytes` of template-created memory; MUST be called before the allocation.
    pub(crate) fn reserve(&mut self, bytes: usize) -> Result<(), RenderError> {
        let limit = self.limits.max_memory_bytes;
        if live().saturating_add(bytes) > limit {
            return Err(RenderError::MemoryLimit(limit));
        }
        self.fuel_bytes(bytes)?;
        add_live(bytes);
        Ok(())
    }

    /// Checks, without reserving, that `bytes` more would fit (for transient buffers).
    pub(crate) fn check_transient(&mut self, bytes: usize) -> Result<(), RenderError> {
        let limit = self.limits.max_memory_bytes;
        if live().saturating_add(bytes) > limit {
            return Err(RenderError::MemoryLimit(limit));
        }
        self.fuel_bytes(bytes)
    }

    /// Enters one level of dynamic recursion (node execution or expression evaluation).
    pub(crate) fn enter(&mut self) -> Result<(), RenderError> {
        self.depth += 1;
        if self.depth > self.max_depth {
            self.depth -= 1;
            return Err(RenderError::NestingTooDeep(self.max_depth));
        }
        Ok(())
    }

    pub(crate) fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracked_values_give_their_bytes_back() {
        let _scope = MemoryScope::enter();
        let limits = RenderLimits {
            max_memory_bytes: 100,
            ..RenderLimits::default()
        };
        let mut b = Budget::new(&limits);
        b.reserve(60).unwrap();
        let t = Tracked::adopt(String::from("x"), 60);
        assert_eq!(b.reserve(60), Err(RenderError::MemoryLimit(100)));
        drop(t);
        b.reserve(60).unwrap();
        let _t = Tracked::adopt(String::new(), 60);
    }
}
