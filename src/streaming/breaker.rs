//! Circuit breaker of the direct publish path.
//!
//! Closed: every publish goes through and its outcome is recorded in a window of the most
//! recent outcomes; once the window holds at least `min_requests` outcomes and the failure
//! ratio reaches `failure_ratio`, the breaker opens. Open: nothing goes through for
//! `open_for`; then one probe is let through (half-open): success closes the breaker, failure
//! opens it again.
use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Breaker settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BreakerSettings {
    /// Failure ratio that opens the breaker, in (0, 1].
    pub failure_ratio: f64,
    /// Outcomes needed before the ratio counts.
    pub min_requests: u32,
    /// How long the breaker stays open.
    pub open_for: Duration,
}

/// Observable state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    /// Publishing.
    Closed,
    /// Refusing.
    Open,
    /// Letting one probe through.
    HalfOpen,
}

impl BreakerState {
    /// Gauge value: 0 closed, 1 half-open, 2 open.
    pub fn gauge(&self) -> i64 {
        match self {
            Self::Closed => 0,
            Self::HalfOpen => 1,
            Self::Open => 2,
        }
    }
}

#[derive(Debug)]
enum Inner {
    Closed { window: VecDeque<bool> },
    Open { until: Instant },
    HalfOpen { probing: bool },
}

/// A thread-safe circuit breaker.
#[derive(Debug)]
pub struct CircuitBreaker {
    settings: BreakerSettings,
    inner: Mutex<Inner>,
}

impl CircuitBreaker {
    /// A closed breaker.
    pub fn new(settings: BreakerSettings) -> Self {
        Self {
            settings,
            inner: Mutex::new(Inner::Closed {
                window: VecDeque::new(),
            }),
        }
    }

    fn window_len(&self) -> usize {
        (self.settings.min_requests as usize).max(20)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether a publish may go through now. In half-open state only one caller gets `true`
    /// until its outcome is recorded.
    pub fn try_acquire(&self) -> bool {
        let mut inner = self.lock();
        match &mut *inner {
            Inner::Closed { .. } => true,
            Inner::Open { until } => {
                if Instant::now() >= *until {
                    *inner = Inner::HalfOpen { probing: true };
                    true
                } else {
                    false
                }
            }
            Inner::HalfOpen { probing } => {
                if *probing {
                    false
                } else {
                    *probing = true;
                    true
                }
            }
        }
    }

    /// Records the outcome of a publish that `try_acquire` let through.
    pub fn record(&self, success: bool) {
        let window_len = self.window_len();
        let mut inner = self.lock();
        match &mut *inner {
            Inner::Closed { window } => {
                window.push_back(success);
                while window.len() > window_len {
                    window.pop_front();
                }
                let failures = window.iter().filter(|ok| !**ok).count();
                #[allow(clippy::cast_precision_loss)]
                let ratio = failures as f64 / window.len() as f64;
                if window.len() >= self.settings.min_requests as usize
                    && ratio >= self.settings.failure_ratio
                {
                    tracing::warn!(
                        failures,
                        observed = window.len(),
                        "event publish circuit breaker opened"
                    );
                    *inner = Inner::Open {
                        until: Instant::now() + self.settings.open_for,
                    };
                }
            }
            Inner::HalfOpen { .. } => {
                *inner = if success {
                    tracing::info!("event publish circuit breaker closed");
                    Inner::Closed {
                        window: VecDeque::new(),
                    }
                } else {
                    Inner::Open {
                        until: Instant::now() + self.settings.open_for,
                    }
                };
            }
            Inner::Open { .. } => {}
        }
    }

    /// A publish that `try_acquire` let through was never attempted (e.g. the publisher's
    /// confirm window stayed full): no outcome is recorded, and a half-open breaker lets the
    /// next caller probe instead.
    pub fn abandon(&self) {
        if let Inner::HalfOpen { probing } = &mut *self.lock() {
            *probing = false;
        }
    }

    /// Current state (an open breaker whose time is up reports half-open).
    pub fn state(&self) -> BreakerState {
        match &*self.lock() {
            Inner::Closed { .. } => BreakerState::Closed,
            Inner::Open { until } if Instant::now() >= *until => BreakerState::HalfOpen,
            Inner::Open { .. } => BreakerState::Open,
            Inner::HalfOpen { .. } => BreakerState::HalfOpen,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breaker(ms: u64) -> CircuitBreaker {
        CircuitBreaker::new(BreakerSettings {
            failure_ratio: 0.5,
            min_requests: 4,
            open_for: Duration::from_millis(ms),
        })
    }

    #[test]
    fn opens_on_ratio_after_min_requests() {
        let b = breaker(10_000);
        for _ in 0..3 {
            assert!(b.try_acquire());
            b.record(false);
        }
        assert_eq!(b.state(), BreakerState::Closed, "below min_requests");
        assert!(b.try_acquire());
        b.record(false);
        assert_eq!(b.state(), BreakerState::Open);
        assert!(!b.try_acquire());
    }

    #[test]
    fn successes_keep_it_closed() {
        let b = breaker(10_000);
        for i in 0..40 {
            assert!(b.try_acquire());
            b.record(i % 4 != 0);
        }
        assert_eq!(b.state(), BreakerState::Closed);
    }

    #[test]
    fn an_abandoned_publish_records_nothing_and_frees_the_probe() {
        let b = breaker(20);
        for _ in 0..10 {
            assert!(b.try_acquire());
            b.abandon();
        }
        assert_eq!(b.state(), BreakerState::Closed, "nothing counted");
        for _ in 0..4 {
            b.try_acquire();
            b.record(false);
        }
        std::thread::sleep(Duration::from_millis(30));
        assert!(b.try_acquire(), "the probe");
        assert!(!b.try_acquire(), "one probe at a time");
        b.abandon();
        assert!(
            b.try_acquire(),
            "an abandoned probe lets the next one through"
        );
        b.record(true);
        assert_eq!(b.state(), BreakerState::Closed);
    }

    #[test]
    fn half_open_lets_one_probe_through() {
        let b = breaker(20);
        for _ in 0..4 {
            b.try_acquire();
            b.record(false);
        }
        assert!(!b.try_acquire());
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(b.state(), BreakerState::HalfOpen);
        assert!(b.try_acquire(), "the probe");
        assert!(!b.try_acquire(), "only one probe at a time");
        b.record(false);
        assert_eq!(b.state(), BreakerState::Open);
        std::thread::sleep(Duration::from_millis(30));
        assert!(b.try_acquire());
        b.record(true);
        assert_eq!(b.state(), BreakerState::Closed);
        assert!(b.try_acquire());
    }
}
