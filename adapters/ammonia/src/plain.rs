//! The plain-markup fast path ([`PlainScan`]): a document whose markup the rewriter would
//! leave exactly as written is recognized by one scan of its bytes and comes out as written,
//! with the UTF-8 declaration where the rewriting pass ([`crate::pass`]) puts it; no
//! rewriter runs.
//!
//! Plain markup is what report tables are made of: start and end tags of ordinary kept
//! elements ([`ordinary`]: those whose content the HTML tokenizer reads as ordinary text,
//! so lol_html never changes its reading of what follows nor meets an ambiguity), with
//! attributes written `name="value"`, `name='value'` or `name` that the rules keep as
//! written ([`policy::attribute_rule`]); `<meta>` the rules keep as written
//! ([`policy::meta_rule`]); comments; `<!DOCTYPE html>`; text. Whatever else the scan meets —
//! any other element, an attribute the rules drop or change, an unquoted value, a duplicate
//! attribute, a link (`<a>` gains a `rel`), `<?`, a `<` that starts no tag, NUL, a tag or
//! comment longer than [`MAX_TOKEN`] — ends the fast path: the rewriter then runs over the
//! whole document, as it always did. The fast path therefore answers only for documents the
//! rewriter leaves as written (its tests compare the two on every document they know).
use crate::DocumentSanitizer;
use crate::pass::CharsetAt;
use crate::policy::{self, AttributeRule, MetaRule};

/// Longest tag, comment or doctype the scan waits for; a longer one ends the fast path.
pub(crate) const MAX_TOKEN: usize = 64 * 1024;

/// The document is not plain markup: the rewriter runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NotPlain;

/// A scan of a document fed in pieces: [`Self::advance`] as pieces arrive, then
/// [`Self::finish`].
#[derive(Debug, Clone)]
pub(crate) struct PlainScan {
    /// Bytes of the document read (complete tokens; text may stop anywhere).
    read: usize,
    /// Where the UTF-8 declaration goes, as [`crate::pass`] decides it.
    charset_at: CharsetAt,
    /// A kept `<meta>` declares UTF-8.
    declared: bool,
}

/// One token at the start of the unread part.
enum Token<'d> {
    /// Not complete yet (more of the document may complete it).
    Partial,
    /// Text of this many bytes.
    Text(usize),
    /// A comment of this many bytes.
    Comment(usize),
    /// `<!DOCTYPE html>`, of this many bytes.
    Doctype(usize),
    /// A start tag of this many bytes, its lower-case name, whether it closes itself
    /// (`/>`), and its attributes (lower-case names, values as written).
    Start {
        len: usize,
        name: Name,
        self_closing: bool,
        attributes: Vec<(String, &'d str)>,
    },
    /// An end tag of this many bytes and its lower-case name.
    End(usize, Name),
}

impl PlainScan {
    /// A scan at the start of a document.
    pub(crate) fn new() -> Self {
        Self {
            read: 0,
            charset_at: CharsetAt::NotYet,
            declared: false,
        }
    }

    /// Reads the tokens of `doc` (the document so far, which starts with what was read
    /// before) that are complete. `Err` once the document is not plain markup.
    pub(crate) fn advance(&mut self, rules: &DocumentSanitizer, doc: &str) -> Result<(), NotPlain> {
        while self.read < doc.len() {
            let at = self.read;
            match token(&doc[at..])? {
                Token::Partial => return Ok(()),
                Token::Text(len) => {
                    self.settle(at);
                    self.read += len;
                }
                Token::Comment(len) => {
                    self.settle(at);
                    self.read += len;
                }
                Token::Doctype(len) => self.read += len,
                Token::Start {
                    len,
                    name,
                    self_closing,
                    attributes,
                } => {
                    self.start_tag(rules, at, name.as_str(), self_closing, &attributes)?;
                    self.read += len;
                }
                Token::End(len, name) => {
                    if self.charset_at == CharsetAt::AfterHeadTag {
                        // Only `</head>` is seen by a handler there (the stray end tags the
                        // pass lets through are left to it).
                        if name.as_str() != "head" {
                            return Err(NotPlain);
                        }
                        self.settle(at);
                    }
                    self.read += len;
                }
            }
        }
        Ok(())
    }

    /// Reads the rest of the whole document `doc`: the offset where the UTF-8 declaration
    /// goes, `None` when the document declares UTF-8 itself. `Err` when it is not plain
    /// markup (or ends inside a tag or a comment).
    pub(crate) fn finish(
        mut self,
        rules: &DocumentSanitizer,
        doc: &str,
    ) -> Result<Option<usize>, NotPlain> {
        self.advance(rules, doc)?;
        if self.read != doc.len() {
            return Err(NotPlain);
        }
        if self.declared {
            return Ok(None);
        }
        Ok(Some(match self.charset_at {
            CharsetAt::NotYet => 0,
            CharsetAt::AfterHeadTag => doc.len(),
            CharsetAt::At(at) => at.min(doc.len()),
        }))
    }

