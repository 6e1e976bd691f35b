//! The document parser: text, `{{ }}` and `{% %}` into a [`Template`]. Iterative, with an
//! explicit stack of open blocks bounded by `max_nesting_depth`.
pub mod expr;
mod tags;

use crate::ast::{Block, Expr, ExprId, Node, Template};
use crate::lexer::{self, Tok, Token};
use expr::{Cursor, ExprBuilder};
use reporter_ports::ports::RenderError;

/// Tags the original refuses (no file access, no inheritance).
pub const BANNED_TAGS: [&str; 5] = ["include", "extends", "import", "block", "ssi"];

/// An open block tag and what it has collected so far.
pub(crate) enum Open {
    If {
        conditions: Vec<crate::ast::ExprId>,
        blocks: Vec<Block>,
    },
    For {
        key: Box<str>,
        value: Option<Box<str>>,
        iter: crate::ast::ExprId,
        reversed: bool,
        sorted: bool,
        main: Option<Block>,
    },
    With(Vec<(Box<str>, crate::ast::ExprId)>),
    Autoescape(bool),
    Comment,
    Filter(Vec<crate::ast::FilterCall>),
    IfChanged {
        state: usize,
        watched: Vec<crate::ast::ExprId>,
        then: Option<Block>,
    },
    IfEqual {
        negate: bool,
        a: crate::ast::ExprId,
        b: crate::ast::ExprId,
        then: Option<Block>,
    },
    Macro {
        name: Box<str>,
        params: Vec<(Box<str>, Option<crate::ast::ExprId>)>,
    },
    Spaceless,
}

impl Open {
    /// The tags that end (or continue) this block.
    fn ends(&self) -> &'static [&'static str] {
        match self {
            Open::If { .. } => &["elif", "else", "endif"],
            Open::For { main: None, .. } => &["empty", "endfor"],
            Open::For { .. } => &["endfor"],
            Open::With(_) => &["endwith"],
            Open::Autoescape(_) => &["endautoescape"],
            Open::Comment => &["endcomment"],
            Open::Filter(_) => &["endfilter"],
            Open::IfChanged { then: None, .. } => &["else", "endifchanged"],
            Open::IfChanged { .. } => &["endifchanged"],
            Open::IfEqual {
                negate: false,
                then: None,
                ..
            } => &["else", "endifequal"],
            Open::IfEqual { negate: false, .. } => &["endifequal"],
            Open::IfEqual { then: None, .. } => &["else", "endifnotequal"],
            Open::IfEqual { .. } => &["endifnotequal"],
            Open::Macro { .. } => &["endmacro"],
            Open::Spaceless => &["endspaceless"],
        }
    }
}

struct Frame {
    open: Option<Open>,
    body: Block,
    line: u32,
}

/// Parser state shared with the tag parsers.
pub(crate) struct Doc<'t> {
    pub exprs: Vec<Expr>,
    pub depths: Vec<u32>,
    /// The line of each expression's tag or `{{ }}` ([`Template::expr_lines`]).
    pub lines: Vec<u32>,
    /// The line of the tag or `{{ }}` being parsed.
    pub line: u32,
    pub macros: Vec<crate::ast::MacroDef>,
    pub stateful: usize,
    pub max_depth: usize,
    _toks: std::marker::PhantomData<&'t ()>,
}

impl Doc<'_> {
    pub fn builder(&mut self) -> ExprBuilder<'_> {
        ExprBuilder::new(
            &mut self.exprs,
            &mut self.depths,
            (&mut self.lines, self.line),
            self.max_depth,
        )
    }
}

/// Rewrites `ds:schema.table` to `ds.schema__table` anywhere in the text, as the original
/// does before parsing.
pub fn rewrite_schema_refs(src: &str) -> std::borrow::Cow<'_, str> {
    use std::sync::OnceLock;
    static RE: OnceLock<Option<regex::Regex>> = OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(
            r"(?-u:\b)([a-zA-Z_][a-zA-Z0-9_]*):([a-zA-Z_][a-zA-Z0-9_]*)\.([a-zA-Z_][a-zA-Z0-9_]*)",
        )
        .ok()
    });
    match re {
        Some(re) => re.replace_all(src, "${1}.${2}__${3}"),
        None => std::borrow::Cow::Borrowed(src),
    }
}

