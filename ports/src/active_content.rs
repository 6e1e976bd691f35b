//! Script-capable markup in a rendered document a browser may run when it is opened: an XML
//! report whose elements are in the XHTML or SVG namespace runs `<script>` and event handlers
//! once saved and opened from disk, whatever the template source looked like (`{{ "<scr" }}ipt>`
//! passes the upload check, TPL-0032, and renders `<script>`).
//!
//! [`ActiveContentScan`] reads the output as it is produced, piece by piece, holding a few
//! bytes of state whatever the output's size, so a vector split between two pieces is seen as
//! one. What it finds (case-insensitively, in any namespace, with or without a prefix):
//! - an element `script`, `iframe`, `frame`, `frameset`, `object`, `embed` or `applet`;
//! - an attribute `on<letters>` (an event handler: the upload check's rule), and an SVG
//!   animation of one (`attributeName="onclick"`);
//! - `javascript:` or `vbscript:` inside a tag, after character references are decoded and
//!   tabs and newlines removed (`&#106;ava&#x09;script&colon;`);
//! - `<?xml-stylesheet` (an XSLT stylesheet can write script) and markup declarations that
//!   change the document out of sight (`<!ENTITY`, `<!ATTLIST`, `<!ELEMENT`, `<!NOTATION`).
//!
//! Quoted attribute values are followed as XML reads them (a `>` inside one does not end the
//! tag). Text between tags is not read for schemes or handlers (`online=yes` in a cell is
//! text); `<script` inside a comment or CDATA section is reported all the same.
use crate::template::OutputFormat;

/// Elements that run script or embed a document that may.
const SCRIPT_ELEMENTS: &[&str] = &[
    "script", "iframe", "frame", "frameset", "object", "embed", "applet",
];
/// Declarations after `<!` that change elements or text where they are used.
const DECLARATIONS: &[&str] = &["entity", "attlist", "element", "notation"];
/// Processing instructions after `<?` that apply a stylesheet.
const INSTRUCTIONS: &[&str] = &["xml-stylesheet"];
/// URL schemes that run script.
const SCHEMES: &[&str] = &["javascript:", "vbscript:"];
/// Longest name kept: longer ones are none of the elements and declarations above, and an
/// attribute name longer than this that starts `on` and letters is taken for a handler.
const NAME_MAX: usize = 64;
/// Longest character reference decoded (`&#x0000006a;`, `&newline;`).
const REFERENCE_MAX: usize = 16;
/// Decoded characters kept to match a scheme.
const RECENT: usize = 16;

/// Whether a rendered report of `format` is checked with [`ActiveContentScan`]: XML, which a
/// browser opens as a document that runs script when its elements are in the XHTML or SVG
/// namespace. html and pdf output is sanitized instead; csv and txt are served and saved as
/// text (`text/csv`, `text/plain`, with `nosniff`), which no browser runs.
pub fn rendered_output_is_checked(format: OutputFormat) -> bool {
    format == OutputFormat::Xml
}

/// The first script-capable markup of `text`, if any (see the module docs).
pub fn find_active_content(text: &str) -> Option<String> {
    let mut scan = ActiveContentScan::new();
    scan.feed(text.as_bytes());
    scan.found().map(str::to_owned)
}

/// Where the scan is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between tags.
    Text,
    /// Just after `<`.
    Open,
    /// A start tag's name.
    TagName,
    /// The name after `<!` or `<?`.
    Markup(u8),
    /// Inside a start tag, between attributes.
    InTag,
    /// An attribute's name.
    AttrName,
    /// After an attribute's name, before its `=`.
    AfterName,
    /// After `=`, before the value.
    BeforeValue,
    /// A value in quotes (`"` or `'`), or unquoted (0: not XML, read as HTML would).
    Value(u8),
}

/// A bounded lower-case name.
#[derive(Debug, Clone, Copy)]
struct Name {
    bytes: [u8; NAME_MAX],
    len: usize,
    too_long: bool,
}

impl Default for Name {
    fn default() -> Self {
        Self {
            bytes: [0; NAME_MAX],
            len: 0,
            too_long: false,
        }
    }
}

impl Name {
    fn clear(&mut self) {
        self.len = 0;
        self.too_long = false;
    }

