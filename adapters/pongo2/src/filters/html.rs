//! Pongo2's HTML-aware filters.
use super::R;
use crate::escape::html_escape;
use crate::render::Renderer;
use crate::value::Value;

pub(super) fn linebreaks<'a>(r: &mut Renderer<'a>, v: Value<'a>) -> R<Value<'a>> {
    if v.len() == 0 {
        return Ok(v);
    }
    let s = v.to_go_string().into_owned();
    r.reserve_str(s.len().saturating_mul(2).saturating_add(16))?;
    let lines: Vec<&str> = s.split('\n').collect();
    let mut out = String::with_capacity(s.len() + 16);
    let mut opened = false;
    for (idx, line) in lines.iter().enumerate() {
        if !opened {
            out.push_str("<p>");
            opened = true;
        }
        out.push_str(line);
        if idx + 1 < lines.len() && !line.trim().is_empty() {
            if lines.get(idx + 1).is_some_and(|n| n.trim().is_empty()) {
                if opened {
                    out.push_str("</p>");
                    opened = false;
                }
            } else {
                out.push_str("<br />");
            }
        }
    }
    if opened {
        out.push_str("</p>");
    }
    r.new_str(out, false)
}

pub(super) fn linenumbers<'a>(r: &mut Renderer<'a>, v: &Value<'a>) -> R<Value<'a>> {
    let s = v.to_go_string();
    let n = s.split('\n').count();
    r.reserve_str(s.len().saturating_add(n.saturating_mul(22)))?;
    let out: Vec<String> = s
        .split('\n')
        .enumerate()
        .map(|(i, line)| format!("{}. {line}", i + 1))
        .collect();
    let out = out.join("\n");
    r.new_str(out, false)
}

/// `removetags:"b,i"`: removes `<b>`, `</b>`, `<b/>` and `</b/>` of each named tag.
pub(super) fn removetags<'a>(r: &mut Renderer<'a>, v: &Value<'a>, p: &Value<'a>) -> R<Value<'a>> {
    let mut s = v.to_go_string().into_owned();
    let param = p.to_go_string().into_owned();
    for tag in param.split(',') {
        r.budget.fuel_bytes(s.len())?;
        for form in [
            format!("<{tag}>"),
            format!("</{tag}>"),
            format!("<{tag}/>"),
            format!("</{tag}/>"),
        ] {
            if s.contains(&form) {
                s = s.replace(&form, "");
            }
        }
    }
    let out = s.trim().to_owned();
    r.new_str(out, false)
}

/// `striptags`: removes everything from `<` to the next `>`, then trims.
pub(super) fn striptags<'a>(r: &mut Renderer<'a>, v: &Value<'a>) -> R<Value<'a>> {
    let s = v.to_go_string();
    let out = strip_tags(&s);
    let out = out.trim().to_owned();
    r.new_str(out, false)
}

fn strip_tags(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(open) = rest.find('<') {
        match rest.get(open..).and_then(|t| t.find('>')) {
            Some(close) => {
                out.push_str(rest.get(..open).unwrap_or_default());
                rest = rest.get(open + close + 1..).unwrap_or_default();
            }
            None => break,
        }
    }
    out.push_str(rest);
    out
}

/// The truncation walker of Pongo2's `truncate*_html`: copies tags, counts text through
/// `step`, and closes the tags still open.
fn truncate_html(
    value: &str,
    stop: &mut dyn FnMut() -> bool,
    step: &mut dyn FnMut(&str, usize, &mut String) -> usize,
    finish: &mut dyn FnMut(&mut String),
) -> String {
    let mut out = String::with_capacity(value.len());
    let mut stack: Vec<String> = Vec::new();
    let mut idx = 0;
    while idx < value.len() && !stop() {
        let Some(c) = value.get(idx..).and_then(|t| t.chars().next()) else {
            break;
        };
        if c == '<' {
            out.push('<');
            idx += 1;
            if idx + 1 < value.len() {
                if value.as_bytes().get(idx) == Some(&b'/') {
                    out.push('/');
                    idx += 1;
                    let mut tag = String::new();
                    while let Some(c2) = value.get(idx..).and_then(|t| t.chars().next()) {
                        idx += c2.len_utf8();
                        if c2 == '>' {
                            break;
                        }
                        tag.push(c2);
                    }
                    if let Some(pos) = stack.iter().rposition(|t| *t == tag) {
                        let last = stack.len() - 1;
                        stack.swap(pos, last);
                        stack.pop();
                    }
                    out.push_str(&tag);
                    out.push('>');
                } else {
                    let mut tag = String::new();
                    let mut params = false;
                    while let Some(c2) = value.get(idx..).and_then(|t| t.chars().next()) {
                        out.push(c2);
                        if c2 == '>' {
                            idx += 1;
                            break;
                        }
                        if !params {
                            if c2 == ' ' {
                                params = true;
                            } else {
                                tag.push(c2);
                            }
                        }
                        idx += c2.len_utf8();
                    }
                    stack.push(tag);
                }
            }
        } else {
            idx = step(value, idx, &mut out);
        }
    }
    finish(&mut out);
    for tag in stack.iter().rev() {
        out.push_str("</");
        out.push_str(tag);
        out.push('>');
    }
    out
}

