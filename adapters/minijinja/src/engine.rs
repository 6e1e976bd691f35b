//! [`MiniJinjaEngine`]: the sandboxed [`TemplateEngine`].
use crate::context::context_value;
use crate::helpers;
use minijinja::value::Value;
use minijinja::{AutoEscape, Environment, Error, ErrorKind, State, UndefinedBehavior};
use reporter_ports::clock::{Clock, SystemClock};
use reporter_ports::ports::{RenderError, RenderLimits, TemplateEngine};
use std::collections::HashMap;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// minijinja's hard cap on its recursion counter (without its `stacker` feature).
const ENGINE_MAX_DEPTH: usize = 500;
/// What minijinja charges its recursion counter for one macro call.
const MACRO_DEPTH_COST: usize = 4;
/// The name the template is compiled under (no extension, so no name-based escaping).
const TEMPLATE_NAME: &str = "template";

/// Options of a [`MiniJinjaEngine`].
#[derive(Clone)]
pub struct EngineOptions {
    /// HTML-escape every `{{ }}` value (`|safe` opts out). Default `false`: reports are
    /// documents built from trusted data, and the engine is not told the output format, so
    /// CSV/TXT/XML templates must not get HTML entities. Templates escape explicitly with
    /// `|e` where needed.
    pub html_autoescape: bool,
    /// Source of "now" for `date_time`. Default: the system clock (UTC).
    pub clock: Arc<dyn Clock>,
}

impl Default for EngineOptions {
    fn default() -> Self {
        Self {
            html_autoescape: false,
            clock: Arc::new(SystemClock),
        }
    }
}

impl std::fmt::Debug for EngineOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineOptions")
            .field("html_autoescape", &self.html_autoescape)
            .finish_non_exhaustive()
    }
}

/// A [`TemplateEngine`] on minijinja 2 with the reference's report helpers.
///
/// Sandbox, per render:
/// - a fresh `Environment` (nothing — counters, templates — survives between renders);
/// - no loader: `include`/`import`/`extends` of any name fail with an evaluation error,
///   so templates cannot read files; no function reads the environment or the network;
/// - `limits.fuel` is minijinja's instruction budget ([`RenderError::FuelExhausted`]);
/// - `limits.max_recursion` bounds nesting: one unit per macro call level (minijinja charges
///   4 per macro, 10 per include and 1 per loop/block), capped at minijinja's 500
///   ([`RenderError::RecursionLimit`]);
/// - output is written to a sink that fails as soon as it would pass
///   `limits.max_output_bytes`, and every value printed — including into `{% set %}` captures
///   and macro bodies — is counted against twice that budget, so huge output stops early
///   ([`RenderError::OutputTooLarge`]);
/// - undefined values are lenient and chainable (`{{ ds.missing.x }}` prints nothing), like
///   the reference's Pongo2;
/// - a panic inside the engine becomes [`RenderError::Evaluation`].
#[derive(Debug, Clone, Default)]
pub struct MiniJinjaEngine {
    options: EngineOptions,
}

impl MiniJinjaEngine {
    /// An engine with [`EngineOptions::default`] (no autoescape, system clock).
    pub fn new() -> Self {
        Self::default()
    }

    /// An engine with explicit options.
    pub fn with_options(options: EngineOptions) -> Self {
        Self { options }
    }

    /// The options in force.
    pub fn options(&self) -> &EngineOptions {
        &self.options
    }
}

/// State of one render, shared with the helper closures.
#[derive(Default)]
struct RenderState {
    counters: Mutex<HashMap<String, i64>>,
    printed: AtomicUsize,
    print_budget: usize,
    print_exceeded: AtomicBool,
}

impl RenderState {
    fn counters(&self) -> std::sync::MutexGuard<'_, HashMap<String, i64>> {
        self.counters.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// An `io::Write` that keeps at most `limit` bytes and fails past it.
struct LimitedSink {
    buf: Vec<u8>,
    limit: usize,
    exceeded: bool,
}

impl io::Write for LimitedSink {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.buf.len().saturating_add(data.len()) > self.limit {
            self.exceeded = true;
            return Err(io::Error::other("render output limit exceeded"));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn environment<'s>(options: &EngineOptions, state: &Arc<RenderState>) -> Environment<'s> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Chainable);
    env.set_keep_trailing_newline(true);
    let escape = options.html_autoescape;
    env.set_auto_escape_callback(move |_| {
        if escape {
            AutoEscape::Html
        } else {
            AutoEscape::None
        }
    });

