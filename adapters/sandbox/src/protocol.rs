//! The framed protocol between the service and a child, over the child's stdin and stdout.
//!
//! A frame is one kind byte, the payload length as a little-endian `u64`, then the payload.
//! Per child, exactly one exchange:
//! - child → parent: [`HELLO`] (JSON [`Hello`]: the version and what confines the child) as
//!   soon as the child has confined itself;
//! - parent → child: [`HEADER`] (JSON [`RequestHeader`]), [`SOURCE`] (the template, UTF-8);
//! - for a render with `analysis` in the header, child → parent: [`ANALYSIS`] (JSON mapped
//!   fields, as an analysis answers them) or [`ERROR`] when the analysis failed (then the
//!   child exits);
//! - for a streamed render (`stream` in the header), child → parent: [`PLAN`] (JSON
//!   `Option<StreamPlan>`: the table the template takes as a stream), or [`ERROR`] when the
//!   template does not parse;
//! - for a render, parent → child: [`DATA`] (the context as JSON); for a streamed render with
//!   a plan, then [`ROWS`] frames (each a JSON array of the planned table's rows) and one
//!   [`END`]; the child reads them while it renders and may answer before the last (the
//!   parent then stops sending);
//! - during a streamed render with a plan, child → parent: any number of [`PIECE`] frames,
//!   each a finished piece of the output (not for a sanitized render);
//! - child → parent: [`OK`] (analysis: JSON mapped fields; render: the output bytes, after
//!   the pieces) or [`ERROR`] (JSON [`WireError`]; pieces sent before are discarded); then
//!   the child exits.
use reporter_child_confine::Confinement;
use reporter_ports::ports::{EvaluationFault, RenderError, RenderLimits};
use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The child is confined and ready.
pub const HELLO: u8 = b'H';
/// Request header.
pub const HEADER: u8 = b'Q';
/// Template source.
pub const SOURCE: u8 = b'S';
/// Render context.
pub const DATA: u8 = b'D';
/// The streamed table of a streamed render.
pub const PLAN: u8 = b'P';
/// A chunk of the streamed table's rows.
pub const ROWS: u8 = b'R';
/// The streamed table's rows are all sent.
pub const END: u8 = b'Z';
/// A finished piece of a streamed render's output.
pub const PIECE: u8 = b'T';
/// The analysis of a render that answers it first (`analysis` in the header).
pub const ANALYSIS: u8 = b'A';
/// Success.
pub const OK: u8 = b'O';
/// Failure.
pub const ERROR: u8 = b'E';

/// What a ready child announces.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Hello {
    /// Protocol version ([`VERSION`]).
    pub version: u32,
    /// What the operating system enforces on the child (since version 4).
    pub confinement: Confinement,
}

/// Version of this protocol; a child speaking another one is refused. 4: the hello reports
/// the child's [`Confinement`]. 5: a render may answer its analysis first ([`ANALYSIS`]).
pub const VERSION: u32 = 5;

/// The operation of a request.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// `TemplateEngine::analyze`.
    Analyze,
    /// `TemplateEngine::render`.
    Render,
}

/// Engine bounds on the wire.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct WireLimits {
    /// Instruction budget.
    pub fuel: u64,
    /// Call nesting.
    pub max_recursion: usize,
    /// Output bytes.
    pub max_output_bytes: usize,
    /// Bytes of values the template may create.
    pub max_memory_bytes: usize,
    /// Source nesting.
    pub max_nesting_depth: usize,
}

impl From<RenderLimits> for WireLimits {
    fn from(l: RenderLimits) -> Self {
        Self {
            fuel: l.fuel,
            max_recursion: l.max_recursion,
            max_output_bytes: l.max_output_bytes,
            max_memory_bytes: l.max_memory_bytes,
            max_nesting_depth: l.max_nesting_depth,
        }
    }
}

impl From<WireLimits> for RenderLimits {
    fn from(l: WireLimits) -> Self {
        Self {
            fuel: l.fuel,
            max_recursion: l.max_recursion,
            max_output_bytes: l.max_output_bytes,
            max_memory_bytes: l.max_memory_bytes,
            max_nesting_depth: l.max_nesting_depth,
        }
    }
}

