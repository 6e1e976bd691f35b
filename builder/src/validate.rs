//! Structural validation: turns the blocks a client sent into valid [`Node`]s, or lists every
//! problem with the block and property it is about. Pure; the data-source check comes after
//! (see `fields` and the use cases).
use super::catalog::{
    AggFunction, ArgRule, BlockType, CALCULATION_FUNCTIONS, CatalogFilter, CustomTagName,
};
use super::expr::{
    self, Expression, Issue, MAX_EXPRESSION_CHARS, Path, Tok, check_binding, check_text,
    parse_calc, parse_expression, parse_path,
};
use super::messages::{Finding, Msg};
use super::model::{
    BlockSpec, Branch, CounterMode, CustomTag, ElifSpec, FilterSpec, FilterUse, Node, NodeKind,
};
use reporter_ports::template::find_script;
use std::collections::HashSet;

/// Most blocks in one request (every level counted).
pub const MAX_BLOCKS: usize = 5000;
/// Deepest nesting: a top-level block is at depth 0, its children at 1, …
pub const MAX_DEPTH: usize = 50;
/// Longest `blockId`.
pub const MAX_BLOCK_ID_CHARS: usize = 128;
/// Longest filter argument or date layout.
pub const MAX_ARG_CHARS: usize = 500;
/// Longest comment.
pub const MAX_COMMENT_CHARS: usize = 2000;
/// Most names of one counter block.
pub const MAX_COUNTER_NAMES: usize = 64;
/// Longest field name in a filter or tag argument.
pub const MAX_FIELD_CHARS: usize = 128;

/// Counts blocks and measures depth without recursion. The first finding when a limit is
/// exceeded (the count first), `None` otherwise.
pub fn check_limits(blocks: &[BlockSpec]) -> Option<Finding> {
    let mut count = 0usize;
    // (blocks, id prefix, depth)
    let mut stack: Vec<(&[BlockSpec], Option<String>, usize)> = vec![(blocks, None, 0)];
    let mut too_deep: Option<Finding> = None;
    while let Some((list, prefix, depth)) = stack.pop() {
        if depth > MAX_DEPTH {
            if too_deep.is_none() {
                too_deep = Some(Finding::new(
                    prefix.clone().unwrap_or_default(),
                    "children",
                    Msg::DepthExceeded(MAX_DEPTH),
                ));
            }
            continue;
        }
        for (i, b) in list.iter().enumerate() {
            count += 1;
            if count > MAX_BLOCKS {
                return Some(Finding::new("", "blocks", Msg::TooManyBlocks(MAX_BLOCKS)));
            }
            let id = effective_id(b, prefix.as_deref(), i);
            if let Some(c) = &b.children {
                stack.push((c, Some(id.clone()), depth + 1));
            }
            if let Some(c) = &b.else_children {
                stack.push((c, Some(format!("{id}-else")), depth + 1));
            }
            for (n, e) in b.elif_branches.iter().flatten().enumerate() {
                if let Some(c) = &e.children {
                    stack.push((c, Some(format!("{id}-elif-{n}")), depth + 1));
                }
            }
        }
    }
    too_deep
}

/// The id of a block: the client's, or `block-<i>` / `<parent>-<i>`.
pub fn effective_id(b: &BlockSpec, prefix: Option<&str>, i: usize) -> String {
    match b.block_id.as_deref().filter(|s| !s.is_empty()) {
        Some(id) => id.to_owned(),
        None => match prefix {
            None => format!("block-{i}"),
            Some(p) => format!("{p}-{i}"),
        },
    }
}

/// Converts blocks that are within the limits ([`check_limits`]) into nodes, collecting every
/// finding. The nodes are usable only when no finding was made.
pub fn convert(blocks: &[BlockSpec]) -> (Vec<Node>, Vec<Finding>) {
    let mut v = Validator {
        findings: Vec::new(),
        ids: HashSet::new(),
    };
    if blocks.is_empty() {
        v.findings
            .push(Finding::new("", "blocks", Msg::EmptyBlocks));
        return (Vec::new(), v.findings);
    }
    let nodes = v.blocks(blocks, None);
    (nodes, v.findings)
}

struct Validator {
    findings: Vec<Finding>,
    ids: HashSet<String>,
}

