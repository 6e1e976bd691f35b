//! The independent model: what a tree prints over the bank data, from the documented rules
//! only (never the engine).
//!
//! 1. **Layout** (`layout.rs`): the template the README's layout rules write.
//! 2. **Execution** ([`Model::exec`]): the plan over the data, as segments: literal template
//!    text, printed values (`{{ }}` output HTML-escaped), tag boundaries and trim marks; text
//!    blocks split where `{{`, `{%`, `{#` and a final `{` are written as `templatetag` tags.
//! 3. **Whitespace control** ([`resolve`]): `{%-` trims the whitespace at the end of the
//!    template text before the tag, `-%}` at the start of the text after it (Pongo2's rule,
//!    per text node, so per loop iteration).
//! 4. **Clean-up** ([`clean`]) of trailing zeros, the XML declaration left alone; and for
//!    html the sanitizer's documented output ([`sanitized`]).
use super::bank::{Bank, Row, date_field, money_field};
use super::layout::{P, XML_DECLARATION, plan};
use super::tree::{Block, CalcFn, Coll, Cond, Filter, Format, Leaf, RowCond, RowsEnd, Stat, Val};
use std::collections::BTreeMap;

/// Output before whitespace control.
#[derive(Debug)]
enum Seg {
    /// Literal template text.
    Lit(String),
    /// What a tag or `{{ }}` printed (also a boundary between text nodes).
    Out(String),
    /// `{%-`: trims the text before.
    TrimL,
    /// `-%}`: trims the text after.
    TrimR,
}

const WS: &[char] = &[' ', '\n', '\r', '\t'];

/// Trims the whitespace of the text segments `segs` walks (one text node), up to the first
/// that keeps some text or a tag's output.
fn trim_run<'a>(segs: impl Iterator<Item = &'a mut Seg>, trim: impl Fn(&str) -> &str) {
    for seg in segs {
        match seg {
            Seg::Lit(s) => {
                *s = trim(s).to_owned();
                if !s.is_empty() {
                    return;
                }
            }
            Seg::Out(_) => return,
            Seg::TrimL | Seg::TrimR => {}
        }
    }
}

/// Applies the trim marks and joins the output.
fn resolve(mut segs: Vec<Seg>) -> String {
    for i in 0..segs.len() {
        let (before, rest) = segs.split_at_mut(i);
        let Some((mark, after)) = rest.split_first_mut() else {
            continue;
        };
        match mark {
            Seg::TrimL => trim_run(before.iter_mut().rev(), |s| s.trim_end_matches(WS)),
            Seg::TrimR => trim_run(after.iter_mut(), |s| s.trim_start_matches(WS)),
            Seg::Lit(_) | Seg::Out(_) => {}
        }
    }
    segs.into_iter()
        .map(|s| match s {
            Seg::Lit(t) | Seg::Out(t) => t,
            Seg::TrimL | Seg::TrimR => String::new(),
        })
        .collect()
}

/// Pongo2's autoescape of `{{ }}` output.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

pub fn cents(s: &str) -> Option<i64> {
    let (i, f) = s.split_once('.').unwrap_or((s, "0"));
    let f = format!("{f:0<2}");
    Some(i.parse::<i64>().ok()? * 100 + f.get(..2)?.parse::<i64>().ok()?)
}

pub fn money(c: i64) -> String {
    let sign = if c < 0 { "-" } else { "" };
    format!("{sign}{}.{:02}", c.abs() / 100, c.abs() % 100)
}

