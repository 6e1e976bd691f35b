//! Mapped-field extraction: which `datasource.table.field` a template source reads.
//!
//! The template language is Jinja-like (the worker renders with minijinja). Extraction
//! understands:
//! - `{{ ds.table.field }}` and any `ds.table.field` path inside `{{ }}` or `{% %}`;
//! - loop and assignment aliases: `{% for row in ds.table %}…{{ row.field }}`,
//!   `{% set rows = ds.table %}`, `{% with rows = ds.table %}`;
//! - field names passed as string arguments to the aggregation helpers, whether written as a
//!   filter (`ds.table|sum("amount")`, `|where("status", "paid")`, `|count("k", v)`) or a
//!   function (`sum_by(ds.table, "amount")`, `last_item_by_group(rows, "acct", "date")`);
//! - schema-qualified tables written `ds.schema__table`.
//!
//! Comments (`{# #}`) and string literals are skipped. Loop variables, `set`/`with` locals,
//! macro parameters and engine builtins (`loop`, `range`, …) are not data references.
use crate::template::MappedFields;
use std::collections::{BTreeSet, HashMap, HashSet};

/// Why a template source could not be scanned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SyntaxError {
    /// A `{{`, `{%` or `{#` without its closing delimiter.
    #[error("unclosed '{open}' opened on line {line}")]
    Unclosed {
        /// The delimiter.
        open: &'static str,
        /// 1-based line.
        line: usize,
    },
    /// A string literal without its closing quote.
    #[error("unterminated string on line {line}")]
    UnterminatedString {
        /// 1-based line.
        line: usize,
    },
}

/// Names of helpers whose string arguments after the collection are field names.
const FIELD_HELPERS: &[&str] = &[
    "sum",
    "where",
    "count",
    "sum_by",
    "count_by",
    "avg_by",
    "min_by",
    "max_by",
    "last_item_by_group",
];
const BUILTINS: &[&str] = &[
    "loop",
    "range",
    "self",
    "super",
    "varargs",
    "kwargs",
    "namespace",
    "true",
    "false",
    "none",
    "True",
    "False",
    "None",
    "caller",
    "counter",
    "counter_show",
    "now",
    "date_time",
    "calc",
];
const KEYWORDS: &[&str] = &[
    "in",
    "and",
    "or",
    "not",
    "is",
    "if",
    "else",
    "by",
    "as",
    "recursive",
    "with",
    "without",
    "context",
];

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Path(Vec<String>),
    Str(String),
    Punct(char),
    Other,
}

/// Extracts the mapped fields a template source reads. Returns the syntax problem if the
/// delimiters or strings are unbalanced.
pub fn extract_mapped_fields(source: &str) -> Result<MappedFields, SyntaxError> {
    let mut out = MappedFields::new();
    let mut aliases: HashMap<String, (String, String)> = HashMap::new();
    let mut locals: HashSet<String> = HashSet::new();
    for (kind, body, line) in blocks(source)? {
        let toks = tokenize(body, line)?;
        if kind == BlockKind::Statement {
            declare(&toks, &mut aliases, &mut locals, &mut out);
        }
        collect(&toks, &aliases, &locals, &mut out);
    }
    Ok(out)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    Expression,
    Statement,
}

fn line_of(source: &str, byte: usize) -> usize {
    source[..byte].bytes().filter(|b| *b == b'\n').count() + 1
}

fn blocks(source: &str) -> Result<Vec<(BlockKind, &str, usize)>, SyntaxError> {
    let mut out = Vec::new();
    let mut rest = 0;
    while let Some(pos) = source[rest..].find('{') {
        let start = rest + pos;
        let next = source[start + 1..].chars().next();
        let (open, close, kind) = match next {
            Some('{') => ("{{", "}}", Some(BlockKind::Expression)),
            Some('%') => ("{%", "%}", Some(BlockKind::Statement)),
            Some('#') => ("{#", "#}", None),
            _ => {
                rest = start + 1;
                continue;
            }
        };
        let body_start = start + 2;
        let Some(end) = find_close(&source[body_start..], close) else {
            return Err(SyntaxError::Unclosed {
                open,
                line: line_of(source, start),
            });
        };
        if let Some(kind) = kind {
            out.push((
                kind,
                &source[body_start..body_start + end],
                line_of(source, start),
            ));
        }
        rest = body_start + end + 2;
    }
    Ok(out)
}

