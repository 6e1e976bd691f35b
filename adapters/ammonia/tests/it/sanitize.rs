//! What the sanitizer keeps (report layouts) and what it removes (every script vector).
use reporter_adapter_ammonia::{AllowedOrigins, AmmoniaSanitizer};
use reporter_ports::ports::HtmlSanitizer;

fn clean(s: &str) -> String {
    AmmoniaSanitizer::new().sanitize(s)
}

#[test]
fn report_layouts_survive() {
    let doc = r#"<!DOCTYPE html><html lang="pt-BR"><head><meta charset="utf-8"><title>Extrato</title>
<style>table { border-collapse: collapse } td.n { text-align: right }</style></head>
<body style="font-family: sans-serif" class="report">
<h1 style="color:#1E88E5">Statement</h1>
<table border="1" cellpadding="4" style="width:100%"><thead><tr><th colspan="2">Conta</th></tr></thead>
<tbody><tr><td class="n" align="right">1.250,00</td><td rowspan="1">ok</td></tr></tbody></table>
<img src="data:image/png;base64,iVBORw0KGgo=" alt="logo" width="10">
</body></html>"#;
    let out = clean(doc);
    for kept in [
        "<!DOCTYPE html>",
        r#"<html lang="pt-BR">"#,
        r#"<meta charset="utf-8">"#,
        "<title>Extrato</title>",
        "<style>table { border-collapse: collapse } td.n { text-align: right }</style>",
        r#"<body style="font-family: sans-serif" class="report">"#,
        r#"<h1 style="color:#1E88E5">"#,
        r#"<table border="1" cellpadding="4" style="width:100%">"#,
        r#"<th colspan="2">"#,
        r#"<td class="n" align="right">1.250,00</td>"#,
        r#"src="data:image/png;base64,iVBORw0KGgo=""#,
    ] {
        assert!(out.contains(kept), "lost {kept} in:\n{out}");
    }
}

#[test]
fn script_vectors_are_removed() {
    let vectors = [
        "<script>alert(1)</script>",
        "<SCRIPT SRC=//x/x.js></SCRIPT>",
        "<img src=x onerror=alert(1)>",
        "<body onload=alert(1)>",
        "<a href=\"javascript:alert(1)\">x</a>",
        "<a href=\"&#106;avascript:alert(1)\">x</a>",
        "<a href=\"java\tscript:alert(1)\">x</a>",
        "<a href=\"data:text/html,<script>alert(1)</script>\">x</a>",
        "<iframe srcdoc=\"<script>alert(1)</script>\"></iframe>",
        "<iframe src=\"javascript:alert(1)\"></iframe>",
        "<object data=\"javascript:alert(1)\"></object>",
        "<embed src=\"javascript:alert(1)\">",
        "<svg onload=alert(1)><script>alert(1)</script></svg>",
        "<svg><a xlink:href=\"javascript:alert(1)\"><text>x</text></a></svg>",
        "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
        "<meta http-equiv=\"refresh\" content=\"0;url=javascript:alert(1)\">",
        "<form action=\"javascript:alert(1)\"><button>x</button></form>",
        "<base href=\"javascript:alert(1)//\">",
        "<link rel=import href=\"data:text/html,<script>alert(1)</script>\">",
        "<div style=\"width: expression(alert(1))\">x</div>",
        "<details open ontoggle=alert(1)>",
        "<input autofocus onfocus=alert(1)>",
        "<style></style><script>alert(1)</script>",
        "<noscript><p title=\"</noscript><img src=x onerror=alert(1)>\">",
        "<!--><script>alert(1)</script>-->",
        "<img src=\"data:image/svg+xml,<svg onload=alert(1)>\" onerror=alert(1)>",
    ];
    for v in vectors {
        let out = clean(&format!("<html><body>{v}</body></html>")).to_ascii_lowercase();
        for bad in [
            "<script",
            "onerror",
            "onload",
            "ontoggle",
            "onfocus",
            "javascript:",
            "<iframe",
            "<object",
            "<embed",
            "<svg",
            "<math",
            "http-equiv",
            "<form",
            "<base",
            "<link",
            "expression(",
            "data:text/html",
        ] {
            assert!(!out.contains(bad), "{v} kept {bad}: {out}");
        }
    }
}

