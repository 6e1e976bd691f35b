//! Which table a template can take as a stream (`TemplateEngine::stream_plan`): its rows
//! then reach the render while it runs, a chunk at a time, and none is kept after its
//! iteration.
//!
//! A table `ds.t` streams when the template cannot tell the difference:
//! - `ds.t` is written in exactly one place, as the list of a `{% for x in ds.t %}` (no
//!   `reversed`, no `sorted`, no `key, value` pair) that runs at most once: it is in no
//!   loop's body or `empty` block and in no macro;
//! - every other mention of `ds` names another table (`ds.other…`), none is `ds` alone or
//!   `ds[…]`, no `calc` text names `ds`, and nothing binds the name `ds` (so no local hides or
//!   copies it);
//! - `forloop` is only ever read through `.Counter`, `.Counter0` and `.First`, directly or
//!   after `.Parentloop`s (nowhere `.Revcounter`, `.Revcounter0` or `.Last`, which need the row
//!   count, nor `forloop` or `forloop.Parentloop` as a value of its own, which could reach
//!   them through a local, a macro or a filter, nor in a `calc` text).
//!
//! Templates that index a table, count it, aggregate it, loop over it twice or in another
//! order still get it whole in the context. The first streamable table in the text wins.
use crate::ast::{Block, Expr, ExprId, Node, Part, Template};
use crate::render::calc_paths;
use std::collections::BTreeSet;

/// `forloop` attributes a streamed loop can answer without knowing the row count.
const COUNT_FREE: &[&str] = &["Counter", "Counter0", "First", "Parentloop"];

/// The streamed table of a template: the `for` whose list it is, and its names (borrowed
/// from the template).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Streamed<'t> {
    /// The `for`'s list expression.
    pub iter: ExprId,
    pub ds: &'t str,
    pub table: &'t str,
}

/// The table `tpl` can take as a stream, if any.
pub(crate) fn plan(tpl: &Template) -> Option<Streamed<'_>> {
    if !forloop_is_count_free(tpl) {
        return None;
    }
    let calc_heads = calc_heads(tpl);
    let bound = bound_names(tpl);
    let mut candidates = Vec::new();
    once_loops(tpl, &tpl.body, false, &mut candidates);
    candidates
        .into_iter()
        .find(|c| !calc_heads.contains(c.ds) && !bound.contains(c.ds) && only_mention(tpl, c))
}

/// True when `forloop` is read only through attributes that need no row count, and never as
/// a loop value of its own.
fn forloop_is_count_free(tpl: &Template) -> bool {
    let vars_ok = tpl.exprs.iter().all(|e| match e {
        // Ending in `.Parentloop` would hand a loop's information to a local, a macro or a
        // filter, past this check.
        Expr::Var { head, parts } if &**head == "forloop" => {
            parts
                .last()
                .is_some_and(|p| !matches!(p, Part::Attr(a) if &**a == "Parentloop"))
                && parts
                    .iter()
                    .all(|p| matches!(p, Part::Attr(a) if COUNT_FREE.contains(&&**a)))
        }
        _ => true,
    });
    vars_ok && !calc_heads(tpl).contains("forloop")
}

/// The first names of every `calc` text's paths.
fn calc_heads(tpl: &Template) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack: Vec<&Block> = vec![&tpl.body];
    stack.extend(tpl.macros.iter().map(|m| &m.body));
    while let Some(block) = stack.pop() {
        for node in block {
            if let Node::Calc { text, .. } = node {
                for path in calc_paths(text) {
                    let head = path.split(['.', '[']).next().unwrap_or("").trim();
                    out.insert(head.to_owned());
                }
            }
            stack.extend(children(node).into_iter().map(|(b, _)| b));
        }
    }
    out
}

/// Every name the template binds anywhere (loop variables, `with`, `set`, `as`, macros and
/// their parameters).
fn bound_names(tpl: &Template) -> BTreeSet<&str> {
    let mut out = BTreeSet::new();
    for m in &tpl.macros {
        out.insert(&*m.name);
        out.extend(m.params.iter().map(|(p, _)| &**p));
    }
    let mut stack: Vec<&Block> = vec![&tpl.body];
    stack.extend(tpl.macros.iter().map(|m| &m.body));
    while let Some(block) = stack.pop() {
        for node in block {
            match node {
                Node::For { key, value, .. } => {
                    out.insert(&**key);
                    out.extend(value.as_deref());
                }
                Node::With { pairs, .. } => out.extend(pairs.iter().map(|(n, _)| &**n)),
                Node::Set { name, .. } => {
                    out.insert(&**name);
                }
                Node::LastItemByGroup { as_name, .. } => {
                    out.insert(&**as_name);
                }
                Node::Cycle { as_name, .. }
                | Node::WidthRatio { as_name, .. }
                | Node::Aggregate { as_name, .. }
                | Node::Calc { as_name, .. }
                | Node::DateTime { as_name, .. } => out.extend(as_name.as_deref()),
                _ => {}
            }
            stack.extend(children(node).into_iter().map(|(b, _)| b));
        }
    }
    out
}

/// `for` loops over `ds.table` that run at most once, in text order.
fn once_loops<'t>(tpl: &'t Template, block: &'t Block, repeats: bool, out: &mut Vec<Streamed<'t>>) {
    for node in block {
        if let Node::For {
            iter,
            reversed: false,
            sorted: false,
            value: None,
            ..
        } = node
            && !repeats
            && let Some(Expr::Var { head, parts }) = tpl.expr(*iter)
            && let [Part::Attr(table)] = parts.as_slice()
        {
            out.push(Streamed {
                iter: *iter,
                ds: head,
                table,
            });
        }
        for (child, again) in children(node) {
            once_loops(tpl, child, repeats || again, out);
        }
    }
}

/// True when `c.ds` is mentioned only as `c.ds.<table>…`, and `c.ds.<c.table>` only as `c`'s
/// list.
fn only_mention(tpl: &Template, c: &Streamed<'_>) -> bool {
    tpl.exprs.iter().enumerate().all(|(i, e)| match e {
        Expr::Var { head, parts } if &**head == c.ds => match parts.first() {
            Some(Part::Attr(t)) if &**t == c.table => u32::try_from(i).is_ok_and(|i| i == c.iter),
            Some(Part::Attr(_)) => true,
            _ => false,
        },
        _ => true,
    })
}

/// The blocks of `node`, each with whether it can run more than once per run of the node.
fn children(node: &Node) -> Vec<(&Block, bool)> {
    match node {
        Node::If { blocks, .. } => blocks.iter().map(|b| (b, false)).collect(),
        Node::For { body, empty, .. } => {
            let mut v = vec![(body, true)];
            v.extend(empty.as_ref().map(|e| (e, true)));
            v
        }
        Node::With { body, .. }
        | Node::Autoescape { body, .. }
        | Node::FilterBlock { body, .. }
        | Node::Spaceless(body) => vec![(body, false)],
        Node::IfChanged {
            then, otherwise, ..
        }
        | Node::IfEqual {
            then, otherwise, ..
        } => {
            let mut v = vec![(then, false)];
            v.extend(otherwise.as_ref().map(|o| (o, false)));
            v
        }
        _ => Vec::new(),
    }
}
