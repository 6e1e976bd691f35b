//! Pongo2's built-in filters (text, numbers, lists). Every filter that can grow its input
//! checks the memory budget for the size of its result before building it.
use super::{R, err};
use crate::escape::{escaped_len, html_escape};
use crate::gofmt;
use crate::render::Renderer;
use crate::value::{ListKind, ListV, Value};

fn width(v: &Value<'_>) -> i64 {
    v.integer()
}

fn usize_of(i: i64) -> usize {
    usize::try_from(i.max(0)).unwrap_or(usize::MAX)
}

pub(super) fn escape<'a>(r: &mut Renderer<'a>, v: &Value<'a>) -> R<Value<'a>> {
    let s = v.to_go_string();
    r.reserve_str(escaped_len(&s))?;
    let out = html_escape(&s).into_owned();
    r.new_str(out, false)
}

pub(super) fn escapejs<'a>(r: &mut Renderer<'a>, v: &Value<'a>) -> R<Value<'a>> {
    let s = v.to_go_string().into_owned();
    r.reserve_str(s.len().saturating_mul(10))?;
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('r') => {
                    out.push_str("\\u000D");
                    chars.next();
                    continue;
                }
                Some('n') => {
                    out.push_str("\\u000A");
                    chars.next();
                    continue;
                }
                _ => {}
            }
        }
        if c.is_ascii_alphabetic() || c == ' ' || c == '/' {
            out.push(c);
        } else {
            out.push_str(&format!("\\u{:04X}", u32::from(c)));
        }
    }
    r.new_str(out, false)
}

pub(super) fn add<'a>(r: &mut Renderer<'a>, a: &Value<'a>, b: &Value<'a>) -> R<Value<'a>> {
    if a.is_number() && b.is_number() {
        if a.is_float() || b.is_float() {
            return Ok(Value::Float(a.float() + b.float()));
        }
        return Ok(Value::Int(a.integer().wrapping_add(b.integer())));
    }
    let x = a.to_go_string();
    let y = b.to_go_string();
    r.reserve_str(x.len().saturating_add(y.len()))?;
    let s = format!("{x}{y}");
    r.new_str(s, false)
}

pub(super) fn addslashes<'a>(r: &mut Renderer<'a>, v: &Value<'a>) -> R<Value<'a>> {
    let s = v.to_go_string();
    r.reserve_str(s.len().saturating_mul(2))?;
    let out = s
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\'', "\\'");
    r.new_str(out, false)
}

pub(super) fn capfirst<'a>(r: &mut Renderer<'a>, v: &Value<'a>) -> R<Value<'a>> {
    if v.len() == 0 {
        return Ok(Value::str(""));
    }
    let s = v.to_go_string();
    let mut chars = s.chars();
    let first: String = chars
        .next()
        .map(|c| c.to_uppercase().collect())
        .unwrap_or_default();
    r.reserve_str(s.len() + first.len())?;
    let out = first + chars.as_str();
    r.new_str(out, false)
}

pub(super) fn center<'a>(r: &mut Renderer<'a>, v: Value<'a>, p: &Value<'a>) -> R<Value<'a>> {
    let w = width(p);
    let len = i64::try_from(v.len()).unwrap_or(i64::MAX);
    if w <= len {
        return Ok(v);
    }
    let spaces = usize_of(w - len);
    let s = v.to_go_string();
    r.reserve_str(s.len().saturating_add(spaces))?;
    let left = spaces / 2 + spaces % 2;
    let right = spaces / 2;
    let out = format!("{}{s}{}", " ".repeat(left), " ".repeat(right));
    r.new_str(out, false)
}

pub(super) fn cut<'a>(r: &mut Renderer<'a>, v: &Value<'a>, p: &Value<'a>) -> R<Value<'a>> {
    let s = v.to_go_string();
    let pat = p.to_go_string();
    if pat.is_empty() {
        let out = s.into_owned();
        return r.new_str(out, false);
    }
    r.reserve_str(s.len())?;
    let out = s.replace(pat.as_ref(), "");
    r.new_str(out, false)
}

