//! The scan, on whole documents and on every split of them.
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
            find_active_content(&doc).is_some_and(|f| f.starts_with("onc") || f.starts_with("onx")),
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
