//! [`DocumentSanitizer`] (also known by its former name [`AmmoniaSanitizer`]): the
//! [`HtmlSanitizer`] port for report documents.
//!
//! A report is a document and stays the one its template wrote: the sanitizer rewrites it as
//! a stream ([lol_html](https://docs.rs/lol_html), Cloudflare's streaming HTML rewriter)
//! instead of parsing a fragment and serializing a new tree. Doctype, `<html>`, `<head>`,
//! `<title>`, `<meta>`, `<style>`, comments, whitespace and character references come out
//! byte for byte where they hold nothing active; only what can run script or load from
//! elsewhere is removed or rewritten (a start tag whose attributes change is written anew).
//!
//! Kept ([`policy`]): ammonia's safe defaults (text formatting, lists, links with ordinary
//! schemes) plus tables with their layout attributes, `style`, `class`, `id`, `align`,
//! `width`… on every element, `<style>` elements, `<title>`, `<meta>` with `charset`,
//! `name`, `content` (a charset other than UTF-8 becomes `utf-8`: the report is UTF-8; the
//! only `http-equiv` kept is a UTF-8 `content-type`), `<img>` from raster `data:image/…` URIs,
//! and the skeleton (`<!DOCTYPE>`, `<html>`, `<head>`, `<body>` with their attributes). A
//! document that declares no charset gets one `<meta charset="utf-8">`, first in its head.
//!
//! Nothing loads from elsewhere, unless from an origin of [`AllowedOrigins`] (none by
//! default): an `<img src>` that is not a raster `data:` URI or a URL of an allowed origin
//! loses its `src`, and every CSS reference — `url()`, `@import`, `@font-face` `src`,
//! `image-set()`…, escapes included — in `style` attributes and `<style>` elements is replaced
//! by `none` (module `css_refs`). Links (`<a href>`) are navigation, not loads: they stay, with
//! `rel="noopener noreferrer"`. Elements that load by themselves (`<link>`, `<iframe>`,
//! `<object>`, `<embed>`, media, SVG…) are not kept, nor are the attributes that load
//! (`srcset`, `poster`, `background`, `ping`…).
//!
//! Removed: everything that can execute script — `<script>`, `<noscript>`, frames, objects,
//! SVG and MathML (with their content), every `on…` attribute (no attribute outside the
//! allow-lists survives), `javascript:`/`vbscript:`/`data:` links (values read as a browser
//! reads them: references decoded, URLs parsed per WHATWG), `<form>`, `<base>`, `<link>`,
//! other `<meta http-equiv>` — and style values that name script (`expression(`…). An element
//! outside the lists loses its tags and keeps its (filtered) content.
//!
//! Why the stream cannot be read differently by a browser: lol_html runs in strict mode (it
//! refuses markup whose parsing it cannot tell without a tree, such as text in `<select>` or
//! some foreign content), every element it does not place in the HTML namespace is removed
//! with its content, and CDATA, script and plaintext text never reaches the output; so what
//! is kept is HTML the browser tokenizes as lol_html did. A document the rewriter refuses
//! (ambiguous, or beyond [`MAX_MEMORY`]) comes out as its text, escaped, in a `<pre>`.
mod attr_value;
mod css_refs;
mod origins;
mod policy;

pub use origins::{AllowedOrigins, OriginError};

use lol_html::errors::RewritingError;
use lol_html::html_content::{ContentType, Element, TextChunk, TextType};
use lol_html::{HtmlRewriter, MemorySettings, Settings, doc_text, element, text};
use policy::{AttributeRule, ElementRule, MetaRule};
use reporter_ports::ports::HtmlSanitizer;
use std::cell::RefCell;

/// The memory lol_html may use for one document's parsing buffers (a single tag or text run
/// longer than this — such as a huge inline image — makes the document refused).
pub const MAX_MEMORY: usize = 64 * 1024 * 1024;

const HTML_NAMESPACE: &str = "http://www.w3.org/1999/xhtml";
const CHARSET_META: &str = "<meta charset=\"utf-8\">";
const LINK_REL: &str = "noopener noreferrer";

/// The report-document HTML sanitizer.
#[derive(Debug, Clone, Default)]
pub struct DocumentSanitizer {
    origins: AllowedOrigins,
}

