//! [`AmmoniaSanitizer`]: the [`HtmlSanitizer`] port on [ammonia](https://docs.rs/ammonia),
//! configured for report layouts.
//!
//! Kept: ammonia's safe defaults (text formatting, lists, links with ordinary schemes) plus
//! tables with their layout attributes, `style`, `class`, `id`, `align`, `width`… on every
//! element, `<style>` elements, `<title>`, `<meta charset>` (no other meta attribute: never
//! `http-equiv`), `<img>` from raster `data:image/…` URIs, and the document skeleton
//! (`<!DOCTYPE html>`, `<html lang>`, `<head>`, `<body>` with its attributes).
//!
//! Nothing loads from elsewhere, unless from an origin of [`AllowedOrigins`] (none by
//! default): an `<img src>` that is not a raster `data:` URI or a URL of an allowed origin
//! loses its `src` (relative URLs too: a saved report would resolve them against the file
//! system), and every CSS reference — `url()`, `@import`, `@font-face` `src`, `image-set()`…,
//! escapes included — in `style` attributes and `<style>` elements is replaced by `none`
//! (module `css_refs`). Links (`<a href>`) are navigation, not loads: they stay.
//! The elements that load by themselves (`<link>`, `<iframe>`, `<object>`, `<embed>`,
//! `<video>`, `<audio>`, `<source>`, `<track>`, `<picture>`, `<input type=image>`, SVG) are
//! not kept at all, nor are the attributes that load (`srcset`, `poster`, `background`,
//! `ping`…).
//!
//! Removed: everything that can execute script — `<script>` (with its content), every `on…`
//! attribute, `javascript:`/`vbscript:`/`data:` links, `<iframe>`, `<object>`, `<embed>`,
//! `<form>`, `<base>`, `<link>`, `<meta http-equiv>`, SVG and MathML, comments — and style
//! values that name script (`expression(`, `javascript:`, `behavior:`).
//!
//! Ammonia parses fragments, so a document is cleaned as one fragment (the HTML5 parser drops
//! the `html`/`head`/`body` tags and keeps `title`, `meta` and `style` in place) and the
//! skeleton is written around the result; the attributes of the `<html>` and `<body>` tags are
//! cleaned by the same rules and put back.
mod css_refs;
mod origins;
mod style_elements;

pub use origins::{AllowedOrigins, OriginError};

use ammonia::Builder;
use origins::UrlUse;
use reporter_ports::ports::HtmlSanitizer;
use std::borrow::Cow;
use std::sync::Arc;

/// The report-layout HTML sanitizer.
pub struct AmmoniaSanitizer {
    builder: Builder<'static>,
    origins: Arc<AllowedOrigins>,
}

impl std::fmt::Debug for AmmoniaSanitizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AmmoniaSanitizer").finish_non_exhaustive()
    }
}

impl Default for AmmoniaSanitizer {
    fn default() -> Self {
        Self::new()
    }
}

const LAYOUT_TAGS: &[&str] = &[
    "style", "title", "meta", "main", "section", "tfoot", "font", "label", "address", "big",
];
const LAYOUT_ATTRIBUTES: &[&str] = &[
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

/// Decides one attribute after ammonia's own rules: no `data:` except raster images (SVG can
/// carry script), an `<img src>` only inline or from an allowed origin, no script in style
/// values and their references neutralized.
fn filter_attribute<'u>(
    origins: &AllowedOrigins,
    element: &str,
    attribute: &str,
    value: &'u str,
) -> Option<Cow<'u, str>> {
    let lower = value.trim().to_ascii_lowercase();
    match attribute {
        "src" if element == "img" => origins
            .allows(value, UrlUse::Image)
            .then_some(Cow::Borrowed(value)),
        "src" | "href" if lower.starts_with("data:") => None,
        "style"
            if lower.contains("expression(")
                || lower.contains("javascript:")
                || lower.contains("behavior:")
                || lower.contains("-moz-binding") =>
        {
            None
        }
        "style" => css_refs::neutralize(value, origins).ok(),
        _ => Some(Cow::Borrowed(value)),
    }
}

impl AmmoniaSanitizer {
    /// The sanitizer with the report-layout rules; nothing loads from elsewhere.
    pub fn new() -> Self {
        Self::with_allowed_origins(AllowedOrigins::default())
    }

    /// The sanitizer with the report-layout rules; images, stylesheets and fonts may load
    /// from `origins` (absolute http/https URLs of those origins only).
    pub fn with_allowed_origins(origins: AllowedOrigins) -> Self {
        let origins = Arc::new(origins);
        let filter_origins = origins.clone();
        let mut builder = Builder::default();
        builder
            .rm_clean_content_tags(&["style"])
            .add_tags(LAYOUT_TAGS)
            .add_generic_attributes(LAYOUT_ATTRIBUTES)
            .add_tag_attributes("meta", &["charset"])
            .add_tag_attributes("td", &["abbr"])
            .add_tag_attributes("th", &["abbr"])
            .add_tag_attributes("font", &["face", "size"])
            .add_tag_attributes("img", &["title"])
            .add_url_schemes(&["data"])
            .link_rel(Some("noopener noreferrer"))
            .strip_comments(true)
            .attribute_filter(move |element, attribute, value| {
                filter_attribute(&filter_origins, element, attribute, value)
            });
        Self { builder, origins }
    }

    /// The cleaned attributes of an opening tag such as `<body class=x onload=y>` (as written
    /// in the document), serialized with a leading space each.
    fn clean_attributes(&self, raw: Option<&str>) -> String {
        let Some(raw) = raw else {
            return String::new();
        };
        let probe = format!("<div {raw}></div>");
        let cleaned = self.builder.clean(&probe).to_string();
        cleaned
            .strip_prefix("<div")
            .and_then(|s| s.split_once('>'))
            .map(|(a, _)| a.to_owned())
            .unwrap_or_default()
    }
}

/// The attribute text of the first `<name …>` tag of `html` (case-insensitive), if any.
fn opening_tag_attributes<'a>(html: &'a str, lower: &str, name: &str) -> Option<&'a str> {
    let needle = format!("<{name}");
    let mut from = 0;
    while let Some(pos) = lower[from..].find(&needle) {
        let start = from + pos + needle.len();
        let next = lower.as_bytes().get(start).copied();
        if matches!(
            next,
            Some(b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' | b'>' | b'/')
        ) {
            let end = lower[start..].find('>').map_or(lower.len(), |e| start + e);
            return html.get(start..end).map(|s| s.trim().trim_end_matches('/'));
        }
        from = start;
    }
    None
}

impl HtmlSanitizer for AmmoniaSanitizer {
    fn sanitize(&self, html: &str) -> String {
        let lower = html.to_ascii_lowercase();
        let html_attrs = self.clean_attributes(opening_tag_attributes(html, &lower, "html"));
        let body_attrs = self.clean_attributes(opening_tag_attributes(html, &lower, "body"));
        let body = self.builder.clean(html).to_string();
        let body = style_elements::neutralize_style_elements(&body, &self.origins);
        format!(
            "<!DOCTYPE html>\n<html{html_attrs}>\n<head><meta charset=\"utf-8\"></head>\n<body{body_attrs}>\n{body}\n</body>\n</html>\n"
        )
    }
}