#[test]
fn style_elements_cannot_break_out() {
    let out = clean("<style>a{}</style><img src=x onerror=alert(1)><style>b{}</style>");
    assert!(!out.contains("onerror"), "{out}");
    assert!(out.contains("<style>a{}</style>"), "{out}");
}

/// Finding 4 of issue 30: every reference that would load from elsewhere when the report is
/// opened (served or saved), escapes included. `evil` names the remote host in each.
const REMOTE_REFERENCES: &[&str] = &[
    r#"<img src="http://evil.test/pixel.png">"#,
    r#"<img src=https://evil.test/pixel.png>"#,
    r#"<img src="//evil.test/pixel.png">"#,
    r#"<img src="evil.png">"#,
    r#"<img src="/var/evil.png">"#,
    r#"<img src=" &#104;ttps://evil.test/x.png">"#,
    r#"<img src="data:image/svg+xml,<svg><image href='https://evil.test/x'/></svg>">"#,
    r#"<img srcset="https://evil.test/x.png 2x" src="data:image/png;base64,AA">"#,
    r#"<style>body { background: url(http://evil.test/a.png) }</style>"#,
    r#"<style>body { background: url("http://evil.test/a.png") }</style>"#,
    r#"<style>body { background: u\72l(http://evil.test/a.png) }</style>"#,
    r#"<style>body { background: \75 rl('http://evil.test/a.png') }</style>"#,
    r#"<style>body { background: url(\68ttp://evil.test/a.png) }</style>"#,
    r#"<style>body { background: URL(http://evil.test/a.png) }</style>"#,
    r#"<style>body { background: url(evil.png) }</style>"#,
    r#"<style>body { background: url(//evil.test/a.png) }</style>"#,
    r#"<style>@import url(http://evil.test/a.css);</style>"#,
    r#"<style>@import "http://evil.test/a.css";</style>"#,
    r#"<style>@\69mport 'http://evil.test/a.css';</style>"#,
    r#"<style>@IMPORT 'evil.css' screen;</style>"#,
    r#"<style>@import url("data:text/css,@import 'http://evil.test/b.css'");</style>"#,
    r#"<style>@font-face { font-family: x; src: url(https://evil.test/f.woff2) format("woff2") }</style>"#,
    r#"<style>@font-face { font-family: x; src: local(Arial), u\rl(https://evil.test/f.woff) }</style>"#,
    r#"<style>p { background-image: image-set("https://evil.test/a.png" 1x) }</style>"#,
    r#"<style>p { background-image: -webkit-image-set('evil.png' 1x, url(evil2.png) 2x) }</style>"#,
    r#"<style>p { --x: url(https://evil.test/a.png); background-image: var(--x) }</style>"#,
    r#"<style>p { background: var(--y, url(https://evil.test/a.png)) }</style>"#,
    r#"<style>p { background: src("https://evil.test/a.png") }</style>"#,
    r#"<style>p { background-image: attr(data-evil type(<url>)) }</style>"#,
    r#"<style>p { cursor: url(https://evil.test/c.cur), auto; filter: url(evil.svg#f) }</style>"#,
    r#"<style>p { background: url(https://evil.test/a b.png) }</style>"#,
    r#"<style>/* <style> */ p { background: url(https://evil.test/a.png) }</style>"#,
    r#"<style>@media print { @supports (display: grid) { p { background: url(https://evil.test/a.png) } } }</style>"#,
    r#"<p style="background: url(http://evil.test/a.png)">x</p>"#,
    r#"<p style="background: u\72l(http://evil.test/a.png)">x</p>"#,
    r#"<p style="background: url(&quot;http://evil.test/a.png&quot;)">x</p>"#,
    r#"<p style="background: &#117;rl(http://evil.test/a.png)">x</p>"#,
    r#"<p style="background-image: image-set('https://evil.test/a.png' 1x)">x</p>"#,
    r#"<table style="background:url('//evil.test/t.png')"><tr><td style="list-style: url(evil.png)">x</td></tr></table>"#,
    r#"<video poster="https://evil.test/p.png" src="https://evil.test/v.mp4"></video>"#,
    r#"<audio src="https://evil.test/a.mp3"></audio><source src="https://evil.test/s.mp4"><track src="https://evil.test/t.vtt">"#,
    r#"<link rel="stylesheet" href="https://evil.test/a.css"><link rel="preload" href="https://evil.test/f.woff2"><link rel="icon" href="https://evil.test/i.ico">"#,
    r#"<iframe src="https://evil.test/"></iframe><object data="https://evil.test/o"></object><embed src="https://evil.test/e">"#,
    r#"<input type="image" src="https://evil.test/i.png"><image src="https://evil.test/i.png">"#,
    r#"<picture><source srcset="https://evil.test/p.png"><img src="data:image/png;base64,AA"></picture>"#,
    r#"<table background="https://evil.test/t.png"><tr><td background="https://evil.test/d.png">x</td></tr></table>"#,
    r#"<svg><image href="https://evil.test/s.png"/></svg>"#,
];

