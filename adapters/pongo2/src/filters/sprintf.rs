//! `stringformat`: Go's `fmt.Sprintf(format, value)` for the verbs templates use
//! (`%s %v %d %f %F %e %E %g %G %x %X %o %b %q %t %c %%`, flags `-+ 0`, width, precision).
use super::R;
use crate::gofmt;
use crate::render::Renderer;
use crate::value::Value;

/// The Go type name of a value, for Go's `%!verb(type=value)` forms.
fn type_name(v: &Value<'_>) -> &'static str {
    match v {
        Value::Int(_) => "int",
        Value::Float(_) => "float64",
        Value::Str(..) => "string",
        Value::Bool(_) => "bool",
        Value::Time(_) => "time.Time",
        Value::List(_) => "[]interface {}",
        Value::Map(_) => "map[string]interface {}",
        _ => "<nil>",
    }
}

fn bad(verb: char, v: &Value<'_>) -> String {
    if v.is_nil() {
        return format!("%!{verb}(<nil>)");
    }
    format!("%!{verb}({}={})", type_name(v), v.to_go_v())
}

struct Spec {
    minus: bool,
    plus: bool,
    space: bool,
    zero: bool,
    width: Option<usize>,
    prec: Option<usize>,
}

fn pad(s: String, spec: &Spec, numeric: bool) -> String {
    let Some(w) = spec.width else {
        return s;
    };
    let n = s.chars().count();
    if n >= w {
        return s;
    }
    let fill = w - n;
    if spec.minus {
        return format!("{s}{}", " ".repeat(fill));
    }
    if spec.zero && numeric {
        let (sign, digits) = match s.strip_prefix(['-', '+']) {
            Some(rest) => (s.get(..1).unwrap_or_default(), rest),
            None => ("", s.as_str()),
        };
        return format!("{sign}{}{digits}", "0".repeat(fill));
    }
    format!("{}{s}", " ".repeat(fill))
}

fn signed(s: String, neg: bool, spec: &Spec) -> String {
    if neg {
        s
    } else if spec.plus {
        format!("+{s}")
    } else if spec.space {
        format!(" {s}")
    } else {
        s
    }
}

fn go_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Long by design: one arm per Go `fmt` verb, each Go's exact formatting.
fn format_one(verb: char, v: &Value<'_>, spec: &Spec) -> String {
    match verb {
        'v' | 's' => match v {
            Value::Str(t, _) => {
                let s = t.as_str();
                let s = match spec.prec {
                    Some(p) => s.chars().take(p).collect(),
                    None => s.to_owned(),
                };
                pad(s, spec, false)
            }
            Value::Time(_) | Value::List(_) | Value::Map(_) => pad(v.to_go_v(), spec, false),
            _ if verb == 'v' => pad(v.to_go_v(), spec, false),
            _ => bad(verb, v),
        },
        'd' => match v {
            Value::Int(i) => pad(signed(i.to_string(), *i < 0, spec), spec, true),
            _ => bad(verb, v),
        },
        'b' | 'o' | 'x' | 'X' => match v {
            Value::Int(i) => {
                let neg = *i < 0;
                let a = i.unsigned_abs();
                let body = match verb {
                    'b' => format!("{a:b}"),
                    'o' => format!("{a:o}"),
                    'x' => format!("{a:x}"),
                    _ => format!("{a:X}"),
                };
                let body = if neg { format!("-{body}") } else { body };
                pad(signed(body, neg, spec), spec, true)
            }
            Value::Str(t, _) if verb == 'x' || verb == 'X' => {
                let s: String = t
                    .as_str()
                    .bytes()
                    .map(|b| {
                        if verb == 'x' {
                            format!("{b:02x}")
                        } else {
                            format!("{b:02X}")
                        }
                    })
                    .collect();
                pad(s, spec, false)
            }
            _ => bad(verb, v),
        },
        'f' | 'F' | 'e' | 'E' | 'g' | 'G' => match v {
            Value::Float(f) => {
                let p = spec.prec.unwrap_or(6).min(1000);
                let s = match verb {
                    'f' | 'F' => gofmt::fixed(*f, p),
                    'e' | 'E' => {
                        let s = if f.is_finite() {
                            go_exp(*f, p)
                        } else {
                            gofmt::fixed(*f, 0)
                        };
                        if verb == 'E' { s.to_uppercase() } else { s }
                    }
                    _ => {
                        let s = gofmt::shortest_g(*f, 21);
                        if verb == 'G' { s.to_uppercase() } else { s }
                    }
                };
                pad(
                    signed(s, f.is_sign_negative() && !f.is_nan(), spec),
                    spec,
                    true,
                )
            }
            _ => bad(verb, v),
        },
        'q' => match v {
            Value::Str(t, _) => pad(go_quote(t.as_str()), spec, false),
            Value::Int(i) => {
                let c = u32::try_from(*i)
                    .ok()
                    .and_then(char::from_u32)
                    .unwrap_or('\u{FFFD}');
                pad(format!("'{c}'"), spec, false)
            }
            _ => bad(verb, v),
        },
        't' => match v {
            Value::Bool(b) => pad(b.to_string(), spec, false),
            _ => bad(verb, v),
        },
        'c' => match v {
            Value::Int(i) => {
                let c = u32::try_from(*i)
                    .ok()
                    .and_then(char::from_u32)
                    .unwrap_or('\u{FFFD}');
                pad(c.to_string(), spec, false)
            }
            _ => bad(verb, v),
        },
        _ => format!("%!{verb}({}={})", type_name(v), v.to_go_v()),
    }
}

/// Go's `%e` with `p` digits: `1.234560e+03`.
fn go_exp(f: f64, p: usize) -> String {
    let s = format!("{f:.p$e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let e: i32 = e.parse().unwrap_or(0);
            format!(
                "{m}e{}{:02}",
                if e < 0 { '-' } else { '+' },
                e.unsigned_abs()
            )
        }
        None => s,
    }
}

