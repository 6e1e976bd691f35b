//! The bounds a child applies to itself, passed on its command line.
use reporter_child_confine::Limits;

/// OS-enforced bounds of one child process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChildLimits {
    /// Heap bound (bytes): `RLIMIT_DATA` is this plus the engine thread's stack (a private
    /// mapping too); the address space (`RLIMIT_AS`) is bounded to heap, stack and
    /// [`ChildLimits::ADDRESS_SPACE_SLACK`] for code and libraries.
    pub memory_bytes: u64,
    /// CPU seconds (`RLIMIT_CPU` soft limit: `SIGXCPU`; hard limit 2 s later: `SIGKILL`).
    pub cpu_seconds: u64,
    /// Stack of the thread that runs the engine (bytes), also `RLIMIT_STACK`.
    pub stack_bytes: u64,
    /// Largest answer the child writes (bytes).
    pub max_output_bytes: u64,
    /// The parent's pid: the child exits at once if its parent is already gone.
    pub parent_pid: u32,
}

impl ChildLimits {
    /// Address space allowed on top of heap and stack: the executable's mappings, shared
    /// libraries, the allocator's reservations.
    pub const ADDRESS_SPACE_SLACK: u64 = 512 * 1024 * 1024;

    /// The limits the child confines itself with: `RLIMIT_DATA` heap plus stack,
    /// `RLIMIT_AS` that plus [`ChildLimits::ADDRESS_SPACE_SLACK`], `RLIMIT_STACK` the engine
    /// thread's stack, [`Limits::OPEN_FILES`] descriptors.
    pub fn confinement_limits(&self) -> Limits {
        // The engine thread's stack is a private mapping too: the heap keeps `memory_bytes`.
        let data = self.memory_bytes.saturating_add(self.stack_bytes);
        Limits {
            cpu_seconds: self.cpu_seconds,
            data_bytes: data,
            address_space_bytes: data.saturating_add(Self::ADDRESS_SPACE_SLACK),
            stack_bytes: Some(self.stack_bytes),
            open_files: Limits::OPEN_FILES,
            parent_pid: self.parent_pid,
        }
    }

    /// The command-line arguments that carry these limits (after the subcommand).
    pub fn to_args(&self) -> Vec<String> {
        vec![
            format!("--memory-bytes={}", self.memory_bytes),
            format!("--cpu-seconds={}", self.cpu_seconds),
            format!("--stack-bytes={}", self.stack_bytes),
            format!("--max-output-bytes={}", self.max_output_bytes),
            format!("--parent-pid={}", self.parent_pid),
        ]
    }

    /// Parses what [`ChildLimits::to_args`] wrote. Every argument is required.
    pub fn parse_args<I: IntoIterator<Item = String>>(args: I) -> Result<Self, String> {
        let mut memory = None;
        let mut cpu = None;
        let mut stack = None;
        let mut output = None;
        let mut parent = None;
        for arg in args {
            let (key, value) = arg
                .split_once('=')
                .ok_or_else(|| format!("argument '{arg}' is not --name=value"))?;
            let n: u64 = value
                .parse()
                .map_err(|_| format!("argument '{arg}' is not a number"))?;
            match key {
                "--memory-bytes" => memory = Some(n),
                "--cpu-seconds" => cpu = Some(n),
                "--stack-bytes" => stack = Some(n),
                "--max-output-bytes" => output = Some(n),
                "--parent-pid" => parent = Some(n),
                _ => return Err(format!("unknown argument '{key}'")),
            }
        }
        let missing = |name: &str| format!("missing --{name}");
        Ok(Self {
            memory_bytes: memory.ok_or_else(|| missing("memory-bytes"))?,
            cpu_seconds: cpu.ok_or_else(|| missing("cpu-seconds"))?,
            stack_bytes: stack.ok_or_else(|| missing("stack-bytes"))?,
            max_output_bytes: output.ok_or_else(|| missing("max-output-bytes"))?,
            parent_pid: u32::try_from(parent.ok_or_else(|| missing("parent-pid"))?)
                .map_err(|_| "--parent-pid out of range".to_owned())?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_round_trip() {
        let l = ChildLimits {
            memory_bytes: 1 << 28,
            cpu_seconds: 7,
            stack_bytes: 1 << 26,
            max_output_bytes: 1 << 20,
            parent_pid: 42,
        };
        assert_eq!(ChildLimits::parse_args(l.to_args()), Ok(l));
        assert!(ChildLimits::parse_args(vec!["--cpu-seconds=1".to_owned()]).is_err());
        assert!(ChildLimits::parse_args(vec!["--nope=1".to_owned()]).is_err());
        assert!(ChildLimits::parse_args(vec!["--cpu-seconds=x".to_owned()]).is_err());
    }
}
