//! `{% calc %}`, as the original evaluates it: variables in the tag's text are replaced by
//! their printed values (`0` when unresolved or not a number), then the arithmetic text is
//! evaluated in float64 — parentheses innermost first (each group's result rounded to 10
//! places, as the original re-inserts it as text), `**` right-associative, then `* /`, then
//! `+ -`; a `-` at the start or after an operator is part of the number that follows (so
//! `-2 ** 2` is 4) and `**` is Go's `math.Pow` ([`crate::gomath::pow`], not the C library's:
//! `10 ** 23` is `99999999999999991611392`); division by zero is an error; the result is
//! rounded to 10 places and printed in full (Go's `%.10f`: every digit, no exponent) without
//! trailing zeros (`NaN`, `+Inf`, `-Inf` as Go prints them).
use super::{R, Renderer, eval_fault};
use reporter_ports::ports::EvaluationCause;

/// The error text of a division by zero (the original's words).
const DIVISION_BY_ZERO: &str = "division by zero";
use crate::ast::Part;
use crate::gofmt;
use crate::gomath;
use crate::value::Value;

/// Variables: `\b[a-zA-Z_][a-zA-Z0-9_]*(\.[a-zA-Z0-9_]+)*\b` (ASCII word boundaries).
pub(crate) fn variables(expr: &str) -> Vec<(usize, usize)> {
    use std::sync::OnceLock;
    static RE: OnceLock<Option<regex::Regex>> = OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(r"(?-u:\b)[a-zA-Z_][a-zA-Z0-9_]*(?:\.[a-zA-Z0-9_]+)*(?-u:\b)").ok()
    });
    match re {
        Some(re) => re.find_iter(expr).map(|m| (m.start(), m.end())).collect(),
        None => Vec::new(),
    }
}

/// A variable path of calc text: `a.b.0.c`.
pub(crate) fn path_parts(path: &str) -> (&str, Vec<Part>) {
    let mut it = path.split('.');
    let head = it.next().unwrap_or_default();
    let parts = it
        .map(|p| {
            if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) {
                p.parse::<i64>()
                    .map_or_else(|_| Part::Attr(p.into()), Part::Index)
            } else {
                Part::Attr(p.into())
            }
        })
        .collect();
    (head, parts)
}

impl<'a> Renderer<'a> {
    /// The printed value of a calc variable, or `0`.
    fn calc_value(&mut self, path: &str) -> R<String> {
        let (head, parts) = path_parts(path);
        let mut cur = self.lookup(head).unwrap_or(Value::Nil);
        for p in &parts {
            if cur.is_nil() {
                break;
            }
            cur = match p {
                Part::Attr(n) => match &cur {
                    Value::Map(m) => {
                        let m = m.clone();
                        self.field(&m, n).unwrap_or(Value::Nil)
                    }
                    Value::Loop(_) | Value::Time(_) | Value::Nil => Value::Nil,
                    // The original's sub-template fails here: unresolved.
                    _ => return Ok("0".to_owned()),
                },
                Part::Index(i) => match &cur {
                    Value::List(l) => usize::try_from(*i)
                        .ok()
                        .and_then(|i| l.get(i))
                        .unwrap_or(Value::Nil),
                    Value::Str(t, _) => usize::try_from(*i)
                        .ok()
                        .and_then(|i| t.as_str().as_bytes().get(i))
                        .map_or(Value::Nil, |b| Value::Int(i64::from(*b))),
                    _ => return Ok("0".to_owned()),
                },
                _ => Value::Nil,
            };
        }
        if matches!(cur, Value::Func(_)) {
            return Ok("0".to_owned());
        }
        let printed = cur.to_go_string();
        let t = printed.trim();
        Ok(if !t.is_empty() && gofmt::parse_float(t).is_some() {
            t.to_owned()
        } else {
            "0".to_owned()
        })
    }

