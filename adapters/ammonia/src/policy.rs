//! What a report document may hold: the element and attribute allow-lists and the decision
//! on one attribute value.
//!
//! The lists are ammonia's defaults (the policy reports had before the document rewriter)
//! plus what report layouts use: the document skeleton, `<title>`, `<style>`, `<meta>` (with
//! the attributes of [`meta_attribute`]), tables with their layout attributes, and `style`,
//! `class`, `id`, `align`, `width`… on every element.
use crate::attr_value;
use crate::css_refs;
use crate::origins::{AllowedOrigins, UrlUse};
use std::borrow::Cow;
use url::Url;

/// Elements kept with their attributes filtered: the document (`html` to `meta`), ammonia's
/// defaults (`a` to `wbr`) and what report layouts add (`main` on).
fn kept_tag(tag: &str) -> bool {
    // A `match` (compared by length first), not a search through a list: it runs on every
    // element of every report.
    matches!(
        tag,
        "html"
            | "head"
            | "body"
            | "title"
            | "style"
            | "meta"
            | "a"
            | "abbr"
            | "acronym"
            | "area"
            | "article"
            | "aside"
            | "b"
            | "bdi"
            | "bdo"
            | "blockquote"
            | "br"
            | "caption"
            | "center"
            | "cite"
            | "code"
            | "col"
            | "colgroup"
            | "data"
            | "dd"
            | "del"
            | "details"
            | "dfn"
            | "div"
            | "dl"
            | "dt"
            | "em"
            | "figcaption"
            | "figure"
            | "footer"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "header"
            | "hgroup"
            | "hr"
            | "i"
            | "img"
            | "ins"
            | "kbd"
            | "li"
            | "map"
            | "mark"
            | "nav"
            | "ol"
            | "p"
            | "pre"
            | "q"
            | "rp"
            | "rt"
            | "rtc"
            | "ruby"
            | "s"
            | "samp"
            | "small"
            | "span"
            | "strike"
            | "strong"
            | "sub"
            | "summary"
            | "sup"
            | "table"
            | "tbody"
            | "td"
            | "th"
            | "thead"
            | "time"
            | "tr"
            | "tt"
            | "u"
            | "ul"
            | "var"
            | "wbr"
            | "main"
            | "section"
            | "tfoot"
            | "font"
            | "label"
            | "address"
            | "big"
    )
}

/// Elements removed with everything inside them: they run script, load or embed documents,
/// or their content is parsed in a way of its own (raw text, foreign content) that must not
/// reach the output.
fn dropped_with_content(tag: &str) -> bool {
    // A `match` (compared by length first), not a search through a list: it runs on every
    // element of every report.
    matches!(
        tag,
        "script"
            | "noscript"
            | "iframe"
            | "frame"
            | "frameset"
            | "object"
            | "embed"
            | "applet"
            | "svg"
            | "math"
            | "template"
            | "textarea"
            | "xmp"
            | "plaintext"
            | "noembed"
            | "noframes"
            | "select"
            | "video"
            | "audio"
            | "canvas"
            | "portal"
            | "fencedframe"
    )
}

/// Attributes kept on every kept element.
const GENERIC_ATTRIBUTES: &[&str] = &[
    "lang",
    "title",
    "style",
    "class",
    "id",
    "align",
    "valign",
    "width",
    "height",
    "dir",
    "bgcolor",
    "border",
    "cellpadding",
    "cellspacing",
    "color",
    "nowrap",
];

/// Attributes kept on one element (ammonia's defaults and the layout additions).
fn tag_attribute(tag: &str, attribute: &str) -> bool {
    let allowed: &[&str] = match tag {
        "a" => &["href", "hreflang"],
        "blockquote" | "q" => &["cite"],
        "col" | "colgroup" => &["char", "charoff", "span"],
        "del" | "ins" => &["cite", "datetime"],
        "hr" => &["size"],
        "img" => &["alt", "src"],
        "ol" => &["start"],
        "table" => &["char", "charoff", "summary"],
        "tbody" | "tfoot" | "thead" | "tr" => &["char", "charoff"],
        "td" => &["char", "charoff", "colspan", "headers", "rowspan", "abbr"],
        "th" => &[
            "char", "charoff", "colspan", "headers", "rowspan", "scope", "abbr",
        ],
        "font" => &["face", "size"],
        "style" => &["media", "type"],
        "html" => &["xmlns"],
        "meta" => &["charset", "name", "content", "property", "http-equiv"],
        _ => &[],
    };
    allowed.contains(&attribute)
}

