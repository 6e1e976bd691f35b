//! Executes a parsed template over data: scopes, output, autoescape and the built-in tags.
mod calc;
mod custom;
mod expr;
mod fast_print;
mod pieces;
mod streamed;

use crate::ast::{AggOp, Block, ExprId, LoremMethod, Node, Template};
use crate::escape::html_escape;
use crate::gotime::GoTime;
use crate::limits::{Budget, Tracked};
use crate::value::{Func, Json, ListKind, ListV, LoopInfo, MapV, Origin, Text, VALUE_SIZE, Value};
use reporter_ports::ports::{EvaluationCause, EvaluationFault, RenderError, RenderLimits, RowFeed};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

pub(crate) type R<T> = Result<T, RenderError>;

pub(crate) use custom::time_of;

/// The variable paths of a `calc` text, as the original finds them.
pub(crate) fn calc_paths(text: &str) -> Vec<String> {
    calc::variables(text)
        .into_iter()
        .filter_map(|(s, e)| text.get(s..e).map(str::to_owned))
        .collect()
}

/// A data read: data source, table, field.
pub type Read = (String, String, String);

/// One scope frame. Lookups walk `parent` links, so a macro body sees the frames of its
/// definition, not those of its caller (Pongo2's child execution contexts).
struct Frame<'a> {
    parent: Option<usize>,
    vars: Vec<(&'a str, Value<'a>)>,
    /// The row whose fields are bare names (the `if` of the original's aggregation tags).
    row: Option<MapV<'a>>,
    generation: u64,
}

/// Per-render state of `cycle` and `ifchanged` nodes.
enum NodeState<'a> {
    Fresh,
    Cycle(usize),
    Changed {
        content: Option<String>,
        values: Vec<Value<'a>>,
    },
}

/// Pongo2 errors that end an evaluation: anything but a resource bound can be caught where
/// the original catches it (the condition of an aggregation tag).
pub(crate) fn is_resource_error(e: &RenderError) -> bool {
    !matches!(
        e,
        RenderError::Evaluation(_) | RenderError::Fault(_) | RenderError::Syntax(_)
    )
}

/// An evaluation error of no finer cause (placed as it leaves its tag: [`place`]).
pub(crate) fn eval_err(msg: impl Into<String>) -> RenderError {
    eval_fault(EvaluationCause::EvaluationFailed, msg)
}

/// An evaluation error of `cause` (placed as it leaves its tag: [`place`]).
pub(crate) fn eval_fault(cause: EvaluationCause, msg: impl Into<String>) -> RenderError {
    RenderError::Fault(Box::new(EvaluationFault::new(cause, msg)))
}

/// Gives an evaluation fault not placed yet the `line` of the innermost tag or `{{ }}` it
/// leaves; any other error is returned as it is.
pub(crate) fn place(e: RenderError, line: Option<u32>) -> RenderError {
    match e {
        RenderError::Fault(mut f) if f.line.is_none() => {
            f.line = line;
            RenderError::Fault(f)
        }
        e => e,
    }
}

/// The line of a node's tag or `{{ }}` (where an error of the tag itself is reported).
fn node_line(tpl: &Template, n: &Node) -> Option<u32> {
    let first = match n {
        Node::Calc { line, .. } => return Some(*line),
        Node::Print(e)
        | Node::Set { expr: e, .. }
        | Node::For { iter: e, .. }
        | Node::IfEqual { a: e, .. }
        | Node::WidthRatio { current: e, .. }
        | Node::Aggregate { collection: e, .. }
        | Node::DateTime { layout: e, .. }
        | Node::LastItemByGroup { collection: e, .. } => *e,
        Node::If { conditions, .. } => *conditions.first()?,
        Node::With { pairs, .. } => pairs.first()?.1,
        Node::Firstof(args) | Node::Cycle { args, .. } => *args.first()?,
        _ => return None,
    };
    tpl.expr_line(first)
}

