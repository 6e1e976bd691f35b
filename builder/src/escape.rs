//! How user text reaches generated code without ever becoming template syntax.
//!
//! Two contexts exist in generated code:
//! - **literal text** (text blocks): every `{` that could open a tag, a variable or a comment
//!   (`{{`, `{%`, `{#`, and a `{` at the very end, which the next block could complete) is
//!   written with Pongo2's `templatetag` tag, so it prints verbatim and never opens code (the
//!   output clean-up of trailing zeros still applies to it, as to all output); and a `:` between
//!   two names (`bank:accounts.holder_name`) is preceded by an empty comment `{# #}`, so the
//!   engine's rewrite of schema references (`ds:schema.table` → `ds.schema__table`, applied
//!   to the whole source before parsing, text included) never finds one in text;
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

/// Written before a `:` that follows a name in text: renders as nothing, and breaks the
/// `name:name.name` shape the engine's schema rewrite looks for.
const COLON_GUARD: &str = "{# #}";

/// True when a `:` between `prev` and `next` could be the `:` of `ds:schema.table`.
fn could_be_schema_ref(prev: Option<char>, next: Option<char>) -> bool {
    prev.is_some_and(|p| p.is_ascii_alphanumeric() || p == '_')
        && next.is_some_and(|n| n.is_ascii_alphabetic() || n == '_')
}

/// Writes `text` as literal template text: the result renders exactly as `text`.
///
/// MUST leave no opener (`{{`, `{%`, `{#`, a final `{`) and no `name:name` of the user's in
/// the result: either would be read as code, or rewritten by the engine, before rendering.
pub fn escape_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut chars = text.chars().peekable();
    let mut prev: Option<char> = None;
    while let Some(c) = chars.next() {
        let before = prev;
        prev = Some(c);
        if c == ':' && could_be_schema_ref(before, chars.peek().copied()) {
            out.push_str(COLON_GUARD);
            out.push(c);
            continue;
        }
        if c != '{' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('{') => {
                chars.next();
                prev = Some('{');
                out.push_str("{% templatetag openvariable %}");
            }
            Some('%') => {
                chars.next();
                prev = Some('%');
                out.push_str("{% templatetag openblock %}");
            }
            Some('#') => {
                chars.next();
                prev = Some('#');
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
    fn schema_references_in_text_are_not_rewritten() {
        assert_eq!(
            escape_text("bank:accounts.holder_name"),
            "bank{# #}:accounts.holder_name"
        );
        assert_eq!(escape_text("a_1:B.c x:y"), "a_1{# #}:B.c x{# #}:y");
        // Not a name on both sides: unchanged.
        assert_eq!(escape_text("Total: 5 a:1 :b é:b"), "Total: 5 a:1 :b é:b");
        // No `name:name` survives in the output (the shape the engine's rewrite needs).
        for s in ["bank:accounts.holder_name", "x{{y:z.w", "_:_._", "a:b:c.d"] {
            let e = escape_text(s);
            let bytes = e.as_bytes();
            for (i, b) in bytes.iter().enumerate() {
                if *b == b':' && i > 0 {
                    let p = bytes[i - 1];
                    let n = bytes.get(i + 1).copied().unwrap_or(b' ');
                    assert!(
                        !((p.is_ascii_alphanumeric() || p == b'_')
                            && (n.is_ascii_alphabetic() || n == b'_')),
                        "{s} -> {e}"
                    );
                }
            }
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