/// Parses a (schema-rewritten) source.
///
/// MUST answer `Syntax` (with the original's message and line) for a token outside text,
/// `{{ }}` and `{% %}`, and for a block still open at the end.
pub fn parse(src: &str, max_depth: usize) -> Result<Template, RenderError> {
    let toks = lexer::lex(src)?;
    let mut doc = Doc {
        exprs: Vec::new(),
        depths: Vec::new(),
        lines: Vec::new(),
        line: 1,
        macros: Vec::new(),
        stateful: 0,
        max_depth: max_depth.max(1),
        _toks: std::marker::PhantomData,
    };
    let mut stack: Vec<Frame> = vec![Frame {
        open: None,
        body: Vec::new(),
        line: 1,
    }];
    let mut i = 0;
    while let Some(t) = toks.get(i) {
        i = match t.kind {
            Tok::Html => {
                push(&mut stack, text_node(&toks, i));
                i + 1
            }
            Tok::Symbol if &*t.val == "{{" => {
                doc.line = t.line;
                let (e, next) = print_expr(&mut doc, &toks, i)?;
                push(&mut stack, Node::Print(e));
                next
            }
            Tok::Symbol if &*t.val == "{%" => {
                let (inner, next) = code_span(&toks, i, "%}")?;
                let Some(name_tok) = inner.first().filter(|n| n.kind == Tok::Ident) else {
                    return Err(RenderError::Syntax(format!(
                        "line {}: Tag name must be an identifier.",
                        t.line
                    )));
                };
                let name = &*name_tok.val;
                let args = Cursor::new(inner.get(1..).unwrap_or_default(), name_tok.line);
                doc.line = t.line;
                handle_tag(&mut doc, &mut stack, name, args, t.line)?;
                next
            }
            _ => {
                return Err(RenderError::Syntax(format!(
                    "line {}: Unexpected token (only HTML/tags/filters in templates allowed)",
                    t.line
                )));
            }
        };
    }
    if stack.len() > 1 {
        let top = stack.last().map_or(1, |f| f.line);
        let expected = stack
            .last()
            .and_then(|f| f.open.as_ref())
            .map(|o| o.ends().join("' or '"))
            .unwrap_or_default();
        return Err(RenderError::Syntax(format!(
            "line {top}: Unexpected EOF, expected tag '{expected}'"
        )));
    }
    let body = stack.pop().map(|f| f.body).unwrap_or_default();
    Ok(Template {
        body,
        exprs: doc.exprs,
        expr_lines: doc.lines,
        macros: doc.macros,
        stateful: doc.stateful,
    })
}

/// The text token at `i`, trimmed on a side where a `{%-`/`-%}`-style symbol touches it.
fn text_node(toks: &[Token], i: usize) -> Node {
    let trim_left = i > 0
        && toks
            .get(i - 1)
            .is_some_and(|p| p.kind == Tok::Symbol && p.trim);
    let trim_right = toks
        .get(i + 1)
        .is_some_and(|n| n.kind == Tok::Symbol && n.trim);
    Node::Text {
        text: toks.get(i).map(|t| t.val.clone()).unwrap_or_default(),
        trim_left,
        trim_right,
    }
}

/// The expression of the `{{ … }}` opening at `i`, and the index after it.
fn print_expr(doc: &mut Doc<'_>, toks: &[Token], i: usize) -> Result<(ExprId, usize), RenderError> {
    let line = toks.get(i).map_or(1, |t| t.line);
    let (inner, next) = code_span(toks, i, "}}")?;
    let mut c = Cursor::new(inner, line);
    if inner.is_empty() {
        return Err(c.error("Unexpected EOF, expected a number, string, keyword or identifier."));
    }
    let e = doc.builder().expression(&mut c)?;
    if c.remaining() > 0 {
        return Err(c.error("'}}' expected"));
    }
    Ok((e, next))
}

