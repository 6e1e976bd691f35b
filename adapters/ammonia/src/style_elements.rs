//! Applies [`css_refs::neutralize`](crate::css_refs::neutralize) to the `<style>` elements of
//! ammonia's output (ammonia keeps a `<style>` element's text as it is).
//!
//! Relies on how html5ever serializes a cleaned tree: `<` and `>` are escaped in text and in
//! attribute values, comments are stripped, so outside a `<style>` element's raw text every
//! `<` starts a tag; a `<style>` element's text never holds `</style` followed by a space,
//! `/` or `>` (that would have ended it), so it ends at the first `</style>`.
use crate::css_refs::neutralize;
use crate::origins::AllowedOrigins;

const OPEN: &str = "<style";
const CLOSE: &str = "</style>";

/// `html` (ammonia's output) with each `<style>` element's text neutralized; an element
/// whose CSS cannot be read is kept empty.
pub(crate) fn neutralize_style_elements(html: &str, origins: &AllowedOrigins) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some((before, tag_start)) = next_style_tag(rest) {
        out.push_str(before);
        let after_tag = &rest[tag_start..];
        let Some(gt) = after_tag.find('>') else {
            // A tag without its end: not ammonia's output. Keep nothing of it.
            return out;
        };
        out.push_str(&after_tag[..=gt]);
        let content_and_rest = &after_tag[gt + 1..];
        let (content, tail) = match content_and_rest.find(CLOSE) {
            Some(end) => content_and_rest.split_at(end),
            None => (content_and_rest, ""),
        };
        out.push_str(&neutralize(content, origins).unwrap_or_default());
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// The text before the next `<style` start tag of `html`, and where that tag starts.
fn next_style_tag(html: &str) -> Option<(&str, usize)> {
    let mut from = 0;
    while let Some(pos) = html.get(from..)?.find(OPEN) {
        let start = from + pos;
        let next = html.as_bytes().get(start + OPEN.len()).copied();
        if matches!(
            next,
            Some(b' ' | b'>' | b'/' | b'\t' | b'\n' | b'\r' | b'\x0c')
        ) {
            return Some((&html[..start], start));
        }
        from = start + OPEN.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_style_element_text_is_rewritten() {
        let o = AllowedOrigins::default();
        let html = "<p>url(http://x)</p><style class=\"a\">b{background:url(http://x)}</style><stylex>c</stylex><style>d{}</style>";
        assert_eq!(
            neutralize_style_elements(html, &o),
            "<p>url(http://x)</p><style class=\"a\">b{background:none}</style><stylex>c</stylex><style>d{}</style>"
        );
    }

    #[test]
    fn an_unclosed_style_element_is_still_neutralized() {
        let o = AllowedOrigins::default();
        assert_eq!(
            neutralize_style_elements("<style>@import 'http://x';", &o),
            "<style>@import none;"
        );
    }
}
