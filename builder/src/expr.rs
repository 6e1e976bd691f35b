//! The expressions, paths and names blocks may carry: a strict subset of the original's
//! (Pongo2) expression language, lexed and parsed here with Pongo2's own grammar and
//! precedence, then printed back in a canonical form from the tokens read. Nothing the user
//! typed reaches generated code except through these tokens, and string literals are
//! re-quoted by [`super::escape::quote`], so an expression can neither open nor close a tag
//! nor break out of a string.
//!
//! ```text
//! Expression := Relational (("and"|"or"|"&&"|"||") Relational)*
//! Relational := Simple ((== != <> < > <= >=) Simple)* ("in" Simple)?
//! Simple     := ("+"|"-")? ("not"|"!")? Term (("+"|"-") Term)*
//! Term       := Power (("*"|"/"|"%") Power)*
//! Power      := Factor ("^" Factor)*
//! Factor     := "(" Expression ")" | Operand ("|" FILTER (":" Operand)?)*
//! Operand    := NUMBER ("." NUMBER)? | STRING | true | false
//!             | ("filter"|"contains") "(" Expression ("," Expression)* ")"
//!             | NAME ("." (NAME | NUMBER))*
//! ```
//!
//! Not accepted (the original's language has them, blocks do not need them): subscripts
//! `a[b]`, method calls, the `safe` filter (it would turn off HTML escaping of data), and the
//! trial-balance filters that add fields to rows.
use super::escape::{has_control, has_delimiter, quote};

/// Longest expression, in characters.
pub const MAX_EXPRESSION_CHARS: usize = 2000;
/// Longest path, in characters.
pub const MAX_PATH_CHARS: usize = 255;
/// Longest name (identifier), in characters.
pub const MAX_NAME_CHARS: usize = 64;
/// Deepest nesting of parentheses and helper calls in one expression.
pub const MAX_EXPRESSION_NESTING: usize = 16;
/// Most operators (binary and unary operators, `and`/`or`/`not`/`in`, filter applications) in
/// one expression. The template parser nests one level per operator of a chain (`1 or 1 or …`,
/// `9^9^…`) and refuses past 256 levels (`RenderLimits::max_nesting_depth`); this bound,
/// with [`MAX_EXPRESSION_NESTING`], keeps every expression well inside it, so a refusal names
/// the block and property instead of the whole template.
pub const MAX_EXPRESSION_OPERATORS: usize = 100;

/// Words of the language that cannot be names.
pub const KEYWORDS: [&str; 8] = ["in", "and", "or", "not", "true", "false", "as", "export"];
/// Names the builder reserves: the loop variable and the two helper functions.
pub const RESERVED: [&str; 3] = ["forloop", "filter", "contains"];

/// Filters an expression may apply: the catalogue's and Pongo2's built-ins, except `safe`
/// (it turns HTML escaping off) and `add_day` / `add_signed` (they add fields to rows).
pub const EXPRESSION_FILTERS: &[&str] = &[
    "percent_of",
    "slice_str",
    "strip_zeros",
    "replace",
    "where",
    "sum",
    "count",
    "floatformat",
    "length",
    "date",
    "escape",
    "e",
    "escapejs",
    "add",
    "addslashes",
    "capfirst",
    "center",
    "cut",
    "time",
    "default",
    "default_if_none",
    "divisibleby",
    "first",
    "get_digit",
    "iriencode",
    "join",
    "last",
    "length_is",
    "linebreaks",
    "linebreaksbr",
    "linenumbers",
    "ljust",
    "lower",
    "make_list",
    "phone2numeric",
    "pluralize",
    "random",
    "removetags",
    "rjust",
    "slice",
    "split",
    "stringformat",
    "striptags",
    "title",
    "truncatechars",
    "truncatechars_html",
    "truncatewords",
    "truncatewords_html",
    "upper",
    "urlencode",
    "urlize",
    "urlizetrunc",
    "wordcount",
    "wordwrap",
    "yesno",
    "float",
    "integer",
];

