//! Pongo2's expression grammar, with its precedence and associativity:
//!
//! ```text
//! Expression := Relational (("and"|"or"|"&&"|"||") Relational)*      right-associative
//! Relational := Simple ((== != <> < > <= >=) Relational | "in" Simple)?  right-associative
//! Simple     := ("+"|"-")? ("not"|"!")? Term (("+"|"-") Term)*        left-associative
//! Term       := Power (("*"|"/"|"%") Power)*                          left-associative
//! Power      := Factor ("^" Power)?                                   right-associative
//! Factor     := "(" Expression ")" | VariableOrLiteral ("|" Filter)*
//! Filter     := IDENT (":" VariableOrLiteral)?
//! ```
//!
//! Chains are read iteratively; the recursion of parentheses, subscripts and call arguments
//! and the depth of every built tree are bounded by `max_nesting_depth`.
use crate::ast::{BinOp, Expr, ExprId, FilterCall, Part};
use crate::filters;
use crate::lexer::{Tok, Token};
use reporter_ports::ports::RenderError;

/// A cursor over the tokens of one `{{ }}` or of one tag's arguments.
pub struct Cursor<'t> {
    toks: &'t [Token],
    pos: usize,
    line: u32,
}

impl<'t> Cursor<'t> {
    pub fn new(toks: &'t [Token], line: u32) -> Self {
        Self { toks, pos: 0, line }
    }
    pub fn peek(&self) -> Option<&'t Token> {
        self.toks.get(self.pos)
    }
    pub fn next(&mut self) -> Option<&'t Token> {
        let t = self.toks.get(self.pos)?;
        self.pos += 1;
        self.line = t.line;
        Some(t)
    }
    pub fn remaining(&self) -> usize {
        self.toks.len().saturating_sub(self.pos)
    }
    pub fn count(&self) -> usize {
        self.toks.len()
    }
    pub fn all(&self) -> &'t [Token] {
        self.toks
    }
    pub fn match_sym(&mut self, s: &str) -> bool {
        if self.peek().is_some_and(|t| t.is_sym(s)) {
            self.pos += 1;
            return true;
        }
        false
    }
    pub fn match_kw(&mut self, s: &str) -> bool {
        if self.peek().is_some_and(|t| t.is_kw(s)) {
            self.pos += 1;
            return true;
        }
        false
    }
    pub fn match_ident(&mut self, s: &str) -> bool {
        if self.peek().is_some_and(|t| t.is_ident(s)) {
            self.pos += 1;
            return true;
        }
        false
    }
    pub fn take_ident(&mut self) -> Option<&'t str> {
        let t = self.peek()?;
        if t.kind == Tok::Ident {
            self.pos += 1;
            return Some(&t.val);
        }
        None
    }
    pub fn take_kind(&mut self, kind: Tok) -> Option<&'t Token> {
        let t = self.peek()?;
        if t.kind == kind {
            self.pos += 1;
            return Some(t);
        }
        None
    }
    pub fn error(&self, msg: impl std::fmt::Display) -> RenderError {
        let line = self.peek().map_or(self.line, |t| t.line);
        RenderError::Syntax(format!("line {line}: {msg}"))
    }
}

/// Builds expressions into the template's arena, checking depth.
pub struct ExprBuilder<'a> {
    pub exprs: &'a mut Vec<Expr>,
    pub depths: &'a mut Vec<u32>,
    /// The line of each expression, and the line of the expressions built now.
    lines: (&'a mut Vec<u32>, u32),
    pub max_depth: usize,
    recursion: usize,
}

fn bin_op(t: &Token) -> Option<BinOp> {
    match (t.kind, &*t.val) {
        (Tok::Keyword, "and") | (Tok::Symbol, "&&") => Some(BinOp::And),
        (Tok::Keyword, "or") | (Tok::Symbol, "||") => Some(BinOp::Or),
        _ => None,
    }
}

fn rel_op(t: &Token) -> Option<BinOp> {
    if t.kind != Tok::Symbol {
        return None;
    }
    Some(match &*t.val {
        "==" => BinOp::Eq,
        "!=" | "<>" => BinOp::Ne,
        "<" => BinOp::Lt,
        ">" => BinOp::Gt,
        "<=" => BinOp::Le,
        ">=" => BinOp::Ge,
        _ => return None,
    })
}