/// `date` (the original's version: a time, or a date string it can parse) and `time`
/// (Pongo2's: a time only). Go layouts.
pub(super) fn date<'a>(
    r: &mut Renderer<'a>,
    v: &Value<'a>,
    p: &Value<'a>,
    strings: bool,
) -> R<Value<'a>> {
    let name = if strings { "date" } else { "time" };
    let parsed;
    let t = match v {
        Value::Time(t) => &**t,
        Value::Str(s, _) if strings => {
            parsed = crate::gotime::parse_loose(s.as_str())
                .ok_or_else(|| err(name, format!("cannot parse {:?} as date", s.as_str())))?;
            &parsed
        }
        _ if strings => {
            return Err(err(name, "filter input must be time.Time or date string"));
        }
        _ => {
            return Err(err(
                name,
                "filter input argument must be of type 'time.Time'",
            ));
        }
    };
    let layout = p.to_go_string();
    r.reserve_str(layout.len().saturating_mul(10))?;
    let out = t.format(&layout);
    r.new_str(out, false)
}

pub(super) fn first_last<'a>(r: &mut Renderer<'a>, v: Value<'a>, first: bool) -> R<Value<'a>> {
    let n = v.len();
    if !v.can_slice() || n == 0 {
        return Ok(Value::str(""));
    }
    let i = if first { 0 } else { n - 1 };
    match &v {
        Value::Str(t, _) => {
            let c = if first {
                t.as_str().chars().next()
            } else {
                t.as_str().chars().next_back()
            };
            r.new_str(c.map(String::from).unwrap_or_default(), false)
        }
        _ => Ok(v.index(i).unwrap_or(Value::Nil)),
    }
}

pub(super) fn floatformat<'a>(r: &mut Renderer<'a>, v: &Value<'a>, p: &Value<'a>) -> R<Value<'a>> {
    let val = v.float();
    let mut decimals: i64 = if p.is_nil() { -1 } else { p.integer() };
    let mut trim = !p.is_number();
    if decimals <= 0 {
        decimals = decimals.saturating_neg();
        trim = true;
    }
    if trim && gofmt::float_to_int(val) as f64 == val {
        return Ok(Value::Int(v.integer()));
    }
    let decimals = usize_of(decimals);
    r.reserve_str(decimals.saturating_add(330))?;
    let out = gofmt::fixed(val, decimals);
    r.new_str(out, false)
}

pub(super) fn get_digit<'a>(v: Value<'a>, p: &Value<'a>) -> R<Value<'a>> {
    let i = p.integer();
    let s = v.to_go_string().into_owned();
    let l = i64::try_from(s.len()).unwrap_or(i64::MAX);
    if i <= 0 || i > l {
        return Ok(v);
    }
    let b = s.as_bytes().get(usize_of(l - i)).copied().unwrap_or(b'0');
    Ok(Value::Int(i64::from(b.wrapping_sub(48))))
}

const IRI_CHARS: &str = "/#%[]=:;$&()+,!?*@'~";

/// Go's `url.QueryEscape`.
pub(crate) fn query_escape(s: &str, out: &mut String) {
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
}

pub(super) fn iriencode<'a>(r: &mut Renderer<'a>, v: &Value<'a>) -> R<Value<'a>> {
    let s = v.to_go_string();
    r.reserve_str(s.len().saturating_mul(3))?;
    let out = iri(&s);
    r.new_str(out, false)
}

pub(crate) fn iri(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if IRI_CHARS.contains(c) {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            query_escape(c.encode_utf8(&mut buf), &mut out);
        }
    }
    out
}

pub(super) fn join<'a>(r: &mut Renderer<'a>, v: Value<'a>, p: &Value<'a>) -> R<Value<'a>> {
    if !v.can_slice() {
        return Ok(v);
    }
    let sep = p.to_go_string().into_owned();
    let n = v.len();
    let mut parts = Vec::with_capacity(n.min(1 << 16));
    let mut total = sep.len().saturating_mul(n.saturating_sub(1));
    r.reserve_str(total)?;
    for i in 0..n {
        r.budget.fuel(1)?;
        let item = v.index(i).unwrap_or(Value::Nil);
        let s = item.to_go_string().into_owned();
        total = total.saturating_add(s.len());
        r.reserve_str(total)?;
        parts.push(s);
    }
    let out = parts.join(&sep);
    r.new_str(out, false)
}