/// Why an expression, path or name was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Issue {
    /// Empty.
    Empty,
    /// Longer than its limit (characters).
    TooLong(usize),
    /// Contains `{{`, `%}`, ...
    Delimiters,
    /// Contains a line break or control character.
    Control,
    /// A character the language does not have (or the builder does not allow).
    Char(char),
    /// A string literal without its closing quote.
    UnclosedString,
    /// An escape other than `\"` and `\\` in a string.
    BadEscape,
    /// A token where it cannot be.
    Unexpected(String),
    /// The expression ends too early.
    UnexpectedEnd,
    /// A filter the builder does not offer.
    UnknownFilter(String),
    /// A function call other than `filter(...)` / `contains(...)`.
    Call(String),
    /// Parentheses nested deeper than [`MAX_EXPRESSION_NESTING`].
    TooDeep,
    /// More operators than [`MAX_EXPRESSION_OPERATORS`] (the limit).
    TooComplex(usize),
    /// A keyword or reserved name used as a name.
    Reserved(String),
    /// Not a name / path at all.
    NotAName,
}

/// A token of an expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tok {
    /// Name.
    Ident(String),
    /// One of [`KEYWORDS`].
    Kw(String),
    /// Digits.
    Num(String),
    /// String literal (its value).
    Str(String),
    /// Operator or punctuation.
    Sym(&'static str),
}

const SYMBOLS: [&str; 22] = [
    "**", "==", "!=", "<>", "<=", ">=", "&&", "||", "(", ")", "+", "-", "*", "/", "%", "^", ",",
    ".", "|", ":", "!", "<",
];
const SYMBOLS_TAIL: [&str; 1] = [">"];

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}
fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Checks the raw text every free-form property shares: length, delimiters, control chars.
pub fn check_text(s: &str, max: usize) -> Result<(), Issue> {
    if s.trim().is_empty() {
        return Err(Issue::Empty);
    }
    if s.chars().count() > max {
        return Err(Issue::TooLong(max));
    }
    if has_delimiter(s) {
        return Err(Issue::Delimiters);
    }
    if has_control(s) {
        return Err(Issue::Control);
    }
    Ok(())
}

/// True when `t` is an operator: it makes the parser nest one level deeper.
fn is_operator(t: &Tok) -> bool {
    match t {
        Tok::Sym(s) => !matches!(*s, "." | "(" | ")" | "," | ":"),
        Tok::Kw(k) => matches!(k.as_str(), "and" | "or" | "not" | "in"),
        _ => false,
    }
}

/// Splits `src` into tokens.
///
/// MUST refuse (`TooComplex`) more than [`MAX_EXPRESSION_OPERATORS`] operators, so no
/// expression, condition or tag argument reaches the template parser's nesting bound.
pub fn lex(src: &str) -> Result<Vec<Tok>, Issue> {
    let toks = lex_tokens(src)?;
    if toks.iter().filter(|t| is_operator(t)).count() > MAX_EXPRESSION_OPERATORS {
        return Err(Issue::TooComplex(MAX_EXPRESSION_OPERATORS));
    }
    Ok(toks)
}

fn lex_tokens(src: &str) -> Result<Vec<Tok>, Issue> {
    let mut toks = Vec::new();
    let mut it = src.char_indices().peekable();
    while let Some(&(i, c)) = it.peek() {
        if c == ' ' || c == '\t' {
            it.next();
            continue;
        }
        if is_ident_start(c) {
            let mut word = String::new();
            while let Some(&(_, d)) = it.peek() {
                if !is_ident_char(d) {
                    break;
                }
                word.push(d);
                it.next();
            }
            toks.push(if KEYWORDS.contains(&word.as_str()) {
                Tok::Kw(word)
            } else {
                Tok::Ident(word)
            });
            continue;
        }
        if c.is_ascii_digit() {
            let mut digits = String::new();
            while let Some(&(_, d)) = it.peek() {
                if !d.is_ascii_digit() {
                    break;
                }
                digits.push(d);
                it.next();
            }
            if it.peek().is_some_and(|&(_, d)| is_ident_char(d)) {
                return Err(Issue::NotAName);
            }
            toks.push(Tok::Num(digits));
            continue;
        }
        if c == '"' || c == '\'' {
            it.next();
            let mut val = String::new();
            loop {
                match it.next() {
                    None => return Err(Issue::UnclosedString),
                    Some((_, q)) if q == c => break,
                    Some((_, '\\')) => match it.next() {
                        Some((_, e @ ('"' | '\\'))) => val.push(e),
                        Some(_) => return Err(Issue::BadEscape),
                        None => return Err(Issue::UnclosedString),
                    },
                    Some((_, ch)) => val.push(ch),
                }
            }
            toks.push(Tok::Str(val));
            continue;
        }
        let rest = src.get(i..).unwrap_or_default();
        let Some(sym) = SYMBOLS
            .iter()
            .chain(SYMBOLS_TAIL.iter())
            .find(|s| rest.starts_with(*s))
        else {
            return Err(Issue::Char(c));
        };
        for _ in 0..sym.len() {
            it.next();
        }
        toks.push(Tok::Sym(sym));
    }
    Ok(toks)
}