fn push(stack: &mut [Frame], node: Node) {
    if let Some(top) = stack.last_mut() {
        top.body.push(node);
    }
}

/// The tokens between an opening symbol at `i` and its closing symbol, and the index after.
fn code_span<'t>(
    toks: &'t [Token],
    i: usize,
    close: &str,
) -> Result<(&'t [Token], usize), RenderError> {
    let line = toks.get(i).map_or(0, |t| t.line);
    let mut j = i + 1;
    while let Some(t) = toks.get(j) {
        if t.kind == Tok::Html {
            break;
        }
        if t.kind == Tok::Symbol && matches!(&*t.val, "}}" | "%}" | "{{" | "{%") {
            if &*t.val == close {
                return Ok((toks.get(i + 1..j).unwrap_or_default(), j + 1));
            }
            break;
        }
        j += 1;
    }
    Err(RenderError::Syntax(format!(
        "line {line}: '{close}' expected"
    )))
}

fn handle_tag(
    doc: &mut Doc<'_>,
    stack: &mut Vec<Frame>,
    name: &str,
    mut args: Cursor<'_>,
    line: u32,
) -> Result<(), RenderError> {
    // An end or continuation of the innermost open block?
    let expects = stack
        .last()
        .and_then(|f| f.open.as_ref())
        .is_some_and(|o| o.ends().contains(&name));
    if expects {
        return close_or_continue(doc, stack, name, args);
    }
    if BANNED_TAGS.contains(&name) {
        return Err(args.error(format!(
            "Usage of tag '{name}' is not allowed (sandbox restriction active)."
        )));
    }
    if let Some(open) = tags::open_block(doc, name, &mut args)? {
        if stack.len() > doc.max_depth {
            return Err(RenderError::NestingTooDeep(doc.max_depth));
        }
        stack.push(Frame {
            open: Some(open),
            body: Vec::new(),
            line,
        });
        return Ok(());
    }
    match tags::inline(doc, name, &mut args)? {
        Some(node) => {
            push(stack, node);
            Ok(())
        }
        None => Err(args.error(format!(
            "Tag '{name}' not found (or beginning tag not provided)"
        ))),
    }
}

fn no_args(args: &Cursor<'_>) -> Result<(), RenderError> {
    if args.count() > 0 {
        return Err(args.error("Arguments not allowed here."));
    }
    Ok(())
}

