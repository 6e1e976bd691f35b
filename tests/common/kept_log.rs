//! [`KeptLog`]: the end of a process's stderr, kept in memory to show when a test fails.
use std::collections::VecDeque;
use std::io::BufRead;
use std::process::ChildStderr;
use std::sync::{Arc, Mutex};

/// Lines kept.
const LINES: usize = 200;

/// The last [`LINES`] lines of a process's stderr, read from its pipe by a thread: a pipe,
/// not a file, whose writes a host busy writing elsewhere can hold for up to 200 ms (the
/// kernel's dirty-page throttling), stalling the process's thread that logs; and read to the
/// end, so the process never waits on a full pipe.
#[derive(Clone, Default)]
pub struct KeptLog(Arc<Mutex<VecDeque<String>>>);

impl KeptLog {
    /// Starts reading `stderr` to its end.
    pub fn keep(stderr: ChildStderr) -> Self {
        let log = Self::default();
        let kept = log.0.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
                if kept.len() == LINES {
                    kept.pop_front();
                }
                kept.push_back(line);
            }
        });
        log
    }

    /// The lines kept so far.
    pub fn tail(&self) -> String {
        let kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        kept.iter().cloned().collect::<Vec<_>>().join("\n")
    }
}