/// URL schemes a link (`href`, `cite`) may use (ammonia's defaults); relative URLs are kept.
const URL_SCHEMES: &[&str] = &[
    "bitcoin",
    "ftp",
    "ftps",
    "geo",
    "http",
    "https",
    "im",
    "irc",
    "ircs",
    "magnet",
    "mailto",
    "mms",
    "mx",
    "news",
    "nntp",
    "openpgp4fpr",
    "sip",
    "sms",
    "smsto",
    "ssh",
    "tel",
    "url",
    "webcal",
    "wtai",
    "xmpp",
];

/// What the rewriter does with an element (by its lower-case name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ElementRule {
    /// Kept, its attributes filtered.
    Keep,
    /// The tags go, the content stays (and is filtered).
    Unwrap,
    /// The element goes with its content.
    Drop,
}

/// The rule for the HTML element `tag`.
pub(crate) fn element_rule(tag: &str) -> ElementRule {
    if kept_tag(tag) {
        ElementRule::Keep
    } else if dropped_with_content(tag) {
        ElementRule::Drop
    } else {
        ElementRule::Unwrap
    }
}

/// What becomes of one attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AttributeRule {
    /// Kept as written.
    Keep,
    /// Written anew with this value (already encoded for a double-quoted attribute).
    Replace(String),
    /// Removed.
    Drop,
}

/// The decision on attribute `attribute` written as `raw` on the kept element `tag`: allowed
/// by the lists, no link to a scheme that runs script (`javascript:`, `data:`…), an image
/// only inline or from an allowed origin, style values without script and with their
/// references neutralized ([`css_refs`]). Values are read as a browser reads them
/// ([`attr_value::decode`]).
pub(crate) fn attribute_rule(
    origins: &AllowedOrigins,
    tag: &str,
    attribute: &str,
    raw: &str,
) -> AttributeRule {
    if !GENERIC_ATTRIBUTES.contains(&attribute) && !tag_attribute(tag, attribute) {
        return AttributeRule::Drop;
    }
    let is_url = matches!((tag, attribute), ("img", "src") | (_, "href" | "cite"));
    if !is_url && attribute != "style" {
        return AttributeRule::Keep;
    }
    let Some(value) = attr_value::decode(raw) else {
        return AttributeRule::Drop;
    };
    match (tag, attribute) {
        ("img", "src") if origins.allows(&value, UrlUse::Image) => AttributeRule::Keep,
        ("img", "src") => AttributeRule::Drop,
        (_, "style") => style_rule(origins, &value),
        _ if link_allowed(&value) => AttributeRule::Keep,
        _ => AttributeRule::Drop,
    }
}

/// A `style` value: dropped when it names script, its references neutralized.
fn style_rule(origins: &AllowedOrigins, value: &str) -> AttributeRule {
    let lower = value.to_ascii_lowercase();
    if ["expression(", "javascript:", "behavior:", "-moz-binding"]
        .iter()
        .any(|s| lower.contains(s))
    {
        return AttributeRule::Drop;
    }
    match css_refs::neutralize(value, origins) {
        Ok(Cow::Borrowed(_)) => AttributeRule::Keep,
        Ok(Cow::Owned(v)) => AttributeRule::Replace(attr_value::encode(&v)),
        Err(_) => AttributeRule::Drop,
    }
}