/// The name the sanitizer had when it was built on ammonia; the same type.
pub type AmmoniaSanitizer = DocumentSanitizer;

/// The state of one pass over a document.
#[derive(Debug, Default)]
struct Pass {
    /// This pass inserts [`CHARSET_META`] before the first element (or first in `<head>`).
    insert_charset: bool,
    /// The text of the `<style>` element being read.
    css: String,
}

impl DocumentSanitizer {
    /// The sanitizer with the report-layout rules; nothing loads from elsewhere.
    pub fn new() -> Self {
        Self::default()
    }

    /// The sanitizer with the report-layout rules; images, stylesheets and fonts may load
    /// from `origins` (absolute http/https URLs of those origins only).
    pub fn with_allowed_origins(origins: AllowedOrigins) -> Self {
        Self { origins }
    }

    /// One rewriting pass; with `insert_charset`, adds the UTF-8 declaration.
    fn rewrite(&self, html: &str, insert_charset: bool) -> Result<String, RewritingError> {
        let pass = RefCell::new(Pass {
            insert_charset,
            ..Pass::default()
        });
        let mut out = Vec::with_capacity(html.len() + CHARSET_META.len());
        {
            let settings = Settings::new()
                .append_element_content_handler(element!("*", |el| {
                    self.element(el, &mut pass.borrow_mut());
                    Ok(())
                }))
                .append_element_content_handler(text!("style", |t| {
                    self.style_text(t, &mut pass.borrow_mut());
                    Ok(())
                }))
                .append_document_content_handler(doc_text!(|t| {
                    if matches!(
                        t.text_type(),
                        TextType::CDataSection | TextType::ScriptData | TextType::PlainText
                    ) {
                        t.remove();
                    }
                    Ok(())
                }))
                .with_memory_settings(
                    MemorySettings::new().with_max_allowed_memory_usage(MAX_MEMORY),
                )
                .with_strict(true);
            let mut rewriter = HtmlRewriter::new(settings, |c: &[u8]| out.extend_from_slice(c));
            rewriter.write(html.as_bytes())?;
            rewriter.end()?;
        }
        let mut out = String::from_utf8_lossy(&out).into_owned();
        if pass.into_inner().insert_charset {
            // No element took it.
            out.insert_str(0, CHARSET_META);
        }
        Ok(out)
    }

    /// Applies the rules to one element (start tag).
    fn element(&self, el: &mut Element<'_, '_>, pass: &mut Pass) {
        let tag = el.tag_name();
        if pass.insert_charset && tag != "html" {
            if tag == "head" && el.namespace_uri() == HTML_NAMESPACE {
                el.prepend(CHARSET_META, ContentType::Html);
            } else {
                el.before(CHARSET_META, ContentType::Html);
            }
            pass.insert_charset = false;
        }
        if el.namespace_uri() != HTML_NAMESPACE {
            el.remove();
            return;
        }
        match policy::element_rule(&tag) {
            ElementRule::Drop => return el.remove(),
            ElementRule::Unwrap => return el.remove_and_keep_content(),
            ElementRule::Keep => {}
        }
        if tag == "meta" {
            let rule = policy::meta_rule(
                el.get_attribute("charset").as_deref(),
                el.get_attribute("http-equiv").as_deref(),
                el.get_attribute("content").as_deref(),
            );
            match rule {
                MetaRule::Drop => return el.remove(),
                MetaRule::FixCharset => {
                    let _ = el.set_attribute("charset", "utf-8");
                }
                MetaRule::Keep { .. } => {}
            }
        }
        self.filter_attributes(el, &tag);
    }