/// Cents as shopspring's `Decimal.String()` prints an exact decimal: no trailing zeros
/// (`1250.00` → `1250`, `0.50` → `0.5`). Sums, minimums and maximums print this way.
fn decimal(c: i64) -> String {
    let m = money(c);
    m.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// `total / n` of cents to 16 decimal places, rounded half away from zero, printed as an
/// exact decimal (no trailing zeros).
fn average(total: i64, n: i64) -> String {
    let scaled = i128::from(total) * 10i128.pow(14);
    let n = i128::from(n);
    let q = (2 * scaled.abs() + n) / (2 * n);
    let sign = if scaled < 0 && q != 0 { "-" } else { "" };
    let unit = 10i128.pow(16);
    let fixed = format!("{sign}{}.{:016}", q / unit, q % unit);
    fixed.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// The documented clean-up: a decimal `digits.digits` whose fraction ends in `0`, not part
/// of a longer dotted code, loses its trailing zeros (and the dot when nothing is left).
pub fn clean(s: &str) -> String {
    let b: Vec<char> = s.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        let starts =
            b[i].is_ascii_digit() && (i == 0 || !(b[i - 1] == '.' || b[i - 1].is_ascii_digit()));
        if !starts {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let mut j = i;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j >= b.len() || b[j] != '.' {
            out.extend(&b[i..j]);
            i = j;
            continue;
        }
        let mut k = j + 1;
        while k < b.len() && b[k].is_ascii_digit() {
            k += 1;
        }
        let frac: String = b[j + 1..k].iter().collect();
        let followed = k < b.len() && (b[k] == '.' || b[k].is_ascii_digit());
        if frac.ends_with('0') && !followed {
            let int: String = b[i..j].iter().collect();
            let int = int.trim_start_matches('0');
            let int = if int.is_empty() { "0" } else { int };
            let frac = frac.trim_end_matches('0');
            out.push_str(int);
            if !frac.is_empty() {
                out.push('.');
                out.push_str(frac);
            }
        } else {
            out.extend(&b[i..k]);
        }
        i = k;
    }
    out
}

/// The sanitizer's documented output for a generated html document: the document as
/// written (it declares UTF-8 and holds nothing active), character references included.
fn sanitized(doc: &str) -> String {
    doc.to_owned()
}

/// One enclosing loop: its rows and the current index.
struct Frame<'d> {
    rows: Vec<&'d Row>,
    index: usize,
}

pub struct Model<'d> {
    bank: &'d Bank,
    counters: BTreeMap<&'static str, i64>,
    /// Rows bound by `last_item_by_group`, by name.
    last: BTreeMap<String, Vec<&'d Row>>,
    year: String,
}

fn passes(r: &Row, cnd: &RowCond) -> bool {
    cnd.is_none_or(|(f, v)| r.get(f).map(String::as_str) == Some(v))
}

fn field_is(r: &Row, f: &str, v: &str) -> bool {
    r.get(f).map(String::as_str) == Some(v)
}

