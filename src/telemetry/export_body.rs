//! [`Body`]: the bytes of one span export request, whose buffer goes back to its
//! [`BodyPool`] when the last holder drops it (issue 32: telemetry's cost per request).
//!
//! A batch of 2048 spans is a request of about half a megabyte. The service's allocator maps
//! every buffer from 128 KiB up on its own and unmaps it when freed (`src/heap.rs`), so a new
//! buffer per request cost the export thread a page fault per 4 KiB page (a third of its
//! CPU under `wrk`, measured with `perf`) and every worker thread a TLB shootdown on its
//! unmapping. Given back, the buffer is written again without a fault. The HTTP client holds
//! the bytes as long as it needs them ([`Body::into_bytes`]); the buffer returns only after.
use std::sync::{Arc, Mutex, PoisonError};

/// Buffers a pool keeps at most: an export round writes one request in the steady state, a
/// flush of more than a batch a few; the rest are freed.
const SPARE: usize = 2;

/// Emptied request buffers, ready to be written again.
#[derive(Debug, Default)]
pub struct BodyPool {
    spare: Mutex<Vec<Vec<u8>>>,
}

impl BodyPool {
    /// An empty pool, shared by the export thread and the bodies it sends.
    pub fn new() -> Arc<Self> {
        Arc::default()
    }

    /// An empty buffer: a spare one (its capacity kept) or a new one.
    pub fn take(&self) -> Vec<u8> {
        self.lock().pop().unwrap_or_default()
    }

    /// Keeps `buffer`, emptied, for a later request; frees it when [`SPARE`] are kept.
    fn give_back(&self, mut buffer: Vec<u8>) {
        buffer.clear();
        let mut spare = self.lock();
        if spare.len() < SPARE && buffer.capacity() > 0 {
            spare.push(buffer);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Vec<u8>>> {
        self.spare.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One export request's bytes. Its buffer goes back to its pool when dropped.
#[derive(Debug)]
pub struct Body {
    bytes: Vec<u8>,
    pool: Arc<BodyPool>,
}

impl Body {
    /// `bytes` (taken from `pool`, or not), given back to `pool` when dropped.
    pub fn new(bytes: Vec<u8>, pool: &Arc<BodyPool>) -> Self {
        Self {
            bytes,
            pool: pool.clone(),
        }
    }

    /// The bytes as the HTTP client sends them, without a copy: the buffer goes back to the
    /// pool once the client dropped its last clone.
    pub fn into_bytes(self) -> bytes::Bytes {
        bytes::Bytes::from_owner(self)
    }
}

impl AsRef<[u8]> for Body {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl std::ops::Deref for Body {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for Body {
    fn drop(&mut self) {
        self.pool.give_back(std::mem::take(&mut self.bytes));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body's buffer, also sent as `Bytes` and cloned, is written again by the next body
    /// of its pool: same allocation, no new mapping.
    #[test]
    fn a_dropped_body_gives_its_buffer_back() {
        let pool = BodyPool::new();
        let mut first = pool.take();
        first.extend_from_slice(&[7; 300_000]);
        let at = first.as_ptr();
        let bytes = Body::new(first, &pool).into_bytes();
        let clone = bytes.clone();
        drop(bytes);
        assert!(pool.lock().is_empty(), "a clone still holds the bytes");
        assert_eq!(clone.len(), 300_000);
        drop(clone);
        let again = pool.take();
        assert_eq!(again.as_ptr(), at);
        assert!(again.is_empty() && again.capacity() >= 300_000);
    }

    /// The pool keeps at most SPARE buffers, and never an unallocated one.
    #[test]
    fn the_pool_keeps_a_bounded_number_of_buffers() {
        let pool = BodyPool::new();
        let bodies: Vec<Body> = (0..5).map(|_| Body::new(vec![1; 1024], &pool)).collect();
        drop(bodies);
        drop(Body::new(Vec::new(), &pool));
        assert_eq!(pool.lock().len(), SPARE);
    }
}
