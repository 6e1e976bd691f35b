//! How user text reaches generated code without ever becoming template syntax.
//!
//! Two contexts exist in generated code:
//! - **literal text** (text blocks): every `{` that could open a tag, a variable or a comment
//!   (`{{`, `{%`, `{#`, and a `{` at the very end, which the next block could complete) is
//!   written with Pongo2's `templatetag` tag, so it prints verbatim and never opens code (the
//!   output clean-up of trailing zeros still applies to it, as to all output);
//! - **string literals** inside code (filter arguments, formats, counter names, strings in
//!   expressions): written in double quotes with `\` and `"` escaped, the only escapes the
//!   language has. Strings that cannot be represented (a line break, a control character) and
//!   strings carrying template delimiters are refused by validation before generation.

/// The six delimiters of the template language.
pub const DELIMITERS: [&str; 6] = ["{{", "}}", "{%", "%}", "{#", "#}"];

/// True when `s` contains a template delimiter.
pub fn has_delimiter(s: &str) -> bool {
    DELIMITERS.iter().any(|d| s.contains(d))
}

/// True when `s` contains a line break or another control character (a tab is allowed).
pub fn has_control(s: &str) -> bool {
    s.chars().any(|c| c.is_control() && c != '\t')
}

/// Writes `text` as literal template text: the result renders exactly as `text`.
pub fn escape_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '{' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('{') => {
                chars.next();
                out.push_str("{% templatetag openvariable %}");
            }
            Some('%') => {
                chars.next();
                out.push_str("{% templatetag openblock %}");
            }
            Some('#') => {
                chars.next();
                out.push_str("{% templatetag opencomment %}");
            }
            None => out.push_str("{% templatetag openbrace %}"),
            Some(_) => out.push('{'),
        }
    }
    out
}

/// A double-quoted string literal of the template language whose value is `s`.
///
/// The caller MUST have refused line breaks and control characters (see [`has_control`]):
/// the language has no escape for them.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_never_opens_code() {
        assert_eq!(escape_text("plain {x} }}"), "plain {x} }}");
        assert_eq!(
            escape_text("{{ secret }}"),
            "{% templatetag openvariable %} secret }}"
        );
        assert_eq!(
            escape_text("a{%b{#c"),
            "a{% templatetag openblock %}b{% templatetag opencomment %}c"
        );
        assert_eq!(
            escape_text("{{{"),
            "{% templatetag openvariable %}{% templatetag openbrace %}"
        );
        assert_eq!(escape_text("ends {"), "ends {% templatetag openbrace %}");
        assert_eq!(escape_text("é{ü"), "é{ü");
        // No output of escape_text contains an opener the user wrote.
        for s in ["{", "{{", "{%", "{#", "x{", "{{%#{"] {
            let e = escape_text(s);
            let stripped = e
                .replace("{% templatetag openvariable %}", "")
                .replace("{% templatetag openblock %}", "")
                .replace("{% templatetag opencomment %}", "")
                .replace("{% templatetag openbrace %}", "");
            assert!(
                !stripped.contains("{{") && !stripped.contains("{%") && !stripped.contains("{#")
            );
            assert!(!stripped.ends_with('{'), "{s}");
        }
    }

    #[test]
    fn quoting() {
        assert_eq!(quote("a"), "\"a\"");
        assert_eq!(quote(r#"x" |safe"#), r#""x\" |safe""#);
        assert_eq!(quote(r"a\b"), r#""a\\b""#);
        assert!(has_delimiter("a %} b"));
        assert!(!has_delimiter("a % } b"));
        assert!(has_control("a\nb"));
        assert!(!has_control("a\tb"));
    }
}
