//! Template engine adapter: the original Reporter's template language (Django/Pongo2 v6
//! dialect with the original's filters, tags and helpers), parsed and run by an engine of our
//! own with hard bounds.
//!
//! - [`Pongo2Engine`] implements the [`TemplateEngine`] port: `analyze` parses and returns
//!   the data fields the template reads, `render` runs it over
//!   `{ "<data source>": { "<table>": [rows] } }` and applies the original's output clean-up.
//! - Bounds ([`RenderLimits`]): parsing is linear in the source; nesting of blocks and
//!   expressions is capped at parse time and dynamic depth at render time (no recursion can
//!   exhaust the stack, dropping a template never recurses); fuel is charged per node,
//!   expression, loop iteration, filter call and per 64 bytes of work; memory the template
//!   creates is reserved before each allocation; the output is capped.
//! - The crate never panics on any input; a last-resort guard turns a bug into an error.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod analysis;
mod ast;
mod cleanup;
mod decimal;
mod escape;
pub mod filters;
mod gofmt;
mod gomath;
mod gotime;
mod json_tree;
mod lexer;
mod limits;
mod lorem;
mod parser;
mod render;
mod rows;
mod stream_plan;
mod value;

use reporter_ports::clock::{Clock, SystemClock};
use reporter_ports::ports::{
    RenderError, RenderLimits, RowFeed, StreamPlan, TemplateAnalysis, TemplateEngine,
};
use reporter_ports::template::MappedFields;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

pub use parser::BANNED_TAGS;

/// The original's template language, sandboxed. Cheap to construct; holds only a clock.
#[derive(Clone)]
pub struct Pongo2Engine {
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Pongo2Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pongo2Engine").finish_non_exhaustive()
    }
}

impl Default for Pongo2Engine {
    fn default() -> Self {
        Self::new()
    }
}

/// What one render produced, with the data fields it read (for tests that check that the
/// mapped fields cover every read).
#[derive(Debug)]
pub struct RecordedRender {
    pub result: Result<String, RenderError>,
    pub reads: MappedFields,
}

impl Pongo2Engine {
    /// An engine on the system clock.
    pub fn new() -> Self {
        Self {
            clock: Arc::new(SystemClock),
        }
    }

    /// An engine whose "now" (`now`, `date_time`) comes from `clock`.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        Self { clock }
    }

    fn parse(source: &str, limits: &RenderLimits) -> Result<ast::Template, RenderError> {
        let source = parser::rewrite_schema_refs(source);
        parser::parse(&source, limits.max_nesting_depth)
    }

    fn render_inner(
        &self,
        source: &str,
        data: &json_tree::Json<'_>,
        limits: &RenderLimits,
        record: bool,
        feed: Option<&mut dyn RowFeed>,
    ) -> (Result<String, RenderError>, MappedFields) {
        let _memory = limits::MemoryScope::enter();
        let tpl = match Self::parse(source, limits) {
            Ok(t) => t,
            Err(e) => return (Err(e), MappedFields::new()),
        };
        let now = gotime::GoTime::utc(self.clock.now());
        let mut r = render::Renderer::new(&tpl, data, limits, now, record);
        if let (Some(feed), Some(stream)) = (feed, stream_plan::plan(&tpl)) {
            r = r.with_stream(stream, feed);
        }
        let result = r.run().map(|raw| cleanup::clean(&raw));
        let mut reads = MappedFields::new();
        for (ds, t, f) in r.reads.take().unwrap_or_default() {
            reads.entry(ds).or_default().entry(t).or_default().insert(f);
        }
        drop(r);
        (result, reads)
    }

    /// Renders like [`TemplateEngine::render`] and also returns every data field read.
    pub fn render_recording(
        &self,
        source: &str,
        data: &serde_json::Value,
        limits: &RenderLimits,
    ) -> RecordedRender {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let arena = json_tree::JsonArena::new();
            self.render_inner(
                source,
                &json_tree::Json::from_value(data, &arena),
                limits,
                true,
                None,
            )
        }));
        let (result, reads) = outcome.unwrap_or_else(|_| {
            (
                Err(RenderError::Evaluation(
                    "template engine bug (panic)".into(),
                )),
                MappedFields::new(),
            )
        });
        RecordedRender { result, reads }
    }
}

