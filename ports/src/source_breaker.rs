//! The circuit breaker of a data source (PostgreSQL, MySQL, SQL Server adapters): consecutive
//! failures open it, one probe half-opens it. Pure logic on `std` (the caller passes the time).
//!
//! States and transitions:
//! - **Closed** (counting consecutive failures): every call goes through. A success resets the
//!   count; reaching `failure_threshold` failures opens the breaker.
//! - **Open** until `now + open_for`: calls fail fast without touching the server.
//! - **Half-open** after that: exactly one call (the probe) goes through, the others fail
//!   fast. A successful probe closes the breaker, a failed one opens it again for `open_for`.
//!   A probe abandoned (its future dropped) without an outcome lets the next call probe.
//!
//! A threshold of 0 disables the breaker (always closed).
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Circuit-breaker settings of one data source (see [`BreakerState`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerConfig {
    /// Consecutive failed calls (unreachable server, pool/connection errors, timeouts) that
    /// open the breaker. `0` disables the breaker. Default 15 (the reference's trip count).
    pub failure_threshold: u32,
    /// How long the breaker stays open before letting one probe call through. Default 30 s.
    pub open_for: Duration,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        Self {
            failure_threshold: 15,
            open_for: Duration::from_secs(30),
        }
    }
}

/// The observable state of a data source's circuit breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    /// Calls go through.
    Closed,
    /// Calls fail fast with `Unavailable`.
    Open,
    /// The next call probes the server.
    HalfOpen,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Closed { failures: u32 },
    Open { until: Instant },
    HalfOpen { probing: bool },
}

/// One data source's breaker (see the module documentation for its states).
#[derive(Debug)]
pub struct CircuitBreaker {
    config: BreakerConfig,
    state: Mutex<State>,
}

/// Leave to make one call. Report its outcome with [`Permit::record`].
#[derive(Debug)]
pub struct Permit<'a> {
    breaker: &'a CircuitBreaker,
    probe: bool,
    recorded: bool,
}

impl CircuitBreaker {
    /// A closed breaker with `config`.
    pub fn new(config: BreakerConfig) -> Self {
        Self {
            config,
            state: Mutex::new(State::Closed { failures: 0 }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is a plain value: a panic elsewhere cannot leave it half-updated.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The state as of `now` (an expired Open reads as HalfOpen).
    pub fn state(&self, now: Instant) -> BreakerState {
        match *self.lock() {
            State::Closed { .. } => BreakerState::Closed,
            State::Open { until } if now < until => BreakerState::Open,
            State::Open { .. } | State::HalfOpen { .. } => BreakerState::HalfOpen,
        }
    }

    /// A permit for one call, or `None` when the call must fail fast.
    pub fn acquire(&self, now: Instant) -> Option<Permit<'_>> {
        if self.config.failure_threshold == 0 {
            return Some(self.permit(false));
        }
        let mut state = self.lock();
        match *state {
            State::Closed { .. } => Some(self.permit(false)),
            State::Open { until } if now < until => None,
            State::Open { .. } | State::HalfOpen { probing: false } => {
                *state = State::HalfOpen { probing: true };
                Some(self.permit(true))
            }
            State::HalfOpen { probing: true } => None,
        }
    }

    fn permit(&self, probe: bool) -> Permit<'_> {
        Permit {
            breaker: self,
            probe,
            recorded: false,
        }
    }

    fn record(&self, failed: bool, now: Instant) {
        if self.config.failure_threshold == 0 {
            return;
        }
        let mut state = self.lock();
        let open = State::Open {
            until: now + self.config.open_for,
        };
        *state = match (*state, failed) {
            (_, false) => State::Closed { failures: 0 },
            (State::Closed { failures }, true) => {
                let failures = failures.saturating_add(1);
                if failures >= self.config.failure_threshold {
                    open
                } else {
                    State::Closed { failures }
                }
            }
            (State::HalfOpen { .. }, true) => open,
            // A call admitted before the breaker opened finished late: keep it open.
            (current @ State::Open { .. }, true) => current,
        };
    }
}

impl Permit<'_> {
    /// Records the call's outcome: `failed` means the server could not be used.
    pub fn record(mut self, failed: bool, now: Instant) {
        self.recorded = true;
        self.breaker.record(failed, now);
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if self.probe && !self.recorded {
            let mut state = self.breaker.lock();
            if *state == (State::HalfOpen { probing: true }) {
                *state = State::HalfOpen { probing: false };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn breaker(threshold: u32) -> CircuitBreaker {
        CircuitBreaker::new(BreakerConfig {
            failure_threshold: threshold,
            open_for: Duration::from_secs(10),
        })
    }

    fn fail(b: &CircuitBreaker, now: Instant) {
        b.acquire(now).expect("admitted").record(true, now);
    }

    #[test]
    fn consecutive_failures_open_and_a_success_resets() {
        let b = breaker(3);
        let t0 = Instant::now();
        fail(&b, t0);
        fail(&b, t0);
        b.acquire(t0).expect("admitted").record(false, t0);
        fail(&b, t0);
        fail(&b, t0);
        assert_eq!(
            b.state(t0),
            BreakerState::Closed,
            "the success reset the count"
        );
        fail(&b, t0);
        assert_eq!(b.state(t0), BreakerState::Open);
        assert!(
            b.acquire(t0 + Duration::from_secs(9)).is_none(),
            "fails fast while open"
        );
    }

    #[test]
    fn half_open_admits_one_probe_which_decides() {
        let b = breaker(1);
        let t0 = Instant::now();
        fail(&b, t0);
        let t1 = t0 + Duration::from_secs(10);
        assert_eq!(b.state(t1), BreakerState::HalfOpen);
        let probe = b.acquire(t1).expect("probe");
        assert!(b.acquire(t1).is_none(), "only one probe");
        probe.record(true, t1);
        assert_eq!(b.state(t1), BreakerState::Open, "failed probe reopens");
        assert!(b.acquire(t1 + Duration::from_secs(5)).is_none());

        let t2 = t1 + Duration::from_secs(10);
        b.acquire(t2).expect("probe").record(false, t2);
        assert_eq!(b.state(t2), BreakerState::Closed);
        assert!(b.acquire(t2).is_some());
    }

    #[test]
    fn an_abandoned_probe_lets_the_next_call_probe() {
        let b = breaker(1);
        let t0 = Instant::now();
        fail(&b, t0);
        let t1 = t0 + Duration::from_secs(11);
        drop(b.acquire(t1).expect("probe"));
        assert!(b.acquire(t1).is_some(), "next call probes");
    }

    #[test]
    fn zero_threshold_disables() {
        let b = breaker(0);
        let t0 = Instant::now();
        for _ in 0..100 {
            fail(&b, t0);
        }
        assert_eq!(b.state(t0), BreakerState::Closed);
    }
}
