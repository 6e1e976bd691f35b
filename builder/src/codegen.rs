//! Code generation: valid blocks → template source in the original's dialect.
//!
//! Layout follows the original's generator: a block is written on its own line (the code and
//! a line break) unless it is `inline`; the tags of loops, conditionals and `with`
//! take a line each and their children are indented by four spaces (not when the tags trim
//! whitespace, whose children start at column 0); an inline conditional is written on one
//! line. Differences: indentation is used only for html, pdf and xml, where it does not change
//! what a reader sees (in csv and txt every space is output), and only at the start of a line
//! (the original also indents an inline block's successor in the middle of a line, and never
//! an inline block that starts one); an html/pdf template gets the
//! original's `<html>` wrapper only when the blocks do not write their own, an xml one the
//! XML declaration only when they do not start with one.
use super::escape::{escape_text, quote};
use super::model::{CounterMode, CustomTag, Node, NodeKind};
use reporter_ports::template::OutputFormat;

const INDENT: usize = 4;

/// Writes the template for `nodes` in `format` (no wrapper and no indentation without one).
pub fn generate(nodes: &[Node], format: Option<OutputFormat>) -> String {
    let step = match format {
        Some(OutputFormat::Html | OutputFormat::Pdf | OutputFormat::Xml) => INDENT,
        _ => 0,
    };
    let mut w = Writer {
        out: String::new(),
        step,
    };
    w.nodes(nodes, 0);
    wrap(w.out, format)
}

fn wrap(body: String, format: Option<OutputFormat>) -> String {
    match format {
        Some(OutputFormat::Html | OutputFormat::Pdf) => {
            let lower = body.to_ascii_lowercase();
            if lower.contains("<html") || lower.contains("<!doctype html") {
                body
            } else {
                format!(
                    "<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"UTF-8\">\n</head>\n<body>\n{body}</body>\n</html>\n"
                )
            }
        }
        Some(OutputFormat::Xml) => {
            if body.trim_start().starts_with("<?xml") {
                body
            } else {
                format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{body}")
            }
        }
        _ => body,
    }
}

fn tag(trim: bool, content: &str) -> String {
    if trim {
        format!("{{%- {content} -%}}")
    } else {
        format!("{{% {content} %}}")
    }
}

fn print(content: &str) -> String {
    format!("{{{{ {content} }}}}")
}

struct Writer {
    out: String,
    step: usize,
}

impl Writer {
    /// Writes `content`, indented when it starts a line, and ended by a line break unless
    /// inline.
    fn line(&mut self, content: &str, indent: usize, inline: bool) {
        if self.out.is_empty() || self.out.ends_with('\n') {
            for _ in 0..indent {
                self.out.push(' ');
            }
        }
        self.out.push_str(content);
        if !inline {
            self.out.push('\n');
        }
    }

    fn nodes(&mut self, nodes: &[Node], indent: usize) {
        for n in nodes {
            self.node(n, indent);
        }
    }

    fn body(&mut self, trim: bool, indent: usize) -> usize {
        if trim { 0 } else { indent + self.step }
    }

    /// Emits one node. Long by design: one arm per block type, each the exact text it
    /// generates.
    fn node(&mut self, n: &Node, indent: usize) {
        match &n.kind {
            NodeKind::Text { content, inline } => {
                self.line(&escape_text(content), indent, *inline);
            }
            NodeKind::Variable {
                path,
                filters,
                inline,
            } => {
                let mut e = path.text();
                for f in filters {
                    e.push('|');
                    e.push_str(f.filter.as_str());
                    if let Some(a) = &f.arg {
                        e.push(':');
                        e.push_str(&quote(a));
                    }
                }
                self.line(&print(&e), indent, *inline);
            }
            NodeKind::Loop {
                iterator,
                collection,
                children,
                trim,
            } => {
                let open = tag(*trim, &format!("for {iterator} in {}", collection.text()));
                self.line(&open, indent, false);
                let inner = self.body(*trim, indent);
                self.nodes(children, inner);
                self.line(&tag(*trim, "endfor"), indent, false);
            }
            NodeKind::Conditional {
                branches,
                otherwise,
                inline,
                trim,
            } => {
                let inner = if *inline { 0 } else { self.body(*trim, indent) };
                for (i, b) in branches.iter().enumerate() {
                    let word = if i == 0 { "if" } else { "elif" };
                    let t = tag(*trim, &format!("{word} {}", b.condition.text));
                    self.line(&t, indent, *inline);
                    self.nodes(&b.children, inner);
                }
                if !otherwise.is_empty() {
                    self.line(&tag(*trim, "else"), indent, *inline);
                    self.nodes(otherwise, inner);
                }
                self.line(&tag(*trim, "endif"), indent, *inline);
            }
            NodeKind::Aggregation {
                collection,
                function,
                arg,
                inline,
            } => {
                let e = format!(
                    "{}|{}:{}",
                    collection.text(),
                    function.filter().as_str(),
                    quote(arg)
                );
                self.line(&print(&e), indent, *inline);
            }
            NodeKind::Calculation {
                path,
                function,
                inline,
            } => {
                let e = format!("{}|{}", path.text(), function.as_str());
                self.line(&print(&e), indent, *inline);
            }
            NodeKind::DateTime {
                path,
                format,
                inline,
                trim,
            } => {
                let code = match path {
                    Some(p) => print(&format!("{}|date:{}", p.text(), quote(format))),
                    None => tag(*trim, &format!("date_time {}", quote(format))),
                };
                self.line(&code, indent, *inline);
            }
            NodeKind::Counter { mode, inline, trim } => {
                let code = match mode {
                    CounterMode::Increment(name) => tag(*trim, &format!("counter {}", quote(name))),
                    CounterMode::Show(names) => {
                        let quoted: Vec<String> = names.iter().map(|n| quote(n)).collect();
                        tag(*trim, &format!("counter_show {}", quoted.join(" ")))
                    }
                };
                self.line(&code, indent, *inline);
            }
            NodeKind::Comment { content, inline } => {
                self.line(&format!("{{# {content} #}}"), indent, *inline);
            }
            NodeKind::Section { children } => self.nodes(children, indent),
            NodeKind::With {
                variable,
                assignment,
                children,
                trim,
            } => {
                let open = tag(*trim, &format!("with {variable} = {}", assignment.text));
                self.line(&open, indent, false);
                let inner = self.body(*trim, indent);
                self.nodes(children, inner);
                self.line(&tag(*trim, "endwith"), indent, false);
            }
            NodeKind::Expression { expr, inline } => {
                self.line(&print(&expr.text), indent, *inline);
            }
            NodeKind::CustomTag {
                tag: t,
                inline,
                trim,
            } => {
                self.line(&tag(*trim, &custom_tag(t)), indent, *inline);
            }
        }
    }
}