pub(super) fn replace_all<'a>(
    r: &mut Renderer<'a>,
    v: &Value<'a>,
    from: &str,
    to: &str,
) -> R<Value<'a>> {
    let s = v.to_go_string();
    let n = s.matches(from).count();
    r.reserve_str(s.len().saturating_add(n.saturating_mul(to.len())))?;
    let out = s.replace(from, to);
    r.new_str(out, false)
}

pub(super) fn ljust<'a>(r: &mut Renderer<'a>, v: &Value<'a>, p: &Value<'a>) -> R<Value<'a>> {
    let times = usize_of(width(p).saturating_sub(i64::try_from(v.len()).unwrap_or(i64::MAX)));
    let s = v.to_go_string();
    r.reserve_str(s.len().saturating_add(times))?;
    let out = format!("{s}{}", " ".repeat(times));
    r.new_str(out, false)
}

/// `rjust`: Go's `%Ns` (width in runes; a negative width left-justifies).
pub(super) fn rjust<'a>(r: &mut Renderer<'a>, v: &Value<'a>, p: &Value<'a>) -> R<Value<'a>> {
    let w = width(p);
    let s = v.to_go_string();
    let len = s.chars().count();
    let pad = usize_of(w.unsigned_abs().min(i64::MAX as u64) as i64).saturating_sub(len);
    r.reserve_str(s.len().saturating_add(pad))?;
    let out = if w < 0 {
        format!("{s}{}", " ".repeat(pad))
    } else {
        format!("{}{s}", " ".repeat(pad))
    };
    r.new_str(out, false)
}

pub(super) fn lower_upper<'a>(r: &mut Renderer<'a>, v: &Value<'a>, upper: bool) -> R<Value<'a>> {
    let s = v.to_go_string();
    r.reserve_str(s.len().saturating_mul(3))?;
    let out = if upper {
        s.to_uppercase()
    } else {
        s.to_lowercase()
    };
    r.new_str(out, false)
}

pub(super) fn make_list<'a>(r: &mut Renderer<'a>, v: &Value<'a>) -> R<Value<'a>> {
    let s = v.to_go_string().into_owned();
    let n = s.chars().count();
    r.reserve_list(n)?;
    r.reserve_str(n.saturating_mul(32))?;
    let mut items = Vec::with_capacity(n);
    for c in s.chars() {
        items.push(r.new_str(c.to_string(), false)?);
    }
    r.new_list(items, ListKind::Strings)
}

pub(super) fn phone2numeric<'a>(r: &mut Renderer<'a>, v: &Value<'a>) -> R<Value<'a>> {
    let s = v.to_go_string();
    r.reserve_str(s.len())?;
    let out: String = s
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            'a' | 'b' | 'c' => '2',
            'd' | 'e' | 'f' => '3',
            'g' | 'h' | 'i' => '4',
            'j' | 'k' | 'l' => '5',
            'm' | 'n' | 'o' => '6',
            'p' | 'q' | 'r' | 's' => '7',
            't' | 'u' | 'v' => '8',
            'w' | 'x' | 'y' | 'z' => '9',
            _ => c,
        })
        .collect();
    r.new_str(out, false)
}

pub(super) fn pluralize<'a>(v: &Value<'a>, p: &Value<'a>) -> R<Value<'a>> {
    if !v.is_number() {
        return Err(err(
            "pluralize",
            "filter 'pluralize' does only work on numbers",
        ));
    }
    let one = v.integer() == 1;
    if p.len() > 0 {
        let param = p.to_go_string().into_owned();
        let endings: Vec<&str> = param.split(',').collect();
        let pick = |s: &str| {
            Value::Str(
                crate::value::Text::Owned(std::rc::Rc::new(crate::limits::Tracked::untracked(
                    s.to_owned(),
                ))),
                false,
            )
        };
        return match endings.as_slice() {
            [single] => Ok(if one { Value::str("") } else { pick(single) }),
            [a, b] => Ok(if one { pick(a) } else { pick(b) }),
            _ => Err(err(
                "pluralize",
                "you cannot pass more than 2 arguments to filter 'pluralize'",
            )),
        };
    }
    Ok(Value::str(if one { "" } else { "s" }))
}