/// Renders one template once.
pub(crate) struct Renderer<'a> {
    pub(crate) tpl: &'a Template,
    data: &'a Json<'a>,
    pub(crate) budget: Budget,
    frames: Vec<Frame<'a>>,
    generation: u64,
    autoescape: bool,
    outs: Vec<String>,
    states: Vec<NodeState<'a>>,
    pub(crate) counters: BTreeMap<&'a str, i64>,
    pub(crate) now: GoTime,
    rng: u64,
    macro_depth: usize,
    pub(crate) reads: Option<BTreeSet<Read>>,
    /// The streamed table's loop and where its rows come from ([`Self::with_stream`]).
    stream: Option<crate::stream_plan::Streamed<'a>>,
    feed: Option<&'a mut dyn RowFeed>,
    /// The streamed loop has run (it runs at most once).
    stream_read: bool,
    /// The output handed to the feed as it is rendered, when the feed takes it.
    pieces: Option<pieces::Pieces>,
    /// Per expression (by id), where its streamed row's field was found last
    /// (`fast_print`); grown on demand, at most one per expression of the template.
    field_hints: Vec<Option<crate::rows::FieldHint>>,
}

impl<'a> Renderer<'a> {
    pub(crate) fn new(
        tpl: &'a Template,
        data: &'a Json<'a>,
        limits: &RenderLimits,
        now: GoTime,
        record: bool,
    ) -> Self {
        let mut states = Vec::new();
        states.resize_with(tpl.stateful, || NodeState::Fresh);
        Self {
            tpl,
            data,
            budget: Budget::new(limits),
            frames: vec![Frame {
                parent: None,
                vars: Vec::new(),
                row: None,
                generation: 0,
            }],
            generation: 0,
            autoescape: true,
            outs: vec![String::new()],
            states,
            counters: BTreeMap::new(),
            now,
            rng: 0x9E37_79B9_7F4A_7C15,
            macro_depth: 0,
            reads: record.then(BTreeSet::new),
            stream: None,
            feed: None,
            stream_read: false,
            pieces: None,
            field_hints: Vec::new(),
        }
    }

    /// Takes the rows of `stream`'s table from `feed` when its loop runs (the context holds
    /// the table empty).
    pub(crate) fn with_stream(
        mut self,
        stream: crate::stream_plan::Streamed<'a>,
        feed: &'a mut dyn RowFeed,
    ) -> Self {
        self.pieces = feed.output_piece_bytes().map(pieces::Pieces::new);
        self.stream = Some(stream);
        self.feed = Some(feed);
        self
    }

    /// Renders the whole template; returns the raw output (before the clean-up).
    pub(crate) fn run(&mut self) -> R<String> {
        let body: &'a Block = &self.tpl.body;
        self.exec_block(body)?;
        Ok(self.outs.pop().unwrap_or_default())
    }

    // ----- output -----------------------------------------------------------------------

    pub(crate) fn write(&mut self, s: &str) -> R<()> {
        let limit = self.budget.limits.max_output_bytes;
        let base = self.outs.len() == 1;
        let Some(buf) = self.outs.last_mut() else {
            return Err(eval_err("no output buffer"));
        };
        // The output's pieces handed out so far count as the base buffer's.
        let before = match &self.pieces {
            Some(p) if base => p.handed_out(),
            _ => 0,
        };
        if before.saturating_add(buf.len()).saturating_add(s.len()) > limit {
            return Err(RenderError::OutputTooLarge(limit));
        }
        buf.push_str(s);
        let len = buf.len();
        self.budget.fuel_bytes(s.len())?;
        if base && self.pieces.as_ref().is_some_and(|p| p.due(len)) {
            self.hand_out_piece()?;
        }
        Ok(())
    }

    /// Runs `f` with output captured into a string.
    fn capture(&mut self, f: impl FnOnce(&mut Self) -> R<()>) -> R<String> {
        self.outs.push(String::new());
        let r = f(self);
        let s = self.outs.pop().unwrap_or_default();
        r.map(|()| s)
    }