/// Finds the closing delimiter, skipping quoted strings.
fn find_close(body: &str, close: &str) -> Option<usize> {
    let bytes = body.as_bytes();
    let mut i = 0;
    let mut quote: Option<u8> = None;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) if b == b'\\' => {
                let _ = q;
                i += 2;
                continue;
            }
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'"' || b == b'\'' => quote = Some(b),
            None if body[i..].starts_with(close) => return Some(i),
            None => {}
        }
        i += 1;
    }
    None
}

fn tokenize(body: &str, line: usize) -> Result<Vec<Tok>, SyntaxError> {
    let chars: Vec<char> = body.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() || c == '-' && (i == 0 || i + 1 == chars.len()) || c == '+' && i == 0 {
            i += 1;
        } else if c == '"' || c == '\'' {
            let mut s = String::new();
            i += 1;
            loop {
                match chars.get(i) {
                    None => return Err(SyntaxError::UnterminatedString { line }),
                    Some('\\') => {
                        if let Some(n) = chars.get(i + 1) {
                            s.push(*n);
                        }
                        i += 2;
                    }
                    Some(q) if *q == c => {
                        i += 1;
                        break;
                    }
                    Some(other) => {
                        s.push(*other);
                        i += 1;
                    }
                }
            }
            toks.push(Tok::Str(s));
        } else if c.is_alphabetic() || c == '_' {
            let mut parts = Vec::new();
            let mut cur = String::new();
            while i < chars.len() {
                let d = chars[i];
                if d.is_alphanumeric() || d == '_' {
                    cur.push(d);
                    i += 1;
                } else if d == '.'
                    && chars
                        .get(i + 1)
                        .is_some_and(|n| n.is_alphabetic() || *n == '_')
                {
                    parts.push(std::mem::take(&mut cur));
                    i += 1;
                } else {
                    break;
                }
            }
            parts.push(cur);
            toks.push(Tok::Path(parts));
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
            toks.push(Tok::Other);
        } else if matches!(c, '=' | '!' | '<' | '>') && chars.get(i + 1) == Some(&'=') {
            // Comparison operators are not assignments.
            toks.push(Tok::Other);
            i += 2;
        } else {
            toks.push(Tok::Punct(c));
            i += 1;
        }
    }
    Ok(toks)
}

/// Resolves a path that names a table: `ds.table` or an alias bound to one.
fn table_of(
    path: &[String],
    aliases: &HashMap<String, (String, String)>,
    locals: &HashSet<String>,
) -> Option<(String, String)> {
    match path {
        [alias] => aliases.get(alias).cloned(),
        [ds, table] if !is_reserved(ds, aliases, locals) => Some((ds.clone(), table.clone())),
        _ => None,
    }
}

fn is_reserved(
    head: &str,
    aliases: &HashMap<String, (String, String)>,
    locals: &HashSet<String>,
) -> bool {
    aliases.contains_key(head)
        || locals.contains(head)
        || BUILTINS.contains(&head)
        || KEYWORDS.contains(&head)
}

fn add(out: &mut MappedFields, ds: &str, table: &str, field: Option<&str>) {
    let fields: &mut BTreeSet<String> = out
        .entry(ds.to_owned())
        .or_default()
        .entry(table.to_owned())
        .or_default();
    if let Some(f) = field {
        fields.insert(f.to_owned());
    }
}

