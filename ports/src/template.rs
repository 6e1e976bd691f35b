//! Templates: the `.tpl` source a report is rendered from, with its output format.
use crate::ids::TemplateId;
use crate::tenant::TenantId;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// The output format of a template, and so of its reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum OutputFormat {
    /// HTML document.
    Html,
    /// PDF rendered from the HTML the template produces.
    Pdf,
    /// Comma- or semicolon-separated values.
    Csv,
    /// XML document.
    Xml,
    /// Plain text.
    Txt,
}

impl OutputFormat {
    /// Every format, in a stable order.
    pub const ALL: [OutputFormat; 5] = [Self::Html, Self::Pdf, Self::Csv, Self::Xml, Self::Txt];

    /// Parses a format name case-insensitively (`HTML`, `pdf`, ...).
    pub fn parse(raw: &str) -> Option<Self> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "html" => Some(Self::Html),
            "pdf" => Some(Self::Pdf),
            "csv" => Some(Self::Csv),
            "xml" => Some(Self::Xml),
            "txt" => Some(Self::Txt),
            _ => None,
        }
    }

    /// Lower-case name, also the artifact file extension.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Html => "html",
            Self::Pdf => "pdf",
            Self::Csv => "csv",
            Self::Xml => "xml",
            Self::Txt => "txt",
        }
    }

    /// MIME type of an artifact in this format.
    pub fn content_type(&self) -> &'static str {
        match self {
            Self::Html => "text/html; charset=utf-8",
            Self::Pdf => "application/pdf",
            Self::Csv => "text/csv; charset=utf-8",
            Self::Xml => "application/xml",
            Self::Txt => "text/plain; charset=utf-8",
        }
    }
}

impl fmt::Display for OutputFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The data a template reads: data source id → table → fields.
///
/// Sorted maps and sets so that the value is deterministic (stable JSON, stable equality).
pub type MappedFields = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// A stored template. Records are never physically deleted: `deleted_at` marks a soft delete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Template {
    /// Server-generated id.
    pub id: TemplateId,
    /// Owning tenant.
    pub tenant: TenantId,
    /// Output format of reports rendered from this template.
    pub output_format: OutputFormat,
    /// Free text the user wrote (also shown as the template's name on deadlines).
    pub description: String,
    /// `<id>.tpl`.
    pub file_name: String,
    /// Object key of the template source, exactly as the object storage reported it.
    pub object_key: String,
    /// SHA-256 (hex) of the stored source, so a changed file is visible without reading it.
    pub content_sha256: String,
    /// Size of the stored source in bytes.
    pub size_bytes: u64,
    /// Fields the template references, validated against the data source schemas at upload.
    pub mapped_fields: MappedFields,
    /// Optimistic-concurrency version, 1 on insert, +1 on every update.
    pub version: u64,
    /// Creation instant.
    pub created_at: DateTime<Utc>,
    /// Last change instant.
    pub updated_at: DateTime<Utc>,
    /// Soft-delete instant.
    pub deleted_at: Option<DateTime<Utc>>,
}

impl Template {
    /// True when the template has been soft-deleted.
    pub fn is_deleted(&self) -> bool {
        self.deleted_at.is_some()
    }
}

/// Upper bound on a template source, in bytes (also enforced at the HTTP edge).
pub const MAX_TEMPLATE_BYTES: usize = 1024 * 1024;

/// Why an uploaded template file was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateFileError {
    /// The file is empty.
    #[error("the template file is empty")]
    Empty,
    /// The file name does not end in `.tpl`.
    #[error("the template file must have the .tpl extension")]
    NotTpl,
    /// Larger than [`MAX_TEMPLATE_BYTES`].
    #[error("the template file exceeds {max} bytes")]
    TooLarge {
        /// The limit.
        max: usize,
    },
    /// Not valid UTF-8 text.
    #[error("the template file is not UTF-8 text")]
    NotUtf8,
    /// Content does not look like the declared format.
    #[error("the template content is not valid for output format {format}: {rule}")]
    ContentMismatch {
        /// Declared format.
        format: OutputFormat,
        /// The rule that failed, in words.
        rule: &'static str,
    },
    /// `<script>`, a `javascript:`/`vbscript:` URL (also entity-encoded), `<iframe>`,
    /// `<object>`, `<embed>` or an inline event-handler attribute was found.
    #[error(
        "the template contains script, a frame, an embedded object or an inline event handler ({found})"
    )]
    ScriptDetected {
        /// What was found (e.g. `<script`, `onclick=`).
        found: String,
    },
}