    fn push(&mut self, b: u8) {
        match self.bytes.get_mut(self.len) {
            Some(slot) => {
                *slot = b.to_ascii_lowercase();
                self.len += 1;
            }
            None => self.too_long = true,
        }
    }

    /// The name after its prefix (`h:script` → `script`); `None` when too long.
    fn local(&self) -> Option<&[u8]> {
        if self.too_long {
            return None;
        }
        let name = &self.bytes[..self.len];
        Some(match name.iter().rposition(|&b| b == b':') {
            Some(i) => &name[i + 1..],
            None => name,
        })
    }

    fn is(&self, list: &[&str]) -> bool {
        self.local()
            .is_some_and(|n| list.iter().any(|w| w.as_bytes() == n))
    }

    /// `on` followed by letters only (of a name too long to keep: its kept beginning).
    fn is_event_handler(&self) -> bool {
        let kept = &self.bytes[..self.len];
        let n = match kept.iter().rposition(|&b| b == b':') {
            Some(i) => &kept[i + 1..],
            None => kept,
        };
        n.len() > 2 && n.starts_with(b"on") && n[2..].iter().all(u8::is_ascii_alphabetic)
    }
}

/// Decodes character references inside a tag and keeps the last characters (lower case,
/// without tab, CR, LF and NUL), to match a scheme however it is written.
#[derive(Debug, Clone, Copy, Default)]
struct Decoded {
    /// A reference being read (`&#10`…), `len` 0 when none.
    reference: [u8; REFERENCE_MAX],
    len: usize,
    recent: [u8; RECENT],
    /// The decoded value of the current `attributeName` attribute, when it is one.
    value: Name,
    keep_value: bool,
    found: Option<&'static str>,
}

impl Decoded {
    fn reset(&mut self) {
        self.len = 0;
        self.recent = [0; RECENT];
    }

    /// Reads one byte of a tag.
    fn push(&mut self, b: u8) {
        if self.len == 0 {
            if b == b'&' {
                self.reference[0] = b;
                self.len = 1;
            } else {
                self.emit(b);
            }
            return;
        }
        if b == b';' {
            let decoded = reference_value(&self.reference[..self.len]);
            self.len = 0;
            match decoded {
                Some(c) => self.emit(c),
                None => self.flush_raw(b),
            }
            return;
        }
        if continues_reference(&self.reference[..self.len], b) {
            // Leading zeros are as many as the writer likes: keep one.
            let digits = digits_start(&self.reference[..self.len])
                .map(|start| &self.reference[start..self.len]);
            match digits {
                Some(b"0") if b == b'0' => {}
                Some(b"0") => self.reference[self.len - 1] = b,
                _ if self.len < REFERENCE_MAX => {
                    self.reference[self.len] = b;
                    self.len += 1;
                }
                // Longer than any reference that decodes to ASCII.
                _ => {
                    self.reference[1] = b'?';
                }
            }
            return;
        }
        // The reference ended without `;`: numeric ones still count.
        let numeric = self.reference.get(1) == Some(&b'#');
        match reference_value(&self.reference[..self.len]).filter(|_| numeric) {
            Some(c) => {
                self.len = 0;
                self.emit(c);
            }
            None => {
                let raw = self.reference;
                let n = self.len;
                self.len = 0;
                for &r in &raw[..n] {
                    self.emit(r);
                }
            }
        }
        self.push(b);
    }

    fn flush_raw(&mut self, last: u8) {
        let raw = self.reference;
        let n = self.len;
        self.len = 0;
        for &r in &raw[..n] {
            self.emit(r);
        }
        self.emit(last);
    }

    /// One decoded character (a byte: a non-ASCII one matches nothing).
    fn emit(&mut self, c: u8) {
        if matches!(c, b'\t' | b'\n' | b'\r' | 0) {
            return;
        }
        let c = c.to_ascii_lowercase();
        if self.keep_value {
            self.value.push(c);
        }
        self.recent.copy_within(1.., 0);
        self.recent[RECENT - 1] = c;
        if self.found.is_none() {
            self.found = SCHEMES
                .iter()
                .find(|s| self.recent.ends_with(s.as_bytes()))
                .copied();
        }
    }
}

/// Where the digits of the numeric reference `r` start (after `&#` or `&#x`).
fn digits_start(r: &[u8]) -> Option<usize> {
    match r {
        [b'&', b'#', b'x' | b'X', ..] => Some(3),
        [b'&', b'#', ..] => Some(2),
        _ => None,
    }
}