impl<'d> Model<'d> {
    fn rows(&self, c: &Coll) -> Vec<&'d Row> {
        let all = |t: &str| self.bank.rows(t).iter();
        match c {
            Coll::Table(t) => all(t).collect(),
            Coll::Bound {
                table,
                field,
                value,
                ..
            }
            | Coll::Helper {
                table,
                field,
                value,
            } => all(table).filter(|r| field_is(r, field, value)).collect(),
            Coll::Last { name, .. } => self.last.get(name).cloned().unwrap_or_default(),
        }
    }

    /// Per group, the row with the latest date (the bank has one row per group and date).
    fn last_items(&self, table: &'static str, group: &[&'static str]) -> Vec<&'d Row> {
        let mut best: BTreeMap<Vec<String>, &'d Row> = BTreeMap::new();
        let date = date_field(table);
        for r in self.bank.rows(table) {
            let key: Vec<String> = group.iter().map(|g| r[*g].clone()).collect();
            let later = best.get(&key).is_none_or(|b| r[date] > b[date]);
            if later {
                best.insert(key, r);
            }
        }
        best.into_values().collect()
    }

    fn value(&self, v: &Val, frames: &[Frame<'d>]) -> Option<String> {
        match v {
            Val::Indexed(t, i, f) => self.bank.rows(t).get(*i).and_then(|r| r.get(*f)).cloned(),
            Val::LoopField(l, f) => {
                let fr = &frames[*l];
                fr.rows[fr.index].get(*f).cloned()
            }
            Val::Counter => frames.last().map(|f| (f.index + 1).to_string()),
        }
    }

    fn cond(&self, c: &Cond, frames: &[Frame<'d>]) -> bool {
        match c {
            Cond::LoopEq(l, f, v, eq) => {
                let fr = &frames[*l];
                field_is(fr.rows[fr.index], f, v) == *eq
            }
            Cond::IndexedEq(i, v) => self
                .bank
                .rows("accounts")
                .get(*i)
                .is_some_and(|r| field_is(r, "currency", v)),
            Cond::HelperCount(t, f, v, n) => {
                self.bank
                    .rows(t)
                    .iter()
                    .filter(|r| field_is(r, f, v))
                    .count()
                    > *n
            }
            Cond::First => frames.last().is_some_and(|f| f.index == 0),
            Cond::NotLast => frames.last().is_none_or(|f| f.index + 1 != f.rows.len()),
            Cond::And(a, b) => self.cond(a, frames) && self.cond(b, frames),
            Cond::Or(a, b) => self.cond(a, frames) || self.cond(b, frames),
        }
    }

    fn sum(rows: &[&Row], field: &str) -> String {
        decimal(
            rows.iter()
                .filter_map(|r| r.get(field).and_then(|v| cents(v)))
                .sum(),
        )
    }

    fn filtered(&self, v: &Val, fl: &[Filter], frames: &[Frame<'d>]) -> String {
        let present = self.value(v, frames).is_some();
        let mut s = self.value(v, frames).unwrap_or_default();
        for f in fl {
            s = match f {
                // The builder writes the argument as a string ("2"): Pongo2's floatformat
                // then prints a whole number without decimals (`3150.00` → `3150`).
                Filter::Floatformat2 if present => match cents(&s).unwrap_or(0) {
                    c if c % 100 == 0 => (c / 100).to_string(),
                    c => money(c),
                },
                Filter::StripZeros => clean(&s),
                Filter::PercentOf(d) => {
                    format!("{}%", money(cents(&s).unwrap_or(0) * 100 / i64::from(*d)))
                }
                Filter::Length => s.chars().count().to_string(),
                Filter::SliceStr(a, b) => s.chars().skip(*a).take(b.saturating_sub(*a)).collect(),
                Filter::Replace(a, b) => s.replace(*a, &b.to_string()),
                Filter::Date if present => day_month_year(&s),
                Filter::Floatformat2 | Filter::Date => s,
            };
        }
        s
    }

    fn stat(&self, stat: Stat, c: &Coll, cnd: &RowCond) -> String {
        let field = money_field(c.table()).unwrap_or("amount");
        let vals: Vec<i64> = self
            .rows(c)
            .into_iter()
            .filter(|r| passes(r, cnd))
            .filter_map(|r| r.get(field).and_then(|v| cents(v)))
            .collect();
        if vals.is_empty() {
            return "0".into();
        }
        match stat {
            Stat::Avg => average(vals.iter().sum(), vals.len() as i64),
            Stat::Min => decimal(vals.iter().copied().min().unwrap_or(0)),
            Stat::Max => decimal(vals.iter().copied().max().unwrap_or(0)),
        }
    }

    /// What a leaf prints (a tag that prints nothing: `""`).
    fn leaf(&mut self, l: &Leaf, frames: &[Frame<'d>]) -> String {
        match l {
            Leaf::Text(_) => String::new(),
            Leaf::Var(v, fl) => escape(&self.filtered(v, fl, frames)),
            Leaf::Rows(c, cnd, end) => {
                let rows: Vec<&Row> = self
                    .rows(c)
                    .into_iter()
                    .filter(|r| passes(r, cnd))
                    .collect();
                match end {
                    RowsEnd::Length => rows.len().to_string(),
                    RowsEnd::Sum(f) => Self::sum(&rows, f),
                    RowsEnd::Count(f, v) => rows
                        .iter()
                        .filter(|r| field_is(r, f, v))
                        .count()
                        .to_string(),
                }
            }
            Leaf::SumAgg(c, f) => Self::sum(&self.rows(c), f),
            Leaf::CountAgg(c, f, v) => self
                .rows(c)
                .iter()
                .filter(|r| field_is(r, f, v))
                .count()
                .to_string(),
            Leaf::Increment(n) => {
                *self.counters.entry(n).or_default() += 1;
                String::new()
            }
            Leaf::Show(ns) => ns
                .iter()
                .map(|n| self.counters.get(n).copied().unwrap_or(0))
                .sum::<i64>()
                .to_string(),
            Leaf::Comment(_) => String::new(),
            Leaf::LengthPlus(c, k) => (self.rows(c).len() as i64 + k).to_string(),
            Leaf::CountBy(c, cnd) => self
                .rows(c)
                .iter()
                .filter(|r| passes(r, cnd))
                .count()
                .to_string(),
            Leaf::SumBy(c, cnd) => {
                let rows: Vec<&Row> = self
                    .rows(c)
                    .into_iter()
                    .filter(|r| passes(r, cnd))
                    .collect();
                Self::sum(&rows, money_field(c.table()).unwrap_or("amount"))
            }
            Leaf::Stat(stat, c, cnd) => self.stat(*stat, c, cnd),
            Leaf::Calc(ops, first) => calc(ops, *first).to_string(),
            Leaf::LastItem(Coll::Last { name, table, group }) => {
                let rows = self.last_items(table, group);
                self.last.insert(name.clone(), rows);
                String::new()
            }
            Leaf::LastItem(_) => String::new(),
            Leaf::DateNow(layout) => layout.replace("YYYY", &self.year),
            Leaf::DateOf(v) => escape(&day_month_year(&self.value(v, frames).unwrap_or_default())),
            Leaf::Calculation(v, f) => {
                let s = self.value(v, frames).unwrap_or_default();
                escape(&match f {
                    CalcFn::Length => s.chars().count().to_string(),
                    CalcFn::StripZeros => clean(&s),
                    CalcFn::Floatformat => floatformat(&s),
                })
            }
        }
    }

    fn text(s: &str, out: &mut Vec<Seg>) {
        let chars: Vec<char> = s.chars().collect();
        let mut lit = String::new();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let next = chars.get(i + 1).copied();
            let escaped = match (c, next) {
                ('{', Some(n @ ('{' | '%' | '#'))) => Some(format!("{{{n}")),
                ('{', None) => Some("{".to_owned()),
                _ => None,
            };
            match escaped {
                Some(e) => {
                    out.push(Seg::Lit(std::mem::take(&mut lit)));
                    out.push(Seg::Out(e.clone()));
                    i += e.chars().count();
                }
                None => {
                    lit.push(c);
                    i += 1;
                }
            }
        }
        out.push(Seg::Lit(lit));
    }

    /// A body between two tags: its first text trimmed by the opening tag, its last by the
    /// closing one.
    fn body(
        &mut self,
        body: &[P<'_>],
        trim: bool,
        frames: &mut Vec<Frame<'d>>,
        out: &mut Vec<Seg>,
    ) {
        if trim {
            out.push(Seg::TrimR);
        }
        self.exec(body, frames, out);
        if trim {
            out.push(Seg::TrimL);
        }
        out.push(Seg::Out(String::new()));
    }

    fn exec(&mut self, plan: &[P<'_>], frames: &mut Vec<Frame<'d>>, out: &mut Vec<Seg>) {
        for p in plan {
            match p {
                P::Lit(s) => out.push(Seg::Lit(s.clone())),
                P::Text(s) => Self::text(s, out),
                P::Leaf(l, trim) => {
                    if *trim {
                        out.push(Seg::TrimL);
                    }
                    let s = self.leaf(l, frames);
                    out.push(Seg::Out(s));
                    if *trim {
                        out.push(Seg::TrimR);
                    }
                }
                P::Loop { coll, trim, body } => {
                    Self::tag_open(*trim, out);
                    let rows = self.rows(coll);
                    for index in 0..rows.len() {
                        frames.push(Frame {
                            rows: rows.clone(),
                            index,
                        });
                        self.body(body, *trim, frames, out);
                        frames.pop();
                    }
                    if *trim {
                        out.push(Seg::TrimR);
                    }
                }
                P::With { trim, body } => {
                    Self::tag_open(*trim, out);
                    self.body(body, *trim, frames, out);
                    if *trim {
                        out.push(Seg::TrimR);
                    }
                }
                P::If {
                    trim,
                    branches,
                    otherwise,
                } => {
                    Self::tag_open(*trim, out);
                    let chosen = branches
                        .iter()
                        .find(|(c, _)| self.cond(c, frames))
                        .map(|(_, b)| b)
                        .or(otherwise.as_ref());
                    if let Some(b) = chosen {
                        self.body(b, *trim, frames, out);
                    }
                    if *trim {
                        out.push(Seg::TrimR);
                    }
                }
            }
        }
    }

    /// The left side of an opening tag.
    fn tag_open(trim: bool, out: &mut Vec<Seg>) {
        if trim {
            out.push(Seg::TrimL);
        }
        out.push(Seg::Out(String::new()));
    }
}

/// `YYYY-MM-DD` as `DD/MM/YYYY` (the `date:"02/01/2006"` filter).
fn day_month_year(s: &str) -> String {
    let (y, rest) = s.split_at(4.min(s.len()));
    match (rest.get(1..3), rest.get(4..6)) {
        (Some(m), Some(d)) => format!("{d}/{m}/{y}"),
        _ => s.to_owned(),
    }
}

/// Pongo2's `floatformat` without an argument: no decimals for a whole number, else one.
fn floatformat(s: &str) -> String {
    let x: f64 = s.parse().unwrap_or(0.0);
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// `calc` of integers: multiplication first, then + and - left to right.
fn calc(ops: &[(char, i64)], first: i64) -> i64 {
    let mut terms = vec![(1i64, first)];
    for (op, n) in ops {
        match op {
            '*' => {
                if let Some(last) = terms.last_mut() {
                    last.1 *= n;
                }
            }
            '+' => terms.push((1, *n)),
            _ => terms.push((-1, *n)),
        }
    }
    terms.iter().map(|(s, n)| s * n).sum()
}

/// The artifact `tree` gives in `format` over `bank`.
pub fn expected(bank: &Bank, tree: &[Block], format: Format) -> String {
    let mut m = Model {
        bank,
        counters: BTreeMap::new(),
        last: BTreeMap::new(),
        year: chrono::Utc::now().format("%Y").to_string(),
    };
    let plan = plan(tree, format);
    let mut segs = Vec::new();
    m.exec(&plan, &mut Vec::new(), &mut segs);
    let raw = resolve(segs);
    match format {
        Format::Xml => match raw.strip_prefix(XML_DECLARATION.trim_end()) {
            Some(rest) => format!("{}{}", XML_DECLARATION.trim_end(), clean(rest)),
            None => clean(&raw),
        },
        Format::Html => sanitized(&clean(&raw)),
        Format::Txt | Format::Csv => clean(&raw),
    }
}