fn custom_tag(t: &CustomTag) -> String {
    match t {
        CustomTag::Aggregate {
            tag,
            collection,
            field,
            condition,
        } => {
            let mut s = format!("{} {}", tag.as_str(), collection.text);
            if let Some(f) = field {
                s.push_str(" by ");
                s.push_str(&quote(f));
            }
            if let Some(c) = condition {
                s.push_str(" if ");
                s.push_str(&c.text);
            }
            s
        }
        CustomTag::Calc(c) => format!("calc {}", c.text),
        CustomTag::LastItemByGroup {
            collection,
            group_by,
            order_by,
            condition,
            as_name,
        } => {
            let mut s = format!(
                "last_item_by_group {} group_by {} order_by {}",
                collection.text,
                quote(&group_by.join(",")),
                quote(order_by)
            );
            if let Some(c) = condition {
                s.push_str(" if ");
                s.push_str(&c.text);
            }
            s.push_str(" as ");
            s.push_str(as_name);
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::specs_from_json;
    use super::super::validate::convert;
    use super::*;

    fn code(blocks: serde_json::Value, format: Option<OutputFormat>) -> String {
        let (nodes, findings) = convert(&specs_from_json(blocks));
        assert!(findings.is_empty(), "{findings:?}");
        generate(&nodes, format)
    }

    #[test]
    fn the_originals_layout() {
        let blocks = serde_json::json!([
            {"type": "loop", "iterator": "item", "collection": "items", "children": [
                {"type": "variable", "variable": "item.name"}
            ]},
            {"type": "conditional", "condition": "x > 0", "trimWhitespace": true, "children": [
                {"type": "text", "content": "yes"}
            ]},
            {"type": "conditional", "condition": "a == \"1\"", "inline": true,
             "children": [{"type": "text", "content": "1", "inline": true}],
             "elifBranches": [{"condition": "a == \"2\"", "children": [{"type": "text", "content": "2", "inline": true}]}],
             "elseChildren": [{"type": "text", "content": "3", "inline": true}]},
            {"type": "text", "content": "\n"},
            {"type": "counter", "properties": {"counterMode": "show", "counterNames": ["a", "b"]}},
            {"type": "custom_tag", "tagName": "sum_by", "tagArgs": "ops by 'value' if status == \"x\"", "inline": true}
        ]);
        assert_eq!(
            code(blocks.clone(), Some(OutputFormat::Html)),
            "<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"UTF-8\">\n</head>\n<body>\n\
             {% for item in items %}\n    {{ item.name }}\n{% endfor %}\n\
             {%- if x > 0 -%}\nyes\n{%- endif -%}\n\
             {% if a == \"1\" %}1{% elif a == \"2\" %}2{% else %}3{% endif %}\n\n\
             {% counter_show \"a\" \"b\" %}\n\
             {% sum_by ops by \"value\" if status == \"x\" %}</body>\n</html>\n"
        );
        assert!(
            code(blocks, Some(OutputFormat::Txt))
                .starts_with("{% for item in items %}\n{{ item.name }}\n")
        );
    }

    #[test]
    fn user_strings_are_escaped() {
        let got = code(
            serde_json::json!([
                {"type": "text", "content": "{{ secret }} {% x %} {# y"},
                {"type": "variable", "variable": "name", "filters": [{"name": "replace", "args": "x\" |safe:y"}]},
                {"type": "date_time", "format": "dd\\\"MM"}
            ]),
            None,
        );
        assert_eq!(
            got,
            "{% templatetag openvariable %} secret }} {% templatetag openblock %} x %} {% templatetag opencomment %} y\n\
             {{ name|replace:\"x\\\" |safe:y\" }}\n\
             {% date_time \"dd\\\\\\\"MM\" %}\n"
        );
    }

    #[test]
    fn wrappers_are_not_doubled() {
        let got = code(
            serde_json::json!([{"type": "text", "content": "<?xml version=\"1.0\"?><a/>"}]),
            Some(OutputFormat::Xml),
        );
        assert_eq!(got, "<?xml version=\"1.0\"?><a/>\n");
        let got = code(
            serde_json::json!([{"type": "text", "content": "<html><body>x</body></html>"}]),
            Some(OutputFormat::Pdf),
        );
        assert_eq!(got, "<html><body>x</body></html>\n");
    }
}