fn field_name_ok(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_FIELD_CHARS
        && !s.starts_with('-')
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn counter_name_ok(s: &str) -> bool {
    let mut chars = s.chars();
    s.len() <= 64
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'))
}

impl Validator {
    fn note(&mut self, id: &str, field: &str, msg: Msg) {
        self.findings.push(Finding::new(id, field, msg));
    }

    fn blocks(&mut self, specs: &[BlockSpec], prefix: Option<&str>) -> Vec<Node> {
        specs
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let id = effective_id(s, prefix, i);
                self.block(s, id)
            })
            .collect()
    }

    /// Children that must be present.
    fn children(&mut self, id: &str, specs: &Option<Vec<BlockSpec>>) -> Vec<Node> {
        match specs {
            Some(c) if !c.is_empty() => self.blocks(c, Some(id)),
            _ => {
                self.note(id, "children", Msg::Required("children"));
                Vec::new()
            }
        }
    }

    /// A string that must be present; scanned for script.
    fn required<'a>(
        &mut self,
        id: &str,
        prop: &'static str,
        v: &'a Option<String>,
    ) -> Option<&'a str> {
        match v.as_deref() {
            Some(s) if !s.trim().is_empty() => {
                if let Some(found) = find_script(s) {
                    self.note(id, prop, Msg::Script(found));
                    return None;
                }
                Some(s)
            }
            _ => {
                self.note(id, prop, Msg::Required(prop));
                None
            }
        }
    }

    fn path(&mut self, id: &str, prop: &'static str, v: &Option<String>) -> Option<Path> {
        let s = self.required(id, prop, v)?;
        match parse_path(s) {
            Ok(p) => Some(p),
            Err(e) => {
                self.note(id, prop, Msg::Invalid(prop, e));
                None
            }
        }
    }

    fn binding(&mut self, id: &str, prop: &'static str, v: &Option<String>) -> Option<String> {
        let s = self.required(id, prop, v)?.trim();
        match check_binding(s) {
            Ok(()) => Some(s.to_owned()),
            Err(e) => {
                self.note(id, prop, Msg::Invalid(prop, e));
                None
            }
        }
    }

    fn expression(
        &mut self,
        id: &str,
        prop: &'static str,
        v: &Option<String>,
    ) -> Option<Expression> {
        let s = self.required(id, prop, v)?;
        match parse_expression(s) {
            Ok(e) => Some(e),
            Err(e) => {
                self.note(id, prop, Msg::Invalid(prop, e));
                None
            }
        }
    }

    /// Checks one block and builds its node. Long by design: one arm per block type, each
    /// with the checks of its properties, so every problem is found in one pass.
    fn block(&mut self, s: &BlockSpec, id: String) -> Option<Node> {
        if let Some(raw) = s.block_id.as_deref().filter(|x| !x.is_empty())
            && (raw.chars().count() > MAX_BLOCK_ID_CHARS || raw.chars().any(char::is_control))
        {
            self.note(&id, "blockId", Msg::BlockIdInvalid);
        }
        if !self.ids.insert(id.clone()) {
            self.note(&id, "blockId", Msg::DuplicateBlockId(id.clone()));
        }
        let Some(t) = s.block_type.as_deref().filter(|t| !t.trim().is_empty()) else {
            self.note(&id, "type", Msg::TypeRequired);
            return None;
        };
        let Some(ty) = BlockType::parse(t) else {
            self.note(&id, "type", Msg::UnknownType(t.to_owned()));
            return None;
        };
        self.stray_children(&id, ty, s);
        let inline = s.inline.unwrap_or(false);
        let trim = s.trim_whitespace.unwrap_or(false);
        let before = self.findings.len();
        let kind = match ty {
            BlockType::Text => {
                let content = match s.content.as_deref() {
                    Some(c) if !c.is_empty() => match find_script(c) {
                        Some(found) => {
                            self.note(&id, "content", Msg::Script(found));
                            None
                        }
                        None => Some(c.to_owned()),
                    },
                    _ => {
                        self.note(&id, "content", Msg::Required("content"));
                        None
                    }
                };
                content.map(|content| NodeKind::Text { content, inline })
            }
            BlockType::Variable => {
                let path = self.path(&id, "variable", &s.variable);
                let filters = self.filters(&id, s.filters.as_deref().unwrap_or_default());
                path.map(|path| NodeKind::Variable {
                    path,
                    filters,
                    inline,
                })
            }
            BlockType::Loop => {
                let iterator = self.binding(&id, "iterator", &s.iterator);
                let collection = self.path(&id, "collection", &s.collection);
                let children = self.children(&id, &s.children);
                match (iterator, collection) {
                    (Some(iterator), Some(collection)) => Some(NodeKind::Loop {
                        iterator,
                        collection,
                        children,
                        trim,
                    }),
                    _ => None,
                }
            }
            BlockType::Conditional => self.conditional(&id, s, inline, trim),
            BlockType::Aggregation => {
                let collection = self.path(&id, "collection", &s.collection);
                let function = self.required(&id, "function", &s.function).and_then(|f| {
                    let parsed = AggFunction::parse(f.trim());
                    if parsed.is_none() {
                        self.note(
                            &id,
                            "function",
                            Msg::UnknownFunction(f.to_owned(), AggFunction::NAMES),
                        );
                    }
                    parsed
                });
                let arg = match function {
                    Some(f) => {
                        let raw = self.required(&id, "field", &s.field);
                        raw.and_then(|r| match filter_arg(f.filter(), Some(r)) {
                            Ok(a) => a,
                            Err(m) => {
                                self.note(&id, "field", m);
                                None
                            }
                        })
                    }
                    None => None,
                };
                match (collection, function, arg) {
                    (Some(collection), Some(function), Some(arg)) => Some(NodeKind::Aggregation {
                        collection,
                        function,
                        arg,
                        inline,
                    }),
                    _ => None,
                }
            }
            BlockType::Calculation => {
                let path = self.path(&id, "variable", &s.variable);
                let function = self.required(&id, "function", &s.function).and_then(|f| {
                    let f = f.trim();
                    if CALCULATION_FUNCTIONS.contains(&f) {
                        CatalogFilter::parse(f)
                    } else {
                        self.note(
                            &id,
                            "function",
                            Msg::UnknownFunction(f.to_owned(), CALCULATION_FUNCTIONS),
                        );
                        None
                    }
                });
                match (path, function) {
                    (Some(path), Some(function)) => Some(NodeKind::Calculation {
                        path,
                        function,
                        inline,
                    }),
                    _ => None,
                }
            }
            BlockType::DateTime => {
                let format =
                    self.required(&id, "format", &s.format).and_then(|f| {
                        match check_text(f, MAX_ARG_CHARS) {
                            Ok(()) => Some(f.to_owned()),
                            Err(e) => {
                                self.note(&id, "format", Msg::Invalid("format", e));
                                None
                            }
                        }
                    });
                let path = match s.variable.as_deref() {
                    Some(v) if !v.trim().is_empty() => {
                        self.path(&id, "variable", &s.variable).map(Some)
                    }
                    _ => Some(None),
                };
                match (format, path) {
                    (Some(format), Some(path)) => Some(NodeKind::DateTime {
                        path,
                        format,
                        inline,
                        trim,
                    }),
                    _ => None,
                }
            }
            BlockType::Counter => {
                self.counter(&id, s)
                    .map(|mode| NodeKind::Counter { mode, inline, trim })
            }
            BlockType::Comment => {
                let content = self.required(&id, "content", &s.content).and_then(|c| {
                    match check_text(c, MAX_COMMENT_CHARS) {
                        Ok(()) => Some(c.to_owned()),
                        Err(e) => {
                            self.note(&id, "content", Msg::Invalid("content", e));
                            None
                        }
                    }
                });
                content.map(|content| NodeKind::Comment { content, inline })
            }
            BlockType::Section => {
                let children = self.children(&id, &s.children);
                Some(NodeKind::Section { children })
            }
            BlockType::With => {
                let variable = self.binding(&id, "variable", &s.variable);
                let assignment = self.expression(&id, "assignment", &s.assignment);
                let children = self.children(&id, &s.children);
                match (variable, assignment) {
                    (Some(variable), Some(assignment)) => Some(NodeKind::With {
                        variable,
                        assignment,
                        children,
                        trim,
                    }),
                    _ => None,
                }
            }
            BlockType::Expression => self
                .expression(&id, "expression", &s.expression)
                .map(|expr| NodeKind::Expression { expr, inline }),
            BlockType::CustomTag => {
                self.custom_tag(&id, s)
                    .map(|tag| NodeKind::CustomTag { tag, inline, trim })
            }
        };
        if self.findings.len() != before {
            return None;
        }
        kind.map(|kind| Node { id, kind })
    }

    /// Children given to a block type that has none would silently disappear: refuse them.
    fn stray_children(&mut self, id: &str, ty: BlockType, s: &BlockSpec) {
        let name = ty.as_str();
        if !ty.accepts_children() && s.children.as_ref().is_some_and(|c| !c.is_empty()) {
            self.note(id, "children", Msg::NotForType("children", name));
        }
        if ty != BlockType::Conditional {
            if s.else_children.as_ref().is_some_and(|c| !c.is_empty()) {
                self.note(id, "elseChildren", Msg::NotForType("elseChildren", name));
            }
            if s.elif_branches.as_ref().is_some_and(|c| !c.is_empty()) {
                self.note(id, "elifBranches", Msg::NotForType("elifBranches", name));
            }
        }
    }

    fn filters(&mut self, id: &str, specs: &[FilterSpec]) -> Vec<FilterUse> {
        let mut out = Vec::new();
        for (i, f) in specs.iter().enumerate() {
            let fid = format!("{id}-filter-{i}");
            let Some(name) = f.name.as_deref().map(str::trim).filter(|n| !n.is_empty()) else {
                self.note(&fid, "name", Msg::Required("name"));
                continue;
            };
            let Some(filter) = CatalogFilter::parse(name) else {
                self.note(&fid, "name", Msg::UnknownFilter(name.to_owned()));
                continue;
            };
            if let Some(found) = f.args.as_deref().and_then(find_script) {
                self.note(&fid, "args", Msg::Script(found));
                continue;
            }
            match filter_arg(filter, f.args.as_deref()) {
                Ok(arg) => out.push(FilterUse { filter, arg }),
                Err(m) => self.note(&fid, "args", m),
            }
        }
        out
    }

    fn conditional(
        &mut self,
        id: &str,
        s: &BlockSpec,
        inline: bool,
        trim: bool,
    ) -> Option<NodeKind> {
        let condition = self.expression(id, "condition", &s.condition);
        let children = self.children(id, &s.children);
        let mut branches = Vec::new();
        if let Some(c) = condition {
            branches.push(Branch {
                id: id.to_owned(),
                condition: c,
                children,
            });
        }
        for (i, e) in s.elif_branches.iter().flatten().enumerate() {
            let eid = format!("{id}-elif-{i}");
            let ElifSpec {
                condition,
                children,
            } = e;
            let condition = self.expression(&eid, "condition", condition);
            let children = self.children(&eid, children);
            if let Some(c) = condition {
                branches.push(Branch {
                    id: eid,
                    condition: c,
                    children,
                });
            }
        }
        let otherwise = match &s.else_children {
            Some(c) if !c.is_empty() => self.blocks(c, Some(&format!("{id}-else"))),
            _ => Vec::new(),
        };
        Some(NodeKind::Conditional {
            branches,
            otherwise,
            inline,
            trim,
        })
    }

    fn counter(&mut self, id: &str, s: &BlockSpec) -> Option<CounterMode> {
        let props = s.properties.as_ref();
        let mode = match props.and_then(|p| p.get("counterMode")) {
            Some(serde_json::Value::String(m)) if !m.is_empty() => match m.as_str() {
                "increment" | "show" => Some(m.clone()),
                other => {
                    self.note(id, "counterMode", Msg::UnknownCounterMode(other.to_owned()));
                    None
                }
            },
            Some(serde_json::Value::String(_)) | None | Some(serde_json::Value::Null) => {
                self.note(id, "counterMode", Msg::Required("counterMode"));
                None
            }
            Some(other) => {
                self.note(
                    id,
                    "counterMode",
                    Msg::UnknownCounterMode(other.to_string()),
                );
                None
            }
        };
        let mut names = Vec::new();
        match props.and_then(|p| p.get("counterNames")) {
            Some(serde_json::Value::Array(list)) if !list.is_empty() => {
                if list.len() > MAX_COUNTER_NAMES {
                    self.note(
                        id,
                        "counterNames",
                        Msg::Invalid("counterNames", Issue::TooLong(MAX_COUNTER_NAMES)),
                    );
                }
                for n in list {
                    match n {
                        serde_json::Value::String(n) if counter_name_ok(n) => names.push(n.clone()),
                        serde_json::Value::String(n) => {
                            self.note(id, "counterNames", Msg::CounterName(n.clone()));
                        }
                        other => self.note(id, "counterNames", Msg::CounterName(other.to_string())),
                    }
                }
            }
            _ => self.note(id, "counterNames", Msg::Required("counterNames")),
        }
        match mode.as_deref() {
            Some("increment") => {
                if names.len() > 1 {
                    self.note(id, "counterNames", Msg::CounterIncrementOne);
                    return None;
                }
                names.pop().map(CounterMode::Increment)
            }
            Some(_) if !names.is_empty() => Some(CounterMode::Show(names)),
            _ => None,
        }
    }

    fn custom_tag(&mut self, id: &str, s: &BlockSpec) -> Option<CustomTag> {
        let name = self.required(id, "tagName", &s.tag_name)?;
        let Some(tag) = CustomTagName::parse(name.trim()) else {
            self.note(id, "tagName", Msg::UnknownTag(name.to_owned()));
            return None;
        };
        let args = self.required(id, "tagArgs", &s.tag_args)?;
        match parse_tag_args(tag, args) {
            Ok(t) => Some(t),
            Err(issue) => {
                self.note(id, "tagArgs", Msg::TagArgs(tag, issue));
                None
            }
        }
    }
}