/// Long by design: one arm per block tag that can close or continue (`else`, `elif`,
/// `empty`, `plural`, `end…`), each with its nesting rule.
fn close_or_continue(
    doc: &mut Doc<'_>,
    stack: &mut Vec<Frame>,
    name: &str,
    mut args: Cursor<'_>,
) -> Result<(), RenderError> {
    let Some(mut frame) = stack.pop() else {
        return Err(args.error("unbalanced tags"));
    };
    let body = std::mem::take(&mut frame.body);
    let Some(open) = frame.open.take() else {
        return Err(args.error("unbalanced tags"));
    };
    let reopen = |stack: &mut Vec<Frame>, open: Open| {
        stack.push(Frame {
            open: Some(open),
            body: Vec::new(),
            line: frame.line,
        });
    };
    let node = match open {
        Open::If {
            mut conditions,
            mut blocks,
        } => {
            blocks.push(body);
            match name {
                "elif" => {
                    let cond = doc.builder().expression(&mut args)?;
                    if args.remaining() > 0 {
                        return Err(args.error("Elif-condition is malformed."));
                    }
                    conditions.push(cond);
                    reopen(stack, Open::If { conditions, blocks });
                    return Ok(());
                }
                "else" => {
                    no_args(&args)?;
                    reopen(stack, Open::If { conditions, blocks });
                    return Ok(());
                }
                _ => {
                    no_args(&args)?;
                    Node::If { conditions, blocks }
                }
            }
        }
        Open::For {
            key,
            value,
            iter,
            reversed,
            sorted,
            main,
        } => {
            no_args(&args)?;
            match (name, main) {
                ("empty", None) => {
                    reopen(
                        stack,
                        Open::For {
                            key,
                            value,
                            iter,
                            reversed,
                            sorted,
                            main: Some(body),
                        },
                    );
                    return Ok(());
                }
                (_, None) => Node::For {
                    key,
                    value,
                    iter,
                    reversed,
                    sorted,
                    body,
                    empty: None,
                },
                (_, Some(main)) => Node::For {
                    key,
                    value,
                    iter,
                    reversed,
                    sorted,
                    body: main,
                    empty: Some(body),
                },
            }
        }
        Open::With(pairs) => {
            no_args(&args)?;
            Node::With { pairs, body }
        }
        Open::Autoescape(on) => {
            no_args(&args)?;
            Node::Autoescape { on, body }
        }
        Open::Comment => {
            no_args(&args)?;
            Node::Comment
        }
        Open::Filter(filters) => Node::FilterBlock { filters, body },
        Open::IfChanged {
            state,
            watched,
            then,
        } => {
            no_args(&args)?;
            match (name, then) {
                ("else", None) => {
                    reopen(
                        stack,
                        Open::IfChanged {
                            state,
                            watched,
                            then: Some(body),
                        },
                    );
                    return Ok(());
                }
                (_, None) => Node::IfChanged {
                    state,
                    watched,
                    then: body,
                    otherwise: None,
                },
                (_, Some(then)) => Node::IfChanged {
                    state,
                    watched,
                    then,
                    otherwise: Some(body),
                },
            }
        }
        Open::IfEqual { negate, a, b, then } => {
            no_args(&args)?;
            match (name, then) {
                ("else", None) => {
                    reopen(
                        stack,
                        Open::IfEqual {
                            negate,
                            a,
                            b,
                            then: Some(body),
                        },
                    );
                    return Ok(());
                }
                (_, None) => Node::IfEqual {
                    negate,
                    a,
                    b,
                    then: body,
                    otherwise: None,
                },
                (_, Some(then)) => Node::IfEqual {
                    negate,
                    a,
                    b,
                    then,
                    otherwise: Some(body),
                },
            }
        }
        Open::Macro {
            name: mname,
            params,
        } => {
            no_args(&args)?;
            let id = doc.macros.len();
            doc.macros.push(crate::ast::MacroDef {
                name: mname,
                params,
                body,
            });
            Node::Macro(id)
        }
        Open::Spaceless => {
            no_args(&args)?;
            Node::Spaceless(body)
        }
    };
    push(stack, node);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_refs_are_rewritten() {
        assert_eq!(
            rewrite_schema_refs("{% for tx in db:sales.orders %}{{ x }}{% endfor %} a:b.c"),
            "{% for tx in db.sales__orders %}{{ x }}{% endfor %} a.b__c"
        );
        assert_eq!(rewrite_schema_refs("{{ x }}"), "{{ x }}");
    }

    #[test]
    fn parses_and_refuses() {
        assert!(parse("{% if a %}x{% elif b %}y{% else %}z{% endif %}", 256).is_ok());
        assert!(parse("{% for a in b %}{% empty %}{% endfor %}", 256).is_ok());
        assert!(parse("{% if a %}", 256).is_err());
        assert!(parse("{% endif %}", 256).is_err());
        assert!(parse("{% include 'x' %}", 256).is_err());
        assert!(parse("{{ x|nosuchfilter }}", 256).is_err());
        assert!(parse("{{ }}", 256).is_err());
        assert!(parse("{% nosuchtag %}", 256).is_err());
    }

    #[test]
    fn depth_is_bounded() {
        let deep = "{% if a %}".repeat(300) + &"{% endif %}".repeat(300);
        assert_eq!(
            parse(&deep, 256).err(),
            Some(RenderError::NestingTooDeep(256))
        );
        let chain = format!("{{{{ {} }}}}", vec!["1"; 1000].join("+"));
        assert_eq!(
            parse(&chain, 256).err(),
            Some(RenderError::NestingTooDeep(256))
        );
        let parens = format!("{{{{ {}1{} }}}}", "(".repeat(1000), ")".repeat(1000));
        assert_eq!(
            parse(&parens, 256).err(),
            Some(RenderError::NestingTooDeep(256))
        );
    }
}