    let st = Arc::clone(state);
    env.set_formatter(move |out, s, value| {
        let n = value
            .as_str()
            .map_or_else(|| value.to_string().len(), str::len);
        let total = st.printed.fetch_add(n, Ordering::Relaxed).saturating_add(n);
        if total > st.print_budget {
            st.print_exceeded.store(true, Ordering::Relaxed);
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                "render output limit exceeded",
            ));
        }
        minijinja::escape_formatter(out, s, value)
    });

    env.add_filter("percent_of", helpers::percent_of);
    env.add_function("percent_of", helpers::percent_of);
    env.add_filter("slice_str", helpers::slice_str);
    env.add_filter("strip_zeros", helpers::strip_zeros);
    env.add_filter("replace", helpers::replace);
    env.add_filter("floatformat", helpers::floatformat);
    env.add_filter("where", helpers::where_);
    env.add_filter("sum", helpers::sum);
    env.add_filter("count", helpers::count);
    for (name, f) in [
        (
            "sum_by",
            helpers::sum_by as fn(Value, String) -> Result<Value, Error>,
        ),
        ("avg_by", helpers::avg_by),
        ("min_by", helpers::min_by),
        ("max_by", helpers::max_by),
    ] {
        env.add_function(name, f);
        env.add_filter(name, f);
    }
    env.add_function("count_by", helpers::count_by);
    env.add_filter("count_by", helpers::count_by);
    env.add_function("last_item_by_group", helpers::last_item_by_group);
    env.add_filter("last_item_by_group", helpers::last_item_by_group);
    env.add_function("filter", helpers::filter_fn);
    env.add_function("contains", helpers::contains);
    env.add_function("calc", |s: &State, expr: String| {
        crate::calc::calc(s, &expr)
    });

    let clock = Arc::clone(&options.clock);
    env.add_function("date_time", move |layout: String| {
        helpers::format_date_time(clock.now(), &layout)
    });
    let st = Arc::clone(state);
    env.add_function("counter", move |name: String| {
        *st.counters().entry(name).or_insert(0) += 1;
        String::new()
    });
    let st = Arc::clone(state);
    env.add_function(
        "counter_show",
        move |names: minijinja::value::Rest<String>| {
            let counters = st.counters();
            names
                .iter()
                .map(|n| counters.get(n).copied().unwrap_or(0))
                .sum::<i64>()
        },
    );
    env
}

/// Every minijinja error in `err`'s source chain.
fn chain(err: &Error) -> impl Iterator<Item = &Error> {
    std::iter::successors(Some(err), |e| {
        std::error::Error::source(*e).and_then(|s| s.downcast_ref::<Error>())
    })
}

fn compile_error(err: &Error) -> RenderError {
    RenderError::Syntax(err.to_string())
}

fn render_error(err: &Error, output_exceeded: bool, limit: usize) -> RenderError {
    if output_exceeded {
        return RenderError::OutputTooLarge(limit);
    }
    for e in chain(err) {
        match e.kind() {
            ErrorKind::OutOfFuel => return RenderError::FuelExhausted,
            ErrorKind::InvalidOperation if e.detail() == Some("recursion limit exceeded") => {
                return RenderError::RecursionLimit;
            }
            ErrorKind::SyntaxError => return RenderError::Syntax(err.to_string()),
            _ => {}
        }
    }
    RenderError::Evaluation(err.to_string())
}

impl MiniJinjaEngine {
    fn render_inner(
        &self,
        source: &str,
        data: &serde_json::Value,
        limits: &RenderLimits,
    ) -> Result<String, RenderError> {
        let state = Arc::new(RenderState {
            print_budget: limits.max_output_bytes.saturating_mul(2),
            ..RenderState::default()
        });
        let mut env = environment(&self.options, &state);
        env.set_fuel(Some(limits.fuel));
        env.set_recursion_limit(
            limits
                .max_recursion
                .max(1)
                .saturating_mul(MACRO_DEPTH_COST)
                .min(ENGINE_MAX_DEPTH),
        );
        let template = env
            .template_from_named_str(TEMPLATE_NAME, source)
            .map_err(|e| compile_error(&e))?;
        let mut sink = LimitedSink {
            buf: Vec::new(),
            limit: limits.max_output_bytes,
            exceeded: false,
        };
        let result = template
            .render_captured_to(context_value(data), &mut sink)
            .map(drop);
        match result {
            Ok(()) => String::from_utf8(sink.buf)
                .map_err(|e| RenderError::Evaluation(format!("output is not UTF-8: {e}"))),
            Err(e) => Err(render_error(
                &e,
                sink.exceeded || state.print_exceeded.load(Ordering::Relaxed),
                limits.max_output_bytes,
            )),
        }
    }
}

impl TemplateEngine for MiniJinjaEngine {
    /// Compiles `source`; any compile error is [`RenderError::Syntax`]. Unknown filters and
    /// functions are only found at render time (minijinja resolves them late).
    fn check_syntax(&self, source: &str) -> Result<(), RenderError> {
        let state = Arc::new(RenderState::default());
        let env = environment(&self.options, &state);
        catch_unwind(AssertUnwindSafe(|| {
            env.template_from_named_str(TEMPLATE_NAME, source)
                .map(drop)
                .map_err(|e| compile_error(&e))
        }))
        .unwrap_or_else(|_| Err(RenderError::Syntax("template parser panicked".into())))
    }

    /// Renders under `limits` (see the type's sandbox notes). Never panics.
    fn render(
        &self,
        source: &str,
        data: &serde_json::Value,
        limits: &RenderLimits,
    ) -> Result<String, RenderError> {
        catch_unwind(AssertUnwindSafe(|| self.render_inner(source, data, limits)))
            .unwrap_or_else(|_| Err(RenderError::Evaluation("template engine panicked".into())))
    }
}