/// A segment of a path after its head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    /// `.name`
    Attr(String),
    /// `.0`
    Index(u64),
}

/// A data path: `source.table.field`, `row.field`, `source.table.0.field`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path {
    /// First name.
    pub head: String,
    /// The rest.
    pub parts: Vec<Seg>,
}

impl Path {
    /// Canonical text: `head.part.part`.
    pub fn text(&self) -> String {
        let mut s = self.head.clone();
        for p in &self.parts {
            s.push('.');
            match p {
                Seg::Attr(a) => s.push_str(a),
                Seg::Index(i) => s.push_str(&i.to_string()),
            }
        }
        s
    }
}

/// A parsed expression (what mapped-field extraction needs of it).
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A number or boolean.
    Lit,
    /// A string literal.
    Str(String),
    /// A path.
    Path(Path),
    /// `filter(...)` or `contains(...)`.
    Call {
        /// `filter` or `contains`.
        name: String,
        /// Arguments.
        args: Vec<Expr>,
    },
    /// An operand with filters.
    Filtered {
        /// The operand.
        base: Box<Expr>,
        /// Filters in order.
        filters: Vec<FilterApp>,
    },
    /// `not x`, `-x`.
    Unary(Box<Expr>),
    /// Any binary operator.
    Binary(Box<Expr>, Box<Expr>),
}

/// One `|name:arg`.
#[derive(Debug, Clone, PartialEq)]
pub struct FilterApp {
    /// Filter name.
    pub name: String,
    /// Argument operand.
    pub arg: Option<Expr>,
}

/// An expression as the user wrote it: the tree and its canonical text.
#[derive(Debug, Clone, PartialEq)]
pub struct Expression {
    /// The tree.
    pub tree: Expr,
    /// Canonical source, safe to place inside `{{ }}` or a tag.
    pub text: String,
}

struct Parser<'t> {
    toks: &'t [Tok],
    pos: usize,
    depth: usize,
}

type P<T> = Result<T, Issue>;