/// What to do.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct RequestHeader {
    /// Parse or render.
    pub op: Op,
    /// Engine bounds.
    pub limits: WireLimits,
    /// Sanitize the rendered HTML before answering.
    pub sanitize_html: bool,
    /// A render that takes its planned table as a stream (answers [`PLAN`] first).
    #[serde(default)]
    pub stream: bool,
    /// A render that first analyzes its source within these bounds and answers the analysis
    /// ([`ANALYSIS`]) before it reads its context (a template preview: one child parses, maps
    /// and renders).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<AnalysisBounds>,
}

/// The bounds of a render's analysis: the upload parse's.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct AnalysisBounds {
    /// Engine bounds of the analysis.
    pub limits: WireLimits,
    /// Heap bound of the child while it analyzes (bytes; at most the child's own): the
    /// child lowers its soft memory limits to it for the analysis and raises them back to
    /// its hard limits before it reads the context.
    pub memory_bytes: u64,
}

/// [`RenderError`] on the wire.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum WireError {
    /// See [`RenderError::Syntax`].
    Syntax(String),
    /// See [`RenderError::Evaluation`].
    Evaluation(String),
    /// See [`RenderError::Fault`].
    Fault(Box<EvaluationFault>),
    /// See [`RenderError::FuelExhausted`].
    FuelExhausted,
    /// See [`RenderError::RecursionLimit`].
    RecursionLimit,
    /// See [`RenderError::OutputTooLarge`].
    OutputTooLarge(usize),
    /// See [`RenderError::MemoryLimit`].
    MemoryLimit(usize),
    /// See [`RenderError::NestingTooDeep`].
    NestingTooDeep(usize),
    /// See [`RenderError::Timeout`].
    Timeout,
    /// See [`RenderError::Crashed`].
    Crashed(String),
}

impl From<RenderError> for WireError {
    fn from(e: RenderError) -> Self {
        match e {
            RenderError::Syntax(s) => Self::Syntax(s),
            RenderError::Evaluation(s) => Self::Evaluation(s),
            RenderError::Fault(f) => Self::Fault(f),
            RenderError::FuelExhausted => Self::FuelExhausted,
            RenderError::RecursionLimit => Self::RecursionLimit,
            RenderError::OutputTooLarge(n) => Self::OutputTooLarge(n),
            RenderError::MemoryLimit(n) => Self::MemoryLimit(n),
            RenderError::NestingTooDeep(n) => Self::NestingTooDeep(n),
            RenderError::Timeout => Self::Timeout,
            RenderError::Crashed(s) => Self::Crashed(s),
        }
    }
}

impl From<WireError> for RenderError {
    fn from(e: WireError) -> Self {
        match e {
            WireError::Syntax(s) => Self::Syntax(s),
            WireError::Evaluation(s) => Self::Evaluation(s),
            WireError::Fault(f) => Self::Fault(f),
            WireError::FuelExhausted => Self::FuelExhausted,
            WireError::RecursionLimit => Self::RecursionLimit,
            WireError::OutputTooLarge(n) => Self::OutputTooLarge(n),
            WireError::MemoryLimit(n) => Self::MemoryLimit(n),
            WireError::NestingTooDeep(n) => Self::NestingTooDeep(n),
            WireError::Timeout => Self::Timeout,
            WireError::Crashed(s) => Self::Crashed(s),
        }
    }
}

fn too_large(len: u64, max: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("frame of {len} bytes exceeds {max}"),
    )
}

/// Writes one frame (blocking; the child's side).
pub fn write_frame(w: &mut impl Write, kind: u8, payload: &[u8]) -> io::Result<()> {
    w.write_all(&[kind])?;
    w.write_all(&(payload.len() as u64).to_le_bytes())?;
    w.write_all(payload)?;
    w.flush()
}

/// Most bytes of a frame's payload the child reserves before they arrive (a chunk of rows, 256
/// KiB, fits; the child's address space is bounded, so a larger announced length is not
/// trusted further).
const CHILD_PREALLOCATE: u64 = 1 << 20;

