//! The child side: confine this process, convert the HTML read from stdin, answer, exit.
//!
//! Protocol: the service writes the HTML to the child's stdin and closes it; the child
//! answers on stdout with one tag byte and its payload, to EOF:
//!
//! - [`PDF`] then the document,
//! - [`FAILED`] then a UTF-8 message (the engine refused or failed),
//! - [`TIMED_OUT`] (the engine noticed its deadline),
//! - [`OVER_MEMORY`] (the HTML alone is larger than the memory limit).
//!
//! A child that dies before answering (over its memory or CPU limit, crashed) writes nothing
//! on stdout; the service reads its death from the exit status and stderr.
use crate::child_args::ChildArgs;
use crate::engine::{self, ConvertError, Job};
use rustix::process::{Resource, Rlimit, setrlimit};
use std::io::{self, Read, Write};
use std::process::ExitCode;
use std::time::Instant;

/// Tag of an answer that carries the PDF.
pub(crate) const PDF: u8 = b'P';
/// Tag of an answer that carries the engine's error message.
pub(crate) const FAILED: u8 = b'F';
/// Tag of an answer that says the engine passed its deadline.
pub(crate) const TIMED_OUT: u8 = b'T';
/// Tag of an answer that says the HTML alone is larger than the memory limit.
pub(crate) const OVER_MEMORY: u8 = b'M';

/// Stack of the engine's render thread (sghtmltopdf's `with_render_stack`), a private mapping
/// counted by `RLIMIT_DATA` on top of the heap.
pub(crate) const RENDER_STACK_BYTES: u64 = 16 * 1024 * 1024;
/// Most open file descriptors (stdin, stdout, stderr, a font file being read, a few spare).
const MAX_OPEN_FILES: u64 = 16;
/// Priority increment (to the lowest priority): PDF layout yields the CPU to the service.
const NICENESS: i32 = 19;

/// Confines the current process: parent-death `SIGKILL`, no new privileges, lowest priority,
/// no core dumps, no file writes (`RLIMIT_FSIZE` 0), few open files, `RLIMIT_CPU` and the
/// memory bounds of `args` (`RLIMIT_DATA`, `RLIMIT_AS`). MUST run before the child reads any
/// input.
pub fn confine(args: &ChildArgs) -> io::Result<()> {
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
    // The parent may have died before the signal was armed: then nobody will read the answer.
    let parent = rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get());
    if u32::try_from(parent).ok() != Some(args.parent_pid) {
        return Err(io::Error::other("the parent process is gone"));
    }
    rustix::thread::set_no_new_privs(true)?;
    rustix::process::nice(NICENESS)?;
    let fixed = |n: u64| Rlimit {
        current: Some(n),
        maximum: Some(n),
    };
    setrlimit(Resource::Core, fixed(0))?;
    setrlimit(Resource::Fsize, fixed(0))?;
    setrlimit(Resource::Nofile, fixed(MAX_OPEN_FILES))?;
    setrlimit(
        Resource::Cpu,
        Rlimit {
            current: Some(args.cpu_seconds),
            maximum: Some(args.cpu_seconds.saturating_add(2)),
        },
    )?;
    let data = args.memory_bytes.saturating_add(RENDER_STACK_BYTES);
    setrlimit(Resource::Data, fixed(data))?;
    setrlimit(
        Resource::As,
        fixed(data.saturating_add(ChildArgs::ADDRESS_SPACE_SLACK)),
    )?;
    Ok(())
}

/// Runs a PDF child with the command line `args` (after the subcommand): confines itself,
/// reads the HTML from stdin to EOF, converts it, answers on stdout, exits. Exit code 0 after
/// an answer (a PDF, or the engine's error), 2 when the arguments, the confinement or the
/// pipes failed. A child over its memory limit aborts ("memory allocation of … failed" on
/// stderr); over its CPU limit it gets `SIGXCPU`.
pub fn run<I: IntoIterator<Item = String>>(args: I) -> ExitCode {
    let started = Instant::now();
    let args = match ChildArgs::parse(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("pdf child: {e} (this subcommand is started by the service itself)");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = confine(&args) {
        eprintln!("pdf child: cannot confine the child: {e}");
        return ExitCode::from(2);
    }
    match serve(&args, started) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pdf child: {e}");
            ExitCode::from(2)
        }
    }
}

fn serve(args: &ChildArgs, started: Instant) -> io::Result<()> {
    let mut html = Vec::new();
    io::stdin()
        .lock()
        .take(args.memory_bytes.saturating_add(1))
        .read_to_end(&mut html)?;
    let mut out = io::stdout().lock();
    if html.len() as u64 > args.memory_bytes {
        out.write_all(&[OVER_MEMORY])?;
        return out.flush();
    }
    let job = Job {
        page: args.page,
        fonts: &args.fonts,
        deadline: started + args.timeout,
    };
    let answer = engine::convert(&html, &job);
    drop(html);
    match answer {
        Ok(pdf) => {
            out.write_all(&[PDF])?;
            out.write_all(&pdf)?;
        }
        Err(ConvertError::TimedOut) => out.write_all(&[TIMED_OUT])?,
        Err(ConvertError::Failed(message)) => {
            out.write_all(&[FAILED])?;
            out.write_all(message.as_bytes())?;
        }
    }
    out.flush()
}