/// Whether `b` may continue the reference `r` (which starts with `&`).
fn continues_reference(r: &[u8], b: u8) -> bool {
    match r {
        [b'&'] => b == b'#' || b.is_ascii_alphabetic(),
        [b'&', b'#'] => b == b'x' || b == b'X' || b.is_ascii_digit(),
        [b'&', b'#', b'x' | b'X', ..] => b.is_ascii_hexdigit(),
        [b'&', b'#', ..] => b.is_ascii_digit(),
        _ => b.is_ascii_alphanumeric(),
    }
}

/// The character `r` (a reference without its `;`) stands for, as a byte (`0x80` for any
/// non-ASCII character, which matches no scheme).
fn reference_value(r: &[u8]) -> Option<u8> {
    let body = r.get(1..)?;
    let value = match body {
        [b'#', b'x' | b'X', hex @ ..] if !hex.is_empty() => {
            u32::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
        }
        [b'#', dec @ ..] if !dec.is_empty() => std::str::from_utf8(dec).ok()?.parse().ok(),
        name => {
            let name = name.to_ascii_lowercase();
            let c = match name.as_slice() {
                b"colon" => b':',
                b"tab" => b'\t',
                b"newline" => b'\n',
                b"amp" => b'&',
                b"lt" => b'<',
                b"gt" => b'>',
                b"quot" => b'"',
                b"apos" => b'\'',
                b"sol" => b'/',
                _ => return None,
            };
            return Some(c);
        }
    }
    .unwrap_or(0xfffd);
    Some(
        u8::try_from(value)
            .ok()
            .filter(u8::is_ascii)
            .unwrap_or(0x80),
    )
}

/// Reads a document in pieces and reports the first script-capable markup (see the module
/// docs). Holds a few hundred bytes whatever the document's size.
#[derive(Debug, Clone)]
pub struct ActiveContentScan {
    state: State,
    name: Name,
    decoded: Decoded,
    found: Option<String>,
}

impl Default for ActiveContentScan {
    fn default() -> Self {
        Self::new()
    }
}

impl ActiveContentScan {
    /// A scan at the start of a document.
    pub fn new() -> Self {
        Self {
            state: State::Text,
            name: Name::default(),
            decoded: Decoded::default(),
            found: None,
        }
    }

    /// Reads the next bytes of the document. Returns what was found so far (the first
    /// finding; once there is one, further bytes are not read).
    pub fn feed(&mut self, bytes: &[u8]) -> Option<&str> {
        for &b in bytes {
            if self.found.is_some() {
                break;
            }
            self.step(b);
            if let Some(s) = self.decoded.found {
                self.found = Some(s.to_owned());
            }
        }
        self.found()
    }

    /// What was found so far.
    pub fn found(&self) -> Option<&str> {
        self.found.as_deref()
    }

    fn report(&mut self, what: String) {
        if self.found.is_none() {
            self.found = Some(what);
        }
    }

    fn local_name(&self) -> String {
        let kept = &self.name.bytes[..self.name.len];
        let local = match kept.iter().rposition(|&b| b == b':') {
            Some(i) => &kept[i + 1..],
            None => kept,
        };
        String::from_utf8_lossy(local).into_owned()
    }

