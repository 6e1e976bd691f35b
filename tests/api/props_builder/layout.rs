//! The template the README's layout rules write for a tree (step 1 of the model): every
//! block on a line of its own unless inline; loop, conditional and `with` tags on lines of
//! their own with their children indented by four spaces in html and xml (not when the tags
//! trim); indentation only at the start of a line; the html wrapper or the XML declaration.
use super::tree::{Block, Coll, Cond, Format, Leaf};

/// A piece of the generated template.
pub enum P<'t> {
    /// Literal template text.
    Lit(String),
    /// The content of a text block.
    Text(&'t str),
    /// A leaf block; `trim` only for tags.
    Leaf(&'t Leaf, bool),
    Loop {
        coll: &'t Coll,
        trim: bool,
        body: Vec<P<'t>>,
    },
    If {
        trim: bool,
        branches: Vec<(&'t Cond, Vec<P<'t>>)>,
        otherwise: Option<Vec<P<'t>>>,
    },
    With {
        trim: bool,
        body: Vec<P<'t>>,
    },
}

/// Writes the layout: `line_start` is whether the code written so far ends a line.
struct Layout {
    step: usize,
    line_start: bool,
}

impl Layout {
    /// Indentation when at the start of a line.
    fn indent(&self, out: &mut Vec<P<'_>>, indent: usize) {
        if self.line_start && indent > 0 {
            out.push(P::Lit(" ".repeat(indent)));
        }
    }

    /// The end of a line: a line break unless inline.
    fn end(&mut self, out: &mut Vec<P<'_>>, inline: bool, ends_with_newline: bool) {
        if inline {
            self.line_start = ends_with_newline;
        } else {
            out.push(P::Lit("\n".into()));
            self.line_start = true;
        }
    }

    fn blocks<'t>(&mut self, bs: &'t [Block], indent: usize, out: &mut Vec<P<'t>>) {
        for b in bs {
            self.block(b, indent, out);
        }
    }

    fn body_indent(&self, trim: bool, indent: usize) -> usize {
        if trim { 0 } else { indent + self.step }
    }

    /// A tag line opening a body; then the body and the closing tag's indentation.
    fn body<'t>(&mut self, bs: &'t [Block], trim: bool, indent: usize, inline: bool) -> Vec<P<'t>> {
        let mut body = Vec::new();
        self.end(&mut body, inline, false);
        let inner = if inline {
            0
        } else {
            self.body_indent(trim, indent)
        };
        self.blocks(bs, inner, &mut body);
        self.indent(&mut body, indent);
        body
    }

    fn block<'t>(&mut self, b: &'t Block, indent: usize, out: &mut Vec<P<'t>>) {
        match b {
            Block::Leaf(l, inline, trim) => {
                self.indent(out, indent);
                let nl = match l {
                    Leaf::Text(s) => {
                        out.push(P::Text(s));
                        s.ends_with('\n')
                    }
                    _ => {
                        out.push(P::Leaf(l, *trim && l.is_tag()));
                        false
                    }
                };
                self.end(out, *inline, nl);
            }
            Block::Section(ch) => self.blocks(ch, indent, out),
            Block::Loop(c, ch, trim) => {
                self.indent(out, indent);
                let body = self.body(ch, *trim, indent, false);
                out.push(P::Loop {
                    coll: c,
                    trim: *trim,
                    body,
                });
                self.end(out, false, false);
            }
            Block::With(_, ch, trim) => {
                self.indent(out, indent);
                let body = self.body(ch, *trim, indent, false);
                out.push(P::With { trim: *trim, body });
                self.end(out, false, false);
            }
            Block::If(branches, otherwise, inline, trim) => {
                self.indent(out, indent);
                let mut bodies = Vec::new();
                for (c, ch) in branches {
                    bodies.push((c, self.body(ch, *trim, indent, *inline)));
                }
                let otherwise =
                    (!otherwise.is_empty()).then(|| self.body(otherwise, *trim, indent, *inline));
                out.push(P::If {
                    trim: *trim,
                    branches: bodies,
                    otherwise,
                });
                self.end(out, *inline, false);
            }
        }
    }
}

const HTML_HEAD: &str =
    "<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"UTF-8\">\n</head>\n<body>\n";
const HTML_TAIL: &str = "</body>\n</html>\n";
pub const XML_DECLARATION: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";

/// The template of `tree` in `format`.
pub fn plan(tree: &[Block], format: Format) -> Vec<P<'_>> {
    let step = match format {
        Format::Html | Format::Xml => 4,
        Format::Txt | Format::Csv => 0,
    };
    let mut layout = Layout {
        step,
        line_start: true,
    };
    let mut body = Vec::new();
    layout.blocks(tree, 0, &mut body);
    let mut out = Vec::new();
    match format {
        Format::Html => {
            out.push(P::Lit(HTML_HEAD.into()));
            out.extend(body);
            out.push(P::Lit(HTML_TAIL.into()));
        }
        Format::Xml => {
            out.push(P::Lit(XML_DECLARATION.into()));
            out.extend(body);
        }
        Format::Txt | Format::Csv => out.extend(body),
    }
    out
}