/// Checks a catalogue filter's argument; the argument to write (trimmed where the rule is
/// numeric), or the problem. Over 80 lines because it is one arm per argument rule, each a
/// few lines sharing the checks above the match; the rules read best side by side.
pub fn filter_arg(f: CatalogFilter, arg: Option<&str>) -> Result<Option<String>, Msg> {
    let name = f.as_str().to_owned();
    let arg = arg.filter(|a| !a.is_empty());
    let rule = f.arg();
    let bad = || Msg::FilterArg(name.clone(), rule);
    let int_ok = |s: &str, max: usize| {
        let d = s.strip_prefix('-').unwrap_or(s);
        !d.is_empty() && d.len() <= max && d.bytes().all(|b| b.is_ascii_digit())
    };
    let text_ok = |s: &str| -> Result<(), Msg> {
        check_text(s, MAX_ARG_CHARS).map_err(|e| Msg::Invalid("args", e))
    };
    match rule {
        ArgRule::None => match arg {
            None => Ok(None),
            Some(_) => Err(Msg::FilterArgNotTaken(name)),
        },
        ArgRule::OptionalInteger => match arg.map(str::trim) {
            None => Ok(None),
            Some(a) if int_ok(a, 3) => Ok(Some(a.to_owned())),
            Some(_) => Err(bad()),
        },
        _ if arg.is_none() => Err(Msg::FilterArgMissing(name)),
        ArgRule::Number => {
            let a = arg.unwrap_or_default().trim();
            let (int, frac) = a.split_once('.').unwrap_or((a, "0"));
            if int_ok(int, 18)
                && !frac.is_empty()
                && frac.len() <= 18
                && frac.bytes().all(|b| b.is_ascii_digit())
            {
                Ok(Some(a.to_owned()))
            } else {
                Err(bad())
            }
        }
        ArgRule::Range => {
            let a = arg.unwrap_or_default().trim();
            match a.split_once(':') {
                Some((s, e))
                    if (s.is_empty() || int_ok(s, 9)) && (e.is_empty() || int_ok(e, 9)) =>
                {
                    Ok(Some(a.to_owned()))
                }
                _ => Err(bad()),
            }
        }
        ArgRule::Pair => {
            let a = arg.unwrap_or_default();
            text_ok(a)?;
            if a.contains(':') {
                Ok(Some(a.to_owned()))
            } else {
                Err(bad())
            }
        }
        ArgRule::FieldValue => {
            let a = arg.unwrap_or_default();
            match a.split_once(':') {
                Some((field, value)) if field_name_ok(field) => {
                    if !value.is_empty() {
                        check_text(value, MAX_ARG_CHARS).map_err(|e| Msg::Invalid("args", e))?;
                    }
                    Ok(Some(a.to_owned()))
                }
                _ => Err(bad()),
            }
        }
        ArgRule::Field => {
            let a = arg.unwrap_or_default().trim();
            if field_name_ok(a) {
                Ok(Some(a.to_owned()))
            } else {
                Err(bad())
            }
        }
        ArgRule::Text => {
            let a = arg.unwrap_or_default();
            text_ok(a)?;
            Ok(Some(a.to_owned()))
        }
    }
}