/// Validates an uploaded template file: name, size, encoding, content sanity for the format and
/// the absence of script. Returns the source text.
///
/// MUST be called before a template source is stored; the rules are the reference's
/// (TPL-0002, TPL-0006, TPL-0007, TPL-0032) plus a size limit and a UTF-8 check.
pub fn validate_template_file<'a>(
    file_name: &str,
    bytes: &'a [u8],
    format: OutputFormat,
) -> Result<&'a str, TemplateFileError> {
    if !file_name.to_ascii_lowercase().ends_with(".tpl") {
        return Err(TemplateFileError::NotTpl);
    }
    if bytes.is_empty() {
        return Err(TemplateFileError::Empty);
    }
    if bytes.len() > MAX_TEMPLATE_BYTES {
        return Err(TemplateFileError::TooLarge {
            max: MAX_TEMPLATE_BYTES,
        });
    }
    let text = std::str::from_utf8(bytes).map_err(|_| TemplateFileError::NotUtf8)?;
    if text.trim().is_empty() {
        return Err(TemplateFileError::Empty);
    }
    check_content_for_format(text, format)?;
    if let Some(found) = find_script(text) {
        return Err(TemplateFileError::ScriptDetected { found });
    }
    Ok(text)
}

/// The content rules of [`validate_template_file`], in words: the `rule` of
/// [`TemplateFileError::ContentMismatch`] is one of these.
pub mod content_rules {
    /// html and pdf.
    pub const HTML: &str = "an HTML template must contain <html or <!DOCTYPE html";
    /// xml.
    pub const XML: &str = "an XML template must contain markup";
    /// csv: two non-blank lines.
    pub const CSV_LINES: &str = "a CSV template needs a header line and at least one more line";
    /// csv: a separator in the header.
    pub const CSV_SEPARATOR: &str = "the first CSV line must contain a , or ; separator";
}

fn check_content_for_format(text: &str, format: OutputFormat) -> Result<(), TemplateFileError> {
    let lower = text.to_ascii_lowercase();
    let mismatch = |rule| Err(TemplateFileError::ContentMismatch { format, rule });
    match format {
        OutputFormat::Html | OutputFormat::Pdf => {
            if !(lower.contains("<html") || lower.contains("<!doctype html")) {
                return mismatch(content_rules::HTML);
            }
        }
        OutputFormat::Xml => {
            if !text.contains('<') {
                return mismatch(content_rules::XML);
            }
        }
        OutputFormat::Csv => {
            let mut lines = text.lines().filter(|l| !l.trim().is_empty());
            let first = lines.next().unwrap_or_default();
            if lines.next().is_none() {
                return mismatch(content_rules::CSV_LINES);
            }
            if !(first.contains(',') || first.contains(';')) {
                return mismatch(content_rules::CSV_SEPARATOR);
            }
        }
        OutputFormat::Txt => {}
    }
    Ok(())
}

/// Finds what the reference refuses (`<script`, `javascript:`, `<iframe`, `<object`, `<embed`,
/// inline event-handler attributes `on<letters>=` inside a tag) plus `</script`, `vbscript:`
/// and script URLs written with HTML character references (`&#106;avascript:`,
/// `java&#x09;script&colon;`), case-insensitively, in one linear pass. Returns what was found.
pub fn find_script(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    for needle in ["<script", "</script", "<iframe", "<object", "<embed"] {
        if lower.contains(needle) {
            return Some(needle.to_owned());
        }
    }
    let decoded = decode_for_scan(&lower);
    for needle in ["javascript:", "vbscript:"] {
        if decoded.contains(needle) {
            return Some(needle.to_owned());
        }
    }
    // Event handlers: scan inside tags only, so a CSV column named "online=" is not flagged.
    let bytes = lower.as_bytes();
    let mut in_tag = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'<' {
            in_tag = bytes.get(i + 1).is_some_and(|c| c.is_ascii_alphabetic());
        } else if b == b'>' {
            in_tag = false;
        } else if in_tag
            && b == b'o'
            && bytes.get(i + 1) == Some(&b'n')
            && i > 0
            && (bytes[i - 1].is_ascii_whitespace()
                || bytes[i - 1] == b'"'
                || bytes[i - 1] == b'\''
                || bytes[i - 1] == b'/')
        {
            let mut j = i + 2;
            while j < bytes.len() && bytes[j].is_ascii_alphabetic() {
                j += 1;
            }
            let name_len = j - (i + 2);
            while j < bytes.len() && bytes[j].is_ascii_whitespace() {
                j += 1;
            }
            if name_len > 0 && bytes.get(j) == Some(&b'=') {
                return Some(format!("{}=", &lower[i..i + 2 + name_len]));
            }
        }
        i += 1;
    }
    None
}

/// `lower` with HTML character references decoded (numeric ones, and `&colon;`, `&tab;`,
/// `&newline;`) and the characters a browser skips inside a URL scheme (tab, CR, LF, NUL)
/// removed, so an encoded `javascript:` reads as one. Linear; no allocation beyond the copy.
fn decode_for_scan(lower: &str) -> String {
    let bytes = lower.as_bytes();
    let mut out = String::with_capacity(lower.len());
    let mut i = 0;
    while i < bytes.len() {
        let (ch, used) = if bytes[i] == b'&' {
            char_reference(&bytes[i..]).unwrap_or(('&', 1))
        } else {
            let c = lower[i..].chars().next().unwrap_or('\u{fffd}');
            (c, c.len_utf8())
        };
        if !matches!(ch, '\t' | '\n' | '\r' | '\0') {
            out.push(ch.to_ascii_lowercase());
        }
        i += used;
    }
    out
}

