//! A sandbox child with a scripted engine, for the tests of `reporter-adapter-sandbox`:
//! the template source is a command.
//!
//! - `echo:<text>` renders `<text>` (analysis: no fields);
//! - `syntax` fails with a syntax error;
//! - `alloc` allocates until the memory limit stops it;
//! - `stack` recurses until the stack overflows;
//! - `spin` loops forever; `sleep` sleeps forever (no CPU);
//! - `abort` aborts; `exit` exits with code 3 without answering;
//! - `write` tries to create a file; `env` renders the number of environment variables;
//! - `try:<attempt>` makes one attempt the confinement must refuse and renders `allowed`, or
//!   `denied errno <n>` with the error the OS answered: `try:create:<path>` (create a file),
//!   `try:truncate:<path>` (open an existing file truncating it), `try:rename:<from>:<to>`,
//!   `try:unlink:<path>`, `try:mkdir:<path>`, `try:read:<path>` (read a file),
//!   `try:environ` (read the parent's `/proc/<pid>/environ`), `try:connect:<port>` (a TCP
//!   connection to 127.0.0.1), `try:exec` (run `/bin/true`), `try:fork` (start a process
//!   that exits at once);
//! - `big:<n>` renders `n` bytes;
//! - `hold:<n>` holds `n` bytes while it renders `held <n>` (analysis: no fields, nothing
//!   held);
//! - streamed renders (`stream…` plans `ds.t`): `stream` renders the context and then each
//!   chunk of rows on a line; `stream-early` answers after the first chunk; `stream-big:<n>`
//!   answers `n` bytes without reading any row; `stream-fail` fails after the first chunk;
//!   `stream-sleep` sleeps without reading any row; `stream-pieces:<n>` reads every chunk,
//!   then renders the lines `piece 0` to `piece <n-1>` and `end`, the lines handed out as
//!   output pieces when the feed takes them; `stream-empty-piece` hands out an empty piece
//!   (which no engine does) and then sleeps.
//!
//! The sanitizer wraps its input in `[sanitized]…`.
use reporter_adapter_sandbox::ChildLimits;
use reporter_ports::ports::{
    HtmlSanitizer, RenderError, RenderLimits, RowFeed, StreamPlan, TemplateAnalysis, TemplateEngine,
};
use std::process::ExitCode;

struct Scripted;

#[inline(never)]
fn recurse(n: u64, sink: &mut Vec<u64>) -> u64 {
    let local = [n; 64];
    sink.push(local[(n % 64) as usize]);
    if n == u64::MAX {
        return 0;
    }
    recurse(n + 1, sink) + local[3]
}

impl Scripted {
    fn run(&self, source: &str) -> Result<String, RenderError> {
        match source {
            "syntax" => Err(RenderError::Syntax("scripted".into())),
            "alloc" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    let mut block = vec![0u8; 16 * 1024 * 1024];
                    block[4096] = 1;
                    hoard.push(block);
                }
            }
            "stack" => {
                let mut sink = Vec::new();
                Ok(recurse(0, &mut sink).to_string())
            }
            "spin" => {
                let mut x: u64 = 0;
                loop {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            }
            "sleep" => loop {
                std::thread::sleep(std::time::Duration::from_secs(60));
            },
            "abort" => std::process::abort(),
            "exit" => std::process::exit(3),
            "write" => match std::fs::write("/tmp/reporter-sandbox-fixture-write", b"x") {
                Ok(()) => Ok("written".into()),
                Err(e) => Err(RenderError::Evaluation(e.to_string())),
            },
            "env" => Ok(std::env::vars_os().count().to_string()),
            s if s.starts_with("try:") => Ok(verdict(attempt(&s["try:".len()..]))),
            s if s.starts_with("echo:") => Ok(s["echo:".len()..].to_owned()),
            s if s.starts_with("big:") => {
                let n: usize = s["big:".len()..].parse().unwrap_or(0);
                Ok("x".repeat(n))
            }
            s if s.starts_with("hold:") => {
                let n: usize = s["hold:".len()..].parse().unwrap_or(0);
                let held = std::hint::black_box(vec![1u8; n]);
                Ok(format!("held {}", held.len()))
            }
            other => Err(RenderError::Evaluation(format!("unknown command {other}"))),
        }
    }
}

