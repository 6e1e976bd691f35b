//! What the service tells a PDF child on its command line: its limits and the page (the fonts
//! are compiled into the child).
use crate::page::{Margins, PageSetup, PaperSize};
use std::time::Duration;

/// The command line of one PDF child (after the subcommand), written by the service and
/// parsed by the child.
#[derive(Debug, Clone, PartialEq)]
pub struct ChildArgs {
    /// Heap bound (bytes): `RLIMIT_DATA` is this plus the render thread's stack, `RLIMIT_AS`
    /// that plus [`ChildArgs::ADDRESS_SPACE_SLACK`]. The HTML read from stdin counts.
    pub memory_bytes: u64,
    /// CPU seconds (`RLIMIT_CPU` soft limit: `SIGXCPU`; hard limit 2 s later: `SIGKILL`).
    pub cpu_seconds: u64,
    /// The engine stops this long after the child started (the service kills it then too).
    pub timeout: Duration,
    /// The parent's pid: the child exits at once if its parent is already gone.
    pub parent_pid: u32,
    /// Paper and margins.
    pub page: PageSetup,
}

/// A command line the child cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgsError {
    /// Not `--name=value`.
    #[error("argument '{0}' is not --name=value")]
    Shape(String),
    /// A value that does not parse.
    #[error("argument '{0}' has an invalid value")]
    Value(String),
    /// An argument this child does not know.
    #[error("unknown argument '{0}'")]
    Unknown(String),
    /// A required argument is absent.
    #[error("missing --{0}")]
    Missing(&'static str),
}

impl ChildArgs {
    /// Address space allowed on top of heap and stack: the executable's mappings, shared
    /// libraries, the fonts and the allocator's reservations.
    pub const ADDRESS_SPACE_SLACK: u64 = 512 * 1024 * 1024;

    /// The arguments that carry these settings.
    pub fn to_args(&self) -> Vec<String> {
        let m = &self.page.margins;
        let paper = match self.page.paper {
            PaperSize::Letter => "letter",
            PaperSize::A4 => "a4",
        };
        vec![
            format!("--memory-bytes={}", self.memory_bytes),
            format!("--cpu-seconds={}", self.cpu_seconds),
            format!("--timeout-ms={}", self.timeout.as_millis()),
            format!("--parent-pid={}", self.parent_pid),
            format!("--paper={paper}"),
            format!("--margins={},{},{},{}", m.top, m.right, m.bottom, m.left),
        ]
    }

    /// Parses what [`ChildArgs::to_args`] wrote. Every argument is required.
    pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Self, ArgsError> {
        let mut memory = None;
        let mut cpu = None;
        let mut timeout = None;
        let mut parent = None;
        let mut paper = None;
        let mut margins = None;
        for arg in args {
            let Some((key, value)) = arg.split_once('=') else {
                return Err(ArgsError::Shape(arg));
            };
            let number = || {
                value
                    .parse::<u64>()
                    .map_err(|_| ArgsError::Value(arg.clone()))
            };
            match key {
                "--memory-bytes" => memory = Some(number()?),
                "--cpu-seconds" => cpu = Some(number()?),
                "--timeout-ms" => timeout = Some(Duration::from_millis(number()?)),
                "--parent-pid" => {
                    parent =
                        Some(u32::try_from(number()?).map_err(|_| ArgsError::Value(arg.clone()))?)
                }
                "--paper" => {
                    paper = Some(match value {
                        "letter" => PaperSize::Letter,
                        "a4" => PaperSize::A4,
                        _ => return Err(ArgsError::Value(arg)),
                    })
                }
                "--margins" => {
                    margins =
                        Some(parse_margins(value).ok_or_else(|| ArgsError::Value(arg.clone()))?)
                }
                _ => return Err(ArgsError::Unknown(key.to_owned())),
            }
        }
        Ok(Self {
            memory_bytes: memory.ok_or(ArgsError::Missing("memory-bytes"))?,
            cpu_seconds: cpu.ok_or(ArgsError::Missing("cpu-seconds"))?,
            timeout: timeout.ok_or(ArgsError::Missing("timeout-ms"))?,
            parent_pid: parent.ok_or(ArgsError::Missing("parent-pid"))?,
            page: PageSetup {
                paper: paper.ok_or(ArgsError::Missing("paper"))?,
                margins: margins.ok_or(ArgsError::Missing("margins"))?,
            },
        })
    }
}

/// `top,right,bottom,left` in inches, each finite and not negative.
fn parse_margins(value: &str) -> Option<Margins> {
    let v: Vec<f64> = value
        .split(',')
        .map(|s| s.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0))
        .collect::<Option<_>>()?;
    match v.as_slice() {
        [top, right, bottom, left] => Some(Margins {
            top: *top,
            right: *right,
            bottom: *bottom,
            left: *left,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ChildArgs {
        ChildArgs {
            memory_bytes: 1 << 28,
            cpu_seconds: 7,
            timeout: Duration::from_millis(6_500),
            parent_pid: 42,
            page: PageSetup {
                paper: PaperSize::A4,
                margins: Margins {
                    top: 0.25,
                    right: 1.0,
                    bottom: 0.5,
                    left: 0.0,
                },
            },
        }
    }

    #[test]
    fn arguments_round_trip() {
        let a = sample();
        assert_eq!(ChildArgs::parse(a.to_args()), Ok(a));
    }

    #[test]
    fn bad_arguments_are_refused() {
        let without = |name: &str| {
            sample()
                .to_args()
                .into_iter()
                .filter(|a| !a.starts_with(name))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            ChildArgs::parse(without("--memory-bytes")),
            Err(ArgsError::Missing("memory-bytes"))
        );
        assert_eq!(
            ChildArgs::parse(without("--margins")),
            Err(ArgsError::Missing("margins"))
        );
        let with = |extra: &str| {
            let mut args = sample().to_args();
            args.push(extra.to_owned());
            ChildArgs::parse(args)
        };
        assert_eq!(with("--nope=1"), Err(ArgsError::Unknown("--nope".into())));
        assert_eq!(
            with("--cpu-seconds=x"),
            Err(ArgsError::Value("--cpu-seconds=x".into()))
        );
        assert_eq!(
            with("--paper=legal"),
            Err(ArgsError::Value("--paper=legal".into()))
        );
        assert_eq!(
            with("--margins=1,2,3"),
            Err(ArgsError::Value("--margins=1,2,3".into()))
        );
        assert_eq!(
            with("--margins=1,2,3,-1"),
            Err(ArgsError::Value("--margins=1,2,3,-1".into()))
        );
        assert_eq!(
            with("--parent-pid=99999999999"),
            Err(ArgsError::Value("--parent-pid=99999999999".into()))
        );
        assert_eq!(with("stray"), Err(ArgsError::Shape("stray".into())));
    }
}