impl<'t> Parser<'t> {
    fn peek(&self) -> Option<&'t Tok> {
        self.toks.get(self.pos)
    }
    fn bump(&mut self) -> Option<&'t Tok> {
        let t = self.toks.get(self.pos)?;
        self.pos += 1;
        Some(t)
    }
    fn sym(&mut self, s: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Sym(x)) if *x == s) {
            self.pos += 1;
            return true;
        }
        false
    }
    fn kw(&mut self, s: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Kw(x)) if x == s) {
            self.pos += 1;
            return true;
        }
        false
    }
    fn unexpected(&self) -> Issue {
        match self.peek() {
            None => Issue::UnexpectedEnd,
            Some(t) => Issue::Unexpected(show(t)),
        }
    }
    fn nest(&mut self) -> P<()> {
        self.depth += 1;
        if self.depth > MAX_EXPRESSION_NESTING {
            return Err(Issue::TooDeep);
        }
        Ok(())
    }

    fn expression(&mut self) -> P<Expr> {
        let mut acc = self.relational()?;
        loop {
            let is_op = matches!(self.peek(), Some(Tok::Kw(k)) if k == "and" || k == "or")
                || matches!(self.peek(), Some(Tok::Sym("&&" | "||")));
            if !is_op {
                return Ok(acc);
            }
            self.pos += 1;
            let right = self.relational()?;
            acc = Expr::Binary(Box::new(acc), Box::new(right));
        }
    }

    fn relational(&mut self) -> P<Expr> {
        let mut acc = self.simple()?;
        loop {
            if matches!(
                self.peek(),
                Some(Tok::Sym("==" | "!=" | "<>" | "<" | ">" | "<=" | ">="))
            ) {
                self.pos += 1;
                let right = self.simple()?;
                acc = Expr::Binary(Box::new(acc), Box::new(right));
            } else if self.kw("in") {
                let right = self.simple()?;
                return Ok(Expr::Binary(Box::new(acc), Box::new(right)));
            } else {
                return Ok(acc);
            }
        }
    }

    fn simple(&mut self) -> P<Expr> {
        let neg = self.sym("-") || self.sym("+");
        let not = self.sym("!") || self.kw("not");
        let term = self.term()?;
        let mut acc = if neg || not {
            Expr::Unary(Box::new(term))
        } else {
            term
        };
        while self.sym("+") || self.sym("-") {
            let right = self.term()?;
            acc = Expr::Binary(Box::new(acc), Box::new(right));
        }
        Ok(acc)
    }

    fn term(&mut self) -> P<Expr> {
        let mut acc = self.power()?;
        while self.sym("*") || self.sym("/") || self.sym("%") {
            let right = self.power()?;
            acc = Expr::Binary(Box::new(acc), Box::new(right));
        }
        Ok(acc)
    }

    fn power(&mut self) -> P<Expr> {
        let mut acc = self.factor()?;
        while self.sym("^") {
            let right = self.factor()?;
            acc = Expr::Binary(Box::new(acc), Box::new(right));
        }
        Ok(acc)
    }

    fn factor(&mut self) -> P<Expr> {
        if self.sym("(") {
            self.nest()?;
            let e = self.expression()?;
            self.depth -= 1;
            if !self.sym(")") {
                return Err(self.unexpected());
            }
            return Ok(e);
        }
        let base = self.operand()?;
        let mut filters = Vec::new();
        while self.sym("|") {
            let Some(Tok::Ident(name)) = self.peek() else {
                return Err(self.unexpected());
            };
            self.pos += 1;
            if !EXPRESSION_FILTERS.contains(&name.as_str()) {
                return Err(Issue::UnknownFilter(name.clone()));
            }
            let arg = if self.sym(":") {
                Some(self.operand()?)
            } else {
                None
            };
            filters.push(FilterApp {
                name: name.clone(),
                arg,
            });
        }
        if filters.is_empty() {
            Ok(base)
        } else {
            Ok(Expr::Filtered {
                base: Box::new(base),
                filters,
            })
        }
    }

    fn operand(&mut self) -> P<Expr> {
        let Some(t) = self.bump() else {
            return Err(Issue::UnexpectedEnd);
        };
        match t {
            Tok::Num(_) => {
                if self.sym(".") {
                    if !matches!(self.peek(), Some(Tok::Num(_))) {
                        return Err(self.unexpected());
                    }
                    self.pos += 1;
                }
                Ok(Expr::Lit)
            }
            Tok::Str(s) => Ok(Expr::Str(s.clone())),
            Tok::Kw(k) if k == "true" || k == "false" => Ok(Expr::Lit),
            Tok::Ident(head) => {
                if matches!(self.peek(), Some(Tok::Sym("("))) {
                    if head != "filter" && head != "contains" {
                        return Err(Issue::Call(head.clone()));
                    }
                    self.pos += 1;
                    self.nest()?;
                    let mut args = Vec::new();
                    loop {
                        args.push(self.expression()?);
                        if self.sym(")") {
                            break;
                        }
                        if !self.sym(",") {
                            return Err(self.unexpected());
                        }
                    }
                    self.depth -= 1;
                    return Ok(Expr::Call {
                        name: head.clone(),
                        args,
                    });
                }
                let mut parts = Vec::new();
                while self.sym(".") {
                    match self.peek() {
                        Some(Tok::Ident(a)) => parts.push(Seg::Attr(a.clone())),
                        Some(Tok::Num(n)) => parts.push(Seg::Index(
                            n.parse().map_err(|_| Issue::Unexpected(n.clone()))?,
                        )),
                        _ => return Err(self.unexpected()),
                    }
                    self.pos += 1;
                }
                if matches!(self.peek(), Some(Tok::Sym("("))) {
                    let name = match parts.last() {
                        Some(Seg::Attr(a)) => a.clone(),
                        _ => head.clone(),
                    };
                    return Err(Issue::Call(name));
                }
                Ok(Expr::Path(Path {
                    head: head.clone(),
                    parts,
                }))
            }
            _ => {
                self.pos -= 1;
                Err(self.unexpected())
            }
        }
    }
}

