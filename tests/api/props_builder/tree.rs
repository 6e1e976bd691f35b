//! Random block trees, drawn from a "choice tape" (a vector of numbers the generator
//! consumes), so that proptest's shrinking of the tape shrinks the tree.
use super::bank::{
    Bank, TABLES, comparable, date_field, fields, is_date, is_money, money_field, probe_values,
};

/// Rows a block reads.
#[derive(Debug, Clone)]
pub enum Coll {
    /// `bank.<table>`.
    Table(&'static str),
    /// A `with` name bound to the rows whose `field` equals `value`, by `|where` or by the
    /// `filter()` helper.
    Bound {
        name: String,
        table: &'static str,
        field: &'static str,
        value: &'static str,
        helper: bool,
    },
    /// The name a `last_item_by_group` binds: per group, the row with the latest date.
    Last {
        name: String,
        table: &'static str,
        group: Vec<&'static str>,
    },
    /// `filter(bank.<table>, "<field>", "<value>")`, inline (expressions only).
    Helper {
        table: &'static str,
        field: &'static str,
        value: &'static str,
    },
}

impl Coll {
    pub fn code(&self) -> String {
        match self {
            Coll::Table(t) => format!("bank.{t}"),
            Coll::Bound { name, .. } | Coll::Last { name, .. } => name.clone(),
            Coll::Helper {
                table,
                field,
                value,
            } => format!("filter(bank.{table}, \"{field}\", \"{value}\")"),
        }
    }
    pub fn table(&self) -> &'static str {
        match self {
            Coll::Table(t)
            | Coll::Bound { table: t, .. }
            | Coll::Last { table: t, .. }
            | Coll::Helper { table: t, .. } => t,
        }
    }
}