#[test]
fn remote_references_are_removed() {
    for v in REMOTE_REFERENCES {
        let doc = format!("<!DOCTYPE html><html><head></head><body>{v}</body></html>");
        let out = clean(&doc);
        assert!(
            !out.to_ascii_lowercase().contains("evil"),
            "{v} kept a remote reference:\n{out}"
        );
    }
    // A string is text, but not once an image function reads it through var().
    let out = clean(
        r#"<html><body><style>p { --x: "https://evil.test/a.png"; background-image: image-set(var(--x) 1x) }</style></body></html>"#,
    );
    assert!(out.contains("image-set(none 1x)"), "{out}");
    // On the <body> tag itself too.
    let out =
        clean(r#"<html><body style="background:url(https://evil.test/b.png)">x</body></html>"#);
    assert!(!out.contains("evil"), "{out}");
    assert!(out.contains(r#"<body style="background:none">"#), "{out}");
}

#[test]
fn a_neutralized_reference_leaves_the_rest_of_the_stylesheet() {
    let out = clean(
        "<html><body><style>@import url(http://evil.test/a.css);\n\
         td { color: red; background: url(http://evil.test/a.png) no-repeat }\n\
         th { font-weight: bold }</style></body></html>",
    );
    assert!(
        out.contains(
            "<style>@import none;\ntd { color: red; background: none no-repeat }\nth { font-weight: bold }</style>"
        ),
        "{out}"
    );
    let out = clean(
        r#"<html><body><p style="color: red; background: url(evil.png)">x</p></body></html>"#,
    );
    assert!(
        out.contains(r#"<p style="color: red; background: none">"#),
        "{out}"
    );
}

#[test]
fn inline_images_fonts_and_fragments_stay() {
    let kept = [
        r#"<img src="data:image/png;base64,iVBORw0KGgo=" alt="logo">"#,
        r#"<p style="background: url(data:image/png;base64,iVBORw0KGgo=)">x</p>"#,
        r#"<style>@font-face { font-family: f; src: local(Arial), url(data:font/woff2;base64,d09GMgAB) format("woff2") }</style>"#,
        r#"<style>p { clip-path: url(#clip); content: "https://example.com/ is text"; font-family: "Arial" }</style>"#,
        r#"<p style="content: attr(title)">x</p>"#,
        r#"<a href="https://example.com/more" rel="noopener noreferrer">navigation is not a load</a>"#,
    ];
    for k in kept {
        let out = clean(&format!("<html><body>{k}</body></html>"));
        assert!(out.contains(k), "lost {k} in:\n{out}");
    }
    // An SVG inline in CSS is a document (it could load or filter), not a raster image.
    let out = clean(
        r#"<html><body><p style="background: url('data:image/svg+xml,<svg/>')">x</p></body></html>"#,
    );
    assert!(!out.contains("svg"), "{out}");
}

#[test]
fn allowed_origins_may_load_and_nothing_else() {
    let origins = AllowedOrigins::parse(&["https://cdn.example.com"]).expect("origin");
    let s = AmmoniaSanitizer::with_allowed_origins(origins);
    let out = s.sanitize(
        r#"<html><body><img src="https://cdn.example.com/logo.png">
<style>@import url(https://cdn.example.com/base.css); @font-face { font-family: f; src: url("https://cdn.example.com/f.woff2") }
p { background: url(https://evil.test/a.png) }</style>
<img src="https://evil.test/x.png"><img src="http://cdn.example.com/plain-http.png"></body></html>"#,
    );
    for kept in [
        r#"<img src="https://cdn.example.com/logo.png">"#,
        "@import url(https://cdn.example.com/base.css);",
        r#"src: url("https://cdn.example.com/f.woff2")"#,
        "p { background: none }",
    ] {
        assert!(out.contains(kept), "lost {kept} in:\n{out}");
    }
    assert!(
        !out.contains("evil") && !out.contains("plain-http"),
        "{out}"
    );
}

#[test]
fn css_nested_too_deep_is_dropped_whole() {
    let deep = format!(
        "p {{ x: {}url(https://evil.test/a.png){} }}",
        "(".repeat(60),
        ")".repeat(60)
    );
    let out = clean(&format!(
        "<html><body><style>{deep}</style><p style=\"{deep}\">x</p></body></html>"
    ));
    assert!(!out.contains("evil"), "{out}");
    assert!(out.contains("<style></style>"), "{out}");
}

/// Markup inside an attribute value is text: it stays as written, and only real `<style>`
/// elements are read as CSS.
#[test]
fn markup_in_attribute_values_stays_text() {
    let doc = r#"<html><head><meta charset="utf-8"></head><body><p title="<style>p{background:url(https://evil.test/a.png)}</style>">a &lt;style&gt; b</p></body></html>"#;
    assert_eq!(clean(doc), doc);
}

const CHARSET_META: &str = r#"<meta charset="utf-8">"#;

/// Issue 33, item 5: a report is a document and stays the one its template wrote.
#[test]
fn a_document_comes_out_as_written() {
    let doc = "<!DOCTYPE html>\n<html lang=\"en\">\n<HEAD>\n  <meta charset='UTF-8'>\n  <meta name=\"viewport\" content=\"width=device-width\">\n  <title>Extrato &#x2605; &amp; co</title>\n  <!-- layout -->\n  <style media=\"print\">\n    td.n { text-align: right }  /* &#x2605; */\n  </style>\n</HEAD>\n<body class=report>\n<h1 style='color: #1E88E5'>&#x2605; Statement &eacute; &lt;x&gt;</h1>\n<table border=1><tr><td class=\"n\">1.250,00</td></tr></table>\n<p>a<br/>b</p>\n</body>\n</html>\n";
    assert_eq!(clean(doc), doc);
}

#[test]
fn character_references_are_kept_as_written() {
    let doc = r#"<html><head><meta charset="utf-8"></head><body><p title="&#x2605;&quot;">&#x2605; &#9733; &starf; &amp; &nbsp;</p><a href="?a=1&amp;b=2" rel="noopener noreferrer">x</a></body></html>"#;
    assert_eq!(clean(doc), doc);
}

#[test]
fn one_utf8_charset_is_declared() {
    // None declared: one is added, first in the head.
    let out = clean("<!DOCTYPE html><html><head><title>t</title></head><body>x</body></html>");
    assert_eq!(
        out,
        format!(
            "<!DOCTYPE html><html><head>{CHARSET_META}<title>t</title></head><body>x</body></html>"
        )
    );
    // Without a head tag: before the first element.
    assert_eq!(clean("<p>x</p>"), format!("{CHARSET_META}<p>x</p>"));
    // Declared (either way): nothing added.
    for doc in [
        "<html><head><meta charset=\"utf-8\"></head><body>x</body></html>",
        "<html><head><meta http-equiv=\"Content-Type\" content=\"text/html; charset=UTF-8\"></head><body>x</body></html>",
    ] {
        assert_eq!(clean(doc), doc);
    }
    // Another charset would be a lie (the report is UTF-8), and could hide markup.
    let out = clean("<html><head><meta charset=\"iso-2022-jp\"></head><body>x</body></html>");
    assert!(out.contains(r#"<meta charset="utf-8">"#), "{out}");
    assert!(!out.to_ascii_lowercase().contains("2022"), "{out}");
    assert_eq!(out.matches("charset").count(), 1, "{out}");
}

/// Markup a streaming rewriter could read differently from a browser (foreign content,
/// raw text, CDATA): nothing of it may run.
#[test]
fn parser_differential_vectors_are_removed() {
    let vectors = [
        r#"<svg><![CDATA[<img src=x onerror=alert(1)>]]></svg>"#,
        r#"<svg><p><style><a title="</style><img src=x onerror=alert(1)>">"#,
        r#"<math><style></math><img src=x onerror=alert(1)></style>"#,
        r#"<math><mi><mglyph><svg><mtext><textarea><path id="</textarea><img onerror=alert(1) src=1>">"#,
        r#"<svg></p><style><a id="</style><img src=1 onerror=alert(1)>">"#,
        r#"<noscript><style></noscript><img src=x onerror=alert(1)></style></noscript>"#,
        r#"<select><template><style><img src=x onerror=alert(1)></style></template></select>"#,
        r#"<table><svg><style><img src=x onerror=alert(1)></style></svg></table>"#,
        r#"<xmp></xmp><img src=x onerror=alert(1)></xmp>"#,
        r#"<title><img src=x onerror=alert(1)></title>"#,
        r#"<style><img src=x onerror=alert(1)></style>"#,
        r#"<textarea><img src=x onerror=alert(1)></textarea>"#,
        r#"<plaintext><img src=x onerror=alert(1)>"#,
        r#"<img src=x/onerror=alert(1)>"#,
        r#"<img """><script>alert(1)</script>">"#,
        r#"<a href="&Tab;javascript&colon;alert(1)">x</a>"#,
        r#"<a href="jav&#x0A;ascript:alert(1)">x</a>"#,
        r#"<a href=" &#x01;javascript:alert(1)">x</a>"#,
        r#"<image src=x onerror=alert(1)>"#,
        r#"<a href=x href="javascript:alert(1)" onclick=alert(1) ONCLICK=alert(1)>x</a>"#,
    ];
    for v in vectors {
        let out = clean(&format!("<html><body>{v}</body></html>"));
        let lower = out.to_ascii_lowercase();
        // What a browser would run: an event handler on a live tag, a script, a script URL.
        assert!(!lower.contains("<script"), "{v}: {out}");
        assert!(!lower.contains("javascript"), "{v}: {out}");
        for (i, _) in lower.match_indices("onerror") {
            // Only as text of a raw-text element or an attribute value: never a live tag.
            let before = &lower[..i];
            let in_raw_text = ["<style", "<title"].iter().any(|t| {
                before.rfind(t).is_some_and(|s| {
                    let close = format!("</{}", &t[1..]);
                    !before[s..].contains(&close)
                })
            });
            let in_pre = lower.starts_with("<!doctype html>\n<meta charset=\"utf-8\">\n<pre>");
            assert!(in_raw_text || in_pre, "{v}: live onerror in {out}");
        }
    }
}

/// Files of the repository, by path from its root, with their text.
fn repository_files(dir: &str, name: impl Fn(&str) -> bool) -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out = Vec::new();
    let mut stack = vec![root.join(dir)];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|f| name(&f.to_string_lossy())) {
                let text = std::fs::read_to_string(&p).expect("text");
                out.push((p.display().to_string(), text));
            }
        }
    }
    out.sort();
    out
}

/// Issue 33, item 5: the `<head>` of every example html template (its head is markup
/// without template tags, as rendered) survives byte for byte, in place.
#[test]
fn example_template_heads_survive_byte_for_byte() {
    let examples = repository_files("examples/templates", |f| f.ends_with(".html.tpl"));
    assert!(!examples.is_empty());
    for (path, source) in examples {
        let head = |s: &str| {
            let start = s.find("<head").expect("a head");
            let end = s.find("</head>").expect("a head end") + "</head>".len();
            s[..end][start..].to_owned()
        };
        let out = clean(&source);
        assert_eq!(head(&out), head(&source), "{path}");
        assert!(
            out.starts_with(&source[..source.find("<head").unwrap_or(0)]),
            "{path}"
        );
    }
}

/// Tags the golden outputs use that the sanitizer keeps.
const LAYOUT: &[&str] = &[
    "p", "b", "i", "br", "a", "table", "tr", "td", "th", "div", "span", "ul", "ol", "li", "em",
    "strong", "h1", "h2", "h3", "thead", "tbody",
];

/// Whether `html` (lower case) holds a start or end tag not named in `names`.
fn has_tag_outside(html: &str, names: &[&str]) -> bool {
    html.match_indices('<').any(|(i, _)| {
        let rest = html[i + 1..].trim_start_matches('/');
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == ':')
            .collect();
        rest.starts_with(|c: char| c.is_ascii_alphabetic()) && !names.contains(&name.as_str())
    })
}

/// Issue 33, item 5: every golden template's expected output (rendered reports of all
/// kinds) that holds nothing active comes out byte for byte — but for the UTF-8 declaration
/// added to a document that has none. (Those that hold script lose it.)
#[test]
fn golden_outputs_survive_byte_for_byte() {
    let outputs = repository_files("adapters/pongo2/tests/golden", |f| f == "expected.txt");
    assert!(outputs.len() > 10, "{}", outputs.len());
    let mut compared = 0;
    for (path, text) in outputs {
        let lower = text.to_ascii_lowercase();
        if lower.starts_with("<?xml") {
            continue; // Not an html report.
        }
        // Script goes; so do the tags of elements outside the lists (`<Silva>`, `<A-1:…>`).
        if has_tag_outside(&lower, LAYOUT) {
            assert!(
                !clean(&text).to_ascii_lowercase().contains("<script"),
                "{path}"
            );
            continue;
        }
        if lower.contains("<a ") {
            // Links get rel="… noopener noreferrer".
            let out = clean(&text);
            assert_eq!(
                out.matches("<a ").count(),
                out.matches("noopener noreferrer\"").count(),
                "{path}: {out}"
            );
            continue;
        }
        compared += 1;
        let out = clean(&text);
        let out = if out.contains(CHARSET_META) && !text.contains(CHARSET_META) {
            out.replacen(CHARSET_META, "", 1)
        } else {
            out
        };
        assert_eq!(out, text, "{path}");
    }
    assert!(compared > 10, "{compared}");
}

/// A charset declared only inside removed content declares nothing.
#[test]
fn a_removed_charset_declares_nothing() {
    let out = clean(
        "<html><head><noscript><meta charset=\"utf-8\"></noscript></head><body>x</body></html>",
    );
    assert_eq!(
        out,
        format!("<html><head>{CHARSET_META}</head><body>x</body></html>")
    );
}

/// The declaration added to a document that has none goes first in its head, however the
/// head starts (empty, a comment first, whitespace).
#[test]
fn the_added_charset_is_first_in_the_head() {
    for (doc, want) in [
        (
            "<html><head></head><body>x</body></html>",
            format!("<html><head>{CHARSET_META}</head><body>x</body></html>"),
        ),
        (
            "<!DOCTYPE html><!-- a --><html><head><!-- b --><title>t</title></head></html>",
            format!(
                "<!DOCTYPE html><!-- a --><html><head>{CHARSET_META}<!-- b --><title>t</title></head></html>"
            ),
        ),
        (
            "<html lang=en>\n<HEAD class=x onclick=y>\n<title>t</title>",
            format!("<html lang=en>\n<HEAD class=\"x\">{CHARSET_META}\n<title>t</title>"),
        ),
        ("<head>", format!("<head>{CHARSET_META}")),
        ("text", format!("{CHARSET_META}text")),
        ("<html>text", format!("{CHARSET_META}<html>text")),
        ("", CHARSET_META.to_owned()),
        (
            "<script>x</script><p>y</p>",
            format!("{CHARSET_META}<p>y</p>"),
        ),
    ] {
        assert_eq!(clean(doc), want, "{doc}");
    }
}

/// A document written in pieces (a render's output as it is produced) comes out exactly as
/// the same document sanitized whole, wherever it was cut: inside tags, attribute values,
/// character references, `<style>` text, multi-byte characters.
#[test]
fn a_document_written_in_pieces_comes_out_as_written_whole() {
    let mut docs: Vec<String> =
        repository_files("adapters/pongo2/tests/golden", |f| f == "expected.txt")
            .into_iter()
            .map(|(_, text)| text)
            .collect();
    docs.extend(
        [
            "<html><head><noscript><meta charset=\"utf-8\"></noscript></head><body>x</body></html>",
            "<html><head><meta charset=\"iso-2022-jp\"></head><body>x</body></html>",
            "<html><head><style>p{background:url(https://evil.test/a.png)} td{color:red}</style></head><body><p style=\"color: red; background: u\\72l(x.png)\">&#x2605; é</p><a href=\"&#106;avascript:x\" onclick=\"y\">z</a><img src=\"data:image/png;base64,AA\"><svg><script>alert(1)</script></svg></body></html>",
            "<html><body><select><template><style><img src=x onerror=alert(1)></style></template></select></body></html>",
            "<html><head></head><body>x</body></html>",
        ]
        .map(str::to_owned),
    );
    let mut table = String::from("<html><body><table>\n");
    for i in 0..300 {
        table.push_str(&format!(
            "<tr><td>{i}</td><td class=\"n\" onclick=\"x()\">entrée {i}</td></tr>\n"
        ));
    }
    table.push_str("</table></body></html>");
    docs.push(table);
    let sanitizer = AmmoniaSanitizer::new();
    for doc in &docs {
        let whole = sanitizer.sanitize(doc);
        for size in [1, 3, 64, 4096] {
            let mut stream = sanitizer.stream();
            let mut rest = doc.as_str();
            while !rest.is_empty() {
                let mut cut = size.min(rest.len());
                while !rest.is_char_boundary(cut) {
                    cut += 1;
                }
                stream.write(&rest[..cut]);
                rest = &rest[cut..];
            }
            assert_eq!(stream.finish(), whole, "pieces of {size}: {doc}");
        }
    }
}

/// Markup lol_html cannot read without a tree (strict mode) is not guessed at: the report is
/// its text, escaped.
#[test]
fn ambiguous_markup_comes_out_as_escaped_text() {
    let doc = "<html><body><select><template><style><img src=x onerror=alert(1)></style></template></select></body></html>";
    let out = clean(doc);
    assert_eq!(
        out,
        "<!DOCTYPE html>\n<meta charset=\"utf-8\">\n<pre>&lt;html&gt;&lt;body&gt;&lt;select&gt;&lt;template&gt;&lt;style&gt;&lt;img src=x onerror=alert(1)&gt;&lt;/style&gt;&lt;/template&gt;&lt;/select&gt;&lt;/body&gt;&lt;/html&gt;</pre>\n"
    );
}
