//! The output handed to a streamed render's feed as it is rendered, in cleaned pieces.
//!
//! A piece ends right after a newline of the base output (never inside a capture). The
//! clean-up of a piece is then the clean-up of that part of the whole output: a number to
//! clean never spans a newline, and the newline before a piece's start is what the pattern
//! sees there in the whole text (neither a digit nor a dot). The XML declaration is the one
//! exception, as its clean-up depends on the text around it: once the text to hand out holds
//! `<?xml`, no more pieces are handed out and the rest is cleaned whole, as before (the
//! pieces handed out still count against the output bound).
use super::{R, Renderer};
use crate::cleanup;

/// The pieces handed out so far, and when to try the next one.
#[derive(Debug)]
pub(crate) struct Pieces {
    /// About how many bytes a piece holds: the next try comes once the base buffer holds
    /// that many bytes past `searched`.
    size: usize,
    /// Leading bytes of the base buffer known to hold no newline.
    searched: usize,
    /// Raw bytes of the output handed out in pieces.
    handed_out: usize,
    /// No more pieces (the output holds an XML declaration); what was handed out still
    /// counts.
    stopped: bool,
}

impl Pieces {
    pub(crate) fn new(size: usize) -> Self {
        let size = size.max(1);
        Self {
            size,
            searched: 0,
            handed_out: 0,
            stopped: false,
        }
    }

    /// Raw bytes of the output handed out so far (they count against the output bound).
    pub(crate) fn handed_out(&self) -> usize {
        self.handed_out
    }

    /// Whether a base buffer of `len` bytes should be handed out.
    pub(crate) fn due(&self, len: usize) -> bool {
        !self.stopped && len >= self.searched.saturating_add(self.size)
    }
}

impl Renderer<'_> {
    /// Hands the base buffer up to its last newline to the feed, cleaned. Each byte is
    /// searched for a newline once: a buffer without one waits for `size` more bytes.
    pub(super) fn hand_out_piece(&mut self) -> R<()> {
        let (Some(pieces), Some(buf), Some(feed)) = (
            self.pieces.as_mut(),
            self.outs.first_mut(),
            self.feed.as_deref_mut(),
        ) else {
            return Ok(());
        };
        let new = buf.as_bytes().get(pieces.searched..).unwrap_or_default();
        let Some(cut) = memchr::memrchr(b'\n', new).map(|i| pieces.searched + i + 1) else {
            pieces.searched = buf.len();
            return Ok(());
        };
        let text = buf.get(..cut).unwrap_or_default();
        if memchr::memmem::find(text.as_bytes(), b"<?xml").is_some() {
            pieces.stopped = true;
            return Ok(());
        }
        let piece = cleanup::clean(text);
        buf.drain(..cut);
        pieces.handed_out = pieces.handed_out.saturating_add(cut);
        pieces.searched = buf.len();
        feed.output(piece)
    }
}