fn show(t: &Tok) -> String {
    match t {
        Tok::Ident(s) | Tok::Kw(s) | Tok::Num(s) => s.clone(),
        Tok::Str(s) => quote(s),
        Tok::Sym(s) => (*s).to_owned(),
    }
}

/// Prints tokens in canonical form: names glued by `.`, filters by `|` and `:`, single spaces
/// elsewhere; strings re-quoted.
pub fn print(toks: &[Tok]) -> String {
    let mut out = String::new();
    let mut prev: Option<&Tok> = None;
    let mut prev_unary = false;
    for t in toks {
        let glue = match (prev, t) {
            (None, _) => true,
            (Some(Tok::Sym("." | "|" | ":" | "(" | "!")), _) => true,
            (_, Tok::Sym("." | "|" | ":" | ")" | ",")) => true,
            (Some(Tok::Ident(_)), Tok::Sym("(")) => true,
            _ => prev_unary,
        };
        if !glue {
            out.push(' ');
        }
        out.push_str(&show(t));
        // A sign is unary at the start or after an operator, an opening parenthesis, a comma
        // or a keyword.
        prev_unary = matches!(t, Tok::Sym("-" | "+"))
            && match prev {
                None => true,
                Some(Tok::Kw(_)) => true,
                Some(Tok::Sym(s)) => !matches!(*s, ")"),
                _ => false,
            };
        prev = Some(t);
    }
    out
}

/// Parses a complete expression.
pub fn parse_expression(src: &str) -> Result<Expression, Issue> {
    check_text(src, MAX_EXPRESSION_CHARS)?;
    let toks = lex(src)?;
    let (tree, used) = parse_prefix(&toks)?;
    if used != toks.len() {
        return Err(Issue::Unexpected(
            toks.get(used).map(show).unwrap_or_default(),
        ));
    }
    Ok(Expression {
        tree,
        text: print(&toks),
    })
}

/// Parses the longest expression at the start of `toks`; the tree and how many tokens it took.
pub fn parse_prefix(toks: &[Tok]) -> Result<(Expr, usize), Issue> {
    if toks.is_empty() {
        return Err(Issue::Empty);
    }
    let mut p = Parser {
        toks,
        pos: 0,
        depth: 0,
    };
    let e = p.expression()?;
    Ok((e, p.pos))
}

/// Checks a name: `[A-Za-z_][A-Za-z0-9_]*`, at most [`MAX_NAME_CHARS`], not a keyword.
pub fn check_name(s: &str) -> Result<(), Issue> {
    if s.is_empty() {
        return Err(Issue::Empty);
    }
    if s.len() > MAX_NAME_CHARS {
        return Err(Issue::TooLong(MAX_NAME_CHARS));
    }
    let mut chars = s.chars();
    if !chars.next().is_some_and(is_ident_start) || !chars.all(is_ident_char) {
        return Err(Issue::NotAName);
    }
    if KEYWORDS.contains(&s) {
        return Err(Issue::Reserved(s.to_owned()));
    }
    Ok(())
}

/// Checks a name a block binds (loop iterator, `with` variable, `as` name): a name that is
/// neither a keyword nor reserved.
pub fn check_binding(s: &str) -> Result<(), Issue> {
    check_name(s)?;
    if RESERVED.contains(&s) {
        return Err(Issue::Reserved(s.to_owned()));
    }
    Ok(())
}

