//! ChromiumPdfRenderer against a real Chromium (`CHROMIUM_PATH`, e.g. /usr/bin/chromium).
use crate::common::{assert_statement_text, page_size, statement_html};
use reporter_adapter_pdf::{ChromiumOptions, ChromiumPdfRenderer};
use reporter_contract::services::service_url;
use reporter_ports::ports::{PdfError, PdfRenderer};
use std::time::{Duration, Instant};

fn renderer(pool_size: usize) -> Option<ChromiumPdfRenderer> {
    let path = service_url("CHROMIUM_PATH", "Chromium")?;
    Some(ChromiumPdfRenderer::new(ChromiumOptions {
        chromium_path: path.into(),
        pool_size,
        ..ChromiumOptions::default()
    }))
}

#[tokio::test]
async fn statement_becomes_a_valid_pdf_with_all_rows() {
    let Some(r) = renderer(2) else { return };
    let started = Instant::now();
    assert_eq!(r.check().await, Ok(()));
    eprintln!("chromium: started in {:?}", started.elapsed());
    let html = statement_html(200);
    for run in 0..2 {
        let started = Instant::now();
        let pdf = match r.render(&html).await {
            Ok(p) => p,
            Err(e) => panic!("render: {e}"),
        };
        eprintln!(
            "chromium: 200-row statement (run {run}) -> {} bytes in {:?}",
            pdf.len(),
            started.elapsed()
        );
        assert!(pdf.starts_with(b"%PDF-"));
        assert_statement_text(&pdf, 200);
        if let Some(size) = page_size(&pdf) {
            assert!(size.contains("612 x 792"), "US Letter expected: {size}");
        }
    }
    r.shutdown().await;
}

#[tokio::test]
async fn parallel_conversions_share_the_pool() {
    let Some(r) = renderer(2) else { return };
    let jobs: Vec<_> = (0..4)
        .map(|i| {
            let r = r.clone();
            tokio::spawn(async move { r.render(&statement_html(20 + i)).await })
        })
        .collect();
    for job in jobs {
        match job.await {
            Ok(Ok(pdf)) => assert!(pdf.starts_with(b"%PDF-")),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(r.idle_slots(), 2);
    r.shutdown().await;
}

#[tokio::test]
async fn pool_limit_queues_and_the_wait_counts_toward_the_timeout() {
    let Some(r) = renderer(1) else { return };
    assert_eq!(r.check().await, Ok(()));
    let first = {
        let r = r.clone();
        tokio::spawn(async move { r.render(&statement_html(3_000)).await })
    };
    let started = Instant::now();
    while r.idle_slots() != 0 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "first render never started"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let short = r.with_timeout(Duration::from_millis(50));
    assert_eq!(
        short.render(&statement_html(1)).await,
        Err(PdfError::Timeout(Duration::from_millis(50)))
    );
    match first.await {
        Ok(Ok(pdf)) => assert!(pdf.starts_with(b"%PDF-")),
        other => panic!("first render: {other:?}"),
    }
    r.shutdown().await;
}

#[tokio::test]
async fn timeout_is_enforced_and_the_browser_survives() {
    let Some(r) = renderer(1) else { return };
    assert_eq!(r.check().await, Ok(()));
    let quick = r.with_timeout(Duration::from_millis(5));
    let started = Instant::now();
    assert_eq!(
        quick.render(&statement_html(5_000)).await,
        Err(PdfError::Timeout(Duration::from_millis(5)))
    );
    assert!(started.elapsed() < Duration::from_secs(1));
    // The abandoned conversion's context is disposed; the browser still works.
    match r.render(&statement_html(5)).await {
        Ok(pdf) => assert!(pdf.starts_with(b"%PDF-")),
        Err(e) => panic!("after timeout: {e}"),
    }
    r.shutdown().await;
}

#[tokio::test]
async fn hostile_or_empty_html_never_panics() {
    let Some(r) = renderer(2) else { return };
    let inputs: Vec<String> = vec![
        String::new(),
        "<html".into(),
        "<<<>>></p></table><td>".into(),
        "\0\u{1}\u{2}".into(),
        "<img src=\"file:///etc/passwd\"><iframe src=\"file:///etc/passwd\"></iframe>x".into(),
        "<img src=\"http://127.0.0.1:9/x.png\">text".into(),
        "<script>while(true){}</script>".into(),
        format!("{}x", "<div>".repeat(5_000)),
    ];
    let r = r.with_timeout(Duration::from_secs(5));
    for html in &inputs {
        let head: String = html.chars().take(40).collect();
        match r.render(html).await {
            Ok(pdf) => {
                assert!(pdf.starts_with(b"%PDF-") && pdf.len() >= 1_000);
                if let Some(text) = crate::common::poppler("pdftotext", &pdf) {
                    assert!(!text.contains("root:"), "{head:?} leaked a local file");
                }
            }
            Err(PdfError::Failed(msg)) => eprintln!("refused {head:?}: {msg}"),
            Err(PdfError::Timeout(t)) => eprintln!("timed out {head:?} after {t:?}"),
            Err(other) => panic!("{head:?}: unexpected {other:?}"),
        }
    }
    r.shutdown().await;
}

#[tokio::test]
async fn the_document_never_runs_script() {
    let Some(r) = renderer(1) else { return };
    let html = "<html><body><p id=p>static</p>\
        <script>document.getElementById('p').textContent = 'SCRIPT' + 'RAN';</script>\
        <img src=x onerror=\"document.body.append('HANDLER' + 'RAN')\">\
        <script>setTimeout(() => document.body.append('TIMER' + 'RAN'), 0)</script></body></html>";
    let pdf = r.render(html).await.expect("renders");
    if let Some(text) = crate::common::poppler("pdftotext", &pdf) {
        assert!(text.contains("static"), "{text}");
        for ran in ["SCRIPTRAN", "HANDLERRAN", "TIMERRAN"] {
            assert!(
                !text.contains(ran),
                "script ran in the PDF renderer: {text}"
            );
        }
    }
    r.shutdown().await;
}

#[tokio::test]
async fn missing_binary_is_unavailable() {
    let r = ChromiumPdfRenderer::new(ChromiumOptions {
        chromium_path: "/nonexistent/chromium".into(),
        ..ChromiumOptions::default()
    });
    assert!(matches!(r.check().await, Err(PdfError::Unavailable(_))));
    assert!(matches!(
        r.render("<p>x</p>").await,
        Err(PdfError::Unavailable(_))
    ));
}
