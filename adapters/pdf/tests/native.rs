//! NativePdfRenderer: valid PDFs with the expected text, limits, hostile input.
mod common;

use common::{assert_statement_text, page_size, statement_html};
use reporter_adapter_pdf::{Margins, NativePdfOptions, NativePdfRenderer, PageSetup, PaperSize};
use reporter_ports::ports::{PdfError, PdfRenderer};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn renderer(options: NativePdfOptions) -> NativePdfRenderer {
    match NativePdfRenderer::new(options) {
        Ok(r) => r,
        Err(e) => panic!("renderer: {e}"),
    }
}

#[tokio::test]
async fn statement_becomes_a_valid_pdf_with_all_rows() {
    let r = renderer(NativePdfOptions::default());
    assert_eq!(r.check().await, Ok(()));
    let html = statement_html(200);
    let started = Instant::now();
    let pdf = match r.render(&html).await {
        Ok(p) => p,
        Err(e) => panic!("render: {e}"),
    };
    eprintln!(
        "native: 200-row statement -> {} bytes in {:?}",
        pdf.len(),
        started.elapsed()
    );
    assert!(pdf.starts_with(b"%PDF-"));
    assert!(pdf.len() > 1_000);
    assert_statement_text(&pdf, 200);
    if let Some(size) = page_size(&pdf) {
        assert!(size.contains("612 x 792"), "US Letter expected: {size}");
    }
}

#[tokio::test]
async fn paper_size_is_configurable() {
    let r = renderer(NativePdfOptions {
        page: PageSetup {
            paper: PaperSize::A4,
            margins: Margins::uniform(1.0),
        },
        ..NativePdfOptions::default()
    });
    let pdf = match r.render(&statement_html(10)).await {
        Ok(p) => p,
        Err(e) => panic!("render: {e}"),
    };
    if let Some(size) = page_size(&pdf) {
        assert!(
            size.contains("595") && size.contains("841"),
            "A4 expected: {size}"
        );
    }
}

#[tokio::test]
async fn timeout_is_enforced() {
    let r = renderer(NativePdfOptions {
        timeout: Duration::from_millis(1),
        ..NativePdfOptions::default()
    });
    let started = Instant::now();
    let result = r.render(&statement_html(5_000)).await;
    assert_eq!(result, Err(PdfError::Timeout(Duration::from_millis(1))));
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn concurrency_limit_queues_and_the_wait_counts_toward_the_timeout() {
    let r = Arc::new(renderer(NativePdfOptions {
        max_concurrency: 1,
        ..NativePdfOptions::default()
    }));
    assert_eq!(r.idle_slots(), 1);
    let big = statement_html(3_000);
    let first = {
        let r = Arc::clone(&r);
        tokio::spawn(async move { r.render(&big).await })
    };
    // Wait until the first conversion holds the only slot.
    let started = Instant::now();
    while r.idle_slots() != 0 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "first render never started"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    // A second renderer view with a short timeout cannot get a slot in time.
    let short = r.with_timeout(Duration::from_millis(50));
    assert_eq!(
        short.render(&statement_html(1)).await,
        Err(PdfError::Timeout(Duration::from_millis(50)))
    );
    match first.await {
        Ok(Ok(pdf)) => assert!(pdf.starts_with(b"%PDF-")),
        other => panic!("first render: {other:?}"),
    }
    assert_eq!(r.idle_slots(), 1, "slot released");
}

#[tokio::test]
async fn hostile_or_empty_html_never_panics() {
    let r = renderer(NativePdfOptions::default());
    let deep = format!("{}x{}", "<div>".repeat(5_000), "</div>".repeat(5_000));
    let inputs: Vec<String> = vec![
        String::new(),
        "<html".into(),
        "<<<>>></p></table><td>".into(),
        "\0\u{1}\u{2}".into(),
        "<img src=\"file:///etc/passwd\"><link rel=stylesheet href=\"/etc/passwd\">".into(),
        "<img src=\"http://127.0.0.1:9/x.png\">text".into(),
        "<table>".repeat(300),
        deep,
        "<p style=\"font-size:100000px\">huge</p>".into(),
    ];
    for html in &inputs {
        let head: String = html.chars().take(40).collect();
        match r.render(html).await {
            Ok(pdf) => assert!(pdf.starts_with(b"%PDF-") && pdf.len() >= 1_000),
            Err(PdfError::Failed(msg)) => eprintln!("refused {head:?}: {msg}"),
            Err(other) => panic!("{head:?}: unexpected {other:?}"),
        }
    }
}