/// Parses a path property. `source:schema.table…` (the original's form for a table outside the
/// default schema) is accepted and normalised to `source.schema__table…`.
pub fn parse_path(src: &str) -> Result<Path, Issue> {
    let s = src.trim();
    if s.is_empty() {
        return Err(Issue::Empty);
    }
    if s.chars().count() > MAX_PATH_CHARS {
        return Err(Issue::TooLong(MAX_PATH_CHARS));
    }
    let mut segs = s.split('.');
    let first = segs.next().unwrap_or_default();
    let (head, schema) = match first.split_once(':') {
        Some((h, sc)) => (h, Some(sc)),
        None => (first, None),
    };
    check_name(head)?;
    let mut parts = Vec::new();
    let rest: Vec<&str> = segs.collect();
    let mut rest = rest.into_iter();
    if let Some(sc) = schema {
        check_name(sc)?;
        let Some(table) = rest.next() else {
            return Err(Issue::NotAName);
        };
        check_name(table)?;
        parts.push(Seg::Attr(format!("{sc}__{table}")));
    }
    for seg in rest {
        if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) {
            parts.push(Seg::Index(seg.parse().map_err(|_| Issue::NotAName)?));
        } else {
            check_name(seg)?;
            parts.push(Seg::Attr(seg.to_owned()));
        }
    }
    Ok(Path {
        head: head.to_owned(),
        parts,
    })
}

/// `calc` arithmetic: numbers and paths with `+ - * / **` and parentheses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Calc {
    /// Paths it reads, in order.
    pub paths: Vec<Path>,
    /// Canonical text.
    pub text: String,
}

