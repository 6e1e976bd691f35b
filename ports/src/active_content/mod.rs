//! Script-capable markup in a rendered document a browser may run when it is opened: an XML
//! report whose elements are in the XHTML or SVG namespace runs `<script>` and event handlers
//! once saved and opened from disk, whatever the template source looked like
//! (`{{ "<scr"|safe }}ipt>` passes the upload check, TPL-0032, and renders `<script>`).
//!
//! [`ActiveContentScan`] reads the output as it is produced, piece by piece, holding a few
//! hundred bytes of state whatever the output's size, so a vector split between two pieces is
//! seen as one. What it finds (case-insensitively, in any namespace, with or without a prefix):
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
mod decoded;
mod name;

use crate::template::OutputFormat;
use decoded::Decoded;
use name::Name;

/// Elements that run script or embed a document that may.
const SCRIPT_ELEMENTS: &[&str] = &[
    "script", "iframe", "frame", "frameset", "object", "embed", "applet",
];
/// Declarations after `<!` that change elements or text where they are used.
const DECLARATIONS: &[&str] = &["entity", "attlist", "element", "notation"];
/// Processing instructions after `<?` that apply a stylesheet.
const INSTRUCTIONS: &[&str] = &["xml-stylesheet"];

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
mod tests;
