//! The child side: confine this process, answer one request, exit.
use crate::limits::ChildLimits;
use crate::protocol::{
    self, ANALYSIS, AnalysisBounds, DATA, END, ERROR, HEADER, HELLO, Hello, OK, Op, PIECE, PLAN,
    ROWS, RequestHeader, SOURCE, VERSION, WireError,
};
use crate::warm_up::WarmUp;
use reporter_child_confine::Confinement;
use reporter_ports::ports::{
    HtmlSanitizeStream, HtmlSanitizer, RenderError, RenderLimits, RowFeed, TemplateEngine,
};
use std::io::{self, BufReader, BufWriter, Write};
use std::process::ExitCode;

/// About how many bytes of a streamed render's output the child gathers before it sends
/// them (the parent's reads and the clean-up then run while the render goes on).
const OUTPUT_PIECE_BYTES: usize = 256 * 1024;
/// About how many bytes of a streamed render's output the child gathers before it
/// sanitizes them (an HTML report): small, so that little is left to sanitize once the last
/// row was rendered.
const SANITIZE_PIECE_BYTES: usize = 32 * 1024;
/// Largest request header or source a child accepts.
const MAX_HEADER: u64 = 64 * 1024;
/// Runs the child: confines itself, warms up (`warm_up`, when given: see [`WarmUp`]), says
/// hello, answers one request with `engine` (and `sanitizer` for HTML renders), exits. Exit code 0 after an answer (success or a template
/// error), 2 when confinement or the protocol failed.
pub fn run(
    engine: &dyn TemplateEngine,
    sanitizer: &dyn HtmlSanitizer,
    limits: &ChildLimits,
    warm_up: Option<&WarmUp<'_>>,
) -> ExitCode {
    let confinement = match reporter_child_confine::confine(&limits.confinement_limits()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("template sandbox: cannot confine the child: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(warm_up) = warm_up {
        warm_up.run(engine, sanitizer, limits.stack_bytes);
    }
    match serve(engine, sanitizer, limits, confinement) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("template sandbox: {e}");
            ExitCode::from(2)
        }
    }
}

fn serve(
    engine: &dyn TemplateEngine,
    sanitizer: &dyn HtmlSanitizer,
    limits: &ChildLimits,
    confinement: Confinement,
) -> io::Result<()> {
    let mut out = BufWriter::new(io::stdout());
    let hello = serde_json::to_vec(&Hello {
        version: VERSION,
        confinement,
    })
    .map_err(io::Error::other)?;
    protocol::write_frame(&mut out, HELLO, &hello)?;
    let mut input = BufReader::new(io::stdin());
    let header: RequestHeader = {
        let (kind, bytes) = protocol::read_frame(&mut input, MAX_HEADER)?;
        expect(kind, HEADER)?;
        serde_json::from_slice(&bytes).map_err(io::Error::other)?
    };
    let source = {
        let (kind, bytes) = protocol::read_frame(&mut input, limits.memory_bytes)?;
        expect(kind, SOURCE)?;
        String::from_utf8(bytes).map_err(io::Error::other)?
    };
    let request = Request {
        engine,
        sanitizer,
        limits,
        header: &header,
        source: &source,
    };
    // The engine (parse, context, rows, render) runs on a thread of its own with a bounded
    // stack; it reads the rest of the input itself.
    let answer = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("template".into())
            .stack_size(usize::try_from(limits.stack_bytes).unwrap_or(usize::MAX))
            .spawn_scoped(scope, || request.answer(&mut input, &mut out))
            .map(|t| {
                t.join()
                    .unwrap_or_else(|_| Ok(Err(RenderError::Crashed("the engine panicked".into()))))
            })
    })??;
    match answer {
        Ok(bytes) => protocol::write_frame(&mut out, OK, &bytes)?,
        Err(e) => {
            let wire = serde_json::to_vec(&WireError::from(e)).map_err(io::Error::other)?;
            protocol::write_frame(&mut out, ERROR, &wire)?;
        }
    }
    out.flush()
}

/// One request, once its header and source are read.
struct Request<'r> {
    engine: &'r dyn TemplateEngine,
    sanitizer: &'r dyn HtmlSanitizer,
    limits: &'r ChildLimits,
    header: &'r RequestHeader,
    source: &'r str,
}

type Input = BufReader<io::Stdin>;
type Output = BufWriter<io::Stdout>;

