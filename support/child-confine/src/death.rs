//! [`Death`]: how a confined child that gave no answer died, read from its exit status and
//! the tail of its stderr.
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

/// `SIGABRT`: an abort (Rust's reaction to a refused allocation or a stack overflow).
const SIGABRT: i32 = 6;
/// `SIGKILL`: killed (by the service, the kernel's hard CPU limit, the OOM killer).
const SIGKILL: i32 = 9;
/// `SIGSEGV`: a segmentation fault.
const SIGSEGV: i32 = 11;
/// `SIGXCPU`: the soft `RLIMIT_CPU` passed.
const SIGXCPU: i32 = 24;
/// `SIGXFSZ`: a write past `RLIMIT_FSIZE` (0: any file write).
const SIGXFSZ: i32 = 25;

/// How a child died without answering. Its `Display` is a short phrase ("aborted",
/// "exited with 3") for the caller's error message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Death {
    /// An allocation its memory limit refused (stderr: "memory allocation of … failed" or
    /// "capacity overflow").
    MemoryLimit,
    /// A thread overflowed its stack (stderr: "… has overflowed its stack").
    StackOverflow,
    /// Killed by `SIGXCPU`: over its CPU-time limit.
    CpuLimit,
    /// Killed by `SIGXFSZ`: it tried to write a file.
    FileWrite,
    /// Killed by `SIGKILL`.
    Killed,
    /// A segmentation fault (`SIGSEGV`).
    SegmentationFault,
    /// Aborted (`SIGABRT`) for another reason.
    Aborted,
    /// Killed by another signal.
    Signal(i32),
    /// Exited with this code.
    Exited(i32),
    /// Its status is unknown (it had to be killed after breaking the protocol).
    Unknown,
}

impl Death {
    /// Reads a death: what stderr says first (a refused allocation, a stack overflow), then
    /// the signal or the exit code of `status` (`None`: unknown).
    pub fn classify(status: Option<ExitStatus>, stderr: &str) -> Self {
        if stderr.contains("memory allocation of") || stderr.contains("capacity overflow") {
            return Self::MemoryLimit;
        }
        if stderr.contains("overflowed its stack") {
            return Self::StackOverflow;
        }
        let Some(status) = status else {
            return Self::Unknown;
        };
        match status.signal() {
            Some(SIGXCPU) => Self::CpuLimit,
            Some(SIGXFSZ) => Self::FileWrite,
            Some(SIGKILL) => Self::Killed,
            Some(SIGSEGV) => Self::SegmentationFault,
            Some(SIGABRT) => Self::Aborted,
            Some(s) => Self::Signal(s),
            None => Self::Exited(status.code().unwrap_or(-1)),
        }
    }
}

impl std::fmt::Display for Death {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::MemoryLimit => f.write_str("over its memory limit"),
            Self::StackOverflow => f.write_str("stack overflow"),
            Self::CpuLimit => f.write_str("over its CPU-time limit (SIGXCPU)"),
            Self::FileWrite => f.write_str("tried to write a file (SIGXFSZ)"),
            Self::Killed => f.write_str("killed (SIGKILL)"),
            Self::SegmentationFault => f.write_str("segmentation fault"),
            Self::Aborted => f.write_str("aborted"),
            Self::Signal(s) => write!(f, "killed by signal {s}"),
            Self::Exited(code) => write!(f, "exited with {code}"),
            Self::Unknown => f.write_str("status unknown"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(raw: i32) -> Option<ExitStatus> {
        Some(ExitStatus::from_raw(raw))
    }

    #[test]
    fn stderr_is_read_before_the_status() {
        let oom = "memory allocation of 4096 bytes failed";
        assert_eq!(Death::classify(status(SIGABRT), oom), Death::MemoryLimit);
        assert_eq!(
            Death::classify(None, "capacity overflow"),
            Death::MemoryLimit
        );
        assert_eq!(
            Death::classify(status(SIGABRT), "thread 'x' has overflowed its stack"),
            Death::StackOverflow
        );
    }

    #[test]
    fn signals_and_exit_codes_are_read() {
        assert_eq!(Death::classify(status(SIGXCPU), ""), Death::CpuLimit);
        assert_eq!(Death::classify(status(SIGXFSZ), ""), Death::FileWrite);
        assert_eq!(Death::classify(status(SIGKILL), ""), Death::Killed);
        assert_eq!(
            Death::classify(status(SIGSEGV), ""),
            Death::SegmentationFault
        );
        assert_eq!(Death::classify(status(SIGABRT), ""), Death::Aborted);
        assert_eq!(Death::classify(status(15), ""), Death::Signal(15));
        assert_eq!(Death::classify(status(3 << 8), ""), Death::Exited(3));
        assert_eq!(Death::classify(None, ""), Death::Unknown);
        assert_eq!(Death::Exited(3).to_string(), "exited with 3");
        assert_eq!(Death::Aborted.to_string(), "aborted");
        assert!(Death::Killed.to_string().contains("SIGKILL"));
    }
}
