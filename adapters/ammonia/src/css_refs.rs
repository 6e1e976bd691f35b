//! Neutralizes the references in CSS that load from elsewhere, read with a real CSS tokenizer
//! ([cssparser](https://docs.rs/cssparser)), so escapes (`u\72l(`, `@\69mport`, `\68ttp:`)
//! read as a browser reads them.
//!
//! A reference is: a `url(…)` or `src(…)` anywhere (declarations, custom properties,
//! `@font-face` `src`, `@import`, `@namespace`), a string inside `image-set()`, `image()`,
//! `cross-fade()` (and their `-webkit-` forms) or in an `@import` prelude, and `var()`,
//! `env()` or `attr()` inside those (their value could be a URL string). Each one whose URL
//! [`AllowedOrigins::allows`] refuses is replaced by the keyword `none`, which makes its
//! declaration or `@import` invalid: the browser drops it, the rest of the stylesheet stands.
use crate::origins::{AllowedOrigins, UrlUse};
use cssparser::{ParseError, Parser, Token};
use std::borrow::Cow;
use std::ops::Range;

/// Deepest nesting of blocks and functions read; deeper CSS is refused whole.
const MAX_DEPTH: usize = 32;
/// What a neutralized reference is replaced with.
const REPLACEMENT: &str = "none";

/// The CSS could not be read within [`MAX_DEPTH`]: drop it whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unreadable;

/// `css` with every reference that would load from elsewhere replaced by `none` (borrowed
/// when there is none). `Err` when the CSS nests deeper than the walk goes, or when the
/// neutralized text still holds a reference (never expected; the caller drops the CSS).
pub(crate) fn neutralize<'a>(
    css: &'a str,
    origins: &AllowedOrigins,
) -> Result<Cow<'a, str>, Unreadable> {
    let ranges = remote_references(css, origins)?;
    if ranges.is_empty() {
        return Ok(Cow::Borrowed(css));
    }
    let mut out = String::with_capacity(css.len());
    let mut at = 0;
    for r in ranges {
        out.push_str(css.get(at..r.start).ok_or(Unreadable)?);
        out.push_str(REPLACEMENT);
        at = r.end;
    }
    out.push_str(css.get(at..).ok_or(Unreadable)?);
    // The replacement cannot form a reference with its neighbours; checked all the same.
    if remote_references(&out, origins)?.is_empty() {
        Ok(Cow::Owned(out))
    } else {
        Err(Unreadable)
    }
}

/// The byte ranges of the references `origins` does not allow, in order, not overlapping.
fn remote_references(css: &str, origins: &AllowedOrigins) -> Result<Vec<Range<usize>>, Unreadable> {
    let mut parser = Parser::new(css);
    let mut walk = Walk {
        origins,
        found: Vec::new(),
        too_deep: false,
    };
    walk.block(&mut parser, 0, Context::Plain);
    if walk.too_deep {
        Err(Unreadable)
    } else {
        Ok(walk.found)
    }
}

/// Where the tokens being read are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    /// Strings are text (`content`, `font-family`).
    Plain,
    /// Inside `image-set()` and the like: strings are image URLs.
    ImageFunction,
}

struct Walk<'o> {
    origins: &'o AllowedOrigins,
    found: Vec<Range<usize>>,
    too_deep: bool,
}

/// A `url()`-like function: its one string argument is a URL.
fn is_url_function(name: &str) -> bool {
    name.eq_ignore_ascii_case("url") || name.eq_ignore_ascii_case("src")
}

/// A function whose string arguments are image URLs.
fn is_image_function(name: &str) -> bool {
    [
        "image-set",
        "-webkit-image-set",
        "image",
        "cross-fade",
        "-webkit-cross-fade",
    ]
    .iter()
    .any(|f| name.eq_ignore_ascii_case(f))
}

/// A function whose value is only known when the page is shown.
fn is_substitution(name: &str) -> bool {
    ["var", "env", "attr"]
        .iter()
        .any(|f| name.eq_ignore_ascii_case(f))
}