/// The character of a reference at the start of `b` (which starts with `&`) and its length.
fn char_reference(b: &[u8]) -> Option<(char, usize)> {
    for (name, ch) in [("&colon;", ':'), ("&tab;", '\t'), ("&newline;", '\n')] {
        if b.starts_with(name.as_bytes()) {
            return Some((ch, name.len()));
        }
    }
    if b.get(1) != Some(&b'#') {
        return None;
    }
    let hex = matches!(b.get(2), Some(b'x'));
    let start = if hex { 3 } else { 2 };
    let mut end = start;
    let mut value: u32 = 0;
    while end < b.len() && end - start < 10 {
        let d = match (hex, b[end]) {
            (true, c) if c.is_ascii_hexdigit() => (c as char).to_digit(16)?,
            (false, c) if c.is_ascii_digit() => u32::from(c - b'0'),
            _ => break,
        };
        value = value
            .saturating_mul(if hex { 16 } else { 10 })
            .saturating_add(d);
        end += 1;
    }
    if end == start {
        return None;
    }
    if b.get(end) == Some(&b';') {
        end += 1;
    }
    Some((char::from_u32(value).unwrap_or('\u{fffd}'), end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_case_insensitively() {
        assert_eq!(OutputFormat::parse("HTML"), Some(OutputFormat::Html));
        assert_eq!(OutputFormat::parse(" Pdf "), Some(OutputFormat::Pdf));
        assert_eq!(OutputFormat::parse("docx"), None);
    }

    #[test]
    fn file_rules() {
        let html = b"<html><body>{{ a.b.c }}</body></html>";
        assert!(validate_template_file("x.tpl", html, OutputFormat::Html).is_ok());
        assert_eq!(
            validate_template_file("x.txt", html, OutputFormat::Html),
            Err(TemplateFileError::NotTpl)
        );
        assert_eq!(
            validate_template_file("x.tpl", b"", OutputFormat::Txt),
            Err(TemplateFileError::Empty)
        );
        assert_eq!(
            validate_template_file("x.tpl", b"  \n", OutputFormat::Txt),
            Err(TemplateFileError::Empty)
        );
        assert!(matches!(
            validate_template_file("x.tpl", b"plain", OutputFormat::Html),
            Err(TemplateFileError::ContentMismatch { .. })
        ));
        assert!(matches!(
            validate_template_file("x.tpl", b"a,b", OutputFormat::Csv),
            Err(TemplateFileError::ContentMismatch { .. })
        ));
        assert!(validate_template_file("x.tpl", b"a;b\n1;2", OutputFormat::Csv).is_ok());
        assert_eq!(
            validate_template_file("x.tpl", &[0xff, 0xfe], OutputFormat::Txt),
            Err(TemplateFileError::NotUtf8)
        );
        let big = vec![b'a'; MAX_TEMPLATE_BYTES + 1];
        assert!(matches!(
            validate_template_file("x.tpl", &big, OutputFormat::Txt),
            Err(TemplateFileError::TooLarge { .. })
        ));
    }

    #[test]
    fn script_detection() {
        assert_eq!(
            find_script("<html><SCRIPT>x</SCRIPT>"),
            Some("<script".into())
        );
        assert_eq!(
            find_script("<img src=x onerror=alert(1)>"),
            Some("onerror=".into())
        );
        assert_eq!(
            find_script("<div  onClick = \"x\">"),
            Some("onclick=".into())
        );
        assert_eq!(
            find_script("<a href=\"javascript:x\">"),
            Some("javascript:".into())
        );
        for (src, found) in [
            ("<IFRAME src=x>", "<iframe"),
            ("<Object data=x>", "<object"),
            ("<eMbEd src=x>", "<embed"),
            ("<a href=\"&#106;avascript:alert(1)\">", "javascript:"),
            ("<a href=\"&#x6A;&#x61;vascript&colon;x\">", "javascript:"),
            ("<a href=\"&#0000106avascript:x\">", "javascript:"),
            ("<a href=\"java&#x09;script:x\">", "javascript:"),
            ("<a href=\"java\tscript:x\">", "javascript:"),
            ("<a href=\"JaVaScRiPt:x\">", "javascript:"),
            ("<a href=\"vbscript:x\">", "vbscript:"),
            ("</SCRIPT>", "</script"),
        ] {
            assert_eq!(find_script(src), Some(found.to_owned()), "{src}");
        }
        assert_eq!(find_script("a &amp; b &#; &#x; &#99999999999; &colo"), None);
        assert_eq!(find_script("java script: is two words"), None);
        assert_eq!(find_script("online=yes,donation=1"), None);
        assert_eq!(find_script("<p>turn on = off</p>"), None);
        assert_eq!(find_script("<p data-one=\"1\">"), None);
    }
}
