//! The data a block tree reads (`mappedFields`), found on the blocks themselves so that each
//! reference carries the block and property it comes from.
//!
//! The rules are the template engine's upload-time extraction, applied to the constructs the
//! builder generates (a test checks that both agree on generated code): an unbound name
//! followed by `.table` is a data source; `for` binds its variable to a row of the table it
//! walks, `with` and `as` bind names to what they are given; `where` / `count` / `sum`
//! arguments and the `by`, `group_by`, `order_by` of tags are fields of the rows; inside the
//! `if` of an aggregation tag a bare name is a field of the rows unless it is bound or used as
//! a data source elsewhere (decided in a second pass); `forloop` and helpers are never data.
use super::expr::{Expr, FilterApp, Path, Seg};
use super::model::{CustomTag, Node, NodeKind};
use reporter_ports::template::MappedFields;
use std::collections::BTreeSet;

/// Where a reference was found.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Origin {
    /// Block id.
    pub block_id: String,
    /// Property.
    pub property: &'static str,
}

/// One data reference: a table (no field) or a field of a table.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Reference {
    /// Where.
    pub origin: Origin,
    /// Data source id.
    pub source: String,
    /// Table.
    pub table: String,
    /// Field, when one is read.
    pub field: Option<String>,
}

/// What a tree reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Analysis {
    /// Data source → table → fields.
    pub mapped: MappedFields,
    /// Every reference with its origin, in tree order.
    pub references: Vec<Reference>,
    /// Every name a block binds (loop iterator, `with` variable, `as` of a tag), with the
    /// block and property that bind it.
    pub bindings: Vec<(Origin, String)>,
}