    pub(super) fn exec_calc(&mut self, expr: &str) -> R<String> {
        let mut text = String::with_capacity(expr.len());
        let mut last = 0;
        for (s, e) in variables(expr) {
            text.push_str(expr.get(last..s).unwrap_or_default());
            let v = self.calc_value(expr.get(s..e).unwrap_or_default())?;
            self.budget.check_transient(text.len() + v.len())?;
            text.push_str(&v);
            last = e;
        }
        text.push_str(expr.get(last..).unwrap_or_default());
        self.budget.fuel_bytes(text.len())?;
        let result = evaluate(&text).map_err(|e| {
            let cause = if e == DIVISION_BY_ZERO {
                EvaluationCause::DivisionByZero
            } else {
                EvaluationCause::CalcFailed
            };
            eval_fault(cause, format!("calc: {e}"))
        })?;
        let rounded = (result * 1e10).round() / 1e10;
        let s = gofmt::fixed(rounded, 10);
        let s = s.trim_end_matches('0');
        let s = s.trim_end_matches('.');
        Ok(s.to_owned())
    }
}

#[derive(Debug, Clone, Copy)]
enum Tok {
    Num(f64),
    Op(Op),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
}

/// Evaluates the arithmetic text (spaces removed), with parentheses resolved innermost
/// first through text, exactly as the original does it.
pub(crate) fn evaluate(text: &str) -> Result<f64, String> {
    let text: String = text.chars().filter(|c| *c != ' ').collect();
    if text.is_empty() {
        return Err("empty expression".into());
    }
    // Each open parenthesis starts a buffer; its closing one evaluates the buffer and
    // appends the result, formatted with 10 decimals, to the enclosing buffer.
    let mut bufs: Vec<String> = vec![String::new()];
    for c in text.chars() {
        match c {
            '(' => bufs.push(String::new()),
            ')' => {
                if bufs.len() < 2 {
                    return Err("unexpected character ')'".into());
                }
                let inner = bufs.pop().unwrap_or_default();
                let v = eval_flat(&inner)?;
                let formatted = gofmt::fixed(v, 10);
                if let Some(top) = bufs.last_mut() {
                    top.push_str(&formatted);
                }
            }
            c => {
                if let Some(top) = bufs.last_mut() {
                    top.push(c);
                }
            }
        }
    }
    if bufs.len() != 1 {
        return Err("unmatched parentheses in expression".into());
    }
    eval_flat(bufs.first().map(String::as_str).unwrap_or_default())
}

fn parse_number(b: &[u8], mut i: usize) -> Option<usize> {
    let start = i;
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    let mut digit = false;
    let mut dot = false;
    while let Some(&c) = b.get(i) {
        if c.is_ascii_digit() {
            digit = true;
        } else if c == b'.' && !dot {
            dot = true;
        } else {
            break;
        }
        i += 1;
    }
    digit.then_some(i - start)
}

fn tokenize(s: &str) -> Result<Vec<Tok>, String> {
    let b = s.as_bytes();
    let mut toks: Vec<Tok> = Vec::new();
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        let after_op = toks.last().is_none_or(|t| matches!(t, Tok::Op(_)));
        match c {
            b'*' if b.get(i + 1) == Some(&b'*') => {
                toks.push(Tok::Op(Op::Pow));
                i += 2;
            }
            b'+' | b'*' | b'/' => {
                toks.push(Tok::Op(match c {
                    b'+' => Op::Add,
                    b'*' => Op::Mul,
                    _ => Op::Div,
                }));
                i += 1;
            }
            b'-' if !after_op => {
                toks.push(Tok::Op(Op::Sub));
                i += 1;
            }
            b'-' | b'0'..=b'9' | b'.' => {
                let Some(n) = parse_number(b, i) else {
                    return Err(format!("invalid number at position {i}"));
                };
                let text = s.get(i..i + n).unwrap_or_default();
                let v = gofmt::parse_float(text).ok_or_else(|| format!("invalid number {text}"))?;
                toks.push(Tok::Num(v));
                i += n;
            }
            _ => {
                let ch = s.get(i..).and_then(|r| r.chars().next()).unwrap_or('?');
                return Err(format!("unexpected character '{ch}' at position {i}"));
            }
        }
    }
    Ok(toks)
}

