//! Expression evaluation with Pongo2's value semantics.
use super::{R, Renderer, eval_err, eval_fault};
use crate::ast::{BinOp, Expr, ExprId, Part};
use crate::value::{Func, ListKind, Value};
use reporter_ports::ports::{EvaluationCause, RenderError};
use std::cmp::Ordering;

impl<'a> Renderer<'a> {
    fn expr(&self, id: ExprId) -> R<&'a Expr> {
        let tpl: &'a crate::ast::Template = self.tpl;
        tpl.expr(id)
            .ok_or_else(|| eval_err("invalid expression reference"))
    }

    /// Whether the `safe` filter applies to `id` (Pongo2's `FilterApplied("safe")`: a filter
    /// chain containing `safe`, or both sides of an operator).
    pub(crate) fn safe_applied(&self, id: ExprId) -> bool {
        // Most printed expressions are a variable or one filter chain: no stack for those.
        match self.tpl.expr(id) {
            Some(Expr::Filtered { filters, .. }) => {
                return filters.iter().any(|f| &*f.name == "safe");
            }
            Some(Expr::Bin { .. } | Expr::Unary { .. }) => {}
            _ => return false,
        }
        let mut stack = vec![id];
        let mut steps = 0usize;
        while let Some(id) = stack.pop() {
            steps += 1;
            if steps > 1 << 16 {
                return false;
            }
            match self.tpl.expr(id) {
                Some(Expr::Filtered { filters, .. }) => {
                    if !filters.iter().any(|f| &*f.name == "safe") {
                        return false;
                    }
                }
                Some(Expr::Bin { left, right, .. }) => {
                    stack.push(*left);
                    stack.push(*right);
                }
                Some(Expr::Unary { inner, .. }) => stack.push(*inner),
                _ => return false,
            }
        }
        true
    }

    /// Evaluates an expression.
    pub(crate) fn eval(&mut self, id: ExprId) -> R<Value<'a>> {
        self.budget.enter()?;
        let r = self.budget.fuel(1).and_then(|()| self.eval_inner(id));
        self.budget.leave();
        r.map_err(|e| super::place(e, self.tpl.expr_line(id)))
    }

    fn eval_inner(&mut self, id: ExprId) -> R<Value<'a>> {
        match self.expr(id)? {
            Expr::Int(i) => Ok(Value::Int(*i)),
            Expr::Float(f) => Ok(Value::Float(*f)),
            Expr::Str(s) => Ok(Value::str(s)),
            Expr::Bool(b) => Ok(Value::Bool(*b)),
            Expr::Var { head, parts } => self.resolve(head, parts),
            Expr::Filtered { base, filters } => {
                let mut v = self.eval(*base)?;
                for f in filters {
                    self.budget.fuel(1)?;
                    let arg = match f.arg {
                        Some(a) => self.eval(a)?,
                        None => Value::Nil,
                    };
                    v = crate::filters::apply(self, f.func, v, arg)?;
                }
                Ok(v)
            }
            Expr::Unary { not, neg, inner } => {
                let mut v = self.eval(*inner)?;
                if *not {
                    v = v.negate();
                }
                if *neg {
                    v = match v {
                        Value::Int(i) => Value::Int(i.wrapping_neg()),
                        Value::Float(f) => Value::Float(-f),
                        _ => return Err(eval_err("Negative sign on a non-number expression")),
                    };
                }
                Ok(v)
            }
            Expr::Bin { op, left, right } => self.binary(*op, *left, *right),
        }
    }

    /// Long by design: one arm per operator, each with Pongo2's coercions.
    fn binary(&mut self, op: BinOp, left: ExprId, right: ExprId) -> R<Value<'a>> {
        let l = self.eval(left)?;
        match op {
            BinOp::And => {
                if !l.is_true() {
                    return Ok(Value::Bool(false));
                }
                return Ok(Value::Bool(self.eval(right)?.is_true()));
            }
            BinOp::Or => {
                if l.is_true() {
                    return Ok(Value::Bool(true));
                }
                return Ok(Value::Bool(self.eval(right)?.is_true()));
            }
            _ => {}
        }
        let r = self.eval(right)?;
        Ok(match op {
            BinOp::Eq => Value::Bool(l.equals(&r)),
            BinOp::Ne => Value::Bool(!l.equals(&r)),
            BinOp::Lt => Value::Bool(compare(&l, &r) == Some(Ordering::Less)),
            BinOp::Gt => Value::Bool(compare(&l, &r) == Some(Ordering::Greater)),
            BinOp::Le => Value::Bool(matches!(
                compare(&l, &r),
                Some(Ordering::Less | Ordering::Equal)
            )),
            BinOp::Ge => Value::Bool(matches!(
                compare(&l, &r),
                Some(Ordering::Greater | Ordering::Equal)
            )),
            BinOp::In => Value::Bool(self.contains(&r, &l)),
            BinOp::Add => {
                if l.is_string() || r.is_string() {
                    let a = l.to_go_string();
                    let b = r.to_go_string();
                    self.reserve_str(a.len().saturating_add(b.len()))?;
                    let mut s = String::with_capacity(a.len() + b.len());
                    s.push_str(&a);
                    s.push_str(&b);
                    return self.new_str(s, false);
                }
                if l.is_float() || r.is_float() {
                    Value::Float(l.float() + r.float())
                } else {
                    Value::Int(l.integer().wrapping_add(r.integer()))
                }
            }
            BinOp::Sub => {
                if l.is_float() || r.is_float() {
                    Value::Float(l.float() - r.float())
                } else {
                    Value::Int(l.integer().wrapping_sub(r.integer()))
                }
            }
            BinOp::Mul => {
                if l.is_float() || r.is_float() {
                    Value::Float(l.float() * r.float())
                } else {
                    Value::Int(l.integer().wrapping_mul(r.integer()))
                }
            }
            BinOp::Div => {
                if l.is_float() || r.is_float() {
                    Value::Float(l.float() / r.float())
                } else {
                    let d = r.integer();
                    if d == 0 {
                        return Err(eval_fault(
                            EvaluationCause::DivisionByZero,
                            "integer divide by zero",
                        ));
                    }
                    Value::Int(l.integer().wrapping_div(d))
                }
            }
            BinOp::Mod => {
                let d = r.integer();
                if d == 0 {
                    return Err(eval_fault(
                        EvaluationCause::DivisionByZero,
                        "integer divide by zero",
                    ));
                }
                Value::Int(l.integer().wrapping_rem(d))
            }
            BinOp::Pow => Value::Float(crate::gomath::pow(l.float(), r.float())),
            BinOp::And | BinOp::Or => Value::Nil,
        })
    }

    /// Pongo2's `Value.Contains` (`needle in hay`).
    pub(crate) fn contains(&mut self, hay: &Value<'a>, needle: &Value<'a>) -> bool {
        match hay {
            Value::Map(m) => match needle {
                Value::Str(t, _) => {
                    let key = t.as_str().to_owned();
                    self.field(m, &key).is_some()
                }
                _ => false,
            },
            Value::Str(t, _) => t.as_str().contains(needle.to_go_string().as_ref()),
            Value::List(l) => l.iter().any(|item| needle.equals(&item)),
            Value::Loop(_) => matches!(
                needle.to_go_string().as_ref(),
                "Counter"
                    | "Counter0"
                    | "Revcounter"
                    | "Revcounter0"
                    | "First"
                    | "Last"
                    | "Parentloop"
            ),
            _ => false,
        }
    }

    /// Resolves `head.part.part…` as Pongo2's variable resolver does.
    fn resolve(&mut self, head: &'a str, parts: &'a [Part]) -> R<Value<'a>> {
        let mut cur = self.lookup(head).unwrap_or(Value::Nil);
        let mut i = 0;
        // A function value is called right away: with the arguments of a following call,
        // or with none.
        if matches!(cur, Value::Func(_)) {
            cur = self.maybe_call(cur, parts, &mut i, head)?;
        }
        while let Some(part) = parts.get(i) {
            if cur.is_nil() {
                return Ok(Value::Nil);
            }
            i += 1;
            cur = match part {
                Part::Attr(name) => self.attr(&cur, name, head)?,
                Part::Index(n) => self.index_part(&cur, *n, head)?,
                Part::Sub(e) => {
                    let key = self.eval(*e)?;
                    self.subscript(&cur, &key, head)?
                }
                Part::Call(args) => {
                    let args = self.eval_args(args)?;
                    self.call(&cur, args, head)?
                }
            };
            if matches!(cur, Value::Func(_)) {
                cur = self.maybe_call(cur, parts, &mut i, head)?;
            }
        }
        Ok(cur)
    }

    fn maybe_call(
        &mut self,
        cur: Value<'a>,
        parts: &'a [Part],
        i: &mut usize,
        head: &str,
    ) -> R<Value<'a>> {
        if !matches!(cur, Value::Func(_)) {
            return Ok(cur);
        }
        if let Some(Part::Call(args)) = parts.get(*i) {
            *i += 1;
            let args = self.eval_args(args)?;
            return self.call(&cur, args, head);
        }
        self.call(&cur, Vec::new(), head)
    }

    fn eval_args(&mut self, args: &'a [ExprId]) -> R<Vec<Value<'a>>> {
        let mut out = Vec::with_capacity(args.len());
        for a in args {
            out.push(self.eval(*a)?);
        }
        Ok(out)
    }

    fn attr(&mut self, cur: &Value<'a>, name: &str, head: &str) -> R<Value<'a>> {
        Ok(match cur {
            Value::Map(m) => self.field(m, name).unwrap_or(Value::Nil),
            Value::Loop(info) => match name {
                "Counter" => Value::Int(info.index.get().wrapping_add(1)),
                "Counter0" => Value::Int(info.index.get()),
                "Revcounter" => Value::Int(info.count.wrapping_sub(info.index.get())),
                "Revcounter0" => {
                    Value::Int(info.count.wrapping_sub(info.index.get()).wrapping_sub(1))
                }
                "First" => Value::Bool(info.index.get() == 0),
                "Last" => Value::Bool(info.index.get().wrapping_add(1) == info.count),
                "Parentloop" => info.parent.clone().unwrap_or(Value::Nil),
                _ => Value::Nil,
            },
            Value::Time(t) => match name {
                "Year" => Value::Int(i64::from(chrono::Datelike::year(&t.dt))),
                "Day" => Value::Int(i64::from(chrono::Datelike::day(&t.dt))),
                "YearDay" => Value::Int(i64::from(chrono::Datelike::ordinal(&t.dt))),
                "Hour" => Value::Int(i64::from(chrono::Timelike::hour(&t.dt))),
                "Minute" => Value::Int(i64::from(chrono::Timelike::minute(&t.dt))),
                "Second" => Value::Int(i64::from(chrono::Timelike::second(&t.dt))),
                "Nanosecond" => Value::Int(i64::from(
                    chrono::Timelike::nanosecond(&t.dt) % 1_000_000_000,
                )),
                "Unix" => Value::Int(t.unix()),
                _ => Value::Nil,
            },
            Value::Nil => Value::Nil,
            other => {
                return Err(invalid_access(format!(
                    "can't access a field by name on type {} (variable {head})",
                    go_kind(other)
                )));
            }
        })
    }

    fn index_part(&mut self, cur: &Value<'a>, n: i64, head: &str) -> R<Value<'a>> {
        Ok(match cur {
            Value::List(l) => usize::try_from(n)
                .ok()
                .and_then(|i| l.get(i))
                .unwrap_or(Value::Nil),
            // Go's reflect indexes a string by byte.
            Value::Str(t, _) => usize::try_from(n)
                .ok()
                .and_then(|i| t.as_str().as_bytes().get(i))
                .map_or(Value::Nil, |b| Value::Int(i64::from(*b))),
            other => {
                return Err(invalid_access(format!(
                    "can't access an index on type {} (variable {head})",
                    go_kind(other)
                )));
            }
        })
    }

    fn subscript(&mut self, cur: &Value<'a>, key: &Value<'a>, head: &str) -> R<Value<'a>> {
        match cur {
            Value::List(_) | Value::Str(..) => self.index_part(cur, key.integer(), head),
            Value::Map(m) => match key {
                Value::Str(t, _) => {
                    let k = t.as_str().to_owned();
                    Ok(self.field(m, &k).unwrap_or(Value::Nil))
                }
                _ => Ok(Value::Nil),
            },
            Value::Loop(_) | Value::Time(_) => {
                let name = key.to_go_string().into_owned();
                self.attr(cur, &name, head)
            }
            other => Err(invalid_access(format!(
                "can't access an index on type {} (variable {head})",
                go_kind(other)
            ))),
        }
    }

    fn call(&mut self, f: &Value<'a>, args: Vec<Value<'a>>, head: &str) -> R<Value<'a>> {
        let Value::Func(func) = f else {
            return Err(invalid_call(format!("'{head}' is not a function")));
        };
        match *func {
            Func::Filter => {
                let [coll, field, value] = <[Value<'a>; 3]>::try_from(args).map_err(|a| {
                    invalid_call(format!(
                        "function input argument count (3) of '{head}' must be equal to the calling argument count ({})",
                        a.len()
                    ))
                })?;
                let Value::Str(field, _) = field else {
                    return Err(invalid_call(format!(
                        "function input argument 1 of '{head}' must be of type string"
                    )));
                };
                self.filter_helper(&coll, field.as_str(), &value)
            }
            Func::Contains => {
                let [a, b] = <[Value<'a>; 2]>::try_from(args).map_err(|a| {
                    invalid_call(format!(
                        "function input argument count (2) of '{head}' must be equal to the calling argument count ({})",
                        a.len()
                    ))
                })?;
                let x = a.to_go_v().to_uppercase();
                let y = b.to_go_v().to_uppercase();
                self.budget.fuel_bytes(x.len() + y.len())?;
                Ok(Value::Bool(x.contains(&y)))
            }
            Func::Macro {
                id,
                frame,
                generation,
            } => self.call_macro(id, frame, generation, args),
        }
    }

    /// The original's `filter(collection, field, value)` helper: the rows of a
    /// `[]map[string]any` whose top-level `field` prints (`%v`) like `value`.
    fn filter_helper(&mut self, coll: &Value<'a>, field: &str, value: &Value<'a>) -> R<Value<'a>> {
        let want = value.to_go_v();
        let mut out = Vec::new();
        if let Value::List(l) = coll
            && l.kind() == ListKind::Rows
        {
            self.reserve_list(l.len())?;
            for item in l.iter() {
                self.budget.fuel(1)?;
                if let Value::Map(m) = &item
                    && let Some(v) = self.field(m, field)
                    && v.to_go_v() == want
                {
                    out.push(item.clone());
                }
            }
        }
        self.new_list(out, ListKind::Rows)
    }
}

