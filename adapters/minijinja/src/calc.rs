//! `calc("expression")`: exact decimal arithmetic over numbers and context variables.
//!
//! Grammar (usual precedence, `**` binds tightest and is right-associative, unary `-`/`+`
//! bind looser than `**` so `-2 ** 2` is `-4`):
//!
//! ```text
//! expr  := term (('+' | '-') term)*
//! term  := unary (('*' | '/') unary)*
//! unary := ('-' | '+') unary | power
//! power := atom ('**' unary)?
//! atom  := number | path | '(' expr ')'
//! path  := ident ('.' (ident | digits))*
//! ```
//!
//! A path is looked up in the render context (`row.amount`, `bank.accounts.0.balance`); as in
//! the reference, a path that is missing or not numeric counts as `0`.
use crate::decimal::{helper_error, round, to_decimal};
use minijinja::value::{Value, ValueKind};
use minijinja::{Error, State};
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::{Decimal, MathematicalOps};

const NAME: &str = "calc";
/// Deepest parenthesis / unary nesting accepted (keeps the parser's stack bounded).
const MAX_DEPTH: usize = 64;
/// Largest integer exponent computed by repeated multiplication.
const MAX_INT_EXPONENT: i64 = 1_000;

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(Decimal),
    Path(String),
    Plus,
    Minus,
    Star,
    Slash,
    Pow,
    Open,
    Close,
}

fn tokenize(src: &str) -> Result<Vec<Tok>, Error> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            c if c.is_whitespace() => i += 1,
            '+' => {
                out.push(Tok::Plus);
                i += 1;
            }
            '-' => {
                out.push(Tok::Minus);
                i += 1;
            }
            '*' if chars.get(i + 1) == Some(&'*') => {
                out.push(Tok::Pow);
                i += 2;
            }
            '*' => {
                out.push(Tok::Star);
                i += 1;
            }
            '/' => {
                out.push(Tok::Slash);
                i += 1;
            }
            '(' => {
                out.push(Tok::Open);
                i += 1;
            }
            ')' => {
                out.push(Tok::Close);
                i += 1;
            }
            c if c.is_ascii_digit() || c == '.' => {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                    i += 1;
                }
                let text: String = chars[start..i].iter().collect();
                let n = Decimal::from_str_exact(&text)
                    .map_err(|_| helper_error(NAME, format!("bad number {text:?}")))?;
                out.push(Tok::Num(n));
            }
            c if c.is_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len()
                    && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '.')
                {
                    i += 1;
                }
                let text: String = chars[start..i].iter().collect();
                out.push(Tok::Path(text.trim_end_matches('.').to_owned()));
            }
            other => {
                return Err(helper_error(
                    NAME,
                    format!("unexpected character {other:?}"),
                ));
            }
        }
    }
    Ok(out)
}

struct Parser<'a, 'b, 'c> {
    toks: Vec<Tok>,
    pos: usize,
    depth: usize,
    state: &'a State<'b, 'c>,
}

