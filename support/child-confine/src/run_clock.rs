//! [`RunClock`]: how long a child has been at its work, without the time it waited for a CPU.
//!
//! A child runs at a lower priority than the service ([`NICENESS`](crate::NICENESS)). On a
//! host whose CPUs other processes keep busy it waits on the kernel's run queue, and a
//! wall-clock bound would charge that wait to the template: a legitimate template would fail
//! with its bound's code only because the host was busy. The clock reads the scheduler's
//! statistics of each of the child's threads (`/proc/<pid>/task/<tid>/schedstat`: time on a
//! CPU, time runnable but waiting for one) and charges the wall time since it started minus
//! the longest run-queue wait of any one thread over that time: about the time the child would
//! have taken on an idle host, whether it computed or waited on its input (a child blocked on
//! a pipe is charged, so a child that never answers still passes its bound).
//!
//! Taking one thread's wait, not their sum, never charges less than the wall time minus a
//! wait that really happened: two threads waiting at once are not counted twice. Where the
//! kernel does not say (no `schedstat`, `/proc` hidden, the child gone), the clock is the
//! wall clock, as a bound was before.
use std::time::{Duration, Instant};

/// A clock of one child process, started when its bound starts.
#[derive(Debug, Clone)]
pub struct RunClock {
    pid: Option<u32>,
    started: Instant,
    /// Each thread's run-queue wait (ns) when the clock started.
    baseline: Vec<(u32, u64)>,
}

impl RunClock {
    /// Starts the clock of process `pid` now. `None` (a child already reaped) is the wall
    /// clock.
    pub fn start(pid: Option<u32>) -> Self {
        Self {
            pid,
            started: Instant::now(),
            baseline: pid.map(thread_waits).unwrap_or_default(),
        }
    }

    /// Wall-clock time since the start.
    pub fn wall(&self) -> Duration {
        self.started.elapsed()
    }

    /// Time charged to the child since the start: [`Self::wall`] minus the longest run-queue
    /// wait of one of its threads since then. MUST NOT exceed the wall time, and MUST be the
    /// wall time when the kernel's statistics cannot be read.
    pub fn charged(&self) -> Duration {
        let wall = self.wall();
        wall.saturating_sub(self.longest_wait())
    }

    /// The longest run-queue wait of one thread since the start (a thread started since
    /// counts from zero).
    fn longest_wait(&self) -> Duration {
        let Some(pid) = self.pid else {
            return Duration::ZERO;
        };
        let since = |(tid, now): (u32, u64)| {
            let before = self
                .baseline
                .iter()
                .find(|(t, _)| *t == tid)
                .map_or(0, |(_, ns)| *ns);
            now.saturating_sub(before)
        };
        let longest = thread_waits(pid).into_iter().map(since).max();
        Duration::from_nanos(longest.unwrap_or(0))
    }
}

/// Each thread of `pid` with its run-queue wait so far (ns); empty when unknown.
fn thread_waits(pid: u32) -> Vec<(u32, u64)> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| {
            let tid = task.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
            Some((tid, run_queue_wait(&stat)?))
        })
        .collect()
}

/// The second field of a `schedstat` line (`<on cpu ns> <waiting ns> <timeslices>`).
fn run_queue_wait(schedstat: &str) -> Option<u64> {
    schedstat.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn a_schedstat_line_is_read() {
        assert_eq!(run_queue_wait("98374326 84224706 400\n"), Some(84_224_706));
        assert_eq!(run_queue_wait("98374326\n"), None);
        assert_eq!(run_queue_wait("a b c"), None);
    }

    #[test]
    fn without_a_process_the_clock_is_the_wall_clock() {
        let clock = RunClock::start(None);
        std::thread::sleep(Duration::from_millis(20));
        let (charged, wall) = (clock.charged(), clock.wall());
        assert!(charged >= Duration::from_millis(20), "{charged:?}");
        assert!(charged <= wall, "{charged:?} > {wall:?}");
    }

    #[test]
    fn a_process_that_does_not_wait_for_a_cpu_is_charged_its_wall_time() {
        // A sleeping process is never runnable, so nothing is taken off.
        let mut sleeper = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("sleep");
        let clock = RunClock::start(Some(sleeper.id()));
        std::thread::sleep(Duration::from_millis(200));
        let (charged, wall) = (clock.charged(), clock.wall());
        let _ = sleeper.kill();
        let _ = sleeper.wait();
        assert!(charged <= wall);
        assert!(
            charged + Duration::from_millis(20) >= wall,
            "{charged:?} of {wall:?}"
        );
    }

    /// Three busy threads on every CPU of the host: each waits on the run queue about two
    /// thirds of the time (whatever else runs), and the clock takes that off.
    #[test]
    fn time_spent_waiting_for_a_cpu_is_not_charged() {
        let pid = std::process::id();
        if thread_waits(pid).is_empty() {
            println!("NOT RUN: this kernel does not expose schedstat");
            return;
        }
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        let stop = Arc::new(AtomicBool::new(false));
        let busy: Vec<_> = (0..cpus * 3)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        let clock = RunClock::start(Some(pid));
        std::thread::sleep(Duration::from_millis(600));
        let (charged, wall) = (clock.charged(), clock.wall());
        stop.store(true, Ordering::Relaxed);
        for b in busy {
            b.join().expect("busy thread");
        }
        assert!(charged <= wall);
        assert!(charged < wall * 3 / 4, "charged {charged:?} of {wall:?}");
    }
}