/// Whether a link target (decoded) may stay: relative, or an allowed scheme; never `data:`.
/// Parsed as a browser parses URLs ([url](https://docs.rs/url), WHATWG): leading and
/// trailing controls and spaces stripped, tabs and newlines removed.
fn link_allowed(value: &str) -> bool {
    match Url::parse(value) {
        Ok(url) => URL_SCHEMES.contains(&url.scheme()),
        Err(url::ParseError::RelativeUrlWithoutBase) => true,
        Err(_) => false,
    }
}

/// What a `<meta>` element declares, from its (decoded) attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MetaRule {
    /// Kept; `declares_charset` when it is the document's UTF-8 declaration.
    Keep { declares_charset: bool },
    /// A charset other than UTF-8 (the report is UTF-8): its `charset` becomes `utf-8`.
    FixCharset,
    /// An `http-equiv` other than a UTF-8 content type (`refresh`, `set-cookie`,
    /// `content-security-policy`…): the element goes.
    Drop,
}

/// The rule for a `<meta>` with these (raw) `charset`, `http-equiv` and `content` values.
pub(crate) fn meta_rule(
    charset: Option<&str>,
    http_equiv: Option<&str>,
    content: Option<&str>,
) -> MetaRule {
    let read = |v: Option<&str>| v.and_then(|v| attr_value::decode(v).map(|d| d.to_string()));
    if let Some(equiv) = http_equiv {
        let equiv = read(Some(equiv)).unwrap_or_default();
        let content = read(content).unwrap_or_default().to_ascii_lowercase();
        let utf8 = content
            .split_once("charset=")
            .is_some_and(|(_, c)| is_utf8(c.trim_matches(|c: char| c == '"' || c == '\'')));
        return if equiv.trim().eq_ignore_ascii_case("content-type")
            && content.trim_start().starts_with("text/html")
            && utf8
        {
            MetaRule::Keep {
                declares_charset: charset.is_none(),
            }
        } else {
            MetaRule::Drop
        };
    }
    match read(charset) {
        None if charset.is_some() => MetaRule::FixCharset,
        None => MetaRule::Keep {
            declares_charset: false,
        },
        Some(c) if is_utf8(&c) => MetaRule::Keep {
            declares_charset: true,
        },
        Some(_) => MetaRule::FixCharset,
    }
}

fn is_utf8(label: &str) -> bool {
    let label = label.trim();
    label.eq_ignore_ascii_case("utf-8") || label.eq_ignore_ascii_case("utf8")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_read_like_a_browser_reads_them() {
        let o = AllowedOrigins::default();
        for bad in [
            "javascript:alert(1)",
            "&#106;avascript:alert(1)",
            "java&#x09;script&colon;alert(1)",
            " \u{1}JaVaScRiPt:alert(1)",
            "java\nscript:alert(1)",
            "vbscript:x",
            "data:text/html,x",
        ] {
            assert_eq!(
                attribute_rule(&o, "a", "href", bad),
                AttributeRule::Drop,
                "{bad}"
            );
        }
        for good in [
            "https://x.test/a?b=1&amp;c=2",
            "#top",
            "page.html",
            "mailto:a@b",
        ] {
            assert_eq!(
                attribute_rule(&o, "a", "href", good),
                AttributeRule::Keep,
                "{good}"
            );
        }
    }

    #[test]
    fn meta_keeps_what_declares_utf8_and_names() {
        assert_eq!(
            meta_rule(Some("UTF-8"), None, None),
            MetaRule::Keep {
                declares_charset: true
            }
        );
        assert_eq!(
            meta_rule(Some("iso-2022-jp"), None, None),
            MetaRule::FixCharset
        );
        assert_eq!(
            meta_rule(None, Some("Content-Type"), Some("text/html; charset=utf-8")),
            MetaRule::Keep {
                declares_charset: true
            }
        );
        assert_eq!(
            meta_rule(None, Some("refresh"), Some("0;url=javascript:x")),
            MetaRule::Drop
        );
        assert_eq!(
            meta_rule(None, Some("content-type"), Some("text/html; charset=utf-7")),
            MetaRule::Drop
        );
        assert_eq!(
            meta_rule(None, None, Some("width=device-width")),
            MetaRule::Keep {
                declares_charset: false
            }
        );
    }
}