pub(super) fn random<'a>(r: &mut Renderer<'a>, v: Value<'a>) -> R<Value<'a>> {
    let n = v.len();
    if !v.can_slice() || n == 0 {
        return Ok(v);
    }
    let i = r.random_below(n);
    match &v {
        Value::Str(t, _) => {
            let c = t
                .as_str()
                .chars()
                .nth(i)
                .map(String::from)
                .unwrap_or_default();
            r.new_str(c, false)
        }
        _ => Ok(v.index(i).unwrap_or(Value::Nil)),
    }
}

/// `slice:"from:to"` on strings (runes) and lists, Python-style negative indexes.
pub(super) fn slice<'a>(r: &mut Renderer<'a>, v: Value<'a>, p: &Value<'a>) -> R<Value<'a>> {
    let param = p.to_go_string().into_owned();
    let comp: Vec<&str> = param.split(':').collect();
    let [a, b] = comp.as_slice() else {
        return Err(err(
            "slice",
            "Slice string must have the format 'from:to' [from/to can be omitted, but the ':' is required]",
        ));
    };
    if !v.can_slice() {
        return Ok(v);
    }
    let len = i64::try_from(v.len()).unwrap_or(i64::MAX);
    let mut from = Value::str(a).integer();
    if from < 0 {
        from = (len + from).max(0);
    }
    from = from.min(len);
    let mut to = if b.trim().is_empty() {
        len
    } else {
        Value::str(b).integer()
    };
    if to < 0 {
        to = (len + to).max(0);
    }
    if to < from {
        to = from;
    }
    let to = if to <= len { to } else { len };
    let (from, to) = (usize_of(from), usize_of(to));
    match &v {
        Value::Str(t, _) => {
            let s: String = t.as_str().chars().skip(from).take(to - from).collect();
            r.new_str(s, false)
        }
        Value::List(l) => {
            let kind = l.kind();
            match l {
                ListV::Data { items, origin } => Ok(Value::List(ListV::Data {
                    items: items.get(from..to).unwrap_or_default(),
                    origin: *origin,
                })),
                ListV::Owned(..) => {
                    r.reserve_list(to - from)?;
                    let items: Vec<Value<'a>> = (from..to).filter_map(|i| l.get(i)).collect();
                    r.new_list(items, kind)
                }
            }
        }
        _ => Ok(v),
    }
}

pub(super) fn split<'a>(r: &mut Renderer<'a>, v: &Value<'a>, p: &Value<'a>) -> R<Value<'a>> {
    let s = v.to_go_string().into_owned();
    let sep = p.to_go_string().into_owned();
    let parts: Vec<&str> = if sep.is_empty() {
        let mut out = Vec::new();
        let mut rest = s.as_str();
        while let Some(c) = rest.chars().next() {
            let (a, b) = rest.split_at(c.len_utf8());
            out.push(a);
            rest = b;
        }
        out
    } else {
        s.split(sep.as_str()).collect()
    };
    r.reserve_list(parts.len())?;
    r.reserve_str(s.len().saturating_add(parts.len().saturating_mul(32)))?;
    let mut items = Vec::with_capacity(parts.len());
    for part in parts {
        items.push(r.new_str(part.to_owned(), false)?);
    }
    r.new_list(items, ListKind::Strings)
}