/// Evaluates a parenthesis-free token list: `**` (right to left), then `* /`, then `+ -`.
fn eval_flat(s: &str) -> Result<f64, String> {
    if s.is_empty() {
        return Err("empty expression".into());
    }
    let toks = tokenize(s)?;
    // Must alternate number, operator, number, …
    let mut nums = Vec::new();
    let mut ops = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        match (i % 2, t) {
            (0, Tok::Num(n)) => nums.push(*n),
            (1, Tok::Op(o)) => ops.push(*o),
            _ => return Err("missing operand or operator".into()),
        }
    }
    if nums.len() != ops.len() + 1 {
        return Err("missing operand after operator".into());
    }
    // Powers, right to left.
    let mut n2 = Vec::with_capacity(nums.len());
    let mut o2 = Vec::with_capacity(ops.len());
    let mut i = nums.len();
    let mut acc: Option<f64> = None;
    while i > 0 {
        i -= 1;
        let v = nums.get(i).copied().unwrap_or(0.0);
        let cur = match acc.take() {
            Some(r) => gomath::pow(v, r),
            None => v,
        };
        if i > 0 && ops.get(i - 1) == Some(&Op::Pow) {
            acc = Some(cur);
        } else {
            n2.push(cur);
            if i > 0 {
                o2.push(ops.get(i - 1).copied().unwrap_or(Op::Add));
            }
        }
    }
    n2.reverse();
    o2.reverse();
    // Multiplication and division, left to right.
    let mut n3 = Vec::with_capacity(n2.len());
    let mut o3 = Vec::with_capacity(o2.len());
    let mut cur = n2.first().copied().unwrap_or(0.0);
    for (op, v) in o2.iter().zip(n2.iter().skip(1)) {
        match op {
            Op::Mul => cur *= v,
            Op::Div => {
                if *v == 0.0 {
                    return Err(DIVISION_BY_ZERO.into());
                }
                cur /= v;
            }
            other => {
                n3.push(cur);
                o3.push(*other);
                cur = *v;
            }
        }
    }
    n3.push(cur);
    // Addition and subtraction, left to right.
    let mut result = n3.first().copied().unwrap_or(0.0);
    for (op, v) in o3.iter().zip(n3.iter().skip(1)) {
        if *op == Op::Sub {
            result -= v;
        } else {
            result += v;
        }
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn original_semantics() {
        assert_eq!(evaluate("(100+200)*1.2").unwrap(), 360.0);
        assert_eq!(evaluate("-2**2").unwrap(), 4.0);
        assert_eq!(evaluate("2**3**2").unwrap(), 512.0);
        assert_eq!(evaluate("10-2-3").unwrap(), 5.0);
        assert_eq!(evaluate("8/2/2").unwrap(), 2.0);
        assert_eq!(evaluate("2+3*4").unwrap(), 14.0);
        assert_eq!(evaluate("5*(-3)").unwrap(), -15.0);
        assert_eq!(evaluate("3--5").unwrap(), 8.0);
        assert!(evaluate("1/0").is_err());
        assert!(evaluate("1/(2-2)").is_err());
        assert!(evaluate("--2").is_err());
        assert!(evaluate("(1").is_err());
        assert!(evaluate("1)").is_err());
        assert!(evaluate("2*").is_err());
        assert!(evaluate("").is_err());
        assert!(evaluate("a+1").is_err());
        // Parenthesised results are rounded to 10 places, as the original re-inserts text.
        assert_eq!(evaluate("(1/3)*3").unwrap(), 0.9999999999);
        assert_eq!(evaluate("1/3*3").unwrap(), 1.0);
        assert!(evaluate(&"(".repeat(10_000)).is_err());
    }

    #[test]
    fn variables_found() {
        let e = "(ds.t.0.amount + x) * 1.5 - row.fee";
        let v: Vec<&str> = variables(e).into_iter().map(|(s, t)| &e[s..t]).collect();
        assert_eq!(v, vec!["ds.t.0.amount", "x", "row.fee"]);
    }
}
