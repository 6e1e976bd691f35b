//! Attribute values as a browser reads them, and as they are written back.
//!
//! [lol_html](https://docs.rs/lol_html) hands attribute values over as written, character
//! references included (`&#106;avascript:`). The checks must see what a browser sees, so a
//! value that holds a reference (or a NUL) is decoded by
//! [html5ever](https://docs.rs/html5ever)'s tokenizer, the WHATWG tokenizer Servo uses:
//! named references without `;`, the legacy attribute rule (`&amp=` stays), numeric references
//! mapped as the specification maps them. Values without `&` or NUL read as written.
use html5ever::tendril::StrTendril;
use html5ever::tokenizer::{
    BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use std::borrow::Cow;
use std::cell::RefCell;

/// The value of an attribute written as `raw` (between its quotes, or unquoted), as a browser
/// reads it. `None` when it cannot be read back unambiguously (it holds both quote marks): the
/// caller drops the attribute.
pub(crate) fn decode(raw: &str) -> Option<Cow<'_, str>> {
    if !raw.contains(['&', '\0']) {
        return Some(Cow::Borrowed(raw));
    }
    let quote = if !raw.contains('"') {
        '"'
    } else if !raw.contains('\'') {
        '\''
    } else {
        return None;
    };
    let sink = FirstValue::default();
    let tokenizer = Tokenizer::new(sink, TokenizerOpts::default());
    let input = BufferQueue::default();
    input.push_back(StrTendril::from(format!("<a v={quote}{raw}{quote}>")));
    let _ = tokenizer.feed(&input);
    tokenizer.end();
    tokenizer.sink.value.take().map(Cow::Owned)
}

/// `value` written for a double-quoted attribute: `&` and `"` as references, so it reads back
/// as `value`.
pub(crate) fn encode(value: &str) -> String {
    value.replace('&', "&amp;").replace('"', "&quot;")
}

/// Keeps the value of the first attribute of the first start tag.
#[derive(Default)]
struct FirstValue {
    value: RefCell<Option<String>>,
}

impl TokenSink for FirstValue {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        if let Token::TagToken(tag) = token
            && tag.kind == TagKind::StartTag
            && self.value.borrow().is_none()
            && let Some(a) = tag.attrs.first()
        {
            *self.value.borrow_mut() = Some(a.value.to_string());
        }
        TokenSinkResult::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_read_as_a_browser_reads_them() {
        for (raw, read) in [
            ("plain", "plain"),
            ("&#106;avascript:", "javascript:"),
            ("java&Tab;script&colon;x", "java\tscript:x"),
            ("&#x6A&#X61vascript:", "javascript:"),
            ("a?b=1&amp;c=2", "a?b=1&c=2"),
            ("a?b=1&amp=2", "a?b=1&amp=2"),
            ("&#128;", "\u{20ac}"),
            ("it's &quot;x&quot;", "it's \"x\""),
            ("a\0b&amp;", "a\u{fffd}b&"),
        ] {
            assert_eq!(decode(raw).as_deref(), Some(read), "{raw}");
        }
        assert_eq!(decode("a\"b'c&amp;"), None);
    }

    #[test]
    fn encoded_values_read_back() {
        let v = "x\"&amp;'y";
        assert_eq!(decode(&encode(v)).as_deref(), Some(v));
    }
}
