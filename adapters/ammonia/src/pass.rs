//! One rewriting pass over a document, fed in pieces ([`Pass`]).
//!
//! The document is rewritten once. Whether it needs the UTF-8 declaration is only known at
//! its end (a kept `<meta>` may come anywhere), so the pass notes where the declaration
//! would go — before the first element other than `<html>`, or first in `<head>` — as the
//! byte offset of the output at that point, and inserts it there once the document ended
//! and declared nothing. Every byte before an element's start tag (or before a text chunk, a
//! comment or an end tag a handler sees) has reached the output when its handler runs, so
//! the offset is where `before`/`prepend` of that element would have written. (One
//! difference: a stray end tag right after `<head>`, such as `<head></p>`, which no handler
//! sees, comes before the declaration; a browser ignores it, so the declaration is still
//! the first thing in the head.)
use crate::policy::{self, AttributeRule, ElementRule, MetaRule};
use crate::{CHARSET_META, DocumentSanitizer, LINK_REL, MAX_MEMORY, css_refs, declares_utf8};
use lol_html::errors::RewritingError;
use lol_html::html_content::{ContentType, Element, TextChunk, TextType};
use lol_html::{
    HtmlRewriter, MemorySettings, OutputSink, Settings, doc_comments, doc_text, element, text,
};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

const HTML_NAMESPACE: &str = "http://www.w3.org/1999/xhtml";

/// Where the UTF-8 declaration goes if the document declares none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CharsetAt {
    /// No element other than `<html>` yet: first in the output (a document of text only,
    /// or of `<html>` and text).
    NotYet,
    /// Right after the `<head>` start tag: the offset the next token sees.
    AfterHeadTag,
    /// At this offset of the output.
    At(usize),
}

/// The state the handlers and the output share.
#[derive(Debug)]
struct Shared {
    /// Bytes written to the output so far.
    written: Cell<usize>,
    charset_at: Cell<CharsetAt>,
    /// A `<meta>` was kept (it may declare UTF-8; the output says whether it does).
    kept_meta: Cell<bool>,
    /// The text of the `<style>` element being read.
    css: RefCell<String>,
}

impl Shared {
    /// A token after the `<head>` start tag is seen: the declaration goes before it.
    fn settle(&self) {
        if self.charset_at.get() == CharsetAt::AfterHeadTag {
            self.charset_at.set(CharsetAt::At(self.written.get()));
        }
    }
}

/// The rewriter's output: gathered, its length counted for the handlers.
struct Output {
    bytes: Rc<RefCell<Vec<u8>>>,
    shared: Rc<Shared>,
}

impl OutputSink for Output {
    fn handle_chunk(&mut self, chunk: &[u8]) {
        self.shared
            .written
            .set(self.shared.written.get() + chunk.len());
        self.bytes.borrow_mut().extend_from_slice(chunk);
    }
}

/// A document being rewritten under `'a`'s rules: [`Self::write`] its pieces, then
/// [`Self::finish`].
pub(crate) struct Pass<'a> {
    rewriter: HtmlRewriter<'a, Output>,
    shared: Rc<Shared>,
    bytes: Rc<RefCell<Vec<u8>>>,
}

