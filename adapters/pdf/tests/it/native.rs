//! NativePdfRenderer: valid PDFs with the expected text, limits, hostile input; every
//! conversion in a child process (this crate's `pdf-child` binary) under its limits.
use crate::common::{
    assert_statement_text, lorem_html, page_size, pdf_children, peak_rss_bytes, statement_html,
};
use reporter_adapter_pdf::{
    Margins, NativePdfOptions, NativePdfRenderer, PageSetup, PaperSize, PdfChildCommand,
};
use reporter_ports::ports::{PdfError, PdfRenderer};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

const MIB: u64 = 1024 * 1024;

fn child_command() -> PdfChildCommand {
    PdfChildCommand {
        exe: PathBuf::from(env!("CARGO_BIN_EXE_pdf-child")),
        args: Vec::new(),
    }
}

fn renderer_running(options: NativePdfOptions, child: PdfChildCommand) -> NativePdfRenderer {
    match NativePdfRenderer::new(options, child) {
        Ok(r) => r,
        Err(e) => panic!("renderer: {e}"),
    }
}

fn renderer(options: NativePdfOptions) -> NativePdfRenderer {
    renderer_running(options, child_command())
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

#[tokio::test]
async fn a_layout_over_the_memory_bound_is_a_memory_limit_error_and_the_service_is_unmoved() {
    let bound = 64 * MIB;
    let r = renderer(NativePdfOptions {
        memory_bytes: bound,
        ..NativePdfOptions::default()
    });
    // 1,200 paragraphs of 300 words: a few MB of HTML, a layout of several hundred MB.
    let html = lorem_html(1_200);
    let peak_before = peak_rss_bytes();
    let started = Instant::now();
    let result = r.render(&html).await;
    eprintln!(
        "native: {} bytes of lorem under a {bound}-byte bound -> {:?} in {:?}",
        html.len(),
        result.as_ref().map(Vec::len),
        started.elapsed()
    );
    assert_eq!(result, Err(PdfError::MemoryLimit(bound)));
    let grown = peak_rss_bytes().saturating_sub(peak_before);
    assert!(
        grown < bound,
        "the layout's memory showed in this process: peak RSS grew {grown} bytes"
    );
    assert!(
        pdf_children(bound).is_empty(),
        "a child outlived its conversion"
    );
    assert_eq!(r.idle_slots(), 2, "slot released");
    // The renderer keeps converting.
    match r.render(&statement_html(20)).await {
        Ok(pdf) => assert!(pdf.starts_with(b"%PDF-")),
        Err(e) => panic!("render after the memory limit: {e}"),
    }
}

#[tokio::test]
async fn a_conversion_past_its_deadline_kills_its_child() {
    let timeout = Duration::from_millis(1_500);
    let bound = 1024 * MIB + 1;
    let r = renderer(NativePdfOptions {
        timeout,
        memory_bytes: bound,
        ..NativePdfOptions::default()
    });
    let html = lorem_html(4_000);
    let render = r.render(&html);
    tokio::pin!(render);
    // The child exists while the conversion runs…
    let mut seen = false;
    let started = Instant::now();
    let result = loop {
        tokio::select! {
            result = &mut render => break result,
            () = tokio::time::sleep(Duration::from_millis(100)) => {
                seen |= !pdf_children(bound).is_empty();
            }
        }
    };
    let elapsed = started.elapsed();
    assert_eq!(result, Err(PdfError::Timeout(timeout)));
    assert!(seen, "no pdf child was seen running");
    assert!(
        elapsed >= timeout && elapsed < timeout + Duration::from_secs(2),
        "{elapsed:?}"
    );
    // …and is gone (killed and reaped) when the call returns.
    assert!(
        pdf_children(bound).is_empty(),
        "the child outlived its deadline"
    );
    assert_eq!(r.idle_slots(), 2, "slot released");
}

#[tokio::test]
async fn a_missing_child_program_is_unavailable() {
    let r = renderer_running(
        NativePdfOptions::default(),
        PdfChildCommand {
            exe: PathBuf::from("/nonexistent/reporter"),
            args: vec!["pdf-render".into()],
        },
    );
    assert!(matches!(r.check().await, Err(PdfError::Unavailable(_))));
    assert!(matches!(
        r.render(&statement_html(1)).await,
        Err(PdfError::Unavailable(_))
    ));
}

#[tokio::test]
async fn a_child_that_exits_without_a_document_is_a_failure() {
    let r = renderer_running(
        NativePdfOptions::default(),
        PdfChildCommand {
            exe: PathBuf::from("/bin/true"),
            args: Vec::new(),
        },
    );
    match r.render(&statement_html(1)).await {
        Err(PdfError::Failed(m)) => assert!(m.contains("without a document"), "{m}"),
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[tokio::test]
async fn html_larger_than_the_memory_bound_is_a_memory_limit_error() {
    let bound = MIB;
    let r = renderer(NativePdfOptions {
        memory_bytes: bound,
        ..NativePdfOptions::default()
    });
    let html = lorem_html(1_000);
    assert!(html.len() as u64 > bound);
    assert_eq!(r.render(&html).await, Err(PdfError::MemoryLimit(bound)));
}