    /// A token after the `<head>` start tag begins at `at`: the declaration goes there.
    fn settle(&mut self, at: usize) {
        if self.charset_at == CharsetAt::AfterHeadTag {
            self.charset_at = CharsetAt::At(at);
        }
    }

    /// The rules on a start tag at `at` (those of the pass' element handler), `Err` unless
    /// they leave it as written.
    fn start_tag(
        &mut self,
        rules: &DocumentSanitizer,
        at: usize,
        name: &str,
        self_closing: bool,
        attributes: &[(String, &str)],
    ) -> Result<(), NotPlain> {
        self.settle(at);
        if self.charset_at == CharsetAt::NotYet && name != "html" {
            if name == "head" {
                if self_closing {
                    return Err(NotPlain);
                }
                self.charset_at = CharsetAt::AfterHeadTag;
            } else {
                self.charset_at = CharsetAt::At(at);
            }
        }
        for (i, (attribute, value)) in attributes.iter().enumerate() {
            if attributes[..i].iter().any(|(a, _)| a == attribute)
                || policy::attribute_rule(&rules.origins, name, attribute, value)
                    != AttributeRule::Keep
            {
                return Err(NotPlain);
            }
        }
        if name == "meta" {
            let get = |wanted: &str| {
                attributes
                    .iter()
                    .find(|(a, _)| a == wanted)
                    .map(|(_, v)| *v)
            };
            match policy::meta_rule(get("charset"), get("http-equiv"), get("content")) {
                MetaRule::Keep { declares_charset } => self.declared |= declares_charset,
                MetaRule::FixCharset | MetaRule::Drop => return Err(NotPlain),
            }
        }
        Ok(())
    }
}

/// Kept elements whose start tag leaves the tokenizer reading ordinary text and that the
/// rules keep with their attributes filtered only (not `<a>`, which gains a `rel`; not
/// `<title>` or `<style>`, whose text is read in a way of its own; `<meta>` is read apart).
fn ordinary(tag: &str) -> bool {
    policy::element_rule(tag) == policy::ElementRule::Keep
        && !matches!(tag, "a" | "title" | "style" | "meta")
}

/// HTML's whitespace in a tag (a carriage return is not taken: the tokenizer's input
/// stream turns it into a line feed).
fn space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0C')
}

/// The token at the start of `rest` (not empty).
fn token(rest: &str) -> Result<Token<'_>, NotPlain> {
    let b = rest.as_bytes();
    if b[0] != b'<' {
        let len = b
            .iter()
            .position(|&c| c == b'<' || c == 0)
            .unwrap_or(b.len());
        if b.get(len) == Some(&0) {
            return Err(NotPlain);
        }
        return Ok(Token::Text(len));
    }
    let Some(&next) = b.get(1) else {
        return Ok(Token::Partial);
    };
    match next {
        c if c.is_ascii_alphabetic() => start_tag(rest),
        b'/' => end_tag(b),
        b'!' if b.starts_with(b"<!--") => comment(b),
        b'!' => doctype(b),
        _ => Err(NotPlain),
    }
}

/// Where the first `>` of `b` is; `Partial` when there is none yet.
fn tag_end(b: &[u8]) -> Result<Option<usize>, NotPlain> {
    match b.iter().position(|&c| c == b'>') {
        Some(gt) => Ok(Some(gt)),
        None if b.len() > MAX_TOKEN => Err(NotPlain),
        None => Ok(None),
    }
}

/// A tag name in lower case, short enough for every kept element's (no allocation: the
/// scan reads one per tag).
#[derive(Clone, Copy)]
struct Name {
    bytes: [u8; NAME_BYTES],
    len: usize,
}

/// Longest tag name the scan reads (`figcaption`, the longest kept, has 10 letters).
const NAME_BYTES: usize = 12;

impl Name {
    fn as_str(&self) -> &str {
        // Only ASCII letters and digits are stored.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or_default()
    }
}