/// Go's reflect kind name of a value (for error texts).
pub(crate) fn go_kind(v: &Value<'_>) -> &'static str {
    match v {
        Value::Nil => "invalid",
        Value::Bool(_) => "bool",
        Value::Int(_) => "int",
        Value::Float(_) => "float64",
        Value::Str(..) => "string",
        Value::Time(_) | Value::Loop(_) => "struct",
        Value::List(_) => "slice",
        Value::Map(_) => "map",
        Value::Func(_) => "func",
    }
}

/// Pongo2's ordering comparisons: floats if either side is a float, times if both are
/// times, otherwise integers (strings are converted with `Integer()`).
fn compare(l: &Value<'_>, r: &Value<'_>) -> Option<Ordering> {
    if l.is_float() || r.is_float() {
        return l.float().partial_cmp(&r.float());
    }
    if let (Value::Time(a), Value::Time(b)) = (l, r) {
        return Some(a.sort_key().cmp(&b.sort_key()));
    }
    Some(l.integer().cmp(&r.integer()))
}

/// A field or an index read from a value that has none.
fn invalid_access(msg: String) -> RenderError {
    eval_fault(EvaluationCause::InvalidAccess, msg)
}

/// A call of something that is not a function, or with the wrong arguments.
fn invalid_call(msg: String) -> RenderError {
    eval_fault(EvaluationCause::InvalidCall, msg)
}
