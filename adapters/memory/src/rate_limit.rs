//! [`MemoryRateLimiter`]: fixed windows in a bounded map, for one process (memory mode).
use async_trait::async_trait;
use reporter_ports::ports::{RateDecision, RateLimitError, RateLimiter};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Keys kept at most by default: past it, closed windows are dropped, then the window
/// closing soonest.
pub const DEFAULT_MAX_KEYS: usize = 100_000;

/// One key's window.
#[derive(Debug, Clone, Copy)]
struct Window {
    ends: Instant,
    count: u64,
}

/// Fixed-window counters in process memory, at most `max_keys` keys (so a client varying
/// its address cannot grow the map without bound). Counting is atomic within the process;
/// processes do not share budgets (use the Redis adapter for that).
#[derive(Debug)]
pub struct MemoryRateLimiter {
    windows: Mutex<HashMap<String, Window>>,
    max_keys: usize,
}

impl Default for MemoryRateLimiter {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_KEYS)
    }
}

impl MemoryRateLimiter {
    /// A limiter keeping at most `max_keys` keys (at least 1).
    pub fn new(max_keys: usize) -> Self {
        Self {
            windows: Mutex::new(HashMap::new()),
            max_keys: max_keys.max(1),
        }
    }

    /// Keys held now (tests of the bound).
    pub fn len(&self) -> usize {
        self.windows.lock().map(|w| w.len()).unwrap_or(0)
    }

    /// True when no key is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Makes room for one more key: closed windows go first, then the one closing soonest.
    fn make_room(windows: &mut HashMap<String, Window>, max_keys: usize, now: Instant) {
        if windows.len() < max_keys {
            return;
        }
        windows.retain(|_, w| w.ends > now);
        while windows.len() >= max_keys {
            let Some(key) = windows
                .iter()
                .min_by_key(|(_, w)| w.ends)
                .map(|(k, _)| k.clone())
            else {
                return;
            };
            windows.remove(&key);
        }
    }
}

#[async_trait]
impl RateLimiter for MemoryRateLimiter {
    async fn hit(
        &self,
        key: &str,
        limit: u32,
        window: Duration,
    ) -> Result<RateDecision, RateLimitError> {
        let window = window.max(Duration::from_millis(1));
        let now = Instant::now();
        let mut windows = self
            .windows
            .lock()
            .map_err(|_| RateLimitError::Unavailable("the limiter's lock is poisoned".into()))?;
        let current = match windows.get_mut(key) {
            Some(w) if w.ends > now => {
                w.count = w.count.saturating_add(1);
                *w
            }
            Some(w) => {
                *w = Window {
                    ends: now + window,
                    count: 1,
                };
                *w
            }
            None => {
                Self::make_room(&mut windows, self.max_keys, now);
                let w = Window {
                    ends: now + window,
                    count: 1,
                };
                windows.insert(key.to_owned(), w);
                w
            }
        };
        Ok(RateDecision {
            allowed: current.count <= u64::from(limit),
            count: current.count,
            reset_after: current
                .ends
                .saturating_duration_since(now)
                .max(Duration::from_millis(1)),
        })
    }

    async fn check(&self) -> Result<(), RateLimitError> {
        Ok(())
    }

    fn backend(&self) -> &'static str {
        "memory"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_map_stays_within_its_bound() {
        let l = MemoryRateLimiter::new(3);
        for i in 0..10 {
            let d = l
                .hit(&format!("k{i}"), 1, Duration::from_secs(60))
                .await
                .unwrap();
            assert!(d.allowed);
            assert!(l.len() <= 3);
        }
        assert_eq!(l.len(), 3);
    }
}
