//! Arguments of every tag: Pongo2's built-in tags and the original's custom tags.
use super::{Doc, Open};
use crate::ast::{AggOp, LoremMethod, Node};
use crate::lexer::{Tok, Token};
use crate::parser::expr::Cursor;
use reporter_ports::ports::RenderError;

type R<T> = Result<T, RenderError>;

/// Parses the arguments of a block tag; `None` when `name` is not a block tag.
/// Long by design: one arm per block tag of the dialect, each with its own argument syntax.
pub(crate) fn open_block(doc: &mut Doc<'_>, name: &str, a: &mut Cursor<'_>) -> R<Option<Open>> {
    let open = match name {
        "if" => {
            let cond = doc.builder().expression(a)?;
            if a.remaining() > 0 {
                return Err(a.error("If-condition is malformed."));
            }
            Open::If {
                conditions: vec![cond],
                blocks: Vec::new(),
            }
        }
        "for" => {
            let Some(key) = a.take_ident() else {
                return Err(a.error("Expected an key identifier as first argument for 'for'-tag"));
            };
            let mut value = None;
            if a.match_sym(",") {
                let Some(v) = a.take_ident() else {
                    return Err(a.error("Value name must be an identifier."));
                };
                value = Some(v.into());
            }
            if !a.match_kw("in") {
                return Err(a.error("Expected keyword 'in'."));
            }
            let iter = doc.builder().expression(a)?;
            let reversed = a.match_ident("reversed");
            let sorted = a.match_ident("sorted");
            if a.remaining() > 0 {
                return Err(a.error("Malformed for-loop arguments."));
            }
            Open::For {
                key: key.into(),
                value,
                iter,
                reversed,
                sorted,
                main: None,
            }
        }
        "with" => {
            if a.count() == 0 {
                return Err(a.error("Tag 'with' requires at least one argument."));
            }
            let old_style = a.all().iter().any(|t| t.is_kw("as"));
            let mut pairs = Vec::new();
            while a.remaining() > 0 {
                if old_style {
                    let e = doc.builder().expression(a)?;
                    if !a.match_kw("as") {
                        return Err(a.error("Expected 'as' keyword."));
                    }
                    let Some(k) = a.take_ident() else {
                        return Err(a.error("Expected an identifier as key."));
                    };
                    pairs.push((k.into(), e));
                } else {
                    let Some(k) = a.take_ident() else {
                        return Err(a.error("Expected an identifier as key."));
                    };
                    if !a.match_sym("=") {
                        return Err(a.error("Expected '='."));
                    }
                    let e = doc.builder().expression(a)?;
                    pairs.push((k.into(), e));
                }
            }
            Open::With(pairs)
        }
        "autoescape" => {
            let Some(mode) = a.take_ident() else {
                return Err(a.error("A mode is required for autoescape-tag."));
            };
            let on = match mode {
                "on" => true,
                "off" => false,
                _ => return Err(a.error("Only 'on' or 'off' is valid as an autoescape-mode.")),
            };
            if a.remaining() > 0 {
                return Err(a.error("Malformed autoescape-tag arguments."));
            }
            Open::Autoescape(on)
        }
        "comment" => Open::Comment,
        "filter" => {
            let mut chain = Vec::new();
            while a.remaining() > 0 {
                chain.push(doc.builder().filter_call(a)?);
                if !a.match_sym("|") {
                    break;
                }
            }
            if a.remaining() > 0 || chain.is_empty() {
                return Err(a.error("Malformed filter-tag arguments."));
            }
            Open::Filter(chain)
        }
        "ifchanged" => {
            let mut watched = Vec::new();
            while a.remaining() > 0 {
                watched.push(doc.builder().expression(a)?);
            }
            let state = doc.stateful;
            doc.stateful += 1;
            Open::IfChanged {
                state,
                watched,
                then: None,
            }
        }
        "ifequal" | "ifnotequal" => {
            let x = doc.builder().expression(a)?;
            let y = doc.builder().expression(a)?;
            if a.remaining() > 0 {
                return Err(a.error(format!("{name} only takes two arguments.")));
            }
            Open::IfEqual {
                negate: name == "ifnotequal",
                a: x,
                b: y,
                then: None,
            }
        }
        "macro" => {
            let Some(mname) = a.take_ident() else {
                return Err(a.error("Macro-tag needs at least an identifier as name."));
            };
            if !a.match_sym("(") {
                return Err(a.error("Expected '('."));
            }
            let mut params = Vec::new();
            while !a.match_sym(")") {
                let Some(p) = a.take_ident() else {
                    return Err(a.error("Expected argument name as identifier."));
                };
                let default = if a.match_sym("=") {
                    Some(doc.builder().expression(a)?)
                } else {
                    None
                };
                params.push((p.into(), default));
                if a.match_sym(")") {
                    break;
                }
                if !a.match_sym(",") {
                    return Err(a.error("Expected ',' or ')'."));
                }
            }
            a.match_kw("export");
            if a.remaining() > 0 {
                return Err(a.error("Malformed macro-tag."));
            }
            Open::Macro {
                name: mname.into(),
                params,
            }
        }
        "spaceless" => {
            if a.remaining() > 0 {
                return Err(a.error("Malformed spaceless-tag arguments."));
            }
            Open::Spaceless
        }
        _ => return Ok(None),
    };
    Ok(Some(open))
}

