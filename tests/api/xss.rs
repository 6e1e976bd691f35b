//! Nothing a template or a data row contains runs script in a browser: a corpus of XSS vectors
//! goes through real reports (upload → report → download over HTTP) and every artifact is
//! opened in headless Chromium (`CHROMIUM_PATH`). Each vector's script would record its id in
//! a page global (read over CDP), call a beacon on a local listener and change the title;
//! after the page loads, every link is clicked and every form submitted. No vector may run.
//! The same corpus rendered to PDF by the Chromium renderer must not show script output.
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
