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
//!
//! A document is rewritten in one pass (module `pass`), whole or fed in pieces as it is
//! written ([`HtmlSanitizer::stream`]: the same output however it is cut). A document of
//! plain markup — what the pass would leave exactly as written, such as a report's table of
//! attribute-less rows — is recognized by a scan of its bytes instead (module `plain`) and
//! comes out as written, with the declaration where the pass would add it; the first token
//! that is not plain sends the whole document through the pass.
mod attr_value;
mod css_refs;
mod origins;
mod pass;
mod plain;
mod policy;

pub use origins::{AllowedOrigins, OriginError};

use lol_html::errors::RewritingError;
use lol_html::{HtmlRewriter, MemorySettings, Settings, element};
use pass::Pass;
use policy::{AttributeRule, MetaRule};
use reporter_ports::ports::{HtmlSanitizeStream, HtmlSanitizer};
use std::cell::RefCell;

/// The memory lol_html may use for one document's parsing buffers (a single tag or text run
/// longer than this — such as a huge inline image — makes the document refused).
pub const MAX_MEMORY: usize = 64 * 1024 * 1024;

const CHARSET_META: &str = "<meta charset=\"utf-8\">";
const LINK_REL: &str = "noopener noreferrer";

/// The report-document HTML sanitizer.
#[derive(Debug, Clone, Default)]
pub struct DocumentSanitizer {
    origins: AllowedOrigins,
}

/// The name the sanitizer had when it was built on ammonia; the same type.
pub type AmmoniaSanitizer = DocumentSanitizer;

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
}

impl DocumentSanitizer {
    /// `html` rewritten by one [`Pass`] (escaped when the rewriter refuses it).
    fn rewritten(&self, html: &str) -> String {
        let mut pass = Pass::new(self);
        pass.write(html.as_bytes())
            .and_then(|()| pass.finish())
            .unwrap_or_else(|_| refused(html))
    }
}

impl HtmlSanitizer for DocumentSanitizer {
    /// A document of plain markup ([`plain`]) as written, with its UTF-8 declaration; any
    /// other rewritten.
    fn sanitize(&self, html: &str) -> String {
        match plain::PlainScan::new().finish(self, html) {
            Ok(at) => plain::declared(html.to_owned(), at),
            Err(plain::NotPlain) => self.rewritten(html),
        }
    }

    /// Scans each piece as it comes while the document is plain markup, then, from the first
    /// piece that is not, rewrites the document so far and each piece after it; the document
    /// as written is kept beside the output, for the case the rewriter refuses it (then it
    /// comes out escaped, as from [`HtmlSanitizer::sanitize`]).
    fn stream(&self) -> Box<dyn HtmlSanitizeStream + '_> {
        Box::new(DocumentStream {
            rules: self,
            mode: Mode::Plain(plain::PlainScan::new()),
            html: String::new(),
        })
    }
}

/// How a [`DocumentStream`] reads its document.
enum Mode<'a> {
    /// Plain markup so far: scanned, not rewritten.
    Plain(plain::PlainScan),
    /// Rewritten by one [`Pass`] fed piece by piece.
    Rewriting(Box<Pass<'a>>),
    /// The rewriter refused the document.
    Refused,
}

/// [`DocumentSanitizer`]'s stream.
struct DocumentStream<'a> {
    rules: &'a DocumentSanitizer,
    mode: Mode<'a>,
    /// The document as written so far.
    html: String,
}

impl HtmlSanitizeStream for DocumentStream<'_> {
    fn write(&mut self, piece: &str) {
        self.html.push_str(piece);
        let plain = match &mut self.mode {
            Mode::Plain(scan) => scan.advance(self.rules, &self.html),
            Mode::Rewriting(pass) => {
                if pass.write(piece.as_bytes()).is_err() {
                    self.mode = Mode::Refused;
                }
                return;
            }
            Mode::Refused => return,
        };
        if plain.is_err() {
            let mut pass = Pass::new(self.rules);
            self.mode = match pass.write(self.html.as_bytes()) {
                Ok(()) => Mode::Rewriting(Box::new(pass)),
                Err(_) => Mode::Refused,
            };
        }
    }

    fn finish(self: Box<Self>) -> String {
        let Self { rules, mode, html } = *self;
        match mode {
            Mode::Plain(scan) => match scan.finish(rules, &html) {
                Ok(at) => plain::declared(html, at),
                Err(plain::NotPlain) => rules.rewritten(&html),
            },
            Mode::Rewriting(pass) => pass.finish().unwrap_or_else(|_| refused(&html)),
            Mode::Refused => refused(&html),
        }
    }
}

/// Whether a sanitized document declares UTF-8 in a `<meta>`. Read from the output, where
/// every `<meta>` left is a kept one (none from inside a removed element).
fn declares_utf8(sanitized: &[u8]) -> Result<bool, RewritingError> {
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
    rewriter.write(sanitized)?;
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