    /// Removes the attributes the rules refuse and rewrites those they change; a start tag
    /// whose attributes all stay is left as written.
    fn filter_attributes(&self, el: &mut Element<'_, '_>, tag: &str) {
        if tag != "a" && el.attributes().is_empty() {
            return;
        }
        let written: Vec<(String, String)> = el
            .attributes()
            .iter()
            .map(|a| (a.name(), a.value()))
            .collect();
        let mut changed = false;
        let mut kept: Vec<(&str, String)> = Vec::with_capacity(written.len());
        let mut has_rel = false;
        for (i, (name, raw)) in written.iter().enumerate() {
            // A browser reads the first of duplicate attributes; the others go.
            if written[..i].iter().any(|(n, _)| n == name) {
                changed = true;
                continue;
            }
            let rule = if tag == "a" && name == "rel" {
                has_rel = true;
                link_rel(raw)
            } else {
                policy::attribute_rule(&self.origins, tag, name, raw)
            };
            match rule {
                AttributeRule::Keep => kept.push((name, raw.clone())),
                AttributeRule::Replace(v) => {
                    changed = true;
                    kept.push((name, v));
                }
                AttributeRule::Drop => changed = true,
            }
        }
        if tag == "a" && !has_rel {
            changed = true;
            kept.push(("rel", LINK_REL.to_owned()));
        }
        if !changed {
            return;
        }
        for (name, _) in &written {
            el.remove_attribute(name);
        }
        for (name, value) in kept {
            // Names come from the parsed tag (or are "rel"): always valid.
            let _ = el.set_attribute(name, &value);
        }
    }

    /// Collects a `<style>` element's text and writes it back with its references
    /// neutralized (unreadable CSS is dropped whole).
    fn style_text(&self, t: &mut TextChunk<'_>, pass: &mut Pass) {
        pass.css.push_str(t.as_str());
        if !t.last_in_text_node() {
            t.remove();
            return;
        }
        let css = std::mem::take(&mut pass.css);
        match css_refs::neutralize(&css, &self.origins) {
            // Unchanged: the last chunk stands as written, the earlier ones go back before it.
            Ok(std::borrow::Cow::Borrowed(_)) => {
                let last = t.as_str().len();
                t.before(&css[..css.len() - last], ContentType::Html);
            }
            Ok(std::borrow::Cow::Owned(new)) => t.replace(&new, ContentType::Html),
            Err(_) => t.remove(),
        }
    }
}

impl HtmlSanitizer for DocumentSanitizer {
    fn sanitize(&self, html: &str) -> String {
        let result = self.rewrite(html, false).and_then(|out| {
            if declares_utf8(&out)? {
                Ok(out)
            } else {
                self.rewrite(html, true)
            }
        });
        result.unwrap_or_else(|_| refused(html))
    }
}

/// Whether a sanitized document declares UTF-8 in a `<meta>`. Read from the output, where
/// every `<meta>` left is a kept one (none from inside a removed element).
fn declares_utf8(sanitized: &str) -> Result<bool, RewritingError> {
    let found = RefCell::new(false);
    let settings = Settings::new()
        .append_element_content_handler(element!("meta", |el| {
            let rule = policy::meta_rule(
                el.get_attribute("charset").as_deref(),
                el.get_attribute("http-equiv").as_deref(),
                el.get_attribute("content").as_deref(),
            );
            if rule
                == (MetaRule::Keep {
                    declares_charset: true,
                })
            {
                *found.borrow_mut() = true;
            }
            Ok(())
        }))
        .with_memory_settings(MemorySettings::new().with_max_allowed_memory_usage(MAX_MEMORY))
        .with_strict(true);
    let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
    rewriter.write(sanitized.as_bytes())?;
    rewriter.end()?;
    Ok(found.into_inner())
}

/// A link's `rel` (as written): kept when it holds `noopener` and `noreferrer`, else with
/// them added (the linked page learns neither the report's URL nor gets a handle on it).
fn link_rel(raw: &str) -> AttributeRule {
    let Some(value) = attr_value::decode(raw) else {
        return AttributeRule::Replace(LINK_REL.to_owned());
    };
    let mut tokens: Vec<&str> = value.split_ascii_whitespace().collect();
    let before = tokens.len();
    for needed in LINK_REL.split(' ') {
        if !tokens.iter().any(|t| t.eq_ignore_ascii_case(needed)) {
            tokens.push(needed);
        }
    }
    if tokens.len() == before {
        AttributeRule::Keep
    } else {
        AttributeRule::Replace(attr_value::encode(&tokens.join(" ")))
    }
}

/// A document the rewriter refused: its text, escaped, so nothing of it is markup.
fn refused(html: &str) -> String {
    let mut out = String::with_capacity(html.len() + 64);
    out.push_str("<!DOCTYPE html>\n");
    out.push_str(CHARSET_META);
    out.push_str("\n<pre>");
    for c in html.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out.push_str("</pre>\n");
    out
}