/// Handles `for`, `set`, `with` and `macro` declarations.
fn declare(
    toks: &[Tok],
    aliases: &mut HashMap<String, (String, String)>,
    locals: &mut HashSet<String>,
    out: &mut MappedFields,
) {
    let Some(Tok::Path(first)) = toks.first() else {
        return;
    };
    let keyword = first.join(".");
    match keyword.as_str() {
        "for" => {
            let Some(in_pos) = toks.iter().position(|t| *t == Tok::Path(vec!["in".into()])) else {
                return;
            };
            let names: Vec<String> = toks[1..in_pos]
                .iter()
                .filter_map(|t| match t {
                    Tok::Path(p) if p.len() == 1 => Some(p[0].clone()),
                    _ => None,
                })
                .collect();
            let source = match toks.get(in_pos + 1) {
                Some(Tok::Path(p)) => table_of(p, aliases, locals),
                _ => None,
            };
            match (names.as_slice(), source) {
                ([single], Some((ds, table))) => {
                    add(out, &ds, &table, None);
                    aliases.insert(single.clone(), (ds, table));
                }
                _ => locals.extend(names),
            }
        }
        "set" | "with" => {
            // set x = expr  |  with x = expr, y = expr
            let mut i = 1;
            while i < toks.len() {
                if let (Some(Tok::Path(name)), Some(Tok::Punct('='))) =
                    (toks.get(i), toks.get(i + 1))
                {
                    if name.len() == 1 {
                        let bound = match toks.get(i + 2) {
                            Some(Tok::Path(p))
                                if !matches!(
                                    toks.get(i + 3),
                                    Some(Tok::Punct('|')) | Some(Tok::Punct('('))
                                ) =>
                            {
                                table_of(p, aliases, locals)
                            }
                            _ => None,
                        };
                        match bound {
                            Some(t) => {
                                aliases.insert(name[0].clone(), t);
                            }
                            None => {
                                locals.insert(name[0].clone());
                            }
                        }
                    }
                    i += 2;
                } else {
                    i += 1;
                }
            }
        }
        "macro" => {
            for t in &toks[1..] {
                if let Tok::Path(p) = t
                    && p.len() == 1
                {
                    locals.insert(p[0].clone());
                }
            }
        }
        _ => {}
    }
}

fn collect(
    toks: &[Tok],
    aliases: &HashMap<String, (String, String)>,
    locals: &HashSet<String>,
    out: &mut MappedFields,
) {
    let is_stmt_keyword = matches!(toks.first(), Some(Tok::Path(p)) if p.len() == 1 && matches!(p[0].as_str(),
        "for" | "endfor" | "if" | "elif" | "else" | "endif" | "set" | "endset" | "with" | "endwith" | "macro" | "endmacro"
        | "block" | "endblock" | "filter" | "endfilter" | "raw" | "endraw" | "autoescape" | "endautoescape" | "call" | "endcall"));
    for (i, tok) in toks.iter().enumerate() {
        let Tok::Path(path) = tok else { continue };
        if i == 0 && is_stmt_keyword {
            continue;
        }
        let prev = if i > 0 { toks.get(i - 1) } else { None };
        let next = toks.get(i + 1);
        // A filter name (`|name`), a test name (`is name`), an attribute after `)` / `]`, a
        // function name (`name(`) or a keyword argument (`name=`) is not a data path.
        if matches!(prev, Some(Tok::Punct('|')))
            || matches!(prev, Some(Tok::Path(p)) if p.len() == 1 && p[0] == "is")
            || matches!(next, Some(Tok::Punct('(')))
            || matches!(next, Some(Tok::Punct('=')))
        {
            if matches!(prev, Some(Tok::Punct('|'))) || matches!(next, Some(Tok::Punct('('))) {
                helper_fields(path, toks, i, aliases, locals, out);
            }
            continue;
        }
        let head = &path[0];
        if let Some((ds, table)) = aliases.get(head) {
            add(out, ds, table, path.get(1).map(String::as_str));
            continue;
        }
        if is_reserved(head, aliases, locals) {
            continue;
        }
        match path.len() {
            0 | 1 => {}
            2 => add(out, &path[0], &path[1], None),
            _ => add(out, &path[0], &path[1], Some(&path[2])),
        }
    }
}

