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

/// The `<style>` elements are found in ammonia's output on the serializer's word that `<` is
/// escaped everywhere but in their text (attribute values included): an upgrade that changes
/// it must fail here.
#[test]
fn only_style_text_holds_a_raw_less_than_sign() {
    let out = clean(
        r#"<html><body><p title="<style>p{background:url(https://evil.test/a.png)}</style>">a &lt;style&gt; b</p></body></html>"#,
    );
    assert!(
        out.contains(
            r#"title="&lt;style&gt;p{background:url(https://evil.test/a.png)}&lt;/style&gt;""#
        ),
        "{out}"
    );
    assert!(out.contains("a &lt;style&gt; b"), "{out}");
}