/// Parses `tagArgs` by the tag's grammar (see [`CustomTagName::grammar`]).
pub fn parse_tag_args(tag: CustomTagName, text: &str) -> Result<CustomTag, Option<Issue>> {
    check_text(text, MAX_EXPRESSION_CHARS).map_err(Some)?;
    if tag == CustomTagName::Calc {
        return parse_calc(text).map(CustomTag::Calc).map_err(Some);
    }
    let toks = expr::lex(text).map_err(Some)?;
    let mut c = TagCursor {
        toks: &toks,
        pos: 0,
    };
    let collection = c.expression()?;
    match tag {
        CustomTagName::CountBy => {
            let condition = c.condition()?;
            c.end()?;
            Ok(CustomTag::Aggregate {
                tag,
                collection,
                field: None,
                condition,
            })
        }
        CustomTagName::LastItemByGroup => {
            c.word("group_by")?;
            let groups = c.string()?;
            let group_by: Vec<String> = groups.split(',').map(|f| f.trim().to_owned()).collect();
            if group_by.iter().any(|f| !field_name_ok(f)) {
                return Err(None);
            }
            c.word("order_by")?;
            let order_by = c.string()?;
            if !field_name_ok(&order_by) {
                return Err(None);
            }
            let condition = c.condition()?;
            if !c.keyword("as") {
                return Err(None);
            }
            let Some(Tok::Ident(name)) = c.toks.get(c.pos) else {
                return Err(None);
            };
            check_binding(name).map_err(Some)?;
            c.pos += 1;
            c.end()?;
            Ok(CustomTag::LastItemByGroup {
                collection,
                group_by,
                order_by,
                condition,
                as_name: name.clone(),
            })
        }
        _ => {
            c.word("by")?;
            let field = c.string()?;
            if !field_name_ok(&field) {
                return Err(None);
            }
            let condition = c.condition()?;
            c.end()?;
            Ok(CustomTag::Aggregate {
                tag,
                collection,
                field: Some(field),
                condition,
            })
        }
    }
}

