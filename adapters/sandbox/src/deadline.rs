//! [`Deadline`]: the time bound of a child's request, on the child's [`RunClock`].
//!
//! A bound (a parse's, a render's, a child's start) counts the time the child was at work or
//! waited on its input, not the time it waited for a CPU other processes held: on a busy host
//! a template gets slower, not refused. The wall clock still ends every request at
//! [`BACKSTOP_FACTOR`] times its bound, so a child the host never lets run cannot hold its
//! request for longer. On an idle host the two clocks agree.
use reporter_child_confine::RunClock;
use std::future::Future;
use std::time::Duration;

/// The wall-clock backstop of a bound, as a multiple of it.
pub const BACKSTOP_FACTOR: u32 = 4;

/// Shortest wait between two readings of the clock.
const MIN_STEP: Duration = Duration::from_millis(5);

/// A bound started on one child.
#[derive(Debug, Clone)]
pub(crate) struct Deadline {
    clock: RunClock,
    bound: Duration,
}

impl Deadline {
    /// Starts `bound` now on the child `pid` (`None`: the wall clock alone).
    pub(crate) fn start(pid: Option<u32>, bound: Duration) -> Self {
        Self {
            clock: RunClock::start(pid),
            bound,
        }
    }

    /// `work`'s output, or `None` once the bound passed first (the caller kills the child).
    pub(crate) async fn run<F: Future>(&self, work: F) -> Option<F::Output> {
        tokio::select! {
            biased;
            out = work => Some(out),
            () = self.passed() => None,
        }
    }

    /// Resolves when the child has been charged its bound, or the backstop passed. The
    /// charged time never exceeds the wall time nor grows faster: the clock is not read before
    /// the bound's wall time (most work ends before it), and sleeping the bound's rest never
    /// oversleeps it.
    async fn passed(&self) {
        let backstop = self.bound.saturating_mul(BACKSTOP_FACTOR);
        loop {
            let wall = self.clock.wall();
            if wall >= backstop {
                return;
            }
            let charged = if wall < self.bound {
                wall
            } else {
                self.clock.charged()
            };
            if charged >= self.bound {
                return;
            }
            let rest = (self.bound - charged).min(backstop - wall);
            tokio::time::sleep(rest.max(MIN_STEP)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[tokio::test]
    async fn work_within_its_bound_answers() {
        let d = Deadline::start(None, Duration::from_secs(5));
        assert_eq!(d.run(async { 7 }).await, Some(7));
    }

    #[tokio::test]
    async fn work_past_its_bound_is_cut_at_the_bound() {
        let started = Instant::now();
        let d = Deadline::start(Some(std::process::id()), Duration::from_millis(100));
        let out = d.run(tokio::time::sleep(Duration::from_secs(30))).await;
        assert_eq!(out, None);
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(100), "{took:?}");
        assert!(
            took < Duration::from_millis(100 * u64::from(BACKSTOP_FACTOR) + 200),
            "{took:?}"
        );
    }
}
