//! What the sanitizer keeps (report layouts) and what it removes (every script vector).
use reporter_adapter_ammonia::AmmoniaSanitizer;
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
