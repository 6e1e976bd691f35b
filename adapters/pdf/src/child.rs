//! The child side: confine this process, convert the HTML read from stdin, answer, exit.
//!
//! Protocol: the service writes the HTML to the child's stdin and closes it; once confined
//! (before it reads), the child writes [`CONFINEMENT`], its [`Confinement`] as JSON and a
//! newline on stdout; then it answers with one tag byte and its payload, to EOF:
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
use crate::fonts::FontPipes;
use reporter_child_confine::{Confinement, Limits};
use std::io::{self, Read, Write};
use std::process::ExitCode;
use std::time::Instant;

/// Tag of the report that comes before the answer: the child's [`Confinement`] as JSON, then
/// a newline.
pub(crate) const CONFINEMENT: u8 = b'C';
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

/// The limits a PDF child confines itself with: `RLIMIT_CPU` and the heap of `args`,
/// `RLIMIT_DATA` the heap plus the render stack, `RLIMIT_AS` that plus
/// [`ChildArgs::ADDRESS_SPACE_SLACK`], [`Limits::OPEN_FILES`] descriptors (the pipes, the
/// font pipes, one font being read).
pub fn limits(args: &ChildArgs) -> Limits {
    let data = args.memory_bytes.saturating_add(RENDER_STACK_BYTES);
    Limits {
        cpu_seconds: args.cpu_seconds,
        data_bytes: data,
        address_space_bytes: data.saturating_add(ChildArgs::ADDRESS_SPACE_SLACK),
        stack_bytes: None,
        open_files: Limits::OPEN_FILES,
        parent_pid: args.parent_pid,
    }
}

/// Runs a PDF child with the command line `args` (after the subcommand): confines itself
/// ([`reporter_child_confine::confine`] with [`limits`]: only its pipes, `nobody` without
/// capabilities under a root service, parent-death `SIGKILL`, `no_new_privs`, low
/// priority, Landlock with no filesystem access, the seccomp filter), reports its
/// [`Confinement`] on stdout, reads the HTML from stdin to EOF, converts it (the fonts come
/// from memory: [`crate::fonts`]), answers on stdout, exits. Exit code 0 after
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
    let confinement = match reporter_child_confine::confine(&limits(&args)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pdf child: cannot confine the child: {e}");
            return ExitCode::from(2);
        }
    };
    match serve(&args, &confinement, started) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pdf child: {e}");
            ExitCode::from(2)
        }
    }
}

fn serve(args: &ChildArgs, confinement: &Confinement, started: Instant) -> io::Result<()> {
    let mut out = io::stdout().lock();
    let report = serde_json::to_vec(confinement).map_err(io::Error::other)?;
    out.write_all(&[CONFINEMENT])?;
    out.write_all(&report)?;
    out.write_all(b"\n")?;
    out.flush()?;
    let mut html = Vec::new();
    io::stdin()
        .lock()
        .take(args.memory_bytes.saturating_add(1))
        .read_to_end(&mut html)?;
    if html.len() as u64 > args.memory_bytes {
        out.write_all(&[OVER_MEMORY])?;
        return out.flush();
    }
    let fonts = FontPipes::serve()?;
    let job = Job {
        page: args.page,
        fonts: fonts.paths(),
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