/// One attempt of `try:<attempt>`.
fn attempt(what: &str) -> std::io::Result<()> {
    use std::fs;
    let (verb, arg) = what.split_once(':').unwrap_or((what, ""));
    match verb {
        "create" => fs::File::create_new(arg).map(drop),
        "truncate" => fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(arg)
            .map(drop),
        "rename" => {
            let (from, to) = arg.split_once(':').unwrap_or((arg, ""));
            fs::rename(from, to)
        }
        "unlink" => fs::remove_file(arg),
        "mkdir" => fs::create_dir(arg),
        "read" => fs::read(arg).map(drop),
        "environ" => fs::read(format!(
            "/proc/{}/environ",
            std::os::unix::process::parent_id()
        ))
        .map(drop),
        "connect" => {
            let port: u16 = arg.parse().unwrap_or(0);
            std::net::TcpStream::connect(("127.0.0.1", port)).map(drop)
        }
        "exec" => std::process::Command::new("/bin/true").status().map(drop),
        "fork" => fork(),
        other => Err(std::io::Error::other(format!("unknown attempt {other}"))),
    }
}

/// Starts a process that exits at once.
fn fork() -> std::io::Result<()> {
    // SAFETY: the new process only calls `_exit`, which is async-signal-safe.
    match unsafe { libc::fork() } {
        -1 => Err(std::io::Error::last_os_error()),
        // SAFETY: `_exit` ends the new process without running anything of this one.
        0 => unsafe { libc::_exit(0) },
        _ => Ok(()),
    }
}

/// `allowed`, or `denied errno <n>` (`denied <error>` without an OS error).
fn verdict(outcome: std::io::Result<()>) -> String {
    match outcome {
        Ok(()) => "allowed".to_owned(),
        Err(e) => match e.raw_os_error() {
            Some(n) => format!("denied errno {n}"),
            None => format!("denied {e}"),
        },
    }
}

impl TemplateEngine for Scripted {
    fn analyze(
        &self,
        source: &str,
        _limits: &RenderLimits,
    ) -> Result<TemplateAnalysis, RenderError> {
        if source.starts_with("echo:") || source.starts_with("hold:") {
            return Ok(TemplateAnalysis::default());
        }
        self.run(source).map(|_| TemplateAnalysis::default())
    }

    fn render(
        &self,
        source: &str,
        data: &serde_json::Value,
        _limits: &RenderLimits,
    ) -> Result<String, RenderError> {
        if source == "data" {
            return Ok(data.to_string());
        }
        self.run(source)
    }

    fn stream_plan(
        &self,
        source: &str,
        _limits: &RenderLimits,
    ) -> Result<Option<StreamPlan>, RenderError> {
        if source == "syntax" {
            return Err(RenderError::Syntax("scripted".into()));
        }
        Ok(source.starts_with("stream").then(|| StreamPlan {
            data_source: "ds".into(),
            table: "t".into(),
        }))
    }

    fn render_json_streamed(
        &self,
        source: &str,
        context: &[u8],
        feed: &mut dyn RowFeed,
        limits: &RenderLimits,
    ) -> Result<String, RenderError> {
        let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
        match source {
            "stream" => {
                let mut out = text(context.to_vec());
                while let Some(chunk) = feed.next_chunk()? {
                    out.push('\n');
                    out.push_str(&text(chunk));
                }
                Ok(out)
            }
            "stream-early" => Ok(format!(
                "early {}",
                text(feed.next_chunk()?.unwrap_or_default())
            )),
            "stream-fail" => {
                feed.next_chunk()?;
                Err(RenderError::FuelExhausted)
            }
            "stream-sleep" => self.run("sleep"),
            s if s.starts_with("stream-big:") => self.run(&s["stream-".len()..]),
            "stream-empty-piece" => {
                feed.output(String::new())?;
                self.run("sleep")
            }
            s if s.starts_with("stream-pieces:") => {
                let n: usize = s["stream-pieces:".len()..].parse().unwrap_or(0);
                while feed.next_chunk()?.is_some() {}
                let mut rest = String::new();
                for i in 0..n {
                    let line = format!("piece {i}\n");
                    if feed.output_piece_bytes().is_some() {
                        feed.output(line)?;
                    } else {
                        rest.push_str(&line);
                    }
                }
                rest.push_str("end");
                Ok(rest)
            }
            _ => self.render_json(source, context, limits),
        }
    }
}

struct Wrap;

impl HtmlSanitizer for Wrap {
    fn sanitize(&self, html: &str) -> String {
        format!("[sanitized]{html}")
    }
}

fn main() -> ExitCode {
    match ChildLimits::parse_args(std::env::args().skip(1)) {
        Ok(limits) => reporter_adapter_sandbox::child::run(&Scripted, &Wrap, &limits, None),
        Err(e) => {
            eprintln!("sandbox-fixture: {e}");
            ExitCode::from(2)
        }
    }
}