impl TemplateEngine for Pongo2Engine {
    /// Parses `source` and returns the `datasource.table.field`s it reads. Linear in the
    /// size of the source; [`RenderError::Syntax`] when it does not parse (unknown tag or
    /// filter, a file-access tag, unbalanced blocks), [`RenderError::NestingTooDeep`] past
    /// `max_nesting_depth`.
    fn analyze(
        &self,
        source: &str,
        limits: &RenderLimits,
    ) -> Result<TemplateAnalysis, RenderError> {
        catch_unwind(AssertUnwindSafe(|| {
            let tpl = Self::parse(source, limits)?;
            Ok(TemplateAnalysis {
                mapped_fields: analysis::mapped_fields(&tpl),
            })
        }))
        .unwrap_or_else(|_| Err(RenderError::Syntax("template engine bug (panic)".into())))
    }

    /// Renders `source` over `data` within `limits`, then applies the original's clean-up
    /// of trailing zeros. Never panics.
    fn render(
        &self,
        source: &str,
        data: &serde_json::Value,
        limits: &RenderLimits,
    ) -> Result<String, RenderError> {
        guarded(|| {
            let arena = json_tree::JsonArena::new();
            self.render_inner(
                source,
                &json_tree::Json::from_value(data, &arena),
                limits,
                false,
                None,
            )
            .0
        })
    }

    /// Renders over the context's JSON text read in place: strings and member names without
    /// escapes are borrowed from `context`, a row is one vector of members (no value tree of
    /// owned strings and hashed maps). Never panics.
    fn render_json(
        &self,
        source: &str,
        context: &[u8],
        limits: &RenderLimits,
    ) -> Result<String, RenderError> {
        guarded(|| {
            let arena = json_tree::JsonArena::new();
            let data =
                json_tree::Json::parse(context, &arena).map_err(RenderError::context_not_json)?;
            self.render_inner(source, &data, limits, false, None).0
        })
    }

    /// The table of the first `{% for %}` that can take it as a stream (see the engine's
    /// `stream_plan` module for the rules). [`RenderError::Syntax`] as `analyze` gives it.
    fn stream_plan(
        &self,
        source: &str,
        limits: &RenderLimits,
    ) -> Result<Option<StreamPlan>, RenderError> {
        catch_unwind(AssertUnwindSafe(|| {
            let tpl = Self::parse(source, limits)?;
            Ok(stream_plan::plan(&tpl).map(|s| StreamPlan {
                data_source: s.ds.to_owned(),
                table: s.table.to_owned(),
            }))
        }))
        .unwrap_or_else(|_| Err(RenderError::Syntax("template engine bug (panic)".into())))
    }

    /// Renders over the context read in place, the planned table's rows read from `feed`
    /// when its loop runs, each chunk freed once its rows have run. Never panics.
    fn render_json_streamed(
        &self,
        source: &str,
        context: &[u8],
        feed: &mut dyn RowFeed,
        limits: &RenderLimits,
    ) -> Result<String, RenderError> {
        guarded(|| {
            let arena = json_tree::JsonArena::new();
            let data =
                json_tree::Json::parse(context, &arena).map_err(RenderError::context_not_json)?;
            self.render_inner(source, &data, limits, false, Some(feed))
                .0
        })
    }
}

/// Runs a render; a panic (an engine bug) becomes an evaluation error.
fn guarded(render: impl FnOnce() -> Result<String, RenderError>) -> Result<String, RenderError> {
    catch_unwind(AssertUnwindSafe(render)).unwrap_or_else(|_| {
        Err(RenderError::Evaluation(
            "template engine bug (panic)".into(),
        ))
    })
}