pub(super) fn truncatechars_html<'a>(
    r: &mut Renderer<'a>,
    v: &Value<'a>,
    p: &Value<'a>,
) -> R<Value<'a>> {
    let value = v.to_go_string().into_owned();
    let new_len = usize::try_from(p.integer().saturating_sub(3).max(0)).unwrap_or(usize::MAX);
    r.reserve_str(value.len().saturating_mul(2).saturating_add(16))?;
    let counter = std::cell::Cell::new(0usize);
    let total = value.len();
    let out = truncate_html(
        &value,
        &mut || counter.get() >= new_len,
        &mut |s, idx, out| {
            let c = s.get(idx..).and_then(|t| t.chars().next()).unwrap_or(' ');
            counter.set(counter.get() + 1);
            out.push(c);
            idx + c.len_utf8()
        },
        &mut |out| {
            if counter.get() >= new_len && counter.get() < total {
                out.push_str("...");
            }
        },
    );
    r.new_str(out, true)
}

pub(super) fn truncatewords_html<'a>(
    r: &mut Renderer<'a>,
    v: &Value<'a>,
    p: &Value<'a>,
) -> R<Value<'a>> {
    let value = v.to_go_string().into_owned();
    let new_len = usize::try_from(p.integer().max(0)).unwrap_or(usize::MAX);
    r.reserve_str(value.len().saturating_mul(2).saturating_add(16))?;
    let counter = std::cell::Cell::new(0usize);
    let out = truncate_html(
        &value,
        &mut || counter.get() >= new_len,
        &mut |s, mut idx, out| {
            let mut found = false;
            while let Some(c) = s.get(idx..).and_then(|t| t.chars().next()) {
                if c == '<' {
                    return idx;
                }
                out.push(c);
                idx += c.len_utf8();
                if matches!(c, ' ' | '.' | ',' | ';') {
                    break;
                }
                found = true;
            }
            if found {
                counter.set(counter.get() + 1);
            }
            idx
        },
        &mut |out| {
            if counter.get() >= new_len {
                out.push_str("...");
            }
        },
    );
    r.new_str(out, true)
}

/// `urlize` / `urlizetrunc`: links URLs and e-mail addresses (Pongo2's patterns).
pub(super) fn urlize<'a>(
    r: &mut Renderer<'a>,
    v: &Value<'a>,
    autoescape: bool,
    trunc: i64,
) -> R<Value<'a>> {
    use std::sync::OnceLock;
    static URL: OnceLock<Option<regex::Regex>> = OnceLock::new();
    static MAIL: OnceLock<Option<regex::Regex>> = OnceLock::new();
    let url = URL.get_or_init(|| {
        regex::Regex::new(
            r"((((http|https)://)|www\.|((^|[ ])[0-9A-Za-z_\-]+(\.com|\.net|\.org|\.info|\.biz|\.de))))(?U:.*)([ ]+|$)",
        )
        .ok()
    });
    let mail = MAIL.get_or_init(|| regex::Regex::new(r"((?-u:\w)+@(?-u:\w)+\.(?-u:\w){2,4})").ok());
    let (Some(url), Some(mail)) = (url, mail) else {
        return Err(super::err("urlize", "pattern unavailable"));
    };
    let input = v.to_go_string().into_owned();
    r.reserve_str(input.len().saturating_mul(8).saturating_add(64))?;
    r.budget.fuel_bytes(input.len().saturating_mul(4))?;
    let shorten = |t: &str| -> String {
        if trunc > 3 && i64::try_from(t.len()).unwrap_or(i64::MAX) > trunc {
            let keep = usize::try_from(trunc - 3).unwrap_or(0);
            let mut cut = keep.min(t.len());
            while !t.is_char_boundary(cut) {
                cut -= 1;
            }
            format!("{}...", t.get(..cut).unwrap_or_default())
        } else {
            t.to_owned()
        }
    };
    let linked = url.replace_all(&input, |c: &regex::Captures<'_>| {
        let raw = c.get(0).map_or("", |m| m.as_str());
        let prefix = if raw.starts_with(' ') { " " } else { "" };
        let suffix = if raw.ends_with(' ') { " " } else { "" };
        let raw = raw.trim();
        let mut href = crate::filters::builtin::iri(raw);
        if !href.starts_with("http") {
            href = format!("http://{href}");
        }
        let mut title = shorten(raw);
        if autoescape {
            title = html_escape(&title).into_owned();
        }
        format!("{prefix}<a href=\"{href}\" rel=\"nofollow\">{title}</a>{suffix}")
    });
    let out = mail
        .replace_all(&linked, |c: &regex::Captures<'_>| {
            let m = c.get(0).map_or("", |m| m.as_str());
            format!("<a href=\"mailto:{m}\">{}</a>", shorten(m))
        })
        .into_owned();
    r.new_str(out, false)
}