/// Reads one frame of at most `max` payload bytes (blocking; the child's side). The payload
/// buffer is reserved up to [`CHILD_PREALLOCATE`] bytes of the announced length (a chunk of
/// rows arrives in one allocation, not in a buffer grown and copied again as it is read),
/// then grows with what actually arrives.
pub fn read_frame(r: &mut impl Read, max: u64) -> io::Result<(u8, Vec<u8>)> {
    let mut head = [0u8; 9];
    r.read_exact(&mut head)?;
    let len = u64::from_le_bytes(head[1..].try_into().unwrap_or_default());
    if len > max {
        return Err(too_large(len, max));
    }
    let reserve = len.min(CHILD_PREALLOCATE);
    let mut payload = Vec::with_capacity(usize::try_from(reserve).unwrap_or(0));
    r.take(len).read_to_end(&mut payload)?;
    if payload.len() as u64 != len {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok((head[0], payload))
}

/// Writes one frame (the service's side).
pub async fn write_frame_async(
    w: &mut (impl AsyncWrite + Unpin),
    kind: u8,
    payload: &[u8],
) -> io::Result<()> {
    write_frame_parts_async(w, kind, &[payload]).await
}

/// Writes one frame whose payload is `parts` one after the other, never joined (the
/// service's side; a render context is sent this way).
pub async fn write_frame_parts_async(
    w: &mut (impl AsyncWrite + Unpin),
    kind: u8,
    parts: &[impl AsRef<[u8]>],
) -> io::Result<()> {
    let len: usize = parts.iter().map(|p| p.as_ref().len()).sum();
    w.write_all(&[kind]).await?;
    w.write_all(&(len as u64).to_le_bytes()).await?;
    for part in parts {
        w.write_all(part.as_ref()).await?;
    }
    w.flush().await
}

/// Most bytes of a frame's payload reserved before they arrive: what a length announces is
/// trusted this far (a reservation is address space; pages cost memory once written), and a
/// longer payload grows as it is read.
const PREALLOCATE: u64 = 8 << 20;

/// Reads one frame of at most `max` payload bytes (the service's side). The payload buffer
/// is reserved up to [`PREALLOCATE`] bytes of the announced length (one allocation and no
/// copies for an answer of that size), then grows with what actually arrives.
pub async fn read_frame_async(
    r: &mut (impl AsyncRead + Unpin),
    max: u64,
) -> io::Result<(u8, Vec<u8>)> {
    let mut head = [0u8; 9];
    r.read_exact(&mut head).await?;
    let len = u64::from_le_bytes(head[1..].try_into().unwrap_or_default());
    if len > max {
        return Err(too_large(len, max));
    }
    let mut payload = Vec::with_capacity(usize::try_from(len.min(PREALLOCATE)).unwrap_or(0));
    (&mut *r).take(len).read_to_end(&mut payload).await?;
    if payload.len() as u64 != len {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok((head[0], payload))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_are_bounded() {
        let mut buf = Vec::new();
        write_frame(&mut buf, OK, b"hello").unwrap();
        assert_eq!(
            read_frame(&mut &buf[..], 5).unwrap(),
            (OK, b"hello".to_vec())
        );
        assert!(read_frame(&mut &buf[..], 4).is_err());
        assert!(read_frame(&mut &buf[..buf.len() - 1], 5).is_err());
    }

    #[tokio::test]
    async fn a_frame_written_in_parts_reads_as_one() {
        let mut buf = Vec::new();
        write_frame_parts_async(&mut buf, DATA, &[&b"{\"a\":"[..], b"", b"[1]}"])
            .await
            .unwrap();
        assert_eq!(
            read_frame(&mut &buf[..], 64).unwrap(),
            (DATA, br#"{"a":[1]}"#.to_vec())
        );
    }

    #[test]
    fn errors_survive_the_wire() {
        for e in [
            RenderError::Syntax("x".into()),
            RenderError::Timeout,
            RenderError::MemoryLimit(3),
            RenderError::NestingTooDeep(4),
            RenderError::Crashed("y".into()),
            RenderError::Fault(Box::new(EvaluationFault {
                cause: reporter_ports::ports::EvaluationCause::DivisionByZero,
                line: Some(3),
                detail: "integer divide by zero".into(),
            })),
        ] {
            let wire = serde_json::to_vec(&WireError::from(e.clone())).unwrap();
            let back: WireError = serde_json::from_slice(&wire).unwrap();
            assert_eq!(RenderError::from(back), e);
        }
    }
}