impl<'a> ExprBuilder<'a> {
    pub fn new(
        exprs: &'a mut Vec<Expr>,
        depths: &'a mut Vec<u32>,
        lines: (&'a mut Vec<u32>, u32),
        max_depth: usize,
    ) -> Self {
        Self {
            exprs,
            depths,
            lines,
            max_depth,
            recursion: 0,
        }
    }

    fn depth_of(&self, id: ExprId) -> u32 {
        self.depths.get(id as usize).copied().unwrap_or(0)
    }

    /// Adds an expression whose children are `children`.
    pub fn push(&mut self, e: Expr, children: &[ExprId]) -> Result<ExprId, RenderError> {
        let depth = 1 + children
            .iter()
            .map(|c| self.depth_of(*c))
            .max()
            .unwrap_or(0);
        if depth as usize > self.max_depth {
            return Err(RenderError::NestingTooDeep(self.max_depth));
        }
        let id = ExprId::try_from(self.exprs.len())
            .map_err(|_| RenderError::Syntax("template too large".into()))?;
        self.exprs.push(e);
        self.depths.push(depth);
        self.lines.0.push(self.lines.1);
        Ok(id)
    }

    fn bin(&mut self, op: BinOp, left: ExprId, right: ExprId) -> Result<ExprId, RenderError> {
        self.push(Expr::Bin { op, left, right }, &[left, right])
    }

    fn fold_right(
        &mut self,
        first: ExprId,
        rest: Vec<(BinOp, ExprId)>,
    ) -> Result<ExprId, RenderError> {
        // a o1 b o2 c  =>  a o1 (b o2 c)
        let mut operands = Vec::with_capacity(rest.len() + 1);
        operands.push(first);
        let mut ops = Vec::with_capacity(rest.len());
        for (op, e) in rest {
            ops.push(op);
            operands.push(e);
        }
        let mut acc = operands.pop().unwrap_or(first);
        while let (Some(op), Some(left)) = (ops.pop(), operands.pop()) {
            acc = self.bin(op, left, acc)?;
        }
        Ok(acc)
    }

    /// `Expression`.
    pub fn expression(&mut self, c: &mut Cursor<'_>) -> Result<ExprId, RenderError> {
        self.recursion += 1;
        if self.recursion > self.max_depth {
            self.recursion -= 1;
            return Err(RenderError::NestingTooDeep(self.max_depth));
        }
        let r = self.expression_inner(c);
        self.recursion -= 1;
        r
    }

    fn expression_inner(&mut self, c: &mut Cursor<'_>) -> Result<ExprId, RenderError> {
        let first = self.relational(c)?;
        let mut rest = Vec::new();
        while let Some(op) = c.peek().and_then(bin_op) {
            c.next();
            rest.push((op, self.relational(c)?));
        }
        self.fold_right(first, rest)
    }

    fn relational(&mut self, c: &mut Cursor<'_>) -> Result<ExprId, RenderError> {
        let first = self.simple(c)?;
        let mut rest = Vec::new();
        loop {
            if let Some(op) = c.peek().and_then(rel_op) {
                c.next();
                rest.push((op, self.simple(c)?));
            } else if c.match_kw("in") {
                rest.push((BinOp::In, self.simple(c)?));
                break;
            } else {
                break;
            }
        }
        self.fold_right(first, rest)
    }

    fn simple(&mut self, c: &mut Cursor<'_>) -> Result<ExprId, RenderError> {
        let mut neg = false;
        if c.match_sym("-") {
            neg = true;
        } else {
            c.match_sym("+");
        }
        let not = c.match_sym("!") || c.match_kw("not");
        let term = self.term(c)?;
        let mut acc = if not || neg {
            self.push(
                Expr::Unary {
                    not,
                    neg,
                    inner: term,
                },
                &[term],
            )?
        } else {
            term
        };
        loop {
            let op = if c.match_sym("+") {
                BinOp::Add
            } else if c.match_sym("-") {
                BinOp::Sub
            } else {
                break;
            };
            let right = self.term(c)?;
            acc = self.bin(op, acc, right)?;
        }
        Ok(acc)
    }

    fn term(&mut self, c: &mut Cursor<'_>) -> Result<ExprId, RenderError> {
        let mut acc = self.power(c)?;
        loop {
            let op = if c.match_sym("*") {
                BinOp::Mul
            } else if c.match_sym("/") {
                BinOp::Div
            } else if c.match_sym("%") {
                BinOp::Mod
            } else {
                break;
            };
            let right = self.power(c)?;
            acc = self.bin(op, acc, right)?;
        }
        Ok(acc)
    }

    fn power(&mut self, c: &mut Cursor<'_>) -> Result<ExprId, RenderError> {
        let first = self.factor(c)?;
        let mut rest = Vec::new();
        while c.match_sym("^") {
            rest.push((BinOp::Pow, self.factor(c)?));
        }
        self.fold_right(first, rest)
    }

    fn factor(&mut self, c: &mut Cursor<'_>) -> Result<ExprId, RenderError> {
        if c.match_sym("(") {
            let e = self.expression(c)?;
            if !c.match_sym(")") {
                return Err(c.error("Closing bracket expected after expression"));
            }
            return Ok(e);
        }
        self.filtered(c)
    }

    /// `VariableOrLiteral ("|" Filter)*`.
    pub fn filtered(&mut self, c: &mut Cursor<'_>) -> Result<ExprId, RenderError> {
        let base = self.variable_or_literal(c)?;
        let mut chain = Vec::new();
        while c.match_sym("|") {
            chain.push(self.filter_call(c)?);
        }
        if chain.is_empty() {
            return Ok(base);
        }
        let mut children = vec![base];
        children.extend(chain.iter().filter_map(|f| f.arg));
        self.push(
            Expr::Filtered {
                base,
                filters: chain,
            },
            &children,
        )
    }

    /// `IDENT (":" VariableOrLiteral)?`.
    pub fn filter_call(&mut self, c: &mut Cursor<'_>) -> Result<FilterCall, RenderError> {
        let Some(name) = c.take_ident() else {
            return Err(c.error("Filter name must be an identifier."));
        };
        let Some(func) = filters::lookup(name) else {
            return Err(c.error(format!("Filter '{name}' does not exist.")));
        };
        let arg = if c.match_sym(":") {
            Some(self.variable_or_literal(c)?)
        } else {
            None
        };
        Ok(FilterCall {
            name: name.into(),
            func,
            arg,
        })
    }

    /// `NUMBER ("." NUMBER)? | STRING | true | false | IDENT ("." (IDENT|NUMBER) | "[" Expression "]" | "(" args ")")*`.
    /// Long by design: the grammar rule above in one function, one arm per token that can
    /// start it.
    pub fn variable_or_literal(&mut self, c: &mut Cursor<'_>) -> Result<ExprId, RenderError> {
        let Some(t) = c.next() else {
            return Err(
                c.error("Unexpected EOF, expected a number, string, keyword or identifier.")
            );
        };
        match t.kind {
            Tok::Number => {
                if c.peek().is_some_and(|n| n.is_sym(".")) {
                    c.next();
                    let Some(frac) = c.take_kind(Tok::Number) else {
                        return Err(c.error("Expected a number after the '.'."));
                    };
                    let f: f64 = format!("{}.{}", t.val, frac.val)
                        .parse()
                        .map_err(|e| c.error(e))?;
                    return self.push(Expr::Float(f), &[]);
                }
                let i: i64 = t.val.parse().map_err(|e| c.error(e))?;
                return self.push(Expr::Int(i), &[]);
            }
            Tok::Str => return self.push(Expr::Str(t.val.clone()), &[]),
            Tok::Keyword => {
                return match &*t.val {
                    "true" => self.push(Expr::Bool(true), &[]),
                    "false" => self.push(Expr::Bool(false), &[]),
                    _ => Err(c.error("This keyword is not allowed here.")),
                };
            }
            Tok::Ident => {}
            _ => return Err(c.error("Expected either a number, string, keyword or identifier.")),
        }
        let mut parts = Vec::new();
        let mut children = Vec::new();
        loop {
            if c.match_sym(".") {
                let Some(p) = c.next() else {
                    return Err(
                        c.error("Unexpected EOF, expected either IDENTIFIER or NUMBER after DOT.")
                    );
                };
                match p.kind {
                    Tok::Ident => parts.push(Part::Attr(p.val.clone())),
                    Tok::Number => {
                        let i: i64 = p.val.parse().map_err(|e| c.error(e))?;
                        parts.push(Part::Index(i));
                    }
                    _ => return Err(c.error("This token is not allowed within a variable name.")),
                }
            } else if c.match_sym("[") {
                if c.remaining() == 0 {
                    return Err(c.error("Unexpected EOF, expected subscript subscript."));
                }
                let e = self.expression(c)?;
                if !c.match_sym("]") {
                    return Err(c.error("Missing closing bracket after subscript argument."));
                }
                children.push(e);
                parts.push(Part::Sub(e));
            } else if c.match_sym("(") {
                let mut args = Vec::new();
                loop {
                    if c.remaining() == 0 {
                        return Err(
                            c.error("Unexpected EOF, expected function call argument list.")
                        );
                    }
                    if c.match_sym(")") {
                        break;
                    }
                    let e = self.expression(c)?;
                    args.push(e);
                    children.push(e);
                    if c.match_sym(")") {
                        break;
                    }
                    if !c.match_sym(",") {
                        return Err(c.error("Missing comma or closing bracket after argument."));
                    }
                }
                parts.push(Part::Call(args));
            } else {
                break;
            }
            if parts.len() > self.max_depth.saturating_mul(64) {
                return Err(RenderError::NestingTooDeep(self.max_depth));
            }
        }
        self.push(
            Expr::Var {
                head: t.val.clone(),
                parts,
            },
            &children,
        )
    }
}