struct TagCursor<'t> {
    toks: &'t [Tok],
    pos: usize,
}

impl TagCursor<'_> {
    fn expression(&mut self) -> Result<Expression, Option<Issue>> {
        let rest = self.toks.get(self.pos..).unwrap_or_default();
        let (tree, used) = expr::parse_prefix(rest).map_err(Some)?;
        let text = expr::print(rest.get(..used).unwrap_or_default());
        self.pos += used;
        Ok(Expression { tree, text })
    }
    fn word(&mut self, w: &str) -> Result<(), Option<Issue>> {
        match self.toks.get(self.pos) {
            Some(Tok::Ident(x)) if x == w => {
                self.pos += 1;
                Ok(())
            }
            _ => Err(None),
        }
    }
    fn keyword(&mut self, w: &str) -> bool {
        if matches!(self.toks.get(self.pos), Some(Tok::Kw(x)) if x == w) {
            self.pos += 1;
            return true;
        }
        false
    }
    fn string(&mut self) -> Result<String, Option<Issue>> {
        match self.toks.get(self.pos) {
            Some(Tok::Str(s)) => {
                self.pos += 1;
                Ok(s.clone())
            }
            _ => Err(None),
        }
    }
    fn condition(&mut self) -> Result<Option<Expression>, Option<Issue>> {
        if matches!(self.toks.get(self.pos), Some(Tok::Ident(x)) if x == "if") {
            self.pos += 1;
            return self.expression().map(Some);
        }
        Ok(None)
    }
    fn end(&self) -> Result<(), Option<Issue>> {
        match self.toks.get(self.pos) {
            None => Ok(()),
            Some(_) => Err(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(t: &str) -> BlockSpec {
        BlockSpec {
            block_type: Some(t.into()),
            ..Default::default()
        }
    }

    #[test]
    fn ids_and_unknown_types() {
        let (_, f) = convert(&[spec("nope"), spec("text")]);
        assert_eq!(
            f[0],
            Finding::new("block-0", "type", Msg::UnknownType("nope".into()))
        );
        assert_eq!(
            f[1],
            Finding::new("block-1", "content", Msg::Required("content"))
        );
        let mut loop_ = spec("loop");
        loop_.children = Some(vec![spec("text")]);
        let (_, f) = convert(&[loop_]);
        assert!(f.contains(&Finding::new(
            "block-0-0",
            "content",
            Msg::Required("content")
        )));
        assert!(f.contains(&Finding::new(
            "block-0",
            "iterator",
            Msg::Required("iterator")
        )));
    }

    #[test]
    fn limits() {
        let mut b = spec("text");
        b.content = Some("leaf".into());
        for _ in 0..=MAX_DEPTH {
            let mut s = spec("section");
            s.children = Some(vec![b]);
            b = s;
        }
        // MAX_DEPTH + 1 sections around a leaf: the leaf is at depth MAX_DEPTH + 1.
        let found = check_limits(&[b.clone()]).unwrap();
        assert_eq!(found.msg, Msg::DepthExceeded(MAX_DEPTH));
        let inner = b.children.clone().unwrap();
        assert!(check_limits(&inner).is_none());
        let many = vec![spec("comment"); MAX_BLOCKS + 1];
        assert_eq!(
            check_limits(&many).unwrap().msg,
            Msg::TooManyBlocks(MAX_BLOCKS)
        );
        assert!(check_limits(&many[..MAX_BLOCKS]).is_none());
    }

    #[test]
    fn filter_args() {
        use CatalogFilter as F;
        assert_eq!(filter_arg(F::Length, None), Ok(None));
        assert!(filter_arg(F::Length, Some("1")).is_err());
        assert_eq!(filter_arg(F::Floatformat, Some("2")), Ok(Some("2".into())));
        assert!(filter_arg(F::Floatformat, Some("x")).is_err());
        assert!(filter_arg(F::PercentOf, Some("1000.5")).is_ok());
        assert!(filter_arg(F::PercentOf, Some("total")).is_err());
        assert!(filter_arg(F::SliceStr, Some("0:5")).is_ok());
        assert!(filter_arg(F::SliceStr, Some(":-2")).is_ok());
        assert!(filter_arg(F::SliceStr, Some("a:b")).is_err());
        assert!(filter_arg(F::Replace, Some("x\" |safe:y")).is_ok());
        assert!(filter_arg(F::Replace, Some("{{x}}:y")).is_err());
        assert!(filter_arg(F::Where, Some("status:active")).is_ok());
        assert!(filter_arg(F::Where, Some("a.b:active")).is_err());
        assert!(filter_arg(F::Sum, Some("amount")).is_ok());
        assert!(filter_arg(F::Sum, Some("amount\"")).is_err());
        assert!(filter_arg(F::Date, None).is_err());
        assert!(filter_arg(F::Date, Some("02/01/2006")).is_ok());
    }

    #[test]
    fn tag_args() {
        use CustomTagName as T;
        assert!(parse_tag_args(T::SumBy, "rows by \"amount\" if status == \"x\"").is_ok());
        assert!(parse_tag_args(T::SumBy, "rows by amount").is_err());
        assert!(parse_tag_args(T::SumBy, "rows by \"amount\" extra").is_err());
        assert!(parse_tag_args(T::CountBy, "rows").is_ok());
        assert!(
            parse_tag_args(
                T::LastItemByGroup,
                "ds.op group_by \"account_id,route\" order_by \"created_at\" if route as last"
            )
            .is_ok()
        );
        assert!(parse_tag_args(T::LastItemByGroup, "ds.op group_by \"a\" order_by \"b\"").is_err());
        assert!(parse_tag_args(T::Calc, "1 + x.y * 2").is_ok());
        assert!(parse_tag_args(T::SumBy, "rows by \"a\" %} {{ x").is_err());
    }
}