impl Walk<'_> {
    /// Reads every token of the current block (or the whole input), entering nested blocks.
    fn block(&mut self, p: &mut Parser<'_>, depth: usize, context: Context) {
        if depth > MAX_DEPTH {
            self.too_deep = true;
            consume(p);
            return;
        }
        // Inside an `@import` prelude (until `;` or a block): strings are stylesheet URLs.
        let mut in_import = false;
        loop {
            let start = p.position().byte_index();
            let token = match p.next_including_whitespace_and_comments() {
                Ok(t) => t.clone(),
                Err(_) => return,
            };
            let end = |p: &Parser<'_>| p.position().byte_index();
            let use_ = if in_import {
                UrlUse::Import
            } else {
                UrlUse::Css
            };
            match token {
                Token::AtKeyword(name) => in_import = name.eq_ignore_ascii_case("import"),
                Token::Semicolon => in_import = false,
                Token::UnquotedUrl(url) if !self.origins.allows(&url, use_) => {
                    self.found.push(start..end(p));
                }
                Token::BadUrl(_) => self.found.push(start..end(p)),
                Token::QuotedString(s)
                    if (in_import || context == Context::ImageFunction)
                        && !self.origins.allows(&s, use_) =>
                {
                    self.found.push(start..end(p));
                }
                Token::Function(name) if is_url_function(&name) => {
                    let url = single_string(p);
                    let allowed = url.is_some_and(|u| self.origins.allows(&u, use_));
                    if !allowed {
                        self.found.push(start..end(p));
                    }
                }
                Token::Function(name) if is_substitution(&name) => {
                    if context != Context::Plain || in_import {
                        skip_nested(p);
                        self.found.push(start..end(p));
                    } else if name.eq_ignore_ascii_case("attr") {
                        // `attr(title)` is text; a typed `attr()` could be a URL.
                        if !single_ident(p) {
                            self.found.push(start..end(p));
                        }
                    } else {
                        // `var(--x, fallback)`: the fallback may hold references.
                        self.nested(p, depth, context);
                    }
                }
                Token::Function(name) if is_image_function(&name) => {
                    self.nested(p, depth, Context::ImageFunction);
                }
                Token::CurlyBracketBlock => {
                    in_import = false;
                    self.nested(p, depth, Context::Plain);
                }
                Token::Function(_) | Token::ParenthesisBlock | Token::SquareBracketBlock => {
                    self.nested(p, depth, context);
                }
                _ => {}
            }
        }
    }

    fn nested(&mut self, p: &mut Parser<'_>, depth: usize, context: Context) {
        let _ = p.parse_nested_block(|n| {
            self.block(n, depth + 1, context);
            Ok::<(), ParseError<()>>(())
        });
    }
}

/// Reads the rest of the current block.
fn consume(p: &mut Parser<'_>) {
    while p.next_including_whitespace_and_comments().is_ok() {}
}

/// Reads the whole block or function just read.
fn skip_nested(p: &mut Parser<'_>) {
    let _ = p.parse_nested_block(|n| {
        consume(n);
        Ok::<(), ParseError<()>>(())
    });
}

/// Enters the function just read: its argument when it is one string (spaces and comments
/// around it allowed), else `None`. Reads the whole function either way.
fn single_string(p: &mut Parser<'_>) -> Option<String> {
    p.parse_nested_block(|n| {
        let mut found = None;
        let mut other = false;
        while let Ok(t) = n.next_including_whitespace_and_comments() {
            match t {
                Token::WhiteSpace(_) | Token::Comment(_) => {}
                Token::QuotedString(s) if found.is_none() => found = Some(s.to_string()),
                _ => other = true,
            }
        }
        Ok::<_, ParseError<()>>(if other { None } else { found })
    })
    .ok()
    .flatten()
}

/// Enters the function just read: whether its argument is one identifier.
fn single_ident(p: &mut Parser<'_>) -> bool {
    p.parse_nested_block(|n| {
        let mut idents = 0;
        let mut other = false;
        while let Ok(t) = n.next_including_whitespace_and_comments() {
            match t {
                Token::WhiteSpace(_) | Token::Comment(_) => {}
                Token::Ident(_) => idents += 1,
                _ => other = true,
            }
        }
        Ok::<_, ParseError<()>>(idents == 1 && !other)
    })
    .unwrap_or(false)
}