/// For a helper name at `toks[i]`, adds its string arguments as fields of the collection it
/// applies to: the path before `|` for a filter, or the first argument for a function.
fn helper_fields(
    name: &[String],
    toks: &[Tok],
    i: usize,
    aliases: &HashMap<String, (String, String)>,
    locals: &HashSet<String>,
    out: &mut MappedFields,
) {
    if name.len() != 1 || !FIELD_HELPERS.contains(&name[0].as_str()) {
        return;
    }
    let is_filter = i >= 2 && toks[i - 1] == Tok::Punct('|');
    let (collection, args_from) = if is_filter {
        match &toks[i - 2] {
            Tok::Path(p) => (table_of(p, aliases, locals), i + 1),
            _ => (None, i + 1),
        }
    } else {
        match toks.get(i + 2) {
            Some(Tok::Path(p)) => (table_of(p, aliases, locals), i + 3),
            _ => (None, i + 2),
        }
    };
    let Some((ds, table)) = collection else {
        return;
    };
    // String arguments up to the closing parenthesis. `where`/`count` take (field, value):
    // only their first string is a field.
    let only_first = matches!(name[0].as_str(), "where" | "count");
    let mut depth = 0i32;
    let mut seen = 0;
    for t in &toks[args_from..] {
        match t {
            Tok::Punct('(') => depth += 1,
            Tok::Punct(')') => {
                depth -= 1;
                if depth <= 0 {
                    break;
                }
            }
            Tok::Str(s) if depth <= 1 => {
                if !(only_first && seen > 0) {
                    add(out, &ds, &table, Some(s));
                }
                seen += 1;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(src: &str) -> Vec<String> {
        let m = extract_mapped_fields(src).unwrap();
        let mut v = Vec::new();
        for (ds, tables) in m {
            for (t, fs) in tables {
                if fs.is_empty() {
                    v.push(format!("{ds}.{t}"));
                }
                for f in fs {
                    v.push(format!("{ds}.{t}.{f}"));
                }
            }
        }
        v
    }

    #[test]
    fn direct_paths_and_loops() {
        let src = "<html>{{ bank.accounts.name }}{% for row in bank.ledger %}{{ row.amount|floatformat(2) }} {{ row.date }}{% endfor %}{{ loop.index }}</html>";
        assert_eq!(
            fields(src),
            vec![
                "bank.accounts.name",
                "bank.ledger.amount",
                "bank.ledger.date"
            ]
        );
    }

    #[test]
    fn helpers_add_fields() {
        let src = r#"{{ bank.ledger|sum("amount") }} {{ sum_by(bank.ledger, "fee") }} {% set paid = bank.invoices %}{{ paid|where("status", "paid")|length }} {{ last_item_by_group(bank.ledger, "account", "date") }}"#;
        assert_eq!(
            fields(src),
            vec![
                "bank.invoices.status",
                "bank.ledger.account",
                "bank.ledger.amount",
                "bank.ledger.date",
                "bank.ledger.fee"
            ]
        );
    }

    #[test]
    fn comparisons_are_not_keyword_arguments() {
        let src = "{% for a in bank.acc %}{% for t in bank.tx if t.account == a.id %}{% if t.kind != 'x' and t.n >= 2 %}{{ t.amount }}{% endif %}{% endfor %}{% endfor %}";
        assert_eq!(
            fields(src),
            vec![
                "bank.acc.id",
                "bank.tx.account",
                "bank.tx.amount",
                "bank.tx.kind",
                "bank.tx.n"
            ]
        );
        // A keyword argument name is still not a data path.
        assert!(fields("{{ foo(width=3) }}").is_empty());
    }

    #[test]
    fn schema_tables_and_comments() {
        let src = "{# {{ x.y.z }} #}{{ pg.sales__orders.total }}{{ \"a.b.c\" }}";
        assert_eq!(fields(src), vec!["pg.sales__orders.total"]);
    }

    #[test]
    fn locals_are_not_sources() {
        let src = "{% set total = 3 %}{{ total.real }}{% for a, b in pairs %}{{ a.x.y }}{% endfor %}{% macro m(p) %}{{ p.q.r }}{% endmacro %}";
        assert!(fields(src).is_empty(), "{:?}", fields(src));
    }

    #[test]
    fn syntax_errors() {
        assert_eq!(
            extract_mapped_fields("a {{ b.c.d"),
            Err(SyntaxError::Unclosed {
                open: "{{",
                line: 1
            })
        );
        assert_eq!(
            extract_mapped_fields("\n{% if x %"),
            Err(SyntaxError::Unclosed {
                open: "{%",
                line: 2
            })
        );
        assert!(extract_mapped_fields("{{ 'abc }}").is_err());
        assert!(
            extract_mapped_fields("{ not a block } {}")
                .unwrap()
                .is_empty()
        );
    }
}
