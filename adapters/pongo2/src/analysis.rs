//! Mapped-field extraction from the parsed template: every `datasource.table.field` the
//! template can read when rendered.
//!
//! Each expression is given an abstract *reference*: a data source, a table (a list of its
//! rows), a row, or a value. Paths through references record fields; `for`, `with`, `set`,
//! `last_item_by_group … as` and macro parameters bind names to references. Inside the `if`
//! of an aggregation tag, a bare name is a field of the collection's rows unless the
//! template uses it as a data source elsewhere (decided in a second pass). Field arguments
//! of `where`, `sum`, `count`, `add_day`, `add_signed`, `filter()`, and the `by`, `group_by`
//! and `order_by` of tags are recorded by their first path segment (the column). Loop
//! variables, locals and `forloop` are never data.
//!
//! A name referenced where nothing binds it is a data source, except a template local used
//! outside the scope that binds it (bound earlier in the text by `with`, `set`, `for`, an
//! `as` or a macro, and not read as a data source before): it renders as nil and reads
//! nothing, so it maps nothing (no phantom data source that an upload would refuse).
use crate::ast::{Block, Expr, ExprId, Node, Part, Template};
use crate::render::calc_paths;
use reporter_ports::template::MappedFields;
use std::collections::BTreeSet;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Ref {
    None,
    Ds(String),
    Table {
        ds: String,
        table: String,
        synthetic: Vec<&'static str>,
    },
    Row {
        ds: String,
        table: String,
        synthetic: Vec<&'static str>,
    },
    Field,
    Macro(usize),
    /// A row scope marker (never a value).
    RowScope(Box<Ref>),
}

/// Every field `tpl` can read.
pub(crate) fn mapped_fields(tpl: &Template) -> MappedFields {
    let mut first = Analyzer::new(tpl, BTreeSet::new());
    first.block(&tpl.body);
    if !first.saw_conditions {
        // No aggregation condition: nothing to decide with the data-source names.
        return first.out;
    }
    let heads = first.ds_heads;
    let mut second = Analyzer::new(tpl, heads);
    second.block(&tpl.body);
    second.out
}

struct Analyzer<'t> {
    tpl: &'t Template,
    out: MappedFields,
    scopes: Vec<Vec<(&'t str, Ref)>>,
    /// Names used as data sources outside aggregation conditions.
    ds_heads: BTreeSet<String>,
    known_heads: BTreeSet<String>,
    row_depth: usize,
    macro_calls: BTreeSet<(usize, Vec<Ref>)>,
    macro_stack: Vec<usize>,
    budget: usize,
    saw_conditions: bool,
    /// Names bound so far (in text order) by `with`, `set`, `for`, `as`, macros.
    seen_bound: BTreeSet<&'t str>,
    /// Names read as data sources so far (unbound at the point of use).
    ds_used: BTreeSet<String>,
}

fn root(field: &str) -> &str {
    field.split('.').next().unwrap_or(field).trim()
}

impl<'t> Analyzer<'t> {
    fn new(tpl: &'t Template, known_heads: BTreeSet<String>) -> Self {
        Self {
            tpl,
            out: MappedFields::new(),
            scopes: vec![Vec::new()],
            ds_heads: BTreeSet::new(),
            known_heads,
            row_depth: 0,
            macro_calls: BTreeSet::new(),
            macro_stack: Vec::new(),
            budget: 1_000_000,
            saw_conditions: false,
            seen_bound: BTreeSet::new(),
            ds_used: BTreeSet::new(),
        }
    }

    fn table(&mut self, ds: &str, table: &str) {
        if self.out.get(ds).is_some_and(|t| t.contains_key(table)) {
            return;
        }
        self.out
            .entry(ds.to_owned())
            .or_default()
            .entry(table.to_owned())
            .or_default();
    }