    fn step(&mut self, b: u8) {
        let in_tag = !matches!(self.state, State::Text | State::Open | State::Markup(_));
        if in_tag {
            self.decoded.push(b);
        }
        let space = matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c');
        self.state = match (self.state, b) {
            (State::Text, b'<') => State::Open,
            (State::Text, _) => State::Text,
            (State::Open, b'!' | b'?') => {
                self.name.clear();
                State::Markup(b)
            }
            (State::Open, b'<') => State::Open,
            (State::Open, b'/') => State::Text,
            (State::Open, _) if space => State::Text,
            (State::Open, _) => {
                self.decoded.reset();
                self.decoded.push(b);
                self.name.clear();
                self.name.push(b);
                State::TagName
            }
            (State::Markup(kind), _) if is_name_byte(b) => {
                self.name.push(b);
                State::Markup(kind)
            }
            (State::Markup(kind), _) => {
                let list = if kind == b'!' {
                    DECLARATIONS
                } else {
                    INSTRUCTIONS
                };
                if self.name.is(list) {
                    let found = format!("<{}{}", kind as char, self.local_name());
                    self.report(found);
                }
                if b == b'<' { State::Open } else { State::Text }
            }
            (State::TagName, _) if is_name_byte(b) => {
                self.name.push(b);
                State::TagName
            }
            (State::TagName, _) => {
                if self.name.is(SCRIPT_ELEMENTS) {
                    let found = format!("<{}", self.local_name());
                    self.report(found);
                }
                self.in_tag(b)
            }
            (State::InTag, _) => self.in_tag(b),
            (State::AttrName, _) if is_name_byte(b) => {
                self.name.push(b);
                State::AttrName
            }
            (State::AttrName | State::AfterName, _) if space => State::AfterName,
            (State::AttrName | State::AfterName, b'=') => {
                if self.name.is_event_handler() {
                    let found = format!("{}=", self.local_name());
                    self.report(found);
                }
                self.decoded.keep_value = self.name.is(&["attributename"]);
                self.decoded.value.clear();
                State::BeforeValue
            }
            (State::AttrName | State::AfterName, _) => self.in_tag(b),
            (State::BeforeValue, _) if space => State::BeforeValue,
            (State::BeforeValue, b'"' | b'\'') => State::Value(b),
            (State::BeforeValue, b'>') => self.end_value(State::Text),
            (State::BeforeValue, _) => State::Value(0),
            (State::Value(0), b'>') => self.end_value(State::Text),
            (State::Value(0), _) if space => self.end_value(State::InTag),
            (State::Value(q), _) if q != 0 && b == q => self.end_value(State::InTag),
            (State::Value(q), _) => State::Value(q),
        };
        if self.state == State::Text {
            self.decoded.reset();
        }
    }

    /// Between attributes: `>` ends the tag, a name byte starts an attribute.
    fn in_tag(&mut self, b: u8) -> State {
        match b {
            b'>' => State::Text,
            _ if is_name_byte(b) => {
                self.name.clear();
                self.name.push(b);
                State::AttrName
            }
            _ => State::InTag,
        }
    }

    /// A value ended: an `attributeName` that names an event handler is one.
    fn end_value(&mut self, next: State) -> State {
        if self.decoded.keep_value {
            self.decoded.keep_value = false;
            // The value was read through the decoder, its quotes included.
            let read = self.decoded.value;
            let mut value = Name::default();
            read.bytes[..read.len]
                .iter()
                .filter(|b| !matches!(b, b'"' | b'\'' | b'>' | b' ' | b'\x0c'))
                .for_each(|&b| value.push(b));
            value.too_long = read.too_long;
            if value.is_event_handler() {
                let found = format!(
                    "attributeName={}",
                    String::from_utf8_lossy(value.local().unwrap_or_default())
                );
                self.report(found);
            }
        }
        next
    }
}