/// The ASCII-alphanumeric tag name of `b` from 0, in lower case, and where it ends; `Err`
/// when it is longer than any kept element's.
fn tag_name(b: &[u8]) -> Result<(Name, usize), NotPlain> {
    let end = b
        .iter()
        .position(|c| !c.is_ascii_alphanumeric())
        .unwrap_or(b.len());
    if end > NAME_BYTES {
        return Err(NotPlain);
    }
    let mut name = Name {
        bytes: [0; NAME_BYTES],
        len: end,
    };
    name.bytes[..end].copy_from_slice(&b[..end]);
    name.bytes[..end].make_ascii_lowercase();
    Ok((name, end))
}

/// `<name attributes>` or `<name attributes/>`, `name` ordinary or `meta`.
fn start_tag(rest: &str) -> Result<Token<'_>, NotPlain> {
    let b = rest.as_bytes();
    let Some(gt) = tag_end(b)? else {
        return Ok(Token::Partial);
    };
    let (name, mut i) = tag_name(&b[1..gt])?;
    i += 1;
    if !(ordinary(name.as_str()) || name.as_str() == "meta") {
        return Err(NotPlain);
    }
    let mut attributes = Vec::new();
    let self_closing = loop {
        // After the name or an attribute: whitespace, `>` or `/>`.
        match b[i] {
            b'>' => break false,
            b'/' if i + 1 == gt => break true,
            c if space(c) => {}
            _ => return Err(NotPlain),
        }
        while space(b[i]) {
            i += 1;
        }
        match b[i] {
            b'>' => break false,
            b'/' if i + 1 == gt => break true,
            c if c.is_ascii_alphabetic() => {}
            _ => return Err(NotPlain),
        }
        let start = i;
        while b[i].is_ascii_alphanumeric() || matches!(b[i], b'-' | b'_') {
            i += 1;
        }
        let attribute = rest[start..i].to_ascii_lowercase();
        if b[i] == b'=' {
            let quote = b[i + 1];
            if !matches!(quote, b'"' | b'\'') {
                return Err(NotPlain);
            }
            let from = i + 2;
            let Some(len) = b[from..gt].iter().position(|&c| c == quote) else {
                return Err(NotPlain);
            };
            attributes.push((attribute, &rest[from..from + len]));
            i = from + len + 1;
        } else {
            // A name alone: no `=` may follow it after whitespace either.
            let mut j = i;
            while space(b[j]) {
                j += 1;
            }
            if b[j] == b'=' {
                return Err(NotPlain);
            }
            attributes.push((attribute, ""));
        }
    };
    Ok(Token::Start {
        len: gt + 1,
        name,
        self_closing,
        attributes,
    })
}

/// `</name>`, `name` ordinary.
fn end_tag(b: &[u8]) -> Result<Token<'static>, NotPlain> {
    match b.get(2) {
        None => return Ok(Token::Partial),
        Some(c) if c.is_ascii_alphabetic() => {}
        Some(_) => return Err(NotPlain),
    }
    let Some(gt) = tag_end(b)? else {
        return Ok(Token::Partial);
    };
    let (name, len) = tag_name(&b[2..gt])?;
    if len != gt - 2 || !ordinary(name.as_str()) {
        return Err(NotPlain);
    }
    Ok(Token::End(gt + 1, name))
}

/// `<!--text-->`, its text not starting with `>` or `->` (which end a comment early) and
/// holding no `--!>` (another end), no `<!-` and no NUL.
fn comment(b: &[u8]) -> Result<Token<'static>, NotPlain> {
    let Some(end) = b[4..].windows(3).position(|w| w == b"-->") else {
        return if b.len() > MAX_TOKEN {
            Err(NotPlain)
        } else {
            Ok(Token::Partial)
        };
    };
    let text = &b[4..4 + end];
    if text.starts_with(b">")
        || text.starts_with(b"->")
        || text.windows(4).any(|w| w == b"--!>")
        || text.windows(3).any(|w| w == b"<!-")
        || text.contains(&0)
    {
        return Err(NotPlain);
    }
    Ok(Token::Comment(4 + end + 3))
}

/// `<!DOCTYPE html>` (in any case).
fn doctype(b: &[u8]) -> Result<Token<'static>, NotPlain> {
    const DOCTYPE: &[u8] = b"<!doctype html>";
    let n = b.len().min(DOCTYPE.len());
    if !b[..n].eq_ignore_ascii_case(&DOCTYPE[..n]) {
        return Err(NotPlain);
    }
    if n < DOCTYPE.len() {
        return Ok(Token::Partial);
    }
    Ok(Token::Doctype(DOCTYPE.len()))
}

/// `doc` with the UTF-8 declaration at `at` (`None`: none added).
pub(crate) fn declared(mut doc: String, at: Option<usize>) -> String {
    if let Some(at) = at {
        doc.insert_str(at, crate::CHARSET_META);
    }
    doc
}

#[cfg(test)]
mod tests;