/// Go's `strings.Title(strings.ToLower(s))`.
pub(super) fn title<'a>(r: &mut Renderer<'a>, v: &Value<'a>) -> R<Value<'a>> {
    let Some(s) = v.as_str() else {
        return Ok(Value::str(""));
    };
    r.reserve_str(s.len().saturating_mul(3))?;
    let lower = s.to_lowercase();
    let mut out = String::with_capacity(lower.len());
    let mut prev_sep = true;
    for c in lower.chars() {
        if prev_sep {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
        prev_sep = is_title_separator(c);
    }
    r.new_str(out, false)
}

fn is_title_separator(c: char) -> bool {
    if c.is_ascii() {
        return !(c.is_ascii_alphanumeric() || c == '_');
    }
    if c.is_alphanumeric() {
        return false;
    }
    c.is_whitespace()
}

pub(super) fn truncatechars<'a>(
    r: &mut Renderer<'a>,
    v: &Value<'a>,
    p: &Value<'a>,
) -> R<Value<'a>> {
    let s = v.to_go_string();
    let n = usize_of(p.integer());
    let count = s.chars().count();
    let out = if n < count {
        if n >= 3 {
            let mut t: String = s.chars().take(n - 3).collect();
            t.push_str("...");
            t
        } else {
            s.chars().take(n).collect()
        }
    } else {
        s.into_owned()
    };
    r.new_str(out, false)
}

pub(super) fn truncatewords<'a>(
    r: &mut Renderer<'a>,
    v: &Value<'a>,
    p: &Value<'a>,
) -> R<Value<'a>> {
    let s = v.to_go_string();
    let words: Vec<&str> = s.split_whitespace().collect();
    let n = p.integer();
    if n <= 0 {
        return Ok(Value::str(""));
    }
    let n = usize_of(n);
    let mut out: Vec<&str> = words.iter().take(n).copied().collect();
    if n < words.len() {
        out.push("...");
    }
    let out = out.join(" ");
    r.new_str(out, false)
}

pub(super) fn urlencode<'a>(r: &mut Renderer<'a>, v: &Value<'a>) -> R<Value<'a>> {
    let s = v.to_go_string();
    r.reserve_str(s.len().saturating_mul(3))?;
    let mut out = String::with_capacity(s.len());
    query_escape(&s, &mut out);
    r.new_str(out, false)
}

pub(super) fn wordwrap<'a>(r: &mut Renderer<'a>, v: Value<'a>, p: &Value<'a>) -> R<Value<'a>> {
    let wrap = p.integer();
    if wrap <= 0 {
        return Ok(v);
    }
    let s = v.to_go_string().into_owned();
    let words: Vec<&str> = s.split_whitespace().collect();
    let wrap = usize_of(wrap);
    let line_count = words.len() / wrap + words.len() % wrap;
    let mut lines = Vec::new();
    for i in 0..line_count {
        let start = wrap.saturating_mul(i);
        if start >= words.len() {
            break;
        }
        let end = wrap.saturating_mul(i + 1).min(words.len());
        lines.push(words.get(start..end).unwrap_or_default().join(" "));
    }
    let out = lines.join("\n");
    r.new_str(out, false)
}

pub(super) fn yesno<'a>(r: &mut Renderer<'a>, v: &Value<'a>, p: &Value<'a>) -> R<Value<'a>> {
    let param = p.to_go_string().into_owned();
    let mut choices = ["yes".to_owned(), "no".to_owned(), "maybe".to_owned()];
    if !param.is_empty() {
        let custom: Vec<&str> = param.split(',').collect();
        if custom.len() > 3 {
            return Err(err(
                "yesno",
                format!(
                    "you cannot pass more than 3 options to the 'yesno'-filter (got: '{param}')"
                ),
            ));
        }
        if custom.len() < 2 {
            return Err(err(
                "yesno",
                format!(
                    "you must either pass no or at least 2 arguments to the 'yesno'-filter (got: '{param}')"
                ),
            ));
        }
        for (slot, c) in choices.iter_mut().zip(custom) {
            *slot = c.to_owned();
        }
    }
    let [yes, no, maybe] = choices;
    let pick = if v.is_nil() {
        maybe
    } else if v.is_true() {
        yes
    } else {
        no
    };
    r.new_str(pick, false)
}