    fn field(&mut self, ds: &str, table: &str, synthetic: &[&'static str], field: &str) {
        let f = root(field);
        if f.is_empty() || synthetic.contains(&f) {
            return;
        }
        if self
            .out
            .get(ds)
            .and_then(|t| t.get(table))
            .is_some_and(|fs| fs.contains(f))
        {
            return;
        }
        self.out
            .entry(ds.to_owned())
            .or_default()
            .entry(table.to_owned())
            .or_default()
            .insert(f.to_owned());
    }

    /// Records `field` of the rows of `r` (a table or a row).
    fn row_field(&mut self, r: &Ref, field: &str) {
        if let Ref::Table {
            ds,
            table,
            synthetic,
        }
        | Ref::Row {
            ds,
            table,
            synthetic,
        } = r
        {
            let (ds, table, synthetic) = (ds.clone(), table.clone(), synthetic.clone());
            self.field(&ds, &table, &synthetic, field);
        }
    }

    fn bind(&mut self, name: &'t str, r: Ref) {
        if !name.is_empty() && name != "forloop" {
            self.seen_bound.insert(name);
        }
        if let Some(top) = self.scopes.last_mut() {
            top.push((name, r));
        }
    }

    fn scoped(&mut self, f: impl FnOnce(&mut Self)) {
        self.scopes.push(Vec::new());
        f(self);
        self.scopes.pop();
    }

    /// The reference a name resolves to, walking scopes outward. `Err(collection)` when it
    /// reaches a row scope first (a bare name inside an aggregation condition).
    fn lookup(&self, name: &str) -> Result<Option<Ref>, Ref> {
        for scope in self.scopes.iter().rev() {
            for (n, r) in scope.iter().rev() {
                if let Ref::RowScope(coll) = r {
                    // Outer bindings still win over row fields in the analysis: rows only
                    // carry mapped fields, so a local the row does not carry stays visible.
                    if self.bound_below(name) || self.known_heads.contains(name) {
                        continue;
                    }
                    return Err((**coll).clone());
                }
                if *n == name {
                    return Ok(Some(r.clone()));
                }
            }
        }
        Ok(None)
    }

    /// What an unbound name is: a template local referenced outside the scope that binds it
    /// (bound earlier in the text and never read as a data source before; it renders as nil
    /// and reads nothing) → [`Ref::None`], otherwise a data source.
    fn unbound(&mut self, name: &str) -> Ref {
        if self.seen_bound.contains(name) && !self.ds_used.contains(name) {
            return Ref::None;
        }
        if !self.ds_used.contains(name) {
            self.ds_used.insert(name.to_owned());
        }
        Ref::Ds(name.to_owned())
    }

    fn bound_below(&self, name: &str) -> bool {
        self.scopes
            .iter()
            .flat_map(|s| s.iter())
            .any(|(n, r)| *n == name && !matches!(r, Ref::RowScope(_)))
    }

    fn expr_str(&self, id: ExprId) -> Option<&'t str> {
        match self.tpl.expr(id) {
            Some(Expr::Str(s)) => Some(s),
            _ => None,
        }
    }

    fn expr(&mut self, id: ExprId) -> Ref {
        if self.budget == 0 {
            return Ref::None;
        }
        self.budget -= 1;
        let Some(e) = self.tpl.expr(id) else {
            return Ref::None;
        };
        match e {
            Expr::Int(_) | Expr::Float(_) | Expr::Str(_) | Expr::Bool(_) => Ref::None,
            Expr::Var { head, parts } => self.var(head, parts),
            Expr::Filtered { base, filters } => {
                let mut r = self.expr(*base);
                for f in filters {
                    let arg_ref = f.arg.map(|a| self.expr(a)).unwrap_or(Ref::None);
                    let lit = f.arg.and_then(|a| self.expr_str(a));
                    r = self.filter_effect(&f.name, r, arg_ref, lit);
                }
                r
            }
            Expr::Unary { inner, .. } => {
                self.expr(*inner);
                Ref::None
            }
            Expr::Bin { left, right, .. } => {
                self.expr(*left);
                self.expr(*right);
                Ref::None
            }
        }
    }