/// Analyses a valid tree.
pub fn analyze(nodes: &[Node]) -> Analysis {
    let mut first = Analyzer::new(BTreeSet::new());
    first.nodes(nodes);
    let mut second = Analyzer::new(first.ds_heads);
    second.nodes(nodes);
    Analysis {
        mapped: second.out,
        references: second.refs,
        bindings: second.bindings,
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Ref {
    None,
    Ds(String),
    Table { ds: String, table: String },
    Row { ds: String, table: String },
    Field,
    RowScope(Box<Ref>),
}

struct Analyzer {
    out: MappedFields,
    refs: Vec<Reference>,
    bindings: Vec<(Origin, String)>,
    scopes: Vec<Vec<(String, Ref)>>,
    ds_heads: BTreeSet<String>,
    known_heads: BTreeSet<String>,
    row_depth: usize,
    origin: Origin,
}

fn root(field: &str) -> &str {
    field.split('.').next().unwrap_or(field).trim()
}

impl Analyzer {
    fn new(known_heads: BTreeSet<String>) -> Self {
        Self {
            out: MappedFields::new(),
            refs: Vec::new(),
            bindings: Vec::new(),
            scopes: vec![Vec::new()],
            ds_heads: BTreeSet::new(),
            known_heads,
            row_depth: 0,
            origin: Origin {
                block_id: String::new(),
                property: "",
            },
        }
    }

    fn at(&mut self, id: &str, property: &'static str) {
        self.origin = Origin {
            block_id: id.to_owned(),
            property,
        };
    }

    fn table(&mut self, ds: &str, table: &str) {
        self.out
            .entry(ds.to_owned())
            .or_default()
            .entry(table.to_owned())
            .or_default();
        self.refs.push(Reference {
            origin: self.origin.clone(),
            source: ds.to_owned(),
            table: table.to_owned(),
            field: None,
        });
    }

    fn field(&mut self, ds: &str, table: &str, field: &str) {
        let f = root(field);
        if f.is_empty() {
            return;
        }
        self.out
            .entry(ds.to_owned())
            .or_default()
            .entry(table.to_owned())
            .or_default()
            .insert(f.to_owned());
        self.refs.push(Reference {
            origin: self.origin.clone(),
            source: ds.to_owned(),
            table: table.to_owned(),
            field: Some(f.to_owned()),
        });
    }

    fn row_field(&mut self, r: &Ref, field: &str) {
        if let Ref::Table { ds, table } | Ref::Row { ds, table } = r {
            let (ds, table) = (ds.clone(), table.clone());
            self.field(&ds, &table, field);
        }
    }

    fn bind(&mut self, name: &str, r: Ref) {
        if !name.is_empty() && name != "forloop" {
            self.bindings.push((self.origin.clone(), name.to_owned()));
        }
        if let Some(top) = self.scopes.last_mut() {
            top.push((name.to_owned(), r));
        }
    }

    fn scoped(&mut self, f: impl FnOnce(&mut Self)) {
        self.scopes.push(Vec::new());
        f(self);
        self.scopes.pop();
    }

    fn lookup(&self, name: &str) -> Result<Option<Ref>, Ref> {
        for scope in self.scopes.iter().rev() {
            for (n, r) in scope.iter().rev() {
                if let Ref::RowScope(coll) = r {
                    if self.bound_below(name) || self.known_heads.contains(name) {
                        continue;
                    }
                    return Err((**coll).clone());
                }
                if n == name {
                    return Ok(Some(r.clone()));
                }
            }
        }
        Ok(None)
    }

    fn bound_below(&self, name: &str) -> bool {
        self.scopes
            .iter()
            .flat_map(|s| s.iter())
            .any(|(n, r)| n == name && !matches!(r, Ref::RowScope(_)))
    }

    fn expr(&mut self, e: &Expr) -> Ref {
        match e {
            Expr::Lit | Expr::Str(_) => Ref::None,
            Expr::Path(p) => self.path(p),
            Expr::Call { name, args } => self.call(name, args),
            Expr::Filtered { base, filters } => {
                let r = self.expr(base);
                self.filters(r, filters)
            }
            Expr::Unary(inner) => {
                self.expr(inner);
                Ref::None
            }
            Expr::Binary(l, r) => {
                self.expr(l);
                self.expr(r);
                Ref::None
            }
        }
    }

    fn filters(&mut self, mut r: Ref, filters: &[FilterApp]) -> Ref {
        for f in filters {
            let arg = f.arg.as_ref().map(|a| self.expr(a)).unwrap_or(Ref::None);
            let lit = match &f.arg {
                Some(Expr::Str(s)) => Some(s.as_str()),
                _ => None,
            };
            r = self.filter_effect(&f.name, r, arg, lit);
        }
        r
    }

    /// A filter with a string-literal argument, as code generation writes them.
    fn literal_filter(&mut self, r: Ref, name: &str, lit: Option<&str>) -> Ref {
        self.filter_effect(name, r, Ref::None, lit)
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
            "first" | "last" | "random" => match r {
                Ref::Table { ds, table } => Ref::Row { ds, table },
                Ref::Row { .. } | Ref::Field => Ref::Field,
                _ => Ref::None,
            },
            "slice" => r,
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

    fn head(&mut self, head: &str, attr_follows: bool) -> Ref {
        match self.lookup(head) {
            Ok(Some(r)) => r,
            Ok(None) if head == "forloop" => Ref::None,
            Ok(None) => {
                if self.row_depth == 0 && attr_follows {
                    self.ds_heads.insert(head.to_owned());
                }
                Ref::Ds(head.to_owned())
            }
            Err(coll) => {
                self.row_field(&coll, head);
                Ref::Field
            }
        }
    }

    fn call(&mut self, name: &str, args: &[Expr]) -> Ref {
        match self.lookup(name) {
            Ok(None) => {
                let refs: Vec<Ref> = args.iter().map(|a| self.expr(a)).collect();
                if name == "filter" {
                    if let (Some(coll), Some(Expr::Str(f))) = (refs.first(), args.get(1)) {
                        self.row_field(coll, f);
                    }
                    match refs.into_iter().next() {
                        Some(t @ Ref::Table { .. }) => t,
                        _ => Ref::None,
                    }
                } else {
                    Ref::None
                }
            }
            Ok(Some(_)) => {
                for a in args {
                    self.expr(a);
                }
                Ref::None
            }
            Err(coll) => {
                // Inside an aggregation condition the helper's name reads as a row field, as
                // in the engine.
                self.row_field(&coll, name);
                for a in args {
                    self.expr(a);
                }
                Ref::None
            }
        }
    }

    fn path(&mut self, p: &Path) -> Ref {
        let attr_follows = matches!(p.parts.first(), Some(Seg::Attr(_)));
        let mut cur = self.head(&p.head, attr_follows);
        for part in &p.parts {
            cur = match (part, cur) {
                (Seg::Attr(name), Ref::Ds(ds)) => {
                    self.table(&ds, name);
                    Ref::Table {
                        ds,
                        table: name.clone(),
                    }
                }
                (Seg::Attr(name), r @ (Ref::Table { .. } | Ref::Row { .. })) => {
                    self.row_field(&r, name);
                    Ref::Field
                }
                (Seg::Index(_), Ref::Table { ds, table }) => Ref::Row { ds, table },
                (_, Ref::Field) => Ref::Field,
                _ => Ref::None,
            };
        }
        cur
    }

    /// A path of `calc` text, resolved as the engine resolves calc variables.
    fn calc_path(&mut self, p: &Path) {
        let mut cur = match self.lookup(&p.head) {
            Ok(Some(r)) => r,
            Ok(None) if p.head == "forloop" => Ref::None,
            Ok(None) => Ref::Ds(p.head.clone()),
            Err(_) => Ref::None,
        };
        for part in &p.parts {
            cur = match (part, cur) {
                (Seg::Attr(name), Ref::Ds(ds)) => {
                    self.table(&ds, name);
                    Ref::Table {
                        ds,
                        table: name.clone(),
                    }
                }
                (Seg::Attr(name), r @ (Ref::Table { .. } | Ref::Row { .. })) => {
                    self.row_field(&r, name);
                    Ref::Field
                }
                (Seg::Index(_), Ref::Table { ds, table }) => Ref::Row { ds, table },
                (_, Ref::Field) => Ref::Field,
                _ => Ref::None,
            };
        }
    }

    fn condition(&mut self, coll: &Ref, cond: Option<&Expr>) {
        let Some(c) = cond else {
            return;
        };
        self.scoped(|a| {
            a.bind("", Ref::RowScope(Box::new(coll.clone())));
            a.row_depth += 1;
            a.expr(c);
            a.row_depth -= 1;
        });
    }

    fn nodes(&mut self, nodes: &[Node]) {
        for n in nodes {
            self.node(n);
        }
    }

    /// The fields one node reads. Long by design: one arm per block type.
    fn node(&mut self, n: &Node) {
        let id = n.id.as_str();
        match &n.kind {
            NodeKind::Text { .. } | NodeKind::Comment { .. } | NodeKind::Counter { .. } => {}
            NodeKind::Variable { path, filters, .. } => {
                self.at(id, "variable");
                let mut r = self.path(path);
                for f in filters {
                    r = self.literal_filter(r, f.filter.as_str(), f.arg.as_deref());
                }
            }
            NodeKind::Loop {
                iterator,
                collection,
                children,
                ..
            } => {
                self.at(id, "collection");
                let r = self.path(collection);
                self.at(id, "iterator");
                self.scoped(|a| {
                    a.bind("forloop", Ref::None);
                    match &r {
                        Ref::Table { ds, table } => a.bind(
                            iterator,
                            Ref::Row {
                                ds: ds.clone(),
                                table: table.clone(),
                            },
                        ),
                        _ => a.bind(iterator, Ref::None),
                    }
                    a.nodes(children);
                });
            }
            NodeKind::Conditional {
                branches,
                otherwise,
                ..
            } => {
                for b in branches {
                    self.at(&b.id, "condition");
                    self.expr(&b.condition.tree);
                }
                for b in branches {
                    self.nodes(&b.children);
                }
                self.nodes(otherwise);
            }
            NodeKind::Aggregation {
                collection,
                function,
                arg,
                ..
            } => {
                self.at(id, "collection");
                let r = self.path(collection);
                self.at(id, "field");
                self.literal_filter(r, function.filter().as_str(), Some(arg));
            }
            NodeKind::Calculation { path, function, .. } => {
                self.at(id, "variable");
                let r = self.path(path);
                self.literal_filter(r, function.as_str(), None);
            }
            NodeKind::DateTime { path, format, .. } => {
                if let Some(p) = path {
                    self.at(id, "variable");
                    let r = self.path(p);
                    self.literal_filter(r, "date", Some(format));
                }
            }
            NodeKind::Section { children } => self.nodes(children),
            NodeKind::With {
                variable,
                assignment,
                children,
                ..
            } => {
                self.at(id, "assignment");
                let r = self.expr(&assignment.tree);
                self.at(id, "variable");
                self.scoped(|a| {
                    a.bind(variable, r);
                    a.nodes(children);
                });
            }
            NodeKind::Expression { expr, .. } => {
                self.at(id, "expression");
                self.expr(&expr.tree);
            }
            NodeKind::CustomTag { tag, .. } => {
                self.at(id, "tagArgs");
                self.custom_tag(tag);
            }
        }
    }

    fn custom_tag(&mut self, tag: &CustomTag) {
        match tag {
            CustomTag::Aggregate {
                collection,
                field,
                condition,
                ..
            } => {
                let coll = self.expr(&collection.tree);
                if let Some(f) = field {
                    self.row_field(&coll, f);
                }
                self.condition(&coll, condition.as_ref().map(|c| &c.tree));
            }
            CustomTag::Calc(calc) => {
                for p in &calc.paths {
                    self.calc_path(p);
                }
            }
            CustomTag::LastItemByGroup {
                collection,
                group_by,
                order_by,
                condition,
                as_name,
            } => {
                let coll = self.expr(&collection.tree);
                for f in group_by {
                    self.row_field(&coll, f.trim());
                }
                self.row_field(&coll, order_by);
                self.condition(&coll, condition.as_ref().map(|c| &c.tree));
                let bound = match coll {
                    t @ Ref::Table { .. } => t,
                    _ => Ref::None,
                };
                self.bind(as_name, bound);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::validate::convert;
    use super::*;

    fn fields(blocks: serde_json::Value) -> MappedFields {
        let specs = super::super::specs_from_json(blocks);
        let (nodes, findings) = convert(&specs);
        assert!(findings.is_empty(), "{findings:?}");
        analyze(&nodes).mapped
    }

    fn mf(v: serde_json::Value) -> MappedFields {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn loops_aliases_and_filters() {
        let got = fields(serde_json::json!([
            {"type": "variable", "variable": "bank.accounts.0.holder_name"},
            {"type": "loop", "iterator": "t", "collection": "bank.transactions", "children": [
                {"type": "variable", "variable": "t.amount", "filters": [{"name": "floatformat", "args": "2"}]},
                {"type": "conditional", "condition": "t.direction == \"debit\" and forloop.First", "children": [
                    {"type": "text", "content": "-"}
                ]}
            ]},
            {"type": "aggregation", "collection": "bank.balances", "function": "sum", "field": "balance"},
            {"type": "with", "variable": "eur", "assignment": "bank.accounts|where:\"currency:EUR\"", "children": [
                {"type": "expression", "expression": "eur|length"}
            ]},
            {"type": "custom_tag", "tagName": "count_by", "tagArgs": "bank.transactions if category == \"rent\""}
        ]));
        assert_eq!(
            got,
            mf(serde_json::json!({"bank": {
                "accounts": ["currency", "holder_name"],
                "balances": ["balance"],
                "transactions": ["amount", "category", "direction"]
            }}))
        );
    }

    #[test]
    fn bare_tables_and_unbound_names() {
        let got = fields(serde_json::json!([
            {"type": "loop", "iterator": "r", "collection": "bank.accounts", "children": [
                {"type": "text", "content": "x"}
            ]},
            {"type": "variable", "variable": "total"},
            {"type": "custom_tag", "tagName": "calc", "tagArgs": "bank.balances.0.balance * 2 + x"}
        ]));
        assert_eq!(
            got,
            mf(serde_json::json!({"bank": {"accounts": [], "balances": ["balance"]}}))
        );
    }

    #[test]
    fn origins_are_recorded() {
        let specs = super::super::specs_from_json(serde_json::json!([
            {"blockId": "v", "type": "variable", "variable": "pg.orders.total"}
        ]));
        let (nodes, _) = convert(&specs);
        let a = analyze(&nodes);
        assert_eq!(a.references.len(), 2);
        assert_eq!(a.references[1].origin.block_id, "v");
        assert_eq!(a.references[1].field.as_deref(), Some("total"));
    }
}
