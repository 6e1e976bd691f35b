//! The fast path answers exactly what the rewriting pass answers, and only for plain markup.
use super::{NotPlain, PlainScan};
use crate::DocumentSanitizer;
use reporter_ports::ports::HtmlSanitizer;

/// The bench's HTML report (`report-client`) of `rows` rows, as the template renders it.
fn table(rows: usize) -> String {
    let mut html = String::from(
        "<html><body><table><tr><th>id</th><th>label</th><th>amount</th><th>booked on</th><th>memo</th></tr>\n",
    );
    for id in 1..=rows {
        html.push_str(&format!(
            "<tr><td>{id}</td><td>entry {id}</td><td>{}.{}</td><td>2024-01-{:02}</td><td>memo &amp; é {id}</td></tr>\n",
            id * 7 % 10_000,
            id % 100,
            id % 28 + 1,
        ));
    }
    html.push_str("</table></body></html>");
    html
}

/// Documents of plain markup, each with what makes it so.
fn plain_documents() -> Vec<String> {
    let mut docs: Vec<String> = [
        "",
        "text",
        "<html>text",
        "<head>",
        "<html><head></head><body>x</body></html>",
        "<!DOCTYPE html><!-- a --><html><head><!-- b --><p>t</p></head></html>",
        "<!doctype HTML>\n<html xmlns=\"http://www.w3.org/1999/xhtml\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width\"></head>\n<body class=\"r\" style=\"font-family: sans-serif\"><h1 style='color:#1E88E5'>T</h1></body></html>",
        "<html><head><meta http-equiv=\"Content-Type\" content=\"text/html; charset=utf-8\"></head><body>x</body></html>",
        "<html><head><meta name=\"author\" content=\"x\"></head><body>y</body></html>",
        "<table border=\"1\" cellpadding=\"4\"><tr><td nowrap class=\"n\" align=\"right\">1.250,00</td><td colspan='2' rowspan=\"1\">&lt;ok&gt; &#x2605;</td></tr></table>",
        "<div><br/><hr /><img src=\"data:image/png;base64,iVBORw0KGgo=\" alt=\"logo\" width=\"10\"><p>a &amp; b</p></div>",
        "<HTML><BODY><TABLE><TR><TD CLASS=\"x\">1</TD></TR></TABLE></BODY></HTML>",
        "<p>ünïcödé — ✓</p><!---->\n<!-- a -- b -->",
        "<html><head>\n<body>x",
        "text<p>",
        "<head><!DOCTYPE HTML><p>x</p>",
        "<html><head><!-- c --></head><body><!-- d --></body></html>",
        "<p>a > b &amp; c</p>\r\n<div>\n</div>",
        "<p title=\"a\r\">x</p>",
    ]
    .map(str::to_owned)
    .to_vec();
    docs.push(table(300));
    docs
}

/// Documents the fast path leaves to the pass, with why.
fn not_plain_documents() -> Vec<&'static str> {
    vec![
        "<a href=\"x\">link</a>",
        "<p onclick=\"x()\">y</p>",
        "<td class=n>1</td>",
        "<td class=\"a\" class=\"b\">1</td>",
        "<td class = \"a\">1</td>",
        "<td class=\"a\"id=\"b\">1</td>",
        "<p style=\"background:url(https://evil.test/a.png)\">x</p>",
        "<img src=\"https://evil.test/a.png\">",
        "<script>alert(1)</script>",
        "<title>t</title>",
        "<style>p{}</style>",
        "<svg><p>x</p></svg>",
        "<select><option>x</option></select>",
        "<custom-element>x</custom-element>",
        "<unknown>x</unknown>",
        "a < b",
        "<?php x ?>",
        "</ p>",
        "<p>x</a>",
        "<head></p><title>t</title>",
        "<!-->",
        "<!--->",
        "<!-- a --!> b -->",
        "<!-- <!-- -->",
        "<![CDATA[x]]>",
        "<!DOCTYPE html PUBLIC \"x\">",
        "<meta charset=\"iso-8859-1\">",
        "<meta http-equiv=\"refresh\" content=\"0;url=x\">",
        "<head/>",
        "<p>x\0y</p>",
        "<p\r>x</p>",
        "<p x:y=\"1\">z</p>",
        "<p",
        "<!-- open",
        "<!DOCTY",
        "<",
    ]
}

/// The rewriting pass alone (what `sanitize` answered before the fast path).
fn rewritten(doc: &str) -> String {
    DocumentSanitizer::new().rewritten(doc)
}

fn scanned(doc: &str) -> Result<Option<usize>, NotPlain> {
    PlainScan::new().finish(&DocumentSanitizer::new(), doc)
}

/// Writes `doc` to a stream in pieces of `size` bytes (at character boundaries).
fn streamed(doc: &str, size: usize) -> String {
    let sanitizer = DocumentSanitizer::new();
    let mut stream = sanitizer.stream();
    let mut rest = doc;
    while !rest.is_empty() {
        let mut cut = size.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        stream.write(&rest[..cut]);
        rest = &rest[cut..];
    }
    stream.finish()
}

#[test]
fn plain_markup_comes_out_as_the_pass_writes_it() {
    for doc in plain_documents() {
        assert!(scanned(&doc).is_ok(), "not read as plain: {doc}");
        let want = rewritten(&doc);
        assert_eq!(DocumentSanitizer::new().sanitize(&doc), want, "{doc}");
        for size in [1, 2, 7, 64, 4096] {
            assert_eq!(streamed(&doc, size), want, "pieces of {size}: {doc}");
        }
    }
}