/// Parses an inline tag; `None` when `name` is not one.
/// Long by design: one arm per inline tag of the dialect, each with its own argument syntax.
pub(crate) fn inline(doc: &mut Doc<'_>, name: &str, a: &mut Cursor<'_>) -> R<Option<Node>> {
    let node = match name {
        "set" => {
            let Some(var) = a.take_ident() else {
                return Err(a.error("Expected an identifier."));
            };
            if !a.match_sym("=") {
                return Err(a.error("Expected '='."));
            }
            let expr = doc.builder().expression(a)?;
            if a.remaining() > 0 {
                return Err(a.error("Malformed 'set'-tag arguments."));
            }
            Node::Set {
                name: var.into(),
                expr,
            }
        }
        "cycle" => {
            let mut args = Vec::new();
            let mut as_name = None;
            let mut silent = false;
            while a.remaining() > 0 {
                args.push(doc.builder().expression(a)?);
                if a.match_kw("as") {
                    let Some(n) = a.take_ident() else {
                        return Err(a.error("Name (identifier) expected after 'as'."));
                    };
                    as_name = Some(n.into());
                    silent = a.match_ident("silent");
                    break;
                }
            }
            if a.remaining() > 0 || args.is_empty() {
                return Err(a.error("Malformed cycle-tag."));
            }
            let state = doc.stateful;
            doc.stateful += 1;
            Node::Cycle {
                state,
                args,
                as_name,
                silent,
            }
        }
        "firstof" => {
            let mut args = Vec::new();
            while a.remaining() > 0 {
                args.push(doc.builder().expression(a)?);
            }
            Node::Firstof(args)
        }
        "lorem" => {
            let mut count = 1;
            if let Some(t) = a.take_kind(Tok::Number) {
                count = t.val.parse::<i64>().unwrap_or(i64::MAX);
            }
            let mut method = LoremMethod::Blocks;
            if let Some(m) = a.take_ident() {
                method = match m {
                    "w" => LoremMethod::Words,
                    "p" => LoremMethod::Paragraphs,
                    "b" => LoremMethod::Blocks,
                    _ => return Err(a.error("lorem-method must be either 'w', 'p' or 'b'.")),
                };
            }
            let random = a.match_ident("random");
            if a.remaining() > 0 {
                return Err(a.error("Malformed lorem-tag arguments."));
            }
            Node::Lorem {
                count,
                method,
                random,
            }
        }
        "now" => {
            let Some(f) = a.take_kind(Tok::Str) else {
                return Err(a.error("Expected a format string."));
            };
            let fake = a.match_ident("fake");
            if a.remaining() > 0 {
                return Err(a.error("Malformed now-tag arguments."));
            }
            Node::Now {
                format: f.val.clone(),
                fake,
            }
        }
        "templatetag" => {
            let Some(arg) = a.take_ident() else {
                return Err(a.error("Identifier expected."));
            };
            let out = match arg {
                "openblock" => "{%",
                "closeblock" => "%}",
                "openvariable" => "{{",
                "closevariable" => "}}",
                "openbrace" => "{",
                "closebrace" => "}",
                "opencomment" => "{#",
                "closecomment" => "#}",
                _ => return Err(a.error("Argument not found")),
            };
            if a.remaining() > 0 {
                return Err(a.error("Malformed templatetag-tag argument."));
            }
            Node::TemplateTag(out)
        }
        "widthratio" => {
            let current = doc.builder().expression(a)?;
            let max = doc.builder().expression(a)?;
            let width = doc.builder().expression(a)?;
            let mut as_name = None;
            if a.match_kw("as") {
                let Some(n) = a.take_ident() else {
                    return Err(a.error("Expected name (identifier)."));
                };
                as_name = Some(n.into());
            }
            if a.remaining() > 0 {
                return Err(a.error("Malformed widthratio-tag arguments."));
            }
            Node::WidthRatio {
                current,
                max,
                width,
                as_name,
            }
        }
        "sum_by" | "count_by" | "avg_by" | "min_by" | "max_by" => {
            let op = match name {
                "sum_by" => AggOp::Sum,
                "count_by" => AggOp::Count,
                "avg_by" => AggOp::Avg,
                "min_by" => AggOp::Min,
                _ => AggOp::Max,
            };
            let collection = doc.builder().expression(a)?;
            let mut field = None;
            if op != AggOp::Count {
                if !a.match_ident("by") {
                    return Err(a.error("Expected 'by' keyword"));
                }
                field = Some(doc.builder().expression(a)?);
            }
            let mut condition = None;
            if a.match_ident("if") {
                condition = Some(doc.builder().expression(a)?);
            }
            Node::Aggregate {
                op,
                collection,
                field,
                condition,
                as_name: trailing_binding(a, name)?,
            }
        }
        "calc" => calc(a, doc.line)?,
        "date_time" => {
            let layout = doc.builder().expression(a)?;
            Node::DateTime {
                layout,
                as_name: trailing_binding(a, name)?,
            }
        }
        "last_item_by_group" => {
            let collection = doc.builder().expression(a)?;
            if !a.match_ident("group_by") {
                return Err(a.error("Expected 'group_by' keyword"));
            }
            let group_by = doc.builder().expression(a)?;
            if !a.match_ident("order_by") {
                return Err(a.error("Expected 'order_by' keyword"));
            }
            let order_by = doc.builder().expression(a)?;
            let mut condition = None;
            if a.match_ident("if") {
                condition = Some(doc.builder().expression(a)?);
            }
            if !a.match_kw("as") {
                return Err(a.error("Expected 'as' keyword"));
            }
            let Some(var) = a.take_ident() else {
                return Err(a.error("Expected variable name after 'as'"));
            };
            if let Some(t) = a.peek() {
                return Err(unexpected(a, name, t));
            }
            Node::LastItemByGroup {
                collection,
                group_by,
                order_by,
                condition,
                as_name: var.into(),
            }
        }
        "counter" => {
            let Some(t) = a.peek() else {
                return Err(a.error("counter tag requires a counter name"));
            };
            if t.kind != Tok::Str {
                return Err(a.error("counter tag requires a string argument"));
            }
            a.next();
            if let Some(t) = a.peek() {
                return Err(unexpected(a, name, t));
            }
            Node::Counter(t.val.clone())
        }
        "counter_show" => {
            if a.remaining() == 0 {
                return Err(a.error("counter_show tag requires at least one counter name"));
            }
            let mut names = Vec::new();
            while let Some(t) = a.take_kind(Tok::Str) {
                names.push(t.val.clone());
            }
            if names.is_empty() {
                return Err(a.error("counter_show tag requires string arguments"));
            }
            if let Some(t) = a.peek() {
                return Err(unexpected(a, name, t));
            }
            Node::CounterShow(names)
        }
        _ => return Ok(None),
    };
    Ok(Some(node))
}