impl Request<'_> {
    /// The answer: `Err` of the outer result is a protocol failure (no answer is written).
    fn answer(
        &self,
        input: &mut Input,
        out: &mut Output,
    ) -> io::Result<Result<Vec<u8>, RenderError>> {
        let render_limits = RenderLimits::from(self.header.limits);
        if self.header.op == Op::Analyze {
            return Ok(self
                .engine
                .analyze(self.source, &render_limits)
                .and_then(|a| {
                    serde_json::to_vec(&a.mapped_fields)
                        .map_err(|e| RenderError::Evaluation(e.to_string()))
                }));
        }
        if let Some(bounds) = &self.header.analysis {
            match self.analysis(bounds)? {
                Ok(json) => protocol::write_frame(out, ANALYSIS, &json)?,
                Err(e) => return Ok(Err(e)),
            }
        }
        let planned = if self.header.stream {
            let plan = match self.engine.stream_plan(self.source, &render_limits) {
                Ok(plan) => plan,
                Err(e) => return Ok(Err(e)),
            };
            let json = serde_json::to_vec(&plan).map_err(io::Error::other)?;
            protocol::write_frame(out, PLAN, &json)?;
            plan.is_some()
        } else {
            false
        };
        let data = {
            let (kind, bytes) = protocol::read_frame(input, self.limits.memory_bytes)?;
            expect(kind, DATA)?;
            bytes
        };
        if planned {
            let mut feed = FrameFeed {
                input,
                out,
                max: self.limits.memory_bytes,
                // A sanitized document is sanitized as it is rendered, and sent whole at the
                // end (the sanitizer decides on the UTF-8 declaration, near the start, only
                // once the document ended).
                sanitizing: self.header.sanitize_html.then(|| self.sanitizer.stream()),
                handed_out: 0,
            };
            let rendered =
                self.engine
                    .render_json_streamed(self.source, &data, &mut feed, &render_limits);
            drop(data);
            let handed_out = feed.handed_out;
            return Ok(rendered.and_then(|rest| match feed.sanitizing {
                Some(mut sanitizing) => {
                    sanitizing.write(&rest);
                    drop(rest);
                    self.bounded(sanitizing.finish().into_bytes(), handed_out)
                }
                None => self.bounded(rest.into_bytes(), handed_out),
            }));
        }
        let rendered = self.engine.render_json(self.source, &data, &render_limits);
        drop(data);
        Ok(rendered.and_then(|html| {
            let bytes = if self.header.sanitize_html {
                self.sanitizer.sanitize(&html).into_bytes()
            } else {
                html.into_bytes()
            };
            self.bounded(bytes, 0)
        }))
    }

    /// The analysis a render answers first, within `bounds`: the soft memory limits lowered
    /// to the analysis' heap bound while it runs, then raised back to the hard limits (a
    /// process may raise its soft limits up to its hard ones; nothing a template does makes
    /// a system call). `Err` of the outer result when the limits cannot be set.
    fn analysis(&self, bounds: &AnalysisBounds) -> io::Result<Result<Vec<u8>, RenderError>> {
        let own = self.limits.confinement_limits();
        let during = ChildLimits {
            memory_bytes: bounds.memory_bytes.min(self.limits.memory_bytes),
            ..*self.limits
        }
        .confinement_limits();
        soft_memory_limits(during.data_bytes, during.address_space_bytes)?;
        let analysis = self
            .engine
            .analyze(self.source, &RenderLimits::from(bounds.limits))
            .and_then(|a| {
                serde_json::to_vec(&a.mapped_fields)
                    .map_err(|e| RenderError::Evaluation(e.to_string()))
            });
        soft_memory_limits(own.data_bytes, own.address_space_bytes)?;
        Ok(analysis)
    }

    /// The answer's bytes, unless with the `handed_out` bytes of the output already sent in
    /// pieces they exceed the output bound.
    fn bounded(&self, bytes: Vec<u8>, handed_out: usize) -> Result<Vec<u8>, RenderError> {
        let max_output = usize::try_from(self.limits.max_output_bytes).unwrap_or(usize::MAX);
        if bytes.len().saturating_add(handed_out) > max_output {
            return Err(RenderError::OutputTooLarge(max_output));
        }
        Ok(bytes)
    }
}

/// The streamed table's rows, read from the parent's [`ROWS`] frames until [`END`]; the
/// output's finished pieces, written to the parent as [`PIECE`] frames, or into the
/// sanitizer when the document is sanitized.
struct FrameFeed<'i> {
    input: &'i mut Input,
    out: &'i mut Output,
    max: u64,
    /// The document being sanitized as it is rendered; `None`: pieces go to the parent.
    sanitizing: Option<Box<dyn HtmlSanitizeStream + 'i>>,
    /// Bytes of output sent in pieces.
    handed_out: usize,
}

impl RowFeed for FrameFeed<'_> {
    fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, RenderError> {
        match protocol::read_frame(self.input, self.max) {
            Ok((ROWS, bytes)) => Ok(Some(bytes)),
            Ok((END, _)) => Ok(None),
            Ok((kind, _)) => Err(RenderError::Crashed(format!(
                "expected rows, got frame '{}'",
                kind as char
            ))),
            Err(e) => Err(RenderError::Crashed(format!(
                "the rows did not arrive: {e}"
            ))),
        }
    }

    fn output_piece_bytes(&self) -> Option<usize> {
        Some(if self.sanitizing.is_some() {
            SANITIZE_PIECE_BYTES
        } else {
            OUTPUT_PIECE_BYTES
        })
    }

    fn output(&mut self, piece: String) -> Result<(), RenderError> {
        if let Some(sanitizing) = self.sanitizing.as_mut() {
            sanitizing.write(&piece);
            return Ok(());
        }
        self.handed_out = self.handed_out.saturating_add(piece.len());
        protocol::write_frame(self.out, PIECE, piece.as_bytes())
            .and_then(|()| self.out.flush())
            .map_err(|e| RenderError::Crashed(format!("the output could not be sent: {e}")))
    }
}

/// Sets the soft `RLIMIT_DATA` and `RLIMIT_AS` (at most the hard ones, which stay).
fn soft_memory_limits(data_bytes: u64, address_space_bytes: u64) -> io::Result<()> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    for (resource, bytes) in [
        (Resource::Data, data_bytes),
        (Resource::As, address_space_bytes),
    ] {
        let hard = getrlimit(resource).maximum;
        let current = hard.map_or(bytes, |h| bytes.min(h));
        setrlimit(
            resource,
            Rlimit {
                current: Some(current),
                maximum: hard,
            },
        )?;
    }
    Ok(())
}

fn expect(kind: u8, want: u8) -> io::Result<()> {
    if kind == want {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("expected frame '{}', got '{}'", want as char, kind as char),
        ))
    }
}