    fn filter_effect(&mut self, name: &str, r: Ref, arg: Ref, lit: Option<&str>) -> Ref {
        match name {
            "where" | "count" => {
                if let Some(l) = lit {
                    let field = l.split_once(':').map_or(l, |(f, _)| f);
                    self.row_field(&r, field);
                }
                if name == "where" { r } else { Ref::None }
            }
            "sum" => {
                if let Some(l) = lit {
                    self.row_field(&r, l.trim_matches('"'));
                }
                Ref::None
            }
            "add_day" | "add_signed" => {
                if let Some(l) = lit {
                    self.row_field(&r, l.trim());
                }
                let extra = if name == "add_day" { "dia" } else { "signed" };
                if name == "add_signed" {
                    self.row_field(&r, "direction");
                }
                match r {
                    Ref::Table {
                        ds,
                        table,
                        mut synthetic,
                    } => {
                        synthetic.push(extra);
                        Ref::Table {
                            ds,
                            table,
                            synthetic,
                        }
                    }
                    _ => Ref::None,
                }
            }
            "first" | "last" | "random" => match r {
                Ref::Table {
                    ds,
                    table,
                    synthetic,
                } => Ref::Row {
                    ds,
                    table,
                    synthetic,
                },
                Ref::Row { .. } | Ref::Field => Ref::Field,
                _ => Ref::None,
            },
            "slice" | "safe" => r,
            "default" | "default_if_none" => {
                if r == Ref::None {
                    arg
                } else {
                    r
                }
            }
            _ => Ref::None,
        }
    }

    /// What a variable path refers to. Long by design: one case per way a path can start (a
    /// data source, a loop or `with` binding, a helper call), in the order the renderer
    /// resolves them.
    fn var(&mut self, head: &'t str, parts: &'t [Part]) -> Ref {
        let helper_call = matches!(parts.first(), Some(Part::Call(_)));
        let mut cur = match self.lookup(head) {
            Ok(Some(r)) => r,
            Ok(None) if helper_call && matches!(head, "filter" | "contains") => Ref::None,
            Ok(None) if head == "forloop" => Ref::None,
            Ok(None) => self.unbound(head),
            Err(coll) => {
                // A bare name in an aggregation condition: a field of the rows.
                self.row_field(&coll, head);
                Ref::Field
            }
        };
        if self.row_depth == 0
            && matches!(parts.first(), Some(Part::Attr(_)))
            && matches!(cur, Ref::Ds(_))
        {
            self.ds_heads.insert(head.to_owned());
        }
        let mut i = 0;
        if helper_call
            && matches!(cur, Ref::None)
            && matches!(head, "filter" | "contains")
            && let Some(Part::Call(args)) = parts.first()
        {
            let refs: Vec<Ref> = args.iter().map(|a| self.expr(*a)).collect();
            if head == "filter" {
                if let (Some(coll), Some(f)) =
                    (refs.first(), args.get(1).and_then(|a| self.expr_str(*a)))
                {
                    self.row_field(coll, f);
                }
                cur = match refs.into_iter().next() {
                    Some(t @ Ref::Table { .. }) => t,
                    _ => Ref::None,
                };
            } else {
                cur = Ref::None;
            }
            i = 1;
        }
        while let Some(p) = parts.get(i) {
            i += 1;
            cur = match (p, cur) {
                (Part::Call(args), Ref::Macro(id)) => {
                    let refs: Vec<Ref> = args.iter().map(|a| self.expr(*a)).collect();
                    self.macro_call(id, refs);
                    Ref::None
                }
                (Part::Call(args), _) => {
                    for a in args {
                        self.expr(*a);
                    }
                    Ref::None
                }
                (Part::Attr(name), Ref::Ds(ds)) => {
                    self.table(&ds, name);
                    Ref::Table {
                        ds,
                        table: name.to_string(),
                        synthetic: Vec::new(),
                    }
                }
                (Part::Attr(name), r @ (Ref::Table { .. } | Ref::Row { .. })) => {
                    self.row_field(&r, name);
                    Ref::Field
                }
                (Part::Attr(_), Ref::Field) => Ref::Field,
                (
                    Part::Index(_),
                    Ref::Table {
                        ds,
                        table,
                        synthetic,
                    },
                ) => Ref::Row {
                    ds,
                    table,
                    synthetic,
                },
                (Part::Sub(e), r) => {
                    let key = self.expr_str(*e);
                    self.expr(*e);
                    match r {
                        Ref::Table {
                            ds,
                            table,
                            synthetic,
                        } => Ref::Row {
                            ds,
                            table,
                            synthetic,
                        },
                        Ref::Ds(ds) => match key {
                            Some(t) => {
                                self.table(&ds, t);
                                Ref::Table {
                                    ds,
                                    table: t.to_owned(),
                                    synthetic: Vec::new(),
                                }
                            }
                            None => Ref::None,
                        },
                        row @ Ref::Row { .. } => {
                            if let Some(k) = key {
                                self.row_field(&row, k);
                            }
                            Ref::Field
                        }
                        Ref::Field => Ref::Field,
                        _ => Ref::None,
                    }
                }
                (_, Ref::Field) => Ref::Field,
                _ => Ref::None,
            };
        }
        // A macro referenced without a call is called with no arguments.
        if let Ref::Macro(id) = cur {
            self.macro_call(id, Vec::new());
            return Ref::None;
        }
        cur
    }

