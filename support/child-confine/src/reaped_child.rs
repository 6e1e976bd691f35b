//! [`ReapedChild`]: a child process whose exit is waited for, and whose entry is reaped, on a
//! thread of its own, never on a worker of the async runtime.
//!
//! Reaping a dead child runs the kernel's clean-up of its `/proc` entries in the thread that
//! reaps it (`wait4` → `release_task` → `proc_flush_pid` → `d_invalidate`, walking the
//! dentry cache under spin locks). On a loaded host one such call took up to 283 ms (`perf
//! trace` beside the hostile-templates test). `tokio::process` reaps on the runtime's worker
//! threads: while two children were being reaped, both workers served nothing and `/health`
//! waited as long. Here a thread per child blocks until the child has exited and reaps it;
//! the runtime only reads the status it leaves.
use std::io;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, MutexGuard};

use futures_channel::oneshot;
use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};

/// Stack of a reaper thread: it only waits, reaps and sends the status.
const REAPER_STACK: usize = 64 * 1024;

/// Held while a child is reaped: one reap at a time in the process. The kernel's clean-up of
/// a child's `/proc` entries takes locks that every other reap (and every `/proc` lookup)
/// also takes; reaps at once spin against each other (8 reports at once took 2.9 s instead
/// of 1.0 s with one reaper thread each reaping as soon as its child exited).
static ONE_REAP_AT_A_TIME: Mutex<()> = Mutex::new(());

/// How the child ended, as its reaper read it (an error kind when `wait` itself failed).
type Exit = Result<ExitStatus, io::ErrorKind>;

/// A started child process, reaped by a thread of its own. Dropping it kills the child (as
/// `kill_on_drop` did); its thread still reaps it, so no zombie is left behind.
pub struct ReapedChild {
    pid: Pid,
    /// `true` until the child has exited: until its entry is reaped its pid cannot be given
    /// to another process, so it MAY be signalled while this holds, and MUST NOT after.
    running: Arc<Mutex<bool>>,
    /// The reaper's status, until it is read into `exit`.
    status: oneshot::Receiver<Exit>,
    exit: Option<Exit>,
}

impl ReapedChild {
    /// Hands `child` to a new thread named `name` that waits for its exit and reaps it. The
    /// thread takes the priority of the calling thread: reaping is not slowed to the
    /// children's priority. Fails only when no thread can be started (the child is then
    /// killed and reaped here).
    pub fn watch(child: std::process::Child, name: &str) -> io::Result<Self> {
        let pid = Pid::from_child(&child);
        let running = Arc::new(Mutex::new(true));
        let (tx, status) = oneshot::channel();
        let flag = running.clone();
        std::thread::Builder::new()
            .name(name.to_owned())
            .stack_size(REAPER_STACK)
            .spawn(move || {
                let _ = tx.send(reap(child, &flag));
            })
            .inspect_err(|_| {
                // The closure, and the child in it, are gone: reap the pid by hand.
                let _ = rustix::process::kill_process(pid, Signal::KILL);
                let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty());
            })?;
        Ok(Self {
            pid,
            running,
            status,
            exit: None,
        })
    }

    /// The child's pid while it runs; `None` once it has exited (its pid may be reused).
    pub fn id(&self) -> Option<u32> {
        let running = *lock(&self.running);
        running.then(|| self.pid.as_raw_nonzero().get().unsigned_abs())
    }

    /// Sends `SIGKILL` unless the child has already exited (then does nothing).
    pub fn start_kill(&self) -> io::Result<()> {
        let running = lock(&self.running);
        if *running {
            rustix::process::kill_process(self.pid, Signal::KILL)?;
        }
        Ok(())
    }

    /// Whether the child has exited, without reaping it and without waiting.
    pub fn has_exited(&mut self) -> bool {
        if let Ok(Some(exit)) = self.status.try_recv() {
            self.exit = Some(exit);
        }
        if self.exit.is_some() || !*lock(&self.running) {
            return true;
        }
        let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
        matches!(
            rustix::process::waitid(WaitId::Pid(self.pid), options),
            Ok(Some(_))
        )
    }

    /// Resolves with the child's exit status once its reaper has reaped it. Cancel-safe: a
    /// wait given up (a timeout) loses nothing, and a later one reads the same status.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        let exit = match self.exit {
            Some(exit) => exit,
            None => {
                let exit = (&mut self.status)
                    .await
                    .map_err(|_| io::Error::other("the child's reaper thread is gone"))?;
                *self.exit.insert(exit)
            }
        };
        exit.map_err(io::Error::from)
    }
}

