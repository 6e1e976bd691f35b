//! The Pongo2 lexer: text, `{{ }}` / `{% %}` code, `{# #}` one-line comments and
//! `{% verbatim %}` blocks. One pass over the source, linear in its size.
use reporter_ports::ports::RenderError;

/// Kinds of tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tok {
    /// Literal text outside code.
    Html,
    Keyword,
    Ident,
    Str,
    Number,
    Symbol,
}

/// One token. `val` is the text (a string's content, unquoted and unescaped).
#[derive(Debug, Clone)]
pub struct Token {
    pub kind: Tok,
    pub val: Box<str>,
    pub line: u32,
    /// For `{{-` `-}}` `{%-` `-%}`: trim the whitespace of the neighbouring text.
    pub trim: bool,
}

impl Token {
    pub fn is_sym(&self, s: &str) -> bool {
        self.kind == Tok::Symbol && &*self.val == s
    }
    pub fn is_kw(&self, s: &str) -> bool {
        self.kind == Tok::Keyword && &*self.val == s
    }
    pub fn is_ident(&self, s: &str) -> bool {
        self.kind == Tok::Ident && &*self.val == s
    }
}

const SYMBOLS: [&str; 31] = [
    "{{-", "-}}", "{%-", "-%}", "==", ">=", "<=", "&&", "||", "{{", "}}", "{%", "%}", "!=", "<>",
    "(", ")", "+", "-", "*", "<", ">", "/", "^", ",", ".", "!", "|", ":", "=", "%",
];
const EXTRA_SYMBOLS: [&str; 2] = ["[", "]"];
const KEYWORDS: [&str; 8] = ["in", "and", "or", "not", "true", "false", "as", "export"];

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}
fn is_ident_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn syntax(line: u32, msg: impl std::fmt::Display) -> RenderError {
    RenderError::Syntax(format!("line {line}: {msg}"))
}

/// Splits a source into tokens.
pub fn lex(src: &str) -> Result<Vec<Token>, RenderError> {
    let b = src.as_bytes();
    let mut toks: Vec<Token> = Vec::with_capacity(src.len() / 8 + 4);
    let mut line: u32 = 1;
    let mut i = 0;
    let mut html_start = 0;
    let mut html_line = 1;
    let push_html = |toks: &mut Vec<Token>, from: usize, to: usize, line: u32| {
        if to > from {
            toks.push(Token {
                kind: Tok::Html,
                val: src.get(from..to).unwrap_or_default().into(),
                line,
                trim: false,
            });
        }
    };
    while i < b.len() {
        let rest = b.get(i..).unwrap_or_default();
        if rest.starts_with(b"{% verbatim %}") {
            push_html(&mut toks, html_start, i, html_line);
            let body = i + "{% verbatim %}".len();
            let end_tag = b"{% endverbatim %}";
            let Some(end) = find(b, body, end_tag) else {
                return Err(syntax(line, "verbatim-tag not closed, got EOF."));
            };
            push_html(&mut toks, body, end, line);
            line += count_lines(b.get(i..end).unwrap_or_default());
            i = end + end_tag.len();
            html_start = i;
            html_line = line;
            continue;
        }
        if rest.starts_with(b"{#") {
            push_html(&mut toks, html_start, i, html_line);
            let mut j = i + 2;
            loop {
                match b.get(j) {
                    None => return Err(syntax(line, "Single-line comment not closed.")),
                    Some(b'\n') => {
                        return Err(syntax(
                            line,
                            "Newline not permitted in a single-line comment.",
                        ));
                    }
                    Some(b'#') if b.get(j + 1) == Some(&b'}') => break,
                    Some(_) => j += 1,
                }
            }
            i = j + 2;
            html_start = i;
            html_line = line;
            continue;
        }
        if rest.starts_with(b"{{") || rest.starts_with(b"{%") {
            push_html(&mut toks, html_start, i, html_line);
            i = lex_code(src, i, &mut line, &mut toks)?;
            html_start = i;
            html_line = line;
            continue;
        }
        if b.get(i) == Some(&b'\n') {
            line += 1;
        }
        i += 1;
    }
    push_html(&mut toks, html_start, b.len(), html_line);
    Ok(toks)
}

fn count_lines(b: &[u8]) -> u32 {
    u32::try_from(b.iter().filter(|&&c| c == b'\n').count()).unwrap_or(u32::MAX)
}

fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    let h = hay.get(from..)?;
    h.windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// Lexes code from `i` (at `{{` or `{%`) through its closing symbol; returns the position