impl<'a> Pass<'a> {
    /// A pass with `rules`' allowed origins.
    pub(crate) fn new(rules: &'a DocumentSanitizer) -> Self {
        let shared = Rc::new(Shared {
            written: Cell::new(0),
            charset_at: Cell::new(CharsetAt::NotYet),
            kept_meta: Cell::new(false),
            css: RefCell::new(String::new()),
        });
        let bytes = Rc::new(RefCell::new(Vec::new()));
        let (on_element, on_style, on_text, on_comment) = (
            Rc::clone(&shared),
            Rc::clone(&shared),
            Rc::clone(&shared),
            Rc::clone(&shared),
        );
        let settings = Settings::new()
            .append_element_content_handler(element!("*", move |el| {
                element_start(rules, el, &on_element);
                Ok(())
            }))
            .append_element_content_handler(text!("style", move |t| {
                style_text(rules, t, &on_style);
                Ok(())
            }))
            .append_document_content_handler(doc_text!(move |t| {
                on_text.settle();
                if matches!(
                    t.text_type(),
                    TextType::CDataSection | TextType::ScriptData | TextType::PlainText
                ) {
                    t.remove();
                }
                Ok(())
            }))
            .append_document_content_handler(doc_comments!(move |_| {
                on_comment.settle();
                Ok(())
            }))
            .with_memory_settings(MemorySettings::new().with_max_allowed_memory_usage(MAX_MEMORY))
            .with_strict(true);
        let output = Output {
            bytes: Rc::clone(&bytes),
            shared: Rc::clone(&shared),
        };
        Self {
            rewriter: HtmlRewriter::new(settings, output),
            shared,
            bytes,
        }
    }

    /// Rewrites the next piece of the document.
    pub(crate) fn write(&mut self, piece: &[u8]) -> Result<(), RewritingError> {
        self.rewriter.write(piece)
    }

    /// The rewritten document, with the UTF-8 declaration where it goes when the document
    /// declares none.
    pub(crate) fn finish(self) -> Result<String, RewritingError> {
        let Self {
            rewriter,
            shared,
            bytes,
        } = self;
        rewriter.end()?;
        let mut out = bytes.take();
        let declared = shared.kept_meta.get() && declares_utf8(&out)?;
        if !declared {
            let at = match shared.charset_at.get() {
                // No element took it: first in the document.
                CharsetAt::NotYet => 0,
                CharsetAt::AfterHeadTag => out.len(),
                CharsetAt::At(at) => at.min(out.len()),
            };
            out.splice(at..at, CHARSET_META.bytes());
        }
        Ok(String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
    }
}

/// Applies the rules to one element (start tag).
fn element_start(rules: &DocumentSanitizer, el: &mut Element<'_, '_>, shared: &Rc<Shared>) {
    shared.settle();
    let tag = el.tag_name();
    if shared.charset_at.get() == CharsetAt::NotYet && tag != "html" {
        if tag == "head" && el.namespace_uri() == HTML_NAMESPACE {
            shared.charset_at.set(CharsetAt::AfterHeadTag);
            // `<head></head>`: the declaration goes before the end tag.
            if let Some(handlers) = el.end_tag_handlers() {
                let shared = Rc::clone(shared);
                handlers.push(Box::new(move |_| {
                    shared.settle();
                    Ok(())
                }));
            }
        } else {
            shared.charset_at.set(CharsetAt::At(shared.written.get()));
        }
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
        shared.kept_meta.set(true);
    }
    filter_attributes(rules, el, &tag);
}

/// Removes the attributes the rules refuse and rewrites those they change; a start tag
/// whose attributes all stay is left as written.
fn filter_attributes(rules: &DocumentSanitizer, el: &mut Element<'_, '_>, tag: &str) {
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
            crate::link_rel(raw)
        } else {
            policy::attribute_rule(&rules.origins, tag, name, raw)
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

/// Collects a `<style>` element's text and writes it back with its references neutralized
/// (unreadable CSS is dropped whole).
fn style_text(rules: &DocumentSanitizer, t: &mut TextChunk<'_>, shared: &Shared) {
    let mut css = shared.css.borrow_mut();
    css.push_str(t.as_str());
    if !t.last_in_text_node() {
        t.remove();
        return;
    }
    let css = std::mem::take(&mut *css);
    match css_refs::neutralize(&css, &rules.origins) {
        // Unchanged: the last chunk stands as written, the earlier ones go back before it.
        Ok(std::borrow::Cow::Borrowed(_)) => {
            let last = t.as_str().len();
            t.before(&css[..css.len() - last], ContentType::Html);
        }
        Ok(std::borrow::Cow::Owned(new)) => t.replace(&new, ContentType::Html),
        Err(_) => t.remove(),
    }
}