/// Parses `calc` arguments.
pub fn parse_calc(src: &str) -> Result<Calc, Issue> {
    check_text(src, MAX_EXPRESSION_CHARS)?;
    let toks = lex(src)?;
    let mut paths = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    // operand (op operand)*
    let mut want_operand = true;
    while let Some(t) = toks.get(i) {
        if want_operand {
            match t {
                Tok::Sym("-") => {}
                Tok::Sym("(") => {
                    depth += 1;
                    if depth > MAX_EXPRESSION_NESTING {
                        return Err(Issue::TooDeep);
                    }
                }
                Tok::Num(_) => {
                    if matches!(toks.get(i + 1), Some(Tok::Sym("."))) {
                        if !matches!(toks.get(i + 2), Some(Tok::Num(_))) {
                            return Err(Issue::Unexpected(".".into()));
                        }
                        i += 2;
                    }
                    want_operand = false;
                }
                Tok::Ident(h) => {
                    let mut parts = Vec::new();
                    while matches!(toks.get(i + 1), Some(Tok::Sym("."))) {
                        match toks.get(i + 2) {
                            Some(Tok::Ident(a)) => parts.push(Seg::Attr(a.clone())),
                            Some(Tok::Num(n)) => parts.push(Seg::Index(
                                n.parse().map_err(|_| Issue::Unexpected(n.clone()))?,
                            )),
                            _ => return Err(Issue::Unexpected(".".into())),
                        }
                        i += 2;
                    }
                    paths.push(Path {
                        head: h.clone(),
                        parts,
                    });
                    want_operand = false;
                }
                other => return Err(Issue::Unexpected(show(other))),
            }
        } else {
            match t {
                Tok::Sym(")") => {
                    if depth == 0 {
                        return Err(Issue::Unexpected(")".into()));
                    }
                    depth -= 1;
                }
                Tok::Sym("+" | "-" | "*" | "/" | "**") => want_operand = true,
                other => return Err(Issue::Unexpected(show(other))),
            }
        }
        i += 1;
    }
    if want_operand {
        return Err(Issue::UnexpectedEnd);
    }
    if depth != 0 {
        return Err(Issue::UnexpectedEnd);
    }
    Ok(Calc {
        paths,
        text: print(&toks),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> String {
        parse_expression(s)
            .map(|e| e.text)
            .unwrap_or_else(|e| format!("ERR {e:?}"))
    }

    #[test]
    fn canonical_printing() {
        assert_eq!(text("a.b == \"x\""), "a.b == \"x\"");
        assert_eq!(text("  a . b|length  >  0 "), "a.b|length > 0");
        assert_eq!(
            text("filter( ds.t , 'f', row.id )|length"),
            "filter(ds.t, \"f\", row.id)|length"
        );
        assert_eq!(text("not x and -y"), "not x and -y");
        assert_eq!(text("6 + items|length"), "6 + items|length");
        assert_eq!(text("-(a + 1.5) * 2"), "-(a + 1.5) * 2");
        // As in Pongo2, a sign only starts a term.
        assert_eq!(text("a * -2"), "ERR Unexpected(\"-\")");
        assert_eq!(text("x|default:'a\"b'"), "x|default:\"a\\\"b\"");
        assert_eq!(text("a in b"), "a in b");
    }

    #[test]
    fn refusals() {
        assert_eq!(parse_expression("a }} b").unwrap_err(), Issue::Delimiters);
        assert_eq!(parse_expression("\"%}\"").unwrap_err(), Issue::Delimiters);
        assert_eq!(parse_expression("a\nb").unwrap_err(), Issue::Control);
        assert_eq!(parse_expression("a[0]").unwrap_err(), Issue::Char('['));
        assert_eq!(parse_expression("x = 1").unwrap_err(), Issue::Char('='));
        assert_eq!(
            parse_expression("\"abc").unwrap_err(),
            Issue::UnclosedString
        );
        assert_eq!(parse_expression("\"a\\n\"").unwrap_err(), Issue::BadEscape);
        assert_eq!(
            parse_expression("x|safe").unwrap_err(),
            Issue::UnknownFilter("safe".into())
        );
        assert_eq!(
            parse_expression("x.upper()").unwrap_err(),
            Issue::Call("upper".into())
        );
        assert_eq!(
            parse_expression("a b").unwrap_err(),
            Issue::Unexpected("b".into())
        );
        assert_eq!(parse_expression("(a").unwrap_err(), Issue::UnexpectedEnd);
        assert_eq!(parse_expression("").unwrap_err(), Issue::Empty);
        assert_eq!(
            parse_expression(&format!("{}a{}", "(".repeat(20), ")".repeat(20))).unwrap_err(),
            Issue::TooDeep
        );
        assert!(parse_expression("2x").is_err());
    }

    #[test]
    fn operator_chains_are_bounded_below_the_parsers_nesting() {
        let max = MAX_EXPRESSION_OPERATORS;
        let too_many = Issue::TooComplex(max);
        for op in [" or ", "^", " + ", " and ", " == "] {
            let at = vec!["1"; max + 1].join(op);
            let past = vec!["1"; max + 2].join(op);
            assert!(parse_expression(&at).is_ok(), "{op}");
            assert_eq!(parse_expression(&past).unwrap_err(), too_many, "{op}");
        }
        // Filter applications count.
        assert!(parse_expression(&format!("a{}", "|length".repeat(max))).is_ok());
        assert_eq!(
            parse_expression(&format!("a{}", "|length".repeat(max + 1))).unwrap_err(),
            too_many
        );
        // The probe's chains: 390 `or` terms, 990 `^` terms.
        assert_eq!(
            parse_expression(&vec!["1"; 390].join(" or ")).unwrap_err(),
            too_many
        );
        assert_eq!(
            parse_expression(&vec!["9"; 990].join("^")).unwrap_err(),
            too_many
        );
        // Unary operators and `not` count; dots, parentheses and commas do not.
        assert_eq!(
            parse_expression(&format!("{}a", "not ".repeat(max + 1))).unwrap_err(),
            too_many
        );
        assert!(parse_expression(&vec!["a.b.c"; 50].join(" + ")).is_ok());
        assert_eq!(
            parse_calc(&vec!["x"; max + 2].join(" * ")).unwrap_err(),
            too_many
        );
    }

    #[test]
    fn paths_and_names() {
        assert_eq!(
            parse_path("bank.accounts.0.id").unwrap().text(),
            "bank.accounts.0.id"
        );
        assert_eq!(
            parse_path("pg:sales.orders.total").unwrap().text(),
            "pg.sales__orders.total"
        );
        assert!(parse_path("a..b").is_err());
        assert!(parse_path("a.b c").is_err());
        assert!(parse_path("a.in").is_err());
        assert!(parse_path("1a").is_err());
        assert!(check_binding("row").is_ok());
        assert!(check_binding("forloop").is_err());
        assert!(check_binding("and").is_err());
        assert!(check_binding("a-b").is_err());
    }

    #[test]
    fn calc_grammar() {
        let c = parse_calc("(bank.t.0.amount + x) * 1.5 ** 2 - -3").unwrap();
        assert_eq!(c.text, "(bank.t.0.amount + x) * 1.5 ** 2 - -3");
        assert_eq!(c.paths.len(), 2);
        assert!(parse_calc("1 +").is_err());
        assert!(parse_calc("(1").is_err());
        assert!(parse_calc("1)").is_err());
        assert!(parse_calc("\"a\"").is_err());
        assert!(parse_calc("a|length").is_err());
    }
}