impl Drop for ReapedChild {
    fn drop(&mut self) {
        let _ = self.start_kill();
    }
}

/// Waits for `child` to exit without reaping it, marks it as no longer signalable, then
/// reaps it: a kill sent before the mark reaches the child or its zombie, never another
/// process that was given the pid.
fn reap(mut child: std::process::Child, running: &Mutex<bool>) -> Exit {
    let pid = Pid::from_child(&child);
    let exited = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT;
    while let Err(rustix::io::Errno::INTR) = rustix::process::waitid(WaitId::Pid(pid), exited) {}
    *lock(running) = false;
    let _alone = ONE_REAP_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    child.wait().map_err(|e| e.kind())
}

fn lock(flag: &Mutex<bool>) -> MutexGuard<'_, bool> {
    flag.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    fn sleeper() -> std::process::Child {
        Command::new("sleep")
            .arg("30")
            .stdin(Stdio::null())
            .spawn()
            .expect("sleep")
    }

    /// Whether `pid` still has an entry for a process named `comm` (running or a zombie).
    fn has_entry(pid: u32, comm: &str) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| s.contains(&format!("({comm})")))
    }

    /// Waits (blocking the calling thread) until `pid`'s entry is gone.
    fn wait_gone(pid: u32, comm: &str) {
        let started = Instant::now();
        while has_entry(pid, comm) {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{comm} {pid} not reaped"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[tokio::test]
    async fn an_exit_is_read_and_the_entry_reaped() {
        let child = Command::new("sh")
            .args(["-c", "exit 3"])
            .spawn()
            .expect("sh");
        let pid = child.id();
        let mut reaped = ReapedChild::watch(child, "test-reaper").expect("watch");
        let status = reaped.wait().await.expect("status");
        assert_eq!(status.code(), Some(3));
        assert!(reaped.has_exited());
        assert_eq!(reaped.id(), None, "an exited child's pid is not handed out");
        wait_gone(pid, "sh");
    }

    #[tokio::test]
    async fn a_kill_ends_a_running_child_with_its_signal() {
        let mut reaped = ReapedChild::watch(sleeper(), "test-reaper").expect("watch");
        assert!(reaped.id().is_some());
        assert!(!reaped.has_exited());
        reaped.start_kill().expect("kill");
        let status = tokio::time::timeout(Duration::from_secs(10), reaped.wait())
            .await
            .expect("reaped in time")
            .expect("status");
        assert_eq!(status.signal(), Some(9));
        // Read again after it was read once (as after a wait that timed out).
        assert_eq!(reaped.wait().await.expect("again").signal(), Some(9));
        // A kill after the exit is not sent (the pid may be someone else's by now).
        reaped.start_kill().expect("no-op");
    }

    #[tokio::test]
    async fn has_exited_sees_an_exit_without_waiting() {
        let child = Command::new("true").spawn().expect("true");
        let mut reaped = ReapedChild::watch(child, "test-reaper").expect("watch");
        let started = Instant::now();
        while !reaped.has_exited() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "never seen exited"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[tokio::test]
    async fn dropping_kills_the_child_and_its_thread_reaps_it() {
        let reaped = ReapedChild::watch(sleeper(), "test-reaper").expect("watch");
        let pid = reaped.id().expect("running");
        drop(reaped);
        wait_gone(pid, "sleep");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_child_is_reaped_while_the_runtime_is_busy() {
        // The runtime's only thread blocks from here on and never polls anything: the
        // child's entry goes away all the same (with tokio::process it would stay a zombie
        // until the runtime reaped it).
        let child = Command::new("true").spawn().expect("true");
        let pid = child.id();
        let mut reaped = ReapedChild::watch(child, "test-reaper").expect("watch");
        wait_gone(pid, "true");
        assert!(reaped.has_exited());
    }
}