/// A byte of an XML name (non-ASCII bytes included).
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':') || b >= 0x80
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every vector, whole, split at every byte into two pieces, and fed a byte at a time.
    fn found_everywhere(doc: &str) -> Option<String> {
        let whole = find_active_content(doc);
        for cut in 0..=doc.len() {
            let mut scan = ActiveContentScan::new();
            scan.feed(&doc.as_bytes()[..cut]);
            scan.feed(&doc.as_bytes()[cut..]);
            assert_eq!(scan.found(), whole.as_deref(), "{doc} cut at {cut}");
        }
        let mut scan = ActiveContentScan::new();
        for b in doc.as_bytes() {
            scan.feed(std::slice::from_ref(b));
        }
        assert_eq!(scan.found(), whole.as_deref(), "{doc} byte by byte");
        whole
    }

    #[test]
    fn the_state_is_bounded_whatever_the_document() {
        assert!(std::mem::size_of::<ActiveContentScan>() < 512);
        // A tag, a name and a reference far longer than what is kept: still read right.
        let long = format!(
            "<r {}=\"{}\" a=\"&#{};\"/><{}script/>",
            "n".repeat(100_000),
            ">".repeat(100_000),
            "1".repeat(1000),
            "x".repeat(100)
        );
        assert_eq!(find_active_content(&long), None);
        // Handler names grow (`oncontentvisibilityautostatechange`): a long one still counts.
        for name in [
            "oncontentvisibilityautostatechange",
            &format!("on{}", "x".repeat(200)),
        ] {
            let doc = format!("<r {name}=\"x\"/>");
            assert!(
                find_active_content(&doc)
                    .is_some_and(|f| f.starts_with("onc") || f.starts_with("onx")),
                "{name}"
            );
        }
        let long = format!("<r a=\"{}\" onload=\"x\"/>", "'>".repeat(100_000));
        assert_eq!(find_active_content(&long).as_deref(), Some("onload="));
    }

    #[test]
    fn script_capable_markup_is_found_wherever_the_pieces_split_it() {
        let xhtml = |body: &str| {
            format!(
                "<?xml version=\"1.0\"?>\n<html xmlns=\"http://www.w3.org/1999/xhtml\"><body>{body}</body></html>"
            )
        };
        for (vector, found) in [
            ("<script>alert(1)</script>", "<script"),
            ("<SCRIPT/>", "<script"),
            (
                "<h:script xmlns:h=\"http://www.w3.org/1999/xhtml\">x</h:script>",
                "<script",
            ),
            (
                "<svg xmlns=\"http://www.w3.org/2000/svg\" onload=\"alert(1)\"/>",
                "onload=",
            ),
            ("<svg x=\"a>b\" onload=\"alert(1)\"/>", "onload="),
            ("<img src=\"x\"\n\tONERROR = 'alert(1)'/>", "onerror="),
            ("<a href=\"javascript:alert(1)\">x</a>", "javascript:"),
            (
                "<a href=\"&#106;ava&#x09;script&colon;alert(1)\">x</a>",
                "javascript:",
            ),
            (
                "<a href=\"java&#x0000000000000000053;cript:x\">x</a>",
                "javascript:",
            ),
            ("<a href=\"&#x6A&#x61vascript:x\">x</a>", "javascript:"),
            ("<a xlink:href=\"vbscript:x\">x</a>", "vbscript:"),
            ("<iframe src=\"data:text/html,x\"/>", "<iframe"),
            ("<x:object data=\"x\"/>", "<object"),
            ("<embed src=\"x\"/>", "<embed"),
            (
                "<set attributeName=\"onclick\" to=\"alert(1)\"/>",
                "attributeName=onclick",
            ),
            (
                "<set attributeName=\"&#111;nclick\" to=\"alert(1)\"/>",
                "attributeName=onclick",
            ),
            ("<!-- <script> -->", "<script"),
        ] {
            assert_eq!(
                found_everywhere(&xhtml(vector)).as_deref(),
                Some(found),
                "{vector}"
            );
        }
        for (doc, found) in [
            (
                "<?xml-stylesheet type=\"text/xsl\" href=\"#x\"?><r/>",
                "<?xml-stylesheet",
            ),
            (
                "<!DOCTYPE r [<!ENTITY s \"&#60;script>\">]><r>&s;</r>",
                "<!entity",
            ),
            (
                "<!DOCTYPE r [<!ATTLIST r onload CDATA \"x\">]><r/>",
                "<!attlist",
            ),
        ] {
            assert_eq!(found_everywhere(doc).as_deref(), Some(found), "{doc}");
        }
    }

    /// (An attribute named `on` and letters, such as `online`, is taken for an event handler,
    /// as the upload check takes it: the list of handlers grows with every browser.)
    #[test]
    fn report_data_is_not_taken_for_script() {
        for doc in [
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE report>\n<report n=\"1\"><row status=\"on\" o=\"n\">online=yes; javascript: is text here</row><objective/><scripts/><note t=\"x onclick=y\">a &amp; b</note></report>",
            "<r><![CDATA[ 1 < 2 ]]><onion>x</onion><set attributeName=\"fill\" to=\"red\"/></r>",
            "<r a=\"&#106;ava\">script:</r>",
        ] {
            assert_eq!(found_everywhere(doc), None, "{doc}");
        }
    }

    #[test]
    fn only_xml_is_checked() {
        assert!(rendered_output_is_checked(OutputFormat::Xml));
        for f in [
            OutputFormat::Html,
            OutputFormat::Pdf,
            OutputFormat::Csv,
            OutputFormat::Txt,
        ] {
            assert!(!rendered_output_is_checked(f));
        }
    }
}