#[test]
fn markup_that_is_not_plain_goes_through_the_pass() {
    for doc in not_plain_documents() {
        assert_eq!(scanned(doc), Err(NotPlain), "read as plain: {doc:?}");
        let want = rewritten(doc);
        assert_eq!(DocumentSanitizer::new().sanitize(doc), want, "{doc:?}");
        for size in [1, 3, 4096] {
            assert_eq!(streamed(doc, size), want, "pieces of {size}: {doc:?}");
        }
    }
}

/// A document plain for a long stretch that stops being plain past its first pieces: the
/// pass rewrites it from its start.
#[test]
fn a_document_that_stops_being_plain_is_rewritten_whole() {
    let mut doc = table(2000);
    doc.push_str("<p onclick=\"x()\">late</p><script>alert(1)</script>");
    assert_eq!(scanned(&doc), Err(NotPlain));
    let want = rewritten(&doc);
    assert!(!want.contains("onclick") && !want.contains("<script"));
    for size in [1000, 32 * 1024] {
        assert_eq!(streamed(&doc, size), want, "pieces of {size}");
    }
}

/// The declaration goes where the pass puts it; a kept UTF-8 `<meta>` means none is added.
#[test]
fn the_declaration_goes_where_the_pass_puts_it() {
    use crate::CHARSET_META;
    for (doc, at) in [
        ("<html><body>x", Some(6)),
        ("<html><head>\n<body>", Some(12)),
        ("<head></head>", Some(6)),
        ("<head>", Some(6)),
        ("text<p>", Some(4)),
        ("text", Some(0)),
        ("<head><meta charset=\"UTF-8\"></head>", None),
    ] {
        assert_eq!(scanned(doc), Ok(at), "{doc}");
        let out = DocumentSanitizer::new().sanitize(doc);
        assert_eq!(out.contains(CHARSET_META), at.is_some(), "{doc}");
    }
}

/// Every document the sanitizer's own tests and the repository know (the golden outputs of
/// every template kind, the example templates): the fast path, where it answers, answers
/// what the pass does; and it answers for some of them.
#[test]
fn the_repository_documents_come_out_as_the_pass_writes_them() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut docs = Vec::new();
    let mut dirs = vec![
        root.join("adapters/pongo2/tests/golden"),
        root.join("examples/templates"),
    ];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if let Ok(text) = std::fs::read_to_string(&p) {
                docs.push(text);
            }
        }
    }
    assert!(docs.len() > 20, "{}", docs.len());
    let mut plain = 0;
    for doc in &docs {
        plain += usize::from(scanned(doc).is_ok());
        let want = rewritten(doc);
        assert_eq!(DocumentSanitizer::new().sanitize(doc), want, "{doc}");
        for size in [5, 4096] {
            assert_eq!(streamed(doc, size), want, "pieces of {size}: {doc}");
        }
    }
    assert!(plain > 5, "only {plain} plain documents");
}

/// Pieces of markup, hostile and plain, that random documents are made of.
const PIECES: &[&str] = &[
    "<p>",
    "</p>",
    "<td class=\"n\">",
    "</td>",
    "<tr>",
    "</tr>",
    "<table border=\"1\">",
    "</table>",
    "<div style=\"color:red\">",
    "<div style=\"background:url(https://e.test)\">",
    "</div>",
    "<br/>",
    "<img src=\"data:image/png;base64,AA==\">",
    "<img src=\"https://e.test/x.png\">",
    "<img src=x onerror=alert(1)>",
    "<p onclick=\"x()\">",
    "<a href=\"javascript:alert(1)\">",
    "</a>",
    "<script>",
    "</script>",
    "<style>",
    "</style>",
    "<title>",
    "</title>",
    "<textarea>",
    "</textarea>",
    "<svg>",
    "</svg>",
    "<math>",
    "<iframe src=\"x\">",
    "<noscript>",
    "<template>",
    "<xmp>",
    "<plaintext>",
    "<meta charset=\"utf-8\">",
    "<meta charset=\"iso-8859-1\">",
    "<meta http-equiv=\"refresh\" content=\"0;url=x\">",
    "<head>",
    "</head>",
    "<html>",
    "<body>",
    "<!DOCTYPE html>",
    "<!-- c -->",
    "<!--",
    "-->",
    "--!>",
    "<!-",
    "<![CDATA[",
    "]]>",
    "<?x?>",
    "<",
    ">",
    "/",
    "=",
    "\"",
    "'",
    "&amp;",
    "&lt;",
    "&#x3c;",
    "text",
    " ",
    "\n",
    "\r",
    "\t",
    "\0",
    "é",
    "<P CLASS='a'>",
    "<td class=a>",
    "<td nowrap>",
    "<td id=\"a\" id=\"b\">",
    "<p title=\"a>b\">",
    "</ p>",
    "<p/>",
    "<custom-x>",
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

    /// The security property of the fast path: whenever it answers, it answers exactly
    /// what the rewriting pass writes, whole and in pieces, for documents made of plain and
    /// hostile pieces in any order.
    #[test]
    fn where_the_fast_path_answers_it_answers_what_the_pass_writes(
        picks in proptest::collection::vec(0..PIECES.len(), 0..40),
        size in 1usize..64,
    ) {
        let doc: String = picks.iter().map(|&i| PIECES[i]).collect();
        let want = rewritten(&doc);
        proptest::prop_assert_eq!(DocumentSanitizer::new().sanitize(&doc), want.clone(), "{:?}", doc);
        proptest::prop_assert_eq!(streamed(&doc, size), want, "pieces of {}: {:?}", size, doc);
    }
}
