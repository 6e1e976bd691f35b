//! The one retry backoff of the codebase: exponential from a base, capped, with jitter.
//! The dispatcher, the report job queue and the MongoDB transaction retries use it.
use rand::Rng;
use std::time::Duration;

/// Exponential backoff: before retry `n + 1` (after `n` retries, from 0) the delay is at most
/// [`Backoff::ceiling`]`(n) = min(cap, base × 2ⁿ)`, never overflowing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The ceiling of the first retry.
    pub base: Duration,
    /// The largest ceiling.
    pub cap: Duration,
}

impl Backoff {
    /// `base` doubling up to `cap`.
    pub fn new(base: Duration, cap: Duration) -> Self {
        Self { base, cap }
    }

    /// `min(cap, base × 2ⁿ)`: saturates at `cap`, whatever `n`.
    pub fn ceiling(&self, n: u32) -> Duration {
        let factor = 1u32.checked_shl(n.min(31)).unwrap_or(u32::MAX);
        self.base
            .checked_mul(factor)
            .unwrap_or(self.cap)
            .min(self.cap)
    }

    /// Full jitter: uniform in `[0, ceiling(n)]`, in whole milliseconds (spreads retries the
    /// most; for many clients retrying the same thing).
    pub fn full_jitter(&self, n: u32) -> Duration {
        Duration::from_millis(uniform_ms(0, millis(self.ceiling(n))))
    }

    /// Equal jitter: uniform in `[ceiling(n) / 2, ceiling(n)]`, in whole milliseconds above
    /// the half (never retries almost at once).
    pub fn equal_jitter(&self, n: u32) -> Duration {
        let ceiling = self.ceiling(n);
        let half = ceiling / 2;
        half + Duration::from_millis(uniform_ms(0, millis(half)))
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn uniform_ms(low: u64, high: u64) -> u64 {
    if high <= low {
        low
    } else {
        rand::rng().random_range(low..=high)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ceiling_doubles_and_caps_without_overflow() {
        let b = Backoff::new(Duration::from_secs(1), Duration::from_secs(30));
        let got: Vec<u64> = (0..8).map(|n| b.ceiling(n).as_secs()).collect();
        assert_eq!(got, [1, 2, 4, 8, 16, 30, 30, 30]);
        assert_eq!(b.ceiling(u32::MAX), b.cap, "no overflow");
        let huge = Backoff::new(Duration::from_secs(u64::MAX / 2), Duration::MAX);
        assert_eq!(
            huge.ceiling(40),
            Duration::MAX,
            "a saturated product is the cap"
        );
    }

    #[test]
    fn full_jitter_covers_zero_to_the_ceiling() {
        let b = Backoff::new(Duration::from_millis(100), Duration::from_millis(1000));
        let delays: Vec<Duration> = (0..500).map(|_| b.full_jitter(3)).collect();
        assert!(delays.iter().all(|d| *d <= Duration::from_millis(800)));
        assert!(
            delays.iter().any(|d| *d < Duration::from_millis(200)),
            "low values"
        );
        assert!(
            delays.iter().any(|d| *d > Duration::from_millis(600)),
            "high values"
        );
    }

    #[test]
    fn equal_jitter_stays_in_the_upper_half() {
        let b = Backoff::new(Duration::from_millis(100), Duration::from_secs(5));
        for n in 0..20 {
            let full = b.ceiling(n);
            let d = b.equal_jitter(n);
            assert!(d >= full / 2 && d <= full, "retry {n}: {d:?} vs {full:?}");
        }
        assert!(b.equal_jitter(99) <= b.cap);
        let delays: Vec<Duration> = (0..500).map(|_| b.equal_jitter(2)).collect();
        assert!(delays.iter().any(|d| *d < Duration::from_millis(250)));
        assert!(delays.iter().any(|d| *d > Duration::from_millis(350)));
        assert_eq!(
            Backoff::new(Duration::ZERO, Duration::ZERO).equal_jitter(3),
            Duration::ZERO
        );
    }
}
