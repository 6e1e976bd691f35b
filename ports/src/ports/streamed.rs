//! Streamed renders: one table's rows reach the render while it runs, instead of being
//! written into the context first.
//!
//! The engine decides which table a template can take this way ([`StreamPlan`]): a table the
//! template reads in exactly one place, as the list of a `{% for %}` that runs at most once
//! and needs neither the row count nor the order reversed or sorted. Everything else the
//! template reads is in the context as before.
use super::render::RenderError;
use super::render_context::RenderContext;
use super::sandbox::RunnerError;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// The table a render takes as a stream: `data_source.table`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamPlan {
    /// The data source (the context's top-level name).
    pub data_source: String,
    /// The table of that data source.
    pub table: String,
}

/// A streamed render's channel: it hands the streamed table's rows to the render, a chunk at
/// a time, and may take the output's finished pieces as they are rendered.
pub trait RowFeed {
    /// The next chunk of rows: one JSON array of row objects (`[{…},{…}]`), or `None` once
    /// every row was given. An `Err` stops the render with that error.
    fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, RenderError>;

    /// About how many bytes of output the render gathers before it hands a piece to
    /// [`Self::output`]; `None` (the default): the feed takes no output, and all of it is the
    /// render's result.
    fn output_piece_bytes(&self) -> Option<usize> {
        None
    }

    /// Takes a finished piece of the output: the text that follows the pieces before,
    /// cleaned up exactly as the whole output is. The render's result is then only what
    /// follows the last piece. Only called when [`Self::output_piece_bytes`] is `Some`; an
    /// `Err` stops the render with that error.
    fn output(&mut self, piece: String) -> Result<(), RenderError> {
        drop(piece);
        Err(RenderError::Crashed("this feed takes no output".into()))
    }
}

/// A render under way whose streamed table ([`Self::plan`]) is still to come.
///
/// The order is fixed: [`send_context`](Self::send_context) once, then
/// [`send_rows`](Self::send_rows) for each chunk of the planned table (none without a plan),
/// then [`finish`](Self::finish). Dropping a session abandons the render (its process is
/// killed).
#[async_trait]
pub trait RenderSession: Send + std::fmt::Debug {
    /// The table the render takes as a stream, if any.
    fn plan(&self) -> Option<&StreamPlan>;
    /// Sends the context: every section, with the planned table present and empty.
    async fn send_context(&mut self, context: &RenderContext) -> Result<(), RunnerError>;
    /// Sends one chunk of the planned table (a JSON array of rows). `Ok(false)` when the
    /// render no longer takes rows: it finished without reading them all, or failed; its
    /// answer is [`finish`](Self::finish)'s.
    async fn send_rows(&mut self, chunk: &[u8]) -> Result<bool, RunnerError>;
    /// Ends the rows (if the render still takes them) and waits for the output: all of it,
    /// or, after [`take_output`](Self::take_output), what follows the last piece.
    async fn finish(self: Box<Self>) -> Result<String, RunnerError>;
    /// Takes the output's pieces as the render hands them out, so the caller never holds the
    /// whole output. MUST be called before [`send_context`](Self::send_context) (later it
    /// answers `None`). `None` when this session answers in one piece (the default).
    ///
    /// The pieces are only the output once [`finish`](Self::finish) answered `Ok`: the
    /// output is the pieces followed by that answer. After an `Err`, or when the session is
    /// dropped, the pieces given so far are not an output, and the reader sees the end.
    /// The reader MUST keep reading until the end: a piece not read holds the render back.
    fn take_output(&mut self) -> Option<Box<dyn OutputPieces>> {
        None
    }
}

/// The output's pieces of a streamed render ([`RenderSession::take_output`]), in order.
#[async_trait]
pub trait OutputPieces: Send {
    /// The next piece: UTF-8 text ending a line, cleaned up exactly as the whole output is;
    /// `None` once the render answered, failed or was abandoned.
    async fn next(&mut self) -> Option<bytes::Bytes>;
}
