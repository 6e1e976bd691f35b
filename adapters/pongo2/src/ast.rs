//! The parsed template. Expressions live in one arena (`Template::exprs`) and refer to each
//! other by index, so dropping a template never recurses; block nesting is bounded by
//! `max_nesting_depth` at parse time, so nothing else can nest deeper either.
use crate::filters::FilterFn;

/// Index of an expression in [`Template::exprs`].
pub type ExprId = u32;

/// A parsed template.
#[derive(Debug, Default)]
pub struct Template {
    pub body: Block,
    pub exprs: Vec<Expr>,
    /// For each expression, the line of the tag or `{{ }}` it belongs to (where its errors
    /// are reported).
    pub expr_lines: Vec<u32>,
    pub macros: Vec<MacroDef>,
    /// Number of nodes that keep state across executions in one render (cycle, ifchanged).
    pub stateful: usize,
}

impl Template {
    pub fn expr(&self, id: ExprId) -> Option<&Expr> {
        self.exprs.get(id as usize)
    }
    /// The line of expression `id`'s tag or `{{ }}`.
    pub fn expr_line(&self, id: ExprId) -> Option<u32> {
        self.expr_lines.get(id as usize).copied()
    }
}

pub type Block = Vec<Node>;

/// A filter applied in a chain: `|name` or `|name:arg`.
#[derive(Debug, Clone)]
pub struct FilterCall {
    pub name: Box<str>,
    pub func: FilterFn,
    pub arg: Option<ExprId>,
}

/// One part of a variable path after its first name.
#[derive(Debug, Clone)]
pub enum Part {
    /// `.name`
    Attr(Box<str>),
    /// `.0`
    Index(i64),
    /// `[expr]`
    Sub(ExprId),
    /// `(args)`: calls the value resolved so far.
    Call(Vec<ExprId>),
}

/// Binary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    And,
    Or,
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
    In,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
}

/// Expressions.
#[derive(Debug, Clone)]
pub enum Expr {
    Int(i64),
    Float(f64),
    Str(Box<str>),
    Bool(bool),
    /// A variable: its first name and the parts that follow.
    Var {
        head: Box<str>,
        parts: Vec<Part>,
    },
    /// A value with a filter chain.
    Filtered {
        base: ExprId,
        filters: Vec<FilterCall>,
    },
    /// The optional `not` and `-` of a simple expression (`not` applies first).
    Unary {
        not: bool,
        neg: bool,
        inner: ExprId,
    },
    Bin {
        op: BinOp,
        left: ExprId,
        right: ExprId,
    },
}

/// A macro definition.
#[derive(Debug)]
pub struct MacroDef {
    pub name: Box<str>,
    pub params: Vec<(Box<str>, Option<ExprId>)>,
    pub body: Block,
}

/// Aggregations of the original (`sum_by`, `count_by`, `avg_by`, `min_by`, `max_by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggOp {
    Sum,
    Count,
    Avg,
    Min,
    Max,
}

/// `{% lorem %}` methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoremMethod {
    Words,
    Paragraphs,
    Blocks,
}

/// Nodes of a block.
#[derive(Debug)]
pub enum Node {
    Text {
        text: Box<str>,
        trim_left: bool,
        trim_right: bool,
    },
    Print(ExprId),
    /// Pongo2's `if`: `blocks[i]` runs when `conditions[i]` is the first true condition;
    /// `blocks[conditions.len()]` (the `else`) when none is.
    If {
        conditions: Vec<ExprId>,
        blocks: Vec<Block>,
    },
    For {
        key: Box<str>,
        value: Option<Box<str>>,
        iter: ExprId,
        reversed: bool,
        sorted: bool,
        body: Block,
        empty: Option<Block>,
    },
    With {
        pairs: Vec<(Box<str>, ExprId)>,
        body: Block,
    },
    Set {
        name: Box<str>,
        expr: ExprId,
    },
    Autoescape {
        on: bool,
        body: Block,
    },
    /// `{% comment %}`: parsed, never rendered.
    Comment,
    Cycle {
        state: usize,
        args: Vec<ExprId>,
        as_name: Option<Box<str>>,
        silent: bool,
    },
    FilterBlock {
        filters: Vec<FilterCall>,
        body: Block,
    },
    Firstof(Vec<ExprId>),
    IfChanged {
        state: usize,
        watched: Vec<ExprId>,
        then: Block,
        otherwise: Option<Block>,
    },
    IfEqual {
        negate: bool,
        a: ExprId,
        b: ExprId,
        then: Block,
        otherwise: Option<Block>,
    },
    Lorem {
        count: i64,
        method: LoremMethod,
        random: bool,
    },
    Macro(usize),
    Now {
        format: Box<str>,
        fake: bool,
    },
    Spaceless(Block),
    TemplateTag(&'static str),
    WidthRatio {
        current: ExprId,
        max: ExprId,
        width: ExprId,
        as_name: Option<Box<str>>,
    },
    /// An aggregation; with `as_name` its result is bound instead of printed.
    Aggregate {
        op: AggOp,
        collection: ExprId,
        field: Option<ExprId>,
        condition: Option<ExprId>,
        as_name: Option<Box<str>>,
    },
    /// `{% calc %}`: the original joins the tag's tokens with spaces and evaluates the text;
    /// with `as_name` the result is bound instead of printed.
    Calc {
        text: Box<str>,
        as_name: Option<Box<str>>,
        /// The line the tag starts on (where its errors are reported).
        line: u32,
    },
    /// `{% date_time %}`; with `as_name` the formatted time is bound instead of printed.
    DateTime {
        layout: ExprId,
        as_name: Option<Box<str>>,
    },
    LastItemByGroup {
        collection: ExprId,
        group_by: ExprId,
        order_by: ExprId,
        condition: Option<ExprId>,
        as_name: Box<str>,
    },
    Counter(Box<str>),
    CounterShow(Vec<Box<str>>),
}
