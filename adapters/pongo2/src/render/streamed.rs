//! The streamed table's loop (see `stream_plan`): rows arrive from the feed a chunk at a
//! time; each chunk is parsed once into a [`RowChunk`] that its rows (and the strings read
//! from them) share, so a chunk is freed once nothing read from it is held.
//!
//! Rows are data, as the context is: their parsing is not charged to the template's fuel or
//! memory budget (a render that fits its budgets over the context fits them over the
//! stream); the loop charges its iterations as any loop does.
use super::{R, Renderer, eval_err};
use crate::rows::RowChunk;
use crate::stream_plan::Streamed;
use crate::value::{LoopInfo, Origin, Value};
use reporter_ports::ports::RenderError;
use std::rc::Rc;

impl<'a> Renderer<'a> {
    /// Runs `{% for key in <stream> %}` over the rows of the feed, as
    /// `exec_for_inner` runs it over a list. MUST fail if the loop runs a second time (the
    /// plan rules that out).
    pub(super) fn exec_for_streamed(
        &mut self,
        stream: Streamed<'a>,
        key: &'a str,
        body: &'a [crate::ast::Node],
        empty: Option<&'a [crate::ast::Node]>,
        parent: Option<Value<'a>>,
    ) -> R<()> {
        if std::mem::replace(&mut self.stream_read, true) {
            return Err(eval_err("the streamed table was read twice"));
        }
        let info = Rc::new(LoopInfo {
            index: std::cell::Cell::new(0),
            count: i64::MAX,
            parent,
        });
        self.set_var("forloop", Value::Loop(info.clone()));
        let origin = Origin::Row(stream.ds, stream.table);
        let mut index: i64 = 0;
        while let Some(bytes) = self.next_chunk()? {
            let chunk =
                Rc::new(RowChunk::parse_owned(bytes).map_err(RenderError::context_not_json)?);
            for i in 0..chunk.len() {
                let Some(value) = chunk.row(i, origin) else {
                    break;
                };
                self.budget.fuel(1)?;
                info.index.set(index);
                self.set_var(key, value);
                self.exec_block(body)?;
                index = index.saturating_add(1);
            }
        }
        match empty {
            Some(e) if index == 0 => self.exec_block(e),
            _ => Ok(()),
        }
    }

    /// The feed's next chunk of rows (none without a feed).
    fn next_chunk(&mut self) -> R<Option<Vec<u8>>> {
        match self.feed.as_deref_mut() {
            Some(feed) => feed.next_chunk(),
            None => Ok(None),
        }
    }
}