/// A value a variable block prints.
#[derive(Debug, Clone)]
pub enum Val {
    /// `bank.<table>.<index>.<field>` (the index may be past the end).
    Indexed(&'static str, usize, &'static str),
    /// `<loop variable>.<field>` of the loop at this depth (0 = outermost).
    LoopField(usize, &'static str),
    /// `forloop.Counter`.
    Counter,
}

/// Filters of a variable block printing one value.
#[derive(Debug, Clone)]
pub enum Filter {
    Floatformat2,
    StripZeros,
    PercentOf(u32),
    Length,
    SliceStr(usize, usize),
    Replace(char, char),
    Date,
}

/// The end of a variable block printing rows: `|where:"f:v"` then one of these.
#[derive(Debug, Clone)]
pub enum RowsEnd {
    Length,
    Sum(&'static str),
    Count(&'static str, &'static str),
}

/// A `calculation` block's function.
#[derive(Debug, Clone, Copy)]
pub enum CalcFn {
    Length,
    StripZeros,
    Floatformat,
}

/// `avg_by`, `min_by`, `max_by`.
#[derive(Debug, Clone, Copy)]
pub enum Stat {
    Avg,
    Min,
    Max,
}

#[derive(Debug, Clone)]
pub enum Cond {
    /// `<loop var>.<field> == "value"` (or `!=`).
    LoopEq(usize, &'static str, &'static str, bool),
    /// `bank.accounts.<i>.currency == "value"`.
    IndexedEq(usize, &'static str),
    /// `filter(bank.<table>, "<field>", "<value>")|length > <n>`.
    HelperCount(&'static str, &'static str, &'static str, usize),
    /// `forloop.First`.
    First,
    /// `not forloop.Last`.
    NotLast,
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
}

/// A condition `<field> == "<value>"` of an aggregation tag (a bare field of the rows).
pub type RowCond = Option<(&'static str, &'static str)>;

/// A block that prints one thing (or nothing) on its line.
#[derive(Debug, Clone)]
pub enum Leaf {
    Text(String),
    Var(Val, Vec<Filter>),
    Rows(Coll, Option<(&'static str, &'static str)>, RowsEnd),
    SumAgg(Coll, &'static str),
    CountAgg(Coll, &'static str, &'static str),
    Increment(&'static str),
    Show(Vec<&'static str>),
    Comment(String),
    LengthPlus(Coll, i64),
    CountBy(Coll, RowCond),
    SumBy(Coll, RowCond),
    Stat(Stat, Coll, RowCond),
    Calc(Vec<(char, i64)>, i64),
    LastItem(Coll),
    DateNow(&'static str),
    DateOf(Val),
    Calculation(Val, CalcFn),
}

impl Leaf {
    /// True for the blocks written as a tag, which may trim the whitespace around them.
    pub fn is_tag(&self) -> bool {
        matches!(
            self,
            Leaf::Increment(_)
                | Leaf::Show(_)
                | Leaf::CountBy(..)
                | Leaf::SumBy(..)
                | Leaf::Stat(..)
                | Leaf::Calc(..)
                | Leaf::LastItem(_)
                | Leaf::DateNow(_)
        )
    }
}

#[derive(Debug, Clone)]
pub enum Block {
    /// A leaf, `inline` or on its own line, trimming (`{%- -%}`) when a tag and `trim`.
    Leaf(Leaf, bool, bool),
    Loop(Coll, Vec<Block>, bool),
    /// Branches, else blocks, inline, trim.
    If(Vec<(Cond, Vec<Block>)>, Vec<Block>, bool, bool),
    Section(Vec<Block>),
    With(Coll, Vec<Block>, bool),
}

pub struct Tape<'a> {
    v: &'a [u32],
    i: usize,
}

impl Tape<'_> {
    pub fn pick(&mut self, n: usize) -> usize {
        let x = self.v.get(self.i).copied().unwrap_or(0) as usize;
        self.i += 1;
        x % n.max(1)
    }
    pub fn coin(&mut self) -> bool {
        self.pick(2) == 1
    }
}

/// The output formats a tree is generated for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Txt,
    Csv,
    Xml,
    Html,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Txt => "txt",
            Format::Csv => "csv",
            Format::Xml => "xml",
            Format::Html => "html",
        }
    }
}

const TEXT_CHARS: &[char] = &[
    'a', 'b', 'x', 'y', 'z', 'Q', ' ', '{', '}', '%', '#', '"', '\'', '|', ':', '\\', '-', '_',
    '<', '>', '&', '\n',
];

/// Text with hostile characters but no digits or dots (the output clean-up then only ever
/// touches data values). In html no `<`, `>` or `&`: the sanitizer would read markup.
fn text(t: &mut Tape<'_>, f: Format) -> String {
    let chars: Vec<char> = TEXT_CHARS
        .iter()
        .copied()
        .filter(|c| f != Format::Html || !matches!(c, '<' | '>' | '&'))
        .collect();
    let n = 1 + t.pick(8);
    // A letter first, so no template is ever blank.
    let mut s = String::from(['a', 'x', 'Q'][t.pick(3)]);
    for _ in 1..n {
        s.push(chars[t.pick(chars.len())]);
    }
    s
}

fn comment(t: &mut Tape<'_>) -> String {
    let chars = ['a', 'b', ' ', '{', '}', '%', '"', '\'', '|'];
    let mut s = String::from("c");
    for _ in 0..t.pick(6) {
        s.push(chars[t.pick(chars.len())]);
    }
    // A comment may not contain delimiters: keep the builder's rule.
    while ["{{", "}}", "{%", "%}", "{#", "#}"]
        .iter()
        .any(|d| s.contains(d))
    {
        s = s
            .replace("{{", "{")
            .replace("}}", "}")
            .replace("{%", "{")
            .replace("%}", "}")
            .replace("{#", "{")
            .replace("#}", "}");
    }
    s
}

/// Deepest block nesting generated (the builder allows 50).
const MAX_NESTING: usize = 7;

/// Generation context.
#[derive(Clone)]
pub struct Ctx {
    depth: usize,
    /// Tables walked by the enclosing loops, outermost first.
    pub loops: Vec<&'static str>,
    /// Names bound in scope (`with` and `last_item_by_group`).
    bound: Vec<Coll>,
    names: usize,
    format: Format,
}

/// Rows for a block; `ordered` when the block prints them in order (the order of the groups
/// of `last_item_by_group` is not documented, so those only feed order-blind blocks).
fn coll(t: &mut Tape<'_>, cx: &Ctx, small: bool, ordered: bool) -> Coll {
    let usable: Vec<&Coll> = cx
        .bound
        .iter()
        .filter(|c| !ordered || !matches!(c, Coll::Last { .. }))
        .collect();
    if !usable.is_empty() && t.coin() {
        return usable[t.pick(usable.len())].clone();
    }
    if small {
        return Coll::Table("accounts");
    }
    Coll::Table(TABLES[t.pick(3)])
}

fn cond(t: &mut Tape<'_>, cx: &Ctx, depth: usize) -> Cond {
    let choice = t.pick(if depth < 2 { 7 } else { 5 });
    match choice {
        0 | 1 if !cx.loops.is_empty() => {
            let l = t.pick(cx.loops.len());
            let fs = fields(cx.loops[l]);
            let f = comparable(fs[t.pick(fs.len())]);
            let vals = probe_values(f);
            Cond::LoopEq(l, f, vals[t.pick(vals.len())], t.coin())
        }
        2 if !cx.loops.is_empty() => Cond::First,
        3 if !cx.loops.is_empty() => Cond::NotLast,
        4 => {
            let table = TABLES[t.pick(3)];
            let fs = fields(table);
            let f = comparable(fs[t.pick(fs.len())]);
            let vals = probe_values(f);
            Cond::HelperCount(table, f, vals[t.pick(vals.len())], t.pick(4))
        }
        5 => Cond::And(
            Box::new(cond(t, cx, depth + 1)),
            Box::new(cond(t, cx, depth + 1)),
        ),
        6 => Cond::Or(
            Box::new(cond(t, cx, depth + 1)),
            Box::new(cond(t, cx, depth + 1)),
        ),
        _ => Cond::IndexedEq(t.pick(9), ["EUR", "GBP", "USD"][t.pick(3)]),
    }
}

/// A value and its field; the field is empty when filters must not apply (a counter, or a
/// row index past the end, whose value is nil).
fn var(t: &mut Tape<'_>, cx: &Ctx, bank: &Bank) -> (Val, &'static str) {
    if !cx.loops.is_empty() && t.pick(3) != 0 {
        if t.pick(4) == 0 {
            return (Val::Counter, "");
        }
        let l = t.pick(cx.loops.len());
        let fs = fields(cx.loops[l]);
        let f = match money_field(cx.loops[l]) {
            Some(m) if t.pick(3) == 0 => m,
            _ => fs[t.pick(fs.len())],
        };
        return (Val::LoopField(l, f), f);
    }
    let table = TABLES[t.pick(3)];
    let fs = fields(table);
    // Money fields one time in three where the table has one (their filters are many).
    let f = match money_field(table) {
        Some(m) if t.pick(3) == 0 => m,
        _ => fs[t.pick(fs.len())],
    };
    let len = bank.rows(table).len();
    let i = t.pick(len + 3);
    (Val::Indexed(table, i, f), if i < len { f } else { "" })
}

/// A value of a date field that exists (the date filter refuses nil), for date filters.
fn date_var(t: &mut Tape<'_>, cx: &Ctx, bank: &Bank) -> Val {
    if !cx.loops.is_empty() && t.coin() {
        let l = t.pick(cx.loops.len());
        return Val::LoopField(l, date_field(cx.loops[l]));
    }
    let table = TABLES[t.pick(3)];
    let i = t.pick(bank.rows(table).len());
    Val::Indexed(table, i, date_field(table))
}

/// Denominators that make every percentage of a two-decimal amount exact at two decimals.
const DENOMINATORS: [u32; 6] = [1, 10, 20, 25, 50, 100];

fn filters(t: &mut Tape<'_>, field: &str) -> Vec<Filter> {
    if field.is_empty() || t.pick(3) == 0 {
        return Vec::new();
    }
    let f = if is_money(field) {
        match t.pick(3) {
            0 => Filter::Floatformat2,
            1 => Filter::StripZeros,
            _ => Filter::PercentOf(DENOMINATORS[t.pick(DENOMINATORS.len())]),
        }
    } else if is_date(field) && t.coin() {
        Filter::Date
    } else {
        match t.pick(3) {
            0 => Filter::Length,
            1 => Filter::SliceStr(t.pick(3), 2 + t.pick(4)),
            _ => Filter::Replace(['a', 'C', 'E', '-'][t.pick(4)], ['x', 'z'][t.pick(2)]),
        }
    };
    vec![f]
}

/// A condition on a bare field of `table`'s rows, or none.
fn row_cond(t: &mut Tape<'_>, table: &'static str) -> RowCond {
    if !t.coin() {
        return None;
    }
    let fs = fields(table);
    let f = comparable(fs[t.pick(fs.len())]);
    let vals = probe_values(f);
    Some((f, vals[t.pick(vals.len())]))
}

fn blocks(t: &mut Tape<'_>, cx: &mut Ctx, bank: &Bank, max: usize) -> Vec<Block> {
    let n = 1 + t.pick(max);
    let bound_before = cx.bound.len();
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let b = block(t, cx, bank);
        // A `last_item_by_group` name is visible to the blocks after it in this list.
        if let Block::Leaf(Leaf::LastItem(c), ..) = &b {
            cx.bound.push(c.clone());
        }
        out.push(b);
    }
    cx.bound.truncate(bound_before);
    out
}

/// A container's context one level down.
fn inner(cx: &Ctx) -> Ctx {
    let mut c = cx.clone();
    c.depth += 1;
    c
}

/// Children per container: fewer as nesting deepens, so trees stay small.
fn fan_out(cx: &Ctx) -> usize {
    if cx.depth < 3 { 3 } else { 2 }
}

fn leaf(t: &mut Tape<'_>, cx: &mut Ctx, bank: &Bank) -> Leaf {
    match t.pick(18) {
        0 | 1 => Leaf::Text(text(t, cx.format)),
        2 | 3 => {
            let (v, f) = var(t, cx, bank);
            let fl = filters(t, f);
            Leaf::Var(v, fl)
        }
        4 => {
            let c = coll(t, cx, false, false);
            match money_field(c.table()) {
                Some(m) if t.coin() => Leaf::SumAgg(c, m),
                _ => {
                    let f = match c.table() {
                        "transactions" => ["direction", "currency", "category"][t.pick(3)],
                        "accounts" => ["currency", "branch"][t.pick(2)],
                        _ => "account_id",
                    };
                    let vals = probe_values(f);
                    Leaf::CountAgg(c, f, vals[t.pick(vals.len())])
                }
            }
        }
        5 => {
            if t.coin() {
                Leaf::Increment(["c0", "c1"][t.pick(2)])
            } else {
                Leaf::Show(if t.coin() {
                    vec!["c0"]
                } else {
                    vec!["c0", "c1"]
                })
            }
        }
        6 => Leaf::Comment(comment(t)),
        7 => {
            let c = if t.pick(3) == 0 {
                let table = TABLES[t.pick(3)];
                let fs = fields(table);
                let f = comparable(fs[t.pick(fs.len())]);
                let vals = probe_values(f);
                Coll::Helper {
                    table,
                    field: f,
                    value: vals[t.pick(vals.len())],
                }
            } else {
                coll(t, cx, false, false)
            };
            Leaf::LengthPlus(c, t.pick(5) as i64)
        }
        8 => {
            let c = coll(t, cx, false, false);
            let cnd = row_cond(t, c.table());
            match money_field(c.table()) {
                Some(_) if t.coin() => Leaf::SumBy(c, cnd),
                _ => Leaf::CountBy(c, cnd),
            }
        }
        9 => {
            let ops = (0..t.pick(3))
                .map(|_| (['+', '*', '-'][t.pick(3)], 1 + t.pick(9) as i64))
                .collect();
            Leaf::Calc(ops, 1 + t.pick(9) as i64)
        }
        10 => {
            let c = coll(t, cx, false, false);
            let c = if money_field(c.table()).is_some() {
                c
            } else {
                Coll::Table("transactions")
            };
            let stat = [Stat::Avg, Stat::Min, Stat::Max][t.pick(3)];
            let cnd = row_cond(t, c.table());
            Leaf::Stat(stat, c, cnd)
        }
        11 => {
            let table = ["balances", "transactions"][t.pick(2)];
            cx.names += 1;
            let group = if table == "transactions" && t.coin() {
                vec!["account_id", "currency"]
            } else {
                vec!["account_id"]
            };
            Leaf::LastItem(Coll::Last {
                name: format!("l{}", cx.names),
                table,
                group,
            })
        }
        12 => Leaf::DateNow(["YYYY", "DD YYYY", "YYYY-YY"][t.pick(3)]),
        13 => Leaf::DateOf(date_var(t, cx, bank)),
        14 => {
            let c = coll(t, cx, false, false);
            let cnd = if t.coin() {
                let fs = fields(c.table());
                let f = comparable(fs[t.pick(fs.len())]);
                let vals = probe_values(f);
                Some((f, vals[t.pick(vals.len())]))
            } else {
                None
            };
            let end = match (money_field(c.table()), t.pick(3)) {
                (Some(m), 0) => RowsEnd::Sum(m),
                (_, 1) => {
                    let fs = fields(c.table());
                    let f = comparable(fs[t.pick(fs.len())]);
                    let vals = probe_values(f);
                    RowsEnd::Count(f, vals[t.pick(vals.len())])
                }
                _ => RowsEnd::Length,
            };
            Leaf::Rows(c, cnd, end)
        }
        15 => {
            let (v, f) = var(t, cx, bank);
            if f.is_empty() {
                return Leaf::Var(v, Vec::new());
            }
            let fun = match t.pick(3) {
                0 => CalcFn::Length,
                1 if is_money(f) => CalcFn::StripZeros,
                2 if is_money(f) => CalcFn::Floatformat,
                _ => CalcFn::Length,
            };
            Leaf::Calculation(v, fun)
        }
        _ => Leaf::Text(text(t, cx.format)),
    }
}

fn block(t: &mut Tape<'_>, cx: &mut Ctx, bank: &Bank) -> Block {
    let leaf_only = cx.depth >= MAX_NESTING;
    let kinds = if leaf_only { 10 } else { 14 };
    match t.pick(kinds) {
        10 if cx.loops.len() < 2 => {
            let c = coll(t, cx, !cx.loops.is_empty(), true);
            let mut inner = inner(cx);
            inner.loops.push(c.table());
            let fan = fan_out(cx);
            let children = blocks(t, &mut inner, bank, fan);
            cx.names = inner.names;
            Block::Loop(c, children, t.pick(4) == 0)
        }
        11 => {
            let mut branches = Vec::new();
            let mut inner = inner(cx);
            for _ in 0..1 + t.pick(2) {
                let c = cond(t, cx, 0);
                branches.push((c, blocks(t, &mut inner, bank, 2)));
            }
            let otherwise = if t.coin() {
                blocks(t, &mut inner, bank, 2)
            } else {
                Vec::new()
            };
            cx.names = inner.names;
            Block::If(branches, otherwise, t.pick(3) == 0, t.pick(4) == 0)
        }
        12 => {
            let mut inner = inner(cx);
            let fan = fan_out(cx);
            let children = blocks(t, &mut inner, bank, fan);
            cx.names = inner.names;
            Block::Section(children)
        }
        13 => {
            let table = ["accounts", "transactions"][t.pick(2)];
            let field = if table == "accounts" {
                "currency"
            } else {
                ["currency", "direction"][t.pick(2)]
            };
            let vals = probe_values(field);
            cx.names += 1;
            let bound = Coll::Bound {
                name: format!("w{}", cx.names),
                table,
                field,
                value: vals[t.pick(vals.len())],
                helper: t.coin(),
            };
            let mut inner = inner(cx);
            inner.bound.push(bound.clone());
            let fan = fan_out(cx);
            let children = blocks(t, &mut inner, bank, fan);
            cx.names = inner.names;
            Block::With(bound, children, t.pick(4) == 0)
        }
        _ => {
            let l = leaf(t, cx, bank);
            let inline = t.pick(4) == 0;
            let trim = l.is_tag() && t.pick(3) == 0;
            Block::Leaf(l, inline, trim)
        }
    }
}

/// A tree and its format. The first block is text on a line of its own (the template is
/// never blank; in csv it is the header, with a `;`).
pub fn tree(tape: &[u32], bank: &Bank) -> (Format, Vec<Block>) {
    let mut t = Tape { v: tape, i: 0 };
    let format = [Format::Txt, Format::Csv, Format::Xml, Format::Html][t.pick(4)];
    let mut cx = Ctx {
        depth: 0,
        loops: Vec::new(),
        bound: Vec::new(),
        names: 0,
        format,
    };
    let head = match format {
        Format::Csv => "head;line".to_owned(),
        _ => text(&mut t, format),
    };
    let mut out = vec![Block::Leaf(Leaf::Text(head), false, false)];
    out.extend(blocks(&mut t, &mut cx, bank, 6));
    (format, out)
}