impl Parser<'_, '_, '_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn enter(&mut self) -> Result<(), Error> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(helper_error(NAME, "expression nested too deeply"));
        }
        Ok(())
    }

    fn expr(&mut self) -> Result<Decimal, Error> {
        let mut acc = self.term()?;
        loop {
            match self.peek() {
                Some(Tok::Plus) => {
                    self.pos += 1;
                    let rhs = self.term()?;
                    acc = acc.checked_add(rhs).ok_or_else(overflow)?;
                }
                Some(Tok::Minus) => {
                    self.pos += 1;
                    let rhs = self.term()?;
                    acc = acc.checked_sub(rhs).ok_or_else(overflow)?;
                }
                _ => return Ok(acc),
            }
        }
    }

    fn term(&mut self) -> Result<Decimal, Error> {
        let mut acc = self.unary()?;
        loop {
            match self.peek() {
                Some(Tok::Star) => {
                    self.pos += 1;
                    let rhs = self.unary()?;
                    acc = acc.checked_mul(rhs).ok_or_else(overflow)?;
                }
                Some(Tok::Slash) => {
                    self.pos += 1;
                    let rhs = self.unary()?;
                    if rhs.is_zero() {
                        return Err(helper_error(NAME, "division by zero"));
                    }
                    acc = acc.checked_div(rhs).ok_or_else(overflow)?;
                }
                _ => return Ok(acc),
            }
        }
    }

    fn unary(&mut self) -> Result<Decimal, Error> {
        self.enter()?;
        let v = match self.peek() {
            Some(Tok::Minus) => {
                self.pos += 1;
                -self.unary()?
            }
            Some(Tok::Plus) => {
                self.pos += 1;
                self.unary()?
            }
            _ => self.power()?,
        };
        self.depth -= 1;
        Ok(v)
    }

    fn power(&mut self) -> Result<Decimal, Error> {
        let base = self.atom()?;
        if self.peek() == Some(&Tok::Pow) {
            self.pos += 1;
            let exp = self.unary()?;
            return pow(base, exp);
        }
        Ok(base)
    }

    fn atom(&mut self) -> Result<Decimal, Error> {
        match self.next() {
            Some(Tok::Num(n)) => Ok(n),
            Some(Tok::Path(p)) => Ok(self.lookup(&p)),
            Some(Tok::Open) => {
                self.enter()?;
                let v = self.expr()?;
                if self.next() != Some(Tok::Close) {
                    return Err(helper_error(NAME, "missing ')'"));
                }
                self.depth -= 1;
                Ok(v)
            }
            Some(other) => Err(helper_error(NAME, format!("unexpected {other:?}"))),
            None => Err(helper_error(NAME, "unexpected end of expression")),
        }
    }

    /// A context path's numeric value; missing or non-numeric is 0 (reference behaviour).
    fn lookup(&self, path: &str) -> Decimal {
        let mut segs = path.split('.');
        let Some(mut cur) = segs.next().and_then(|head| self.state.lookup(head)) else {
            return Decimal::ZERO;
        };
        for seg in segs {
            let next = match seg.parse::<i64>() {
                Ok(i) if cur.kind() == ValueKind::Seq => cur.get_item(&Value::from(i)),
                _ => cur.get_attr(seg),
            };
            match next {
                Ok(v) if !v.is_undefined() => cur = v,
                _ => return Decimal::ZERO,
            }
        }
        to_decimal(&cur).unwrap_or(Decimal::ZERO)
    }
}

fn overflow() -> Error {
    helper_error(NAME, "decimal overflow")
}

fn pow(base: Decimal, exp: Decimal) -> Result<Decimal, Error> {
    if exp.fract().is_zero()
        && let Some(e) = exp.to_i64()
        && e.abs() <= MAX_INT_EXPONENT
    {
        if e < 0 && base.is_zero() {
            return Err(helper_error(NAME, "division by zero"));
        }
        return base.checked_powi(e).ok_or_else(overflow);
    }
    if base.is_sign_negative() {
        return Err(helper_error(NAME, "fractional power of a negative number"));
    }
    base.checked_powd(exp).ok_or_else(overflow)
}

/// Evaluates `expression` against `state`'s variables; rounded half away from zero to 10
/// decimals, trailing zeros removed.
pub(crate) fn calc(state: &State, expression: &str) -> Result<Value, Error> {
    let toks = tokenize(expression)?;
    if toks.is_empty() {
        return Err(helper_error(NAME, "empty expression"));
    }
    let mut parser = Parser {
        toks,
        pos: 0,
        depth: 0,
        state,
    };
    let v = parser.expr()?;
    if parser.pos != parser.toks.len() {
        return Err(helper_error(NAME, "unexpected trailing input"));
    }
    Ok(crate::decimal::decimal_value(
        round(v, crate::decimal::ROUND_DP).normalize(),
    ))
}