pub(super) fn stringformat<'a>(r: &mut Renderer<'a>, v: &Value<'a>, p: &Value<'a>) -> R<Value<'a>> {
    let fmt = p.to_go_string().into_owned();
    let mut out = String::with_capacity(fmt.len() + 16);
    let mut used = false;
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = Spec {
            minus: false,
            plus: false,
            space: false,
            zero: false,
            width: None,
            prec: None,
        };
        while let Some(&f) = chars.peek() {
            match f {
                '-' => spec.minus = true,
                '+' => spec.plus = true,
                ' ' => spec.space = true,
                '0' => spec.zero = true,
                '#' => {}
                _ => break,
            }
            chars.next();
        }
        let num = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>| {
            let mut n: Option<usize> = None;
            while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
                n = Some(n.unwrap_or(0).saturating_mul(10).saturating_add(d as usize));
                chars.next();
            }
            n
        };
        spec.width = num(&mut chars);
        if chars.peek() == Some(&'.') {
            chars.next();
            spec.prec = Some(num(&mut chars).unwrap_or(0));
        }
        let width = spec.width.unwrap_or(0).max(spec.prec.unwrap_or(0));
        r.reserve_str(out.len().saturating_add(width).saturating_add(64))?;
        let Some(verb) = chars.next() else {
            out.push_str("%!(NOVERB)");
            break;
        };
        if verb == '%' {
            out.push('%');
            continue;
        }
        if used {
            out.push_str(&format!("%!{verb}(MISSING)"));
            continue;
        }
        used = true;
        out.push_str(&format_one(verb, v, &spec));
    }
    if !used {
        if v.is_nil() {
            out.push_str("%!(EXTRA <nil>)");
        } else {
            out.push_str(&format!("%!(EXTRA {}={})", type_name(v), v.to_go_v()));
        }
    }
    r.new_str(out, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> Spec {
        Spec {
            minus: false,
            plus: false,
            space: false,
            zero: false,
            width: None,
            prec: None,
        }
    }

    #[test]
    fn verbs() {
        assert_eq!(format_one('d', &Value::Int(8), &spec()), "8");
        assert_eq!(
            format_one(
                'f',
                &Value::Float(1.23456),
                &Spec {
                    prec: Some(2),
                    ..spec()
                }
            ),
            "1.23"
        );
        assert_eq!(format_one('d', &Value::str("x"), &spec()), "%!d(string=x)");
        assert_eq!(
            format_one(
                'd',
                &Value::Int(5),
                &Spec {
                    width: Some(4),
                    zero: true,
                    ..spec()
                }
            ),
            "0005"
        );
        assert_eq!(go_exp(1234.56, 2), "1.23e+03");
    }
}