/// after it. Newlines inside code are accepted (Pongo2 refuses them; accepting them only
/// accepts more templates).
/// Long by design: one arm per token class of code (strings, numbers, names, symbols), a
/// single pass with the position bookkeeping in one place.
fn lex_code(
    src: &str,
    mut i: usize,
    line: &mut u32,
    toks: &mut Vec<Token>,
) -> Result<usize, RenderError> {
    let b = src.as_bytes();
    loop {
        let Some(&c) = b.get(i) else {
            // EOF inside code: the parser reports the missing end.
            return Ok(i);
        };
        if c == b' ' || c == b'\t' || c == b'\r' || c == b'\n' {
            if c == b'\n' {
                *line += 1;
            }
            i += 1;
            continue;
        }
        if is_ident_start(c) {
            let start = i;
            while b.get(i).is_some_and(|&x| is_ident_char(x)) {
                i += 1;
            }
            let word = src.get(start..i).unwrap_or_default();
            let kind = if KEYWORDS.contains(&word) {
                Tok::Keyword
            } else {
                Tok::Ident
            };
            toks.push(Token {
                kind,
                val: word.into(),
                line: *line,
                trim: false,
            });
            continue;
        }
        if c.is_ascii_digit() {
            let start = i;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            let mut kind = Tok::Number;
            if b.get(i).is_some_and(|&x| is_ident_char(x)) {
                // An identifier starting with digits (`2nd`).
                while b.get(i).is_some_and(|&x| is_ident_char(x)) {
                    i += 1;
                }
                kind = Tok::Ident;
            }
            let word = src.get(start..i).unwrap_or_default();
            let kind = if kind == Tok::Ident && KEYWORDS.contains(&word) {
                Tok::Keyword
            } else {
                kind
            };
            toks.push(Token {
                kind,
                val: word.into(),
                line: *line,
                trim: false,
            });
            continue;
        }
        if c == b'"' || c == b'\'' {
            let mut val = String::new();
            let mut j = i + 1;
            let mut seg = j;
            loop {
                match b.get(j) {
                    None => return Err(syntax(*line, "Unexpected EOF, string not closed.")),
                    Some(b'\n') => return Err(syntax(*line, "Newline in string is not allowed.")),
                    Some(&q) if q == c => break,
                    Some(b'\\') => match b.get(j + 1) {
                        Some(&e @ (b'"' | b'\\')) => {
                            val.push_str(src.get(seg..j).unwrap_or_default());
                            val.push(e as char);
                            j += 2;
                            seg = j;
                        }
                        Some(_) => {
                            let ch = src
                                .get(j + 1..)
                                .and_then(|s| s.chars().next())
                                .unwrap_or('?');
                            return Err(syntax(*line, format!("Unknown escape sequence: \\{ch}")));
                        }
                        None => return Err(syntax(*line, "Unexpected EOF, string not closed.")),
                    },
                    Some(_) => j += 1,
                }
            }
            val.push_str(src.get(seg..j).unwrap_or_default());
            toks.push(Token {
                kind: Tok::Str,
                val: val.into(),
                line: *line,
                trim: false,
            });
            i = j + 1;
            continue;
        }
        let rest = b.get(i..).unwrap_or_default();
        let Some(sym) = SYMBOLS
            .iter()
            .chain(EXTRA_SYMBOLS.iter())
            .find(|s| rest.starts_with(s.as_bytes()))
        else {
            let ch = src.get(i..).and_then(|s| s.chars().next()).unwrap_or('?');
            return Err(syntax(
                *line,
                format!("unexpected character '{ch}' inside a tag or variable"),
            ));
        };
        let trim = sym.len() == 3;
        let val = if trim { sym.trim_matches('-') } else { sym };
        toks.push(Token {
            kind: Tok::Symbol,
            val: val.into(),
            line: *line,
            trim,
        });
        i += sym.len();
        if matches!(val, "}}" | "%}") {
            return Ok(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(Tok, String)> {
        lex(src)
            .unwrap()
            .into_iter()
            .map(|t| (t.kind, t.val.to_string()))
            .collect()
    }

    #[test]
    fn basic() {
        let t = kinds("a {{ x.y|f:\"q\\\"\" }} b{# c #}d{%- if 1.5 -%}");
        assert_eq!(t[0], (Tok::Html, "a ".into()));
        assert_eq!(t[2], (Tok::Ident, "x".into()));
        assert_eq!(t[8], (Tok::Str, "q\"".into()));
        assert!(t.contains(&(Tok::Html, " b".into())));
        assert!(t.contains(&(Tok::Html, "d".into())));
        assert!(lex("{{- x -}}").unwrap()[0].trim);
    }

    #[test]
    fn errors_never_panic() {
        assert!(lex("{# a\n #}").is_err());
        assert!(lex("{# a").is_err());
        assert!(lex("{{ 'abc }}").is_err());
        assert!(lex("{{ 你好.世界 }}").is_err());
        assert!(lex("{# comentário #}").is_ok());
        assert!(lex("{{ 'x\\n' }}").is_err());
        assert!(lex("{{").is_ok());
    }
}
