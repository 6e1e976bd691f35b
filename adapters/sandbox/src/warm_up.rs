//! A child's warm-up: one small parse and render of a template the service trusts, done after
//! the child is confined and before it says hello.
//!
//! A child is a fresh process: the first request it answers would otherwise pay for every
//! page of the engine's code and of the heap it touches for the first time (minor page faults,
//! lazily bound symbols, the heap's first `brk` steps). The pool starts children in the
//! background at a low priority, so doing that work there takes it off the request's
//! path. Nothing of the warm-up is kept but warm pages: its results are dropped, and a
//! warm-up that fails changes nothing (the request still runs as before).
use reporter_ports::ports::{HtmlSanitizer, RenderLimits, TemplateEngine};

/// What a child runs once before it says hello.
#[derive(Debug, Clone, Copy)]
pub struct WarmUp<'w> {
    /// A template the engine parses, plans and renders.
    pub source: &'w str,
    /// Its render context, as JSON text (`{ "<data source>": { "<table>": [rows] } }`).
    pub context: &'w [u8],
}

impl WarmUp<'_> {
    /// Runs the warm-up on a thread with `stack_bytes` of stack, as a request runs (the
    /// thread's stack and the allocator's state are then what the request finds). Every
    /// result is dropped: the warm-up MUST NOT change what a request answers.
    pub(crate) fn run(
        &self,
        engine: &dyn TemplateEngine,
        sanitizer: &dyn HtmlSanitizer,
        stack_bytes: u64,
    ) {
        let limits = RenderLimits::default();
        let work = || {
            if let Ok(analysis) = engine.analyze(self.source, &limits) {
                let _ = serde_json::to_vec(&analysis.mapped_fields);
            }
            if let Ok(plan) = engine.stream_plan(self.source, &limits) {
                let _ = serde_json::to_vec(&plan);
            }
            if let Ok(html) = engine.render_json(self.source, self.context, &limits) {
                let _ = sanitizer.sanitize(&html);
            }
        };
        std::thread::scope(|scope| {
            let spawned = std::thread::Builder::new()
                .name("warm-up".into())
                .stack_size(usize::try_from(stack_bytes).unwrap_or(usize::MAX))
                .spawn_scoped(scope, work);
            if let Ok(thread) = spawned {
                let _ = thread.join();
            }
        });
    }
}