/// The error for a token left over after a tag's arguments.
fn unexpected(a: &Cursor<'_>, tag: &str, t: &Token) -> RenderError {
    a.error(format!(
        "Malformed '{tag}'-tag arguments: unexpected '{}'.",
        t.val
    ))
}

/// The optional `as <name>` that may end a custom tag (its result is then bound in the
/// current scope instead of printed). Any other token left over is a syntax error.
fn trailing_binding(a: &mut Cursor<'_>, tag: &str) -> R<Option<Box<str>>> {
    let name = if a.match_kw("as") {
        let Some(n) = a.take_ident() else {
            return Err(a.error(format!("Expected a variable name after 'as' in '{tag}'.")));
        };
        Some(n.into())
    } else {
        None
    };
    match a.peek() {
        Some(t) => Err(unexpected(a, tag, t)),
        None => Ok(name),
    }
}

/// `{% calc <arithmetic> [as <name>] %}`: the original joins the tag's token texts with
/// spaces and glues paths back (`a . b` → `a.b`); the text is evaluated at render time. A
/// trailing `as <name>` binds the result; `as` anywhere else is a syntax error.
fn calc(a: &mut Cursor<'_>, line: u32) -> R<Node> {
    let toks = a.all();
    let (body, as_name) = match toks {
        [rest @ .., kw, n] if kw.is_kw("as") && n.kind == Tok::Ident => (rest, Some(n.val.clone())),
        _ => (toks, None),
    };
    if let Some(t) = body.iter().find(|t| t.is_kw("as")) {
        return Err(RenderError::Syntax(format!(
            "line {}: 'as' in 'calc' must be followed by a variable name and end the tag.",
            t.line
        )));
    }
    while a.next().is_some() {}
    let mut s = String::new();
    for t in body {
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(&t.val);
    }
    Ok(Node::Calc {
        text: s.replace(" . ", ".").into(),
        as_name,
        line,
    })
}