    // ----- values the template creates ---------------------------------------------------

    /// A new string value, counted against the memory budget.
    pub(crate) fn new_str(&mut self, s: String, safe: bool) -> R<Value<'a>> {
        self.budget.reserve(s.capacity())?;
        let bytes = s.capacity();
        Ok(Value::Str(
            Text::Owned(Rc::new(Tracked::adopt(s, bytes))),
            safe,
        ))
    }

    /// Reserves room for a string of `len` bytes before building it.
    pub(crate) fn reserve_str(&mut self, len: usize) -> R<()> {
        self.budget.check_transient(len)
    }

    /// A new list value, counted against the memory budget.
    pub(crate) fn new_list(&mut self, items: Vec<Value<'a>>, kind: ListKind) -> R<Value<'a>> {
        let bytes = items.capacity().saturating_mul(VALUE_SIZE);
        self.budget.reserve(bytes)?;
        Ok(Value::List(ListV::Owned(
            Rc::new(Tracked::adopt(items, bytes)),
            kind,
        )))
    }

    /// Checks that a list of `n` values may be built.
    pub(crate) fn reserve_list(&mut self, n: usize) -> R<()> {
        self.budget.check_transient(n.saturating_mul(VALUE_SIZE))
    }

    /// A deterministic pseudo-random number below `n` (`random` filter, `lorem random`).
    pub(crate) fn random_below(&mut self, n: usize) -> usize {
        // xorshift64*
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        if n == 0 {
            return 0;
        }
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) % n as u64) as usize
    }

    // ----- scopes ------------------------------------------------------------------------

    fn push_frame(&mut self, parent: Option<usize>) -> R<()> {
        if self.frames.len() > 4096 {
            return Err(RenderError::RecursionLimit);
        }
        self.generation += 1;
        self.frames.push(Frame {
            parent,
            vars: Vec::new(),
            row: None,
            generation: self.generation,
        });
        Ok(())
    }

    fn push_child(&mut self) -> R<()> {
        let top = self.frames.len().checked_sub(1);
        self.push_frame(top)
    }

    fn pop_frame(&mut self) {
        if self.frames.len() > 1 {
            self.frames.pop();
        }
    }

    /// Binds `name` in the innermost frame (`set`).
    pub(crate) fn set_var(&mut self, name: &'a str, v: Value<'a>) {
        if let Some(top) = self.frames.last_mut() {
            if let Some(slot) = top.vars.iter_mut().rev().find(|(n, _)| *n == name) {
                slot.1 = v;
            } else {
                top.vars.push((name, v));
            }
        }
    }

    /// Records a read of `field` when `map` is a data row.
    pub(crate) fn note_read(&mut self, map: &MapV<'a>, field: &str) {
        if self.reads.is_none() {
            return;
        }
        if let MapV::Owned(o) = map {
            // Fields the template added (`add_day`, `add_signed`) are not data.
            if o.synthetic.contains(&field)
                || o.entries
                    .binary_search_by(|(k, _)| (**k).cmp(field))
                    .is_ok()
            {
                return;
            }
        }
        if let (Some(reads), Origin::Row(ds, t)) = (self.reads.as_mut(), map.origin())
            && !reads
                .iter()
                .any(|(a, b, c)| a == ds && b == t && c == field)
        {
            reads.insert((ds.to_owned(), t.to_owned(), field.to_owned()));
        }
    }

    /// `map[key]`, recording the read.
    pub(crate) fn field(&mut self, map: &MapV<'a>, key: &str) -> Option<Value<'a>> {
        self.note_read(map, key);
        map.get(key)
    }

    /// The original's `getNestedField`: a dotted path through maps.
    pub(crate) fn nested_field(&mut self, map: &MapV<'a>, path: &str) -> Option<Value<'a>> {
        let mut cur = Value::Map(map.clone());
        for part in path.split('.') {
            let Value::Map(m) = &cur else {
                return None;
            };
            let m = m.clone();
            cur = self.field(&m, part)?;
        }
        Some(cur)
    }

    /// Looks a name up: scope frames (innermost first), then the data sources and the
    /// context helpers `filter` and `contains`.
    pub(crate) fn lookup(&mut self, name: &str) -> Option<Value<'a>> {
        let mut idx = self.frames.len().checked_sub(1);
        while let Some(i) = idx {
            let frame = self.frames.get(i)?;
            if let Some(row) = &frame.row {
                let row = row.clone();
                if row.get(name).is_some() {
                    return self.field(&row, name);
                }
            }
            let frame = self.frames.get(i)?;
            if let Some((_, v)) = frame.vars.iter().rev().find(|(n, _)| *n == name) {
                return Some(v.clone());
            }
            idx = frame.parent;
        }
        if let Json::Object(map) = self.data
            && let Some((k, j)) = map.get_key_value(name)
        {
            return Some(Value::from_json(j, Origin::Ds(k)));
        }
        match name {
            "filter" => Some(Value::Func(Func::Filter)),
            "contains" => Some(Value::Func(Func::Contains)),
            _ => None,
        }
    }

    // ----- nodes -------------------------------------------------------------------------

    pub(crate) fn exec_block(&mut self, block: &'a [Node]) -> R<()> {
        for n in block {
            self.exec(n)?;
        }
        Ok(())
    }

    fn exec(&mut self, n: &'a Node) -> R<()> {
        self.budget.enter()?;
        let r = self.budget.fuel(1).and_then(|()| self.exec_inner(n));
        self.budget.leave();
        r.map_err(|e| place(e, node_line(self.tpl, n)))
    }

    /// Runs one node. Long by design: one arm per node kind of the template tree, each arm
    /// the whole meaning of its tag (splitting it would scatter the evaluator's semantics).
    fn exec_inner(&mut self, n: &'a Node) -> R<()> {
        match n {
            Node::Text {
                text,
                trim_left,
                trim_right,
            } => {
                let ws: &[char] = &[' ', '\n', '\r', '\t'];
                let mut s: &str = text;
                if *trim_left {
                    s = s.trim_start_matches(ws);
                }
                if *trim_right {
                    s = s.trim_end_matches(ws);
                }
                self.write(s)
            }
            Node::Print(e) => self.print(*e),
            Node::If { conditions, blocks } => {
                for (i, c) in conditions.iter().enumerate() {
                    if self.eval(*c)?.is_true() {
                        return match blocks.get(i) {
                            Some(b) => self.exec_block(b),
                            None => Ok(()),
                        };
                    }
                    if i + 1 == conditions.len()
                        && let Some(b) = blocks.get(i + 1)
                    {
                        return self.exec_block(b);
                    }
                }
                Ok(())
            }
            Node::For {
                key,
                value,
                iter,
                reversed,
                sorted,
                body,
                empty,
            } => self.exec_for(
                key,
                value.as_deref(),
                *iter,
                *reversed,
                *sorted,
                body,
                empty.as_deref(),
            ),
            Node::With { pairs, body } => {
                let mut vals = Vec::with_capacity(pairs.len());
                for (k, e) in pairs {
                    vals.push((&**k, self.eval(*e)?));
                }
                self.push_child()?;
                for (k, v) in vals {
                    self.set_var(k, v);
                }
                let r = self.exec_block(body);
                self.pop_frame();
                r
            }
            Node::Set { name, expr } => {
                let v = self.eval(*expr)?;
                self.set_var(name, v);
                Ok(())
            }
            Node::Autoescape { on, body } => {
                let saved = self.autoescape;
                self.autoescape = *on;
                let r = self.exec_block(body);
                self.autoescape = saved;
                r
            }
            Node::Comment => Ok(()),
            Node::Cycle {
                state,
                args,
                as_name,
                silent,
            } => {
                let idx = match self.states.get(*state) {
                    Some(NodeState::Cycle(i)) => *i,
                    _ => 0,
                };
                if let Some(s) = self.states.get_mut(*state) {
                    *s = NodeState::Cycle(idx.wrapping_add(1));
                }
                let Some(item) = args.get(idx % args.len().max(1)) else {
                    return Ok(());
                };
                let v = self.eval(*item)?;
                if !silent {
                    let s = v.to_go_string().into_owned();
                    self.write(&s)?;
                }
                if let Some(name) = as_name {
                    self.set_var(name, v);
                }
                Ok(())
            }
            Node::FilterBlock { filters, body } => {
                let s = self.capture(|r| r.exec_block(body))?;
                let mut v = self.new_str(s, false)?;
                for f in filters {
                    let arg = match f.arg {
                        Some(a) => self.eval(a)?,
                        None => Value::Nil,
                    };
                    v = crate::filters::apply(self, f.func, v, arg)?;
                }
                let s = v.to_go_string().into_owned();
                self.write(&s)
            }
            Node::Firstof(args) => {
                for a in args {
                    let v = self.eval(*a)?;
                    if v.is_true() {
                        let s = v.to_go_string();
                        let s = if self.autoescape && !self.safe_applied(*a) {
                            html_escape(&s).into_owned()
                        } else {
                            s.into_owned()
                        };
                        return self.write(&s);
                    }
                }
                Ok(())
            }
            Node::IfChanged {
                state,
                watched,
                then,
                otherwise,
            } => self.exec_ifchanged(*state, watched, then, otherwise.as_deref()),
            Node::IfEqual {
                negate,
                a,
                b,
                then,
                otherwise,
            } => {
                let x = self.eval(*a)?;
                let y = self.eval(*b)?;
                if x.equals(&y) != *negate {
                    self.exec_block(then)
                } else if let Some(o) = otherwise {
                    self.exec_block(o)
                } else {
                    Ok(())
                }
            }
            Node::Lorem {
                count,
                method,
                random,
            } => self.exec_lorem(*count, *method, *random),
            Node::Macro(id) => {
                let Some(def) = self.tpl.macros.get(*id) else {
                    return Err(eval_err("unknown macro"));
                };
                let frame = self.frames.len().saturating_sub(1);
                let generation = self.frames.last().map_or(0, |f| f.generation);
                self.set_var(
                    &def.name,
                    Value::Func(Func::Macro {
                        id: *id,
                        frame,
                        generation,
                    }),
                );
                Ok(())
            }
            Node::Now { format, fake } => {
                let t = if *fake {
                    GoTime::utc(
                        chrono::NaiveDate::from_ymd_opt(2014, 2, 5)
                            .and_then(|d| d.and_hms_opt(18, 31, 45))
                            .map(|d| d.and_utc())
                            .unwrap_or_default(),
                    )
                } else {
                    self.now.clone()
                };
                let s = t.format(format);
                self.write(&s)
            }
            Node::Spaceless(body) => {
                let s = self.capture(|r| r.exec_block(body))?;
                let s = spaceless(&s);
                self.write(&s)
            }
            Node::TemplateTag(s) => self.write(s),
            Node::WidthRatio {
                current,
                max,
                width,
                as_name,
            } => {
                let c = self.eval(*current)?.float();
                let m = self.eval(*max)?.float();
                let w = self.eval(*width)?.float();
                let v = (c / m * w + 0.5).ceil();
                if !v.is_finite() {
                    return Err(eval_err("widthratio: the ratio is not a finite number"));
                }
                let v = crate::gofmt::float_to_int(v);
                match as_name {
                    Some(name) => {
                        self.set_var(name, Value::Int(v));
                        Ok(())
                    }
                    None => self.write(&v.to_string()),
                }
            }
            Node::Aggregate {
                op,
                collection,
                field,
                condition,
                as_name,
            } => {
                let s = self.exec_aggregate(*op, *collection, *field, *condition)?;
                let count = (*op == AggOp::Count)
                    .then(|| s.parse::<i64>().ok())
                    .flatten();
                self.print_or_bind(s, count, as_name.as_deref())
            }
            Node::Calc { text, as_name, .. } => {
                let s = self.exec_calc(text)?;
                self.print_or_bind(s, None, as_name.as_deref())
            }
            Node::DateTime { layout, as_name } => {
                let layout = self.eval(*layout)?.to_go_string().into_owned();
                let s = self.now.format(&custom::date_time_layout(&layout));
                self.print_or_bind(s, None, as_name.as_deref())
            }
            Node::LastItemByGroup {
                collection,
                group_by,
                order_by,
                condition,
                as_name,
            } => {
                let v =
                    self.exec_last_item_by_group(*collection, *group_by, *order_by, *condition)?;
                self.set_var(as_name, v);
                Ok(())
            }
            Node::Counter(name) => {
                let c = self.counters.entry(name).or_insert(0);
                *c = c.wrapping_add(1);
                Ok(())
            }
            Node::CounterShow(names) => {
                let total = names
                    .iter()
                    .map(|n| self.counters.get(&**n).copied().unwrap_or(0))
                    .fold(0i64, i64::wrapping_add);
                self.write(&total.to_string())
            }
        }
    }

    /// A custom tag's result: written as is, or with `as <name>` bound in the innermost
    /// scope (like `set`) — as the integer `int` when given (`count_by`), otherwise as the
    /// text the tag would have printed.
    fn print_or_bind(&mut self, text: String, int: Option<i64>, name: Option<&'a str>) -> R<()> {
        let Some(name) = name else {
            return self.write(&text);
        };
        let v = match int {
            Some(i) => Value::Int(i),
            None => self.new_str(text, false)?,
        };
        self.set_var(name, v);
        Ok(())
    }

    /// `{{ expr }}`: escaped when autoescape is on, unless marked safe (Pongo2 escapes only
    /// string values).
    fn print(&mut self, e: ExprId) -> R<()> {
        if self.print_row_field(e)? {
            return Ok(());
        }
        let v = self.eval(e)?;
        if self.autoescape && v.is_string() && !v.is_safe() && !self.safe_applied(e) {
            return self.write(&html_escape(v.as_str().unwrap_or_default()));
        }
        if let Value::Int(i) = v {
            // The common integer column, printed without a String.
            return self.write(itoa::Buffer::new().format(i));
        }
        self.write(&v.to_go_string())
    }

    #[allow(clippy::too_many_arguments)]
    fn exec_for(
        &mut self,
        key: &'a str,
        value_name: Option<&'a str>,
        iter: ExprId,
        reversed: bool,
        sorted: bool,
        body: &'a [Node],
        empty: Option<&'a [Node]>,
    ) -> R<()> {
        let parent = self
            .lookup("forloop")
            .filter(|v| matches!(v, Value::Loop(_)));
        self.push_child()?;
        let r = self.exec_for_inner(key, value_name, iter, reversed, sorted, body, empty, parent);
        self.pop_frame();
        r
    }

    #[allow(clippy::too_many_arguments)]
    fn exec_for_inner(
        &mut self,
        key: &'a str,
        value_name: Option<&'a str>,
        iter: ExprId,
        reversed: bool,
        sorted: bool,
        body: &'a [Node],
        empty: Option<&'a [Node]>,
        parent: Option<Value<'a>>,
    ) -> R<()> {
        let info = Rc::new(LoopInfo {
            index: std::cell::Cell::new(0),
            count: 0,
            parent: parent.clone(),
        });
        self.set_var("forloop", Value::Loop(info));
        if let Some(stream) = self.stream.filter(|s| s.iter == iter) {
            return self.exec_for_streamed(stream, key, body, empty, parent);
        }
        let obj = self.eval(iter)?;
        // (key, value) pairs; value only for maps.
        let mut items: Vec<(Value<'a>, Option<Value<'a>>)> = Vec::new();
        match &obj {
            Value::List(l) => {
                self.reserve_list(l.len())?;
                items.extend(l.iter().map(|v| (v, None)));
                if sorted {
                    items.sort_by(|a, b| sort_cmp(&a.0, &b.0));
                }
            }
            Value::Map(m) => {
                for (k, v) in m.entries() {
                    self.note_read(m, &k);
                    let k = match k {
                        std::borrow::Cow::Borrowed(s) => Value::str(s),
                        std::borrow::Cow::Owned(s) => self.new_str(s, false)?,
                    };
                    items.push((k, Some(v)));
                }
            }
            Value::Str(t, _) => {
                let s = t.as_str().to_owned();
                self.reserve_list(s.len())?;
                for c in s.chars() {
                    items.push((self.new_str(c.to_string(), false)?, None));
                }
            }
            _ => {}
        }
        if reversed {
            items.reverse();
        }
        if items.is_empty() {
            if let Some(e) = empty {
                return self.exec_block(e);
            }
            return Ok(());
        }
        let count = i64::try_from(items.len()).unwrap_or(i64::MAX);
        let info = Rc::new(LoopInfo {
            index: std::cell::Cell::new(0),
            count,
            parent,
        });
        self.set_var("forloop", Value::Loop(info.clone()));
        for (i, (k, v)) in items.into_iter().enumerate() {
            self.budget.fuel(1)?;
            info.index.set(i64::try_from(i).unwrap_or(i64::MAX));
            self.set_var(key, k);
            if let (Some(name), Some(v)) = (value_name, v) {
                self.set_var(name, v);
            }
            self.exec_block(body)?;
        }
        Ok(())
    }

    fn exec_ifchanged(
        &mut self,
        state: usize,
        watched: &'a [ExprId],
        then: &'a [Node],
        otherwise: Option<&'a [Node]>,
    ) -> R<()> {
        if watched.is_empty() {
            let s = self.capture(|r| r.exec_block(then))?;
            let changed = match self.states.get(state) {
                Some(NodeState::Changed {
                    content: Some(c), ..
                }) => *c != s,
                _ => true,
            };
            if changed {
                self.write(&s)?;
                if let Some(st) = self.states.get_mut(state) {
                    *st = NodeState::Changed {
                        content: Some(s),
                        values: Vec::new(),
                    };
                }
            }
            return Ok(());
        }
        let mut now = Vec::with_capacity(watched.len());
        for e in watched {
            now.push(self.eval(*e)?);
        }
        let changed = match self.states.get(state) {
            Some(NodeState::Changed { values, .. }) if !values.is_empty() => {
                values.iter().zip(now.iter()).any(|(a, b)| !a.equals(b))
            }
            _ => true,
        };
        if let Some(st) = self.states.get_mut(state) {
            *st = NodeState::Changed {
                content: None,
                values: now,
            };
        }
        if changed {
            self.exec_block(then)
        } else if let Some(o) = otherwise {
            self.exec_block(o)
        } else {
            Ok(())
        }
    }

    fn exec_lorem(&mut self, count: i64, method: LoremMethod, random: bool) -> R<()> {
        const MAX_LOREM: i64 = 100_000;
        if count > MAX_LOREM {
            return Err(eval_err(format!("max count for lorem is {MAX_LOREM}")));
        }
        let paragraphs: Vec<&'static str> = crate::lorem::TEXT.split('\n').collect();
        let words: Vec<&'static str> = crate::lorem::TEXT.split_whitespace().collect();
        for i in 0..count.max(0) {
            let i = usize::try_from(i).unwrap_or(0);
            match method {
                LoremMethod::Words => {
                    if i > 0 {
                        self.write(" ")?;
                    }
                    let w = if random {
                        let n = self.random_below(words.len());
                        words.get(n)
                    } else {
                        words.get(i % words.len().max(1))
                    };
                    self.write(w.copied().unwrap_or_default())?;
                }
                LoremMethod::Blocks | LoremMethod::Paragraphs => {
                    if i > 0 {
                        self.write("\n")?;
                    }
                    let p = if random {
                        let n = self.random_below(paragraphs.len());
                        paragraphs.get(n)
                    } else {
                        paragraphs.get(i % paragraphs.len().max(1))
                    };
                    let p = p.copied().unwrap_or_default();
                    if method == LoremMethod::Paragraphs {
                        self.write("<p>")?;
                        self.write(p)?;
                        self.write("</p>")?;
                    } else {
                        self.write(p)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Calls a macro with evaluated arguments; its output is a safe string.
    pub(crate) fn call_macro(
        &mut self,
        id: usize,
        frame: usize,
        generation: u64,
        args: Vec<Value<'a>>,
    ) -> R<Value<'a>> {
        let tpl = self.tpl;
        let Some(def) = tpl.macros.get(id) else {
            return Err(eval_err("unknown macro"));
        };
        if self.frames.get(frame).map(|f| f.generation) != Some(generation) {
            return Err(eval_err(format!(
                "macro '{}' called outside of its scope",
                def.name
            )));
        }
        if args.len() > def.params.len() {
            return Err(eval_err(format!(
                "Macro '{}' called with too many arguments ({} instead of {}).",
                def.name,
                args.len(),
                def.params.len()
            )));
        }
        if self.macro_depth >= self.budget.limits.max_recursion {
            return Err(RenderError::RecursionLimit);
        }
        self.macro_depth += 1;
        let r = (|| {
            self.push_frame(Some(frame))?;
            let mut bound = Vec::with_capacity(def.params.len());
            for (i, (name, default)) in def.params.iter().enumerate() {
                let v = if i < args.len() {
                    None
                } else {
                    match default {
                        Some(d) => Some(self.eval(*d)?),
                        None => Some(Value::Nil),
                    }
                };
                bound.push((&**name, v));
            }
            for (i, (name, v)) in bound.into_iter().enumerate() {
                let v = match v {
                    Some(v) => v,
                    None => args.get(i).cloned().unwrap_or(Value::Nil),
                };
                self.set_var(name, v);
            }
            let s = self.capture(|r| r.exec_block(&def.body))?;
            self.new_str(s, true)
        })();
        self.pop_frame();
        self.macro_depth -= 1;
        r
    }

    /// Binds the fields of `row` as bare names for the duration of `f`.
    pub(crate) fn with_row<T>(&mut self, row: MapV<'a>, f: impl FnOnce(&mut Self) -> R<T>) -> R<T> {
        self.push_child()?;
        if let Some(top) = self.frames.last_mut() {
            top.row = Some(row);
        }
        let r = f(self);
        self.pop_frame();
        r
    }
}

/// Pongo2's order for `for … sorted`: numbers by value, otherwise by string.
fn sort_cmp(a: &Value<'_>, b: &Value<'_>) -> std::cmp::Ordering {
    if a.is_integer() && b.is_integer() {
        a.integer().cmp(&b.integer())
    } else if a.is_number() && b.is_number() {
        a.float()
            .partial_cmp(&b.float())
            .unwrap_or(std::cmp::Ordering::Equal)
    } else {
        a.to_go_string().cmp(&b.to_go_string())
    }
}

/// `{% spaceless %}`: removes whitespace between HTML tags (`>  <` → `><`).
fn spaceless(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut last = 0;
    while i < b.len() {
        if b.get(i) == Some(&b'>') {
            let mut j = i + 1;
            while b
                .get(j)
                .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
            {
                j += 1;
            }
            if j > i + 1 && b.get(j) == Some(&b'<') {
                out.push_str(s.get(last..=i).unwrap_or_default());
                last = j;
                i = j;
                continue;
            }
        }
        i += 1;
    }
    out.push_str(s.get(last..).unwrap_or_default());
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn spaceless_joins_tags() {
        assert_eq!(
            super::spaceless("<p>\n  <b> x </b>\n</p> y"),
            "<p><b> x </b></p> y"
        );
    }
}