    fn macro_call(&mut self, id: usize, args: Vec<Ref>) {
        if self.macro_stack.contains(&id) || self.macro_calls.len() > 1000 {
            return;
        }
        if !self.macro_calls.insert((id, args.clone())) {
            return;
        }
        let tpl = self.tpl;
        let Some(def) = tpl.macros.get(id) else {
            return;
        };
        self.macro_stack.push(id);
        self.scoped(|a| {
            for (i, (name, default)) in def.params.iter().enumerate() {
                let r = match args.get(i) {
                    Some(r) => r.clone(),
                    None => default.map(|d| a.expr(d)).unwrap_or(Ref::None),
                };
                a.bind(name, r);
            }
            a.block(&def.body);
        });
        self.macro_stack.pop();
    }

    fn condition(&mut self, coll: &Ref, cond: Option<ExprId>) {
        let Some(c) = cond else {
            return;
        };
        self.saw_conditions = true;
        self.scoped(|a| {
            a.bind("", Ref::RowScope(Box::new(coll.clone())));
            a.row_depth += 1;
            a.expr(c);
            a.row_depth -= 1;
        });
    }

    fn block(&mut self, b: &'t Block) {
        for n in b {
            self.node(n);
        }
    }

    /// The fields one node reads. Long by design: one arm per node kind, each stating which
    /// names that tag binds and which it reads.
    fn node(&mut self, n: &'t Node) {
        if self.budget == 0 {
            return;
        }
        self.budget -= 1;
        match n {
            Node::Text { .. }
            | Node::Comment
            | Node::Lorem { .. }
            | Node::Now { .. }
            | Node::TemplateTag(_)
            | Node::Counter(_)
            | Node::CounterShow(_) => {}
            Node::Print(e) => {
                self.expr(*e);
            }
            Node::If { conditions, blocks } => {
                for c in conditions {
                    self.expr(*c);
                }
                for b in blocks {
                    self.block(b);
                }
            }
            Node::For {
                key,
                value,
                iter,
                body,
                empty,
                ..
            } => {
                let r = self.expr(*iter);
                self.scoped(|a| {
                    a.bind("forloop", Ref::None);
                    match (&r, value) {
                        (
                            Ref::Table {
                                ds,
                                table,
                                synthetic,
                            },
                            _,
                        ) => a.bind(
                            key,
                            Ref::Row {
                                ds: ds.clone(),
                                table: table.clone(),
                                synthetic: synthetic.clone(),
                            },
                        ),
                        (Ref::Row { .. } | Ref::Field, Some(v)) => {
                            a.bind(key, Ref::None);
                            a.bind(v, Ref::Field);
                        }
                        (Ref::Row { .. } | Ref::Field, None) => a.bind(key, Ref::None),
                        (_, v) => {
                            a.bind(key, Ref::None);
                            if let Some(v) = v {
                                a.bind(v, Ref::None);
                            }
                        }
                    }
                    a.block(body);
                    if let Some(e) = empty {
                        a.block(e);
                    }
                });
            }
            Node::With { pairs, body } => {
                let refs: Vec<(&'t str, Ref)> =
                    pairs.iter().map(|(k, e)| (&**k, self.expr(*e))).collect();
                self.scoped(|a| {
                    for (k, r) in refs {
                        a.bind(k, r);
                    }
                    a.block(body);
                });
            }
            Node::Set { name, expr } => {
                let r = self.expr(*expr);
                self.bind(name, r);
            }
            Node::Autoescape { body, .. } | Node::Spaceless(body) => self.block(body),
            Node::Cycle { args, as_name, .. } => {
                for a in args {
                    self.expr(*a);
                }
                if let Some(n) = as_name {
                    self.bind(n, Ref::None);
                }
            }
            Node::FilterBlock { filters, body } => {
                for f in filters {
                    if let Some(a) = f.arg {
                        self.expr(a);
                    }
                }
                self.block(body);
            }
            Node::Firstof(args) => {
                for a in args {
                    self.expr(*a);
                }
            }
            Node::IfChanged {
                watched,
                then,
                otherwise,
                ..
            } => {
                for w in watched {
                    self.expr(*w);
                }
                self.block(then);
                if let Some(o) = otherwise {
                    self.block(o);
                }
            }
            Node::IfEqual {
                a,
                b,
                then,
                otherwise,
                ..
            } => {
                self.expr(*a);
                self.expr(*b);
                self.block(then);
                if let Some(o) = otherwise {
                    self.block(o);
                }
            }
            Node::Macro(id) => {
                let tpl = self.tpl;
                if let Some(def) = tpl.macros.get(*id) {
                    self.bind(&def.name, Ref::Macro(*id));
                    // The body alone (parameters unknown): its own data reads.
                    self.macro_call(*id, Vec::new());
                }
            }
            Node::WidthRatio {
                current,
                max,
                width,
                as_name,
            } => {
                self.expr(*current);
                self.expr(*max);
                self.expr(*width);
                if let Some(n) = as_name {
                    self.bind(n, Ref::None);
                }
            }
            Node::Aggregate {
                collection,
                field,
                condition,
                as_name,
                ..
            } => {
                let coll = self.expr(*collection);
                if let Some(f) = field {
                    match self.expr_str(*f) {
                        Some(name) => self.row_field(&coll, name),
                        None => {
                            self.expr(*f);
                        }
                    }
                }
                self.condition(&coll, *condition);
                if let Some(n) = as_name {
                    self.bind(n, Ref::None);
                }
            }
            Node::Calc { text, as_name, .. } => {
                for path in calc_paths(text) {
                    let mut segs = path.split('.');
                    let head = segs.next().unwrap_or_default();
                    let parts: Vec<Part> = segs
                        .map(|s| match s.parse::<i64>() {
                            Ok(i) if s.bytes().all(|b| b.is_ascii_digit()) => Part::Index(i),
                            _ => Part::Attr(s.into()),
                        })
                        .collect();
                    // `parts` is owned here; resolve it against the scopes directly.
                    self.var_owned(head, parts);
                }
                if let Some(n) = as_name {
                    self.bind(n, Ref::None);
                }
            }
            Node::DateTime { layout, as_name } => {
                self.expr(*layout);
                if let Some(n) = as_name {
                    self.bind(n, Ref::None);
                }
            }
            Node::LastItemByGroup {
                collection,
                group_by,
                order_by,
                condition,
                as_name,
            } => {
                let coll = self.expr(*collection);
                if let Some(g) = self.expr_str(*group_by) {
                    for f in g.split(',') {
                        self.row_field(&coll, f.trim());
                    }
                }
                if let Some(o) = self.expr_str(*order_by) {
                    self.row_field(&coll, o);
                }
                self.condition(&coll, *condition);
                let bound = match coll {
                    t @ Ref::Table { .. } => t,
                    _ => Ref::None,
                };
                self.bind(as_name, bound);
            }
        }
    }

    /// Like [`Self::var`] for a path built from calc text (no calls or subscripts).
    fn var_owned(&mut self, head: &str, parts: Vec<Part>) {
        let mut cur = match self.lookup(head) {
            Ok(Some(r)) => r,
            Ok(None) if head == "forloop" => Ref::None,
            Ok(None) => self.unbound(head),
            Err(_) => Ref::None,
        };
        for p in &parts {
            cur = match (p, cur) {
                (Part::Attr(name), Ref::Ds(ds)) => {
                    self.table(&ds, name);
                    Ref::Table {
                        ds,
                        table: name.to_string(),
                        synthetic: Vec::new(),
                    }
                }
                (Part::Attr(name), r @ (Ref::Table { .. } | Ref::Row { .. })) => {
                    self.row_field(&r, name);
                    Ref::Field
                }
                (
                    Part::Index(_),
                    Ref::Table {
                        ds,
                        table,
                        synthetic,
                    },
                ) => Ref::Row {
                    ds,
                    table,
                    synthetic,
                },
                (_, Ref::Field) => Ref::Field,
                _ => Ref::None,
            };
        }
    }
}
