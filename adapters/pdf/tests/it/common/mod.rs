//! Shared fixtures: the statement HTML and a pdftotext wrapper.
#![allow(dead_code)]
use std::io::Write;
use std::process::Command;

/// A statement: 200 rows (`ACC-0001 … ACC-0200`), bold/italic, UTF-8 (é, —, ✓) and a page
/// break before the totals.
pub fn statement_html(rows: usize) -> String {
    let mut html = String::from(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Statement</title>\
         <style>td.amount{text-align:right} tr:nth-child(even){background:#eee}</style></head><body>\
         <h1>Café statement — <b>bold</b> and <i>italic</i> ✓</h1>\
         <p><strong>Holder:</strong> <em>José Müller</em> &mdash; &amp; co.</p>\
         <table border=1><tr><th>Account</th><th>Amount</th><th>OK</th></tr>",
    );
    for i in 1..=rows {
        html.push_str(&format!(
            "<tr><td>ACC-{i:04}</td><td class=\"amount\">{}.{:02}</td><td>✓</td></tr>",
            1000 + i,
            i % 100
        ));
    }
    html.push_str(
        "</table><div style=\"page-break-before:always\"><h2>Totals</h2><p>Grand total ✓ — é</p></div></body></html>",
    );
    html
}

/// Runs a poppler tool on `pdf`; `None` (with the reason printed) when it is not installed,
/// unless `REPORTER_REQUIRE_SERVICES=1`, where a missing tool fails the test.
pub fn poppler(tool: &str, pdf: &[u8]) -> Option<String> {
    let mut file = match tempfile::NamedTempFile::new() {
        Ok(f) => f,
        Err(e) => panic!("temp file: {e}"),
    };
    if let Err(e) = file.write_all(pdf) {
        panic!("write temp pdf: {e}");
    }
    let mut cmd = Command::new(tool);
    if tool == "pdftotext" {
        cmd.arg("-layout").arg(file.path()).arg("-");
    } else {
        cmd.arg(file.path());
    }
    match cmd.output() {
        Ok(out) if out.status.success() => Some(String::from_utf8_lossy(&out.stdout).into_owned()),
        Ok(out) => panic!("{tool} failed: {}", String::from_utf8_lossy(&out.stderr)),
        Err(e) => {
            if reporter_contract::services::required() {
                panic!("{tool} is required (REPORTER_REQUIRE_SERVICES=1): {e}");
            }
            reporter_contract::services::skipped(&format!(
                "{tool} (poppler-utils), for a text check"
            ));
            None
        }
    }
}

/// Asserts the statement's text survived: every row, the ✓, the accents and the dash, and
/// the totals alone on a later page.
pub fn assert_statement_text(pdf: &[u8], rows: usize) {
    let Some(text) = poppler("pdftotext", pdf) else {
        return;
    };
    for i in [1, rows / 2, rows] {
        assert!(text.contains(&format!("ACC-{i:04}")), "row {i} missing");
    }
    let row_count = (1..=rows)
        .filter(|i| text.contains(&format!("ACC-{i:04}")))
        .count();
    assert_eq!(row_count, rows, "rows lost");
    assert!(text.contains('✓'), "check mark missing");
    assert!(
        text.contains("Café") && text.contains("José Müller"),
        "accents missing"
    );
    assert!(text.contains('—'), "em dash missing");
    let pages: Vec<&str> = text
        .split('\u{c}')
        .filter(|p| !p.trim().is_empty())
        .collect();
    assert!(
        pages.len() >= 2,
        "expected several pages, got {}",
        pages.len()
    );
    let totals = pages.iter().position(|p| p.contains("Totals"));
    match totals {
        Some(i) => assert!(
            !pages[i].contains("ACC-"),
            "page break before totals ignored"
        ),
        None => panic!("totals missing"),
    }
}

/// The page size line of `pdfinfo`, when installed.
pub fn page_size(pdf: &[u8]) -> Option<String> {
    let info = poppler("pdfinfo", pdf)?;
    info.lines()
        .find(|l| l.starts_with("Page size:"))
        .map(str::to_owned)
}

/// `paragraphs` paragraphs of 300 lorem-ipsum words (what `{% lorem 300 w %}` prints): text
/// whose layout needs far more memory than its HTML.
pub fn lorem_html(paragraphs: usize) -> String {
    const WORDS: [&str; 12] = [
        "lorem",
        "ipsum",
        "dolor",
        "sit",
        "amet",
        "consectetur",
        "adipisicing",
        "elit",
        "sed",
        "do",
        "eiusmod",
        "tempor",
    ];
    let mut html = String::from("<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head><body>");
    for p in 0..paragraphs {
        html.push_str("<p>");
        for w in 0..300 {
            html.push_str(WORDS[(p + w) % WORDS.len()]);
            html.push(' ');
        }
        html.push_str("</p>");
    }
    html.push_str("</body></html>");
    html
}

/// This process's peak resident set (`VmHWM`), in bytes.
pub fn peak_rss_bytes() -> u64 {
    let status = match std::fs::read_to_string("/proc/self/status") {
        Ok(s) => s,
        Err(e) => panic!("/proc/self/status: {e}"),
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| kib * 1024)
        .unwrap_or_else(|| panic!("no VmHWM in /proc/self/status"))
}

/// Pids of this process's `pdf-child` children started with `--memory-bytes=<memory_bytes>`
/// (each test that looks for its children gives them a bound of its own: the tests of this
/// file run in parallel).
pub fn pdf_children(memory_bytes: u64) -> Vec<u32> {
    let me = std::process::id();
    let marker = format!("--memory-bytes={memory_bytes}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        panic!("no /proc");
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // pid (comm) state ppid …
            let Some((head, rest)) = stat.rsplit_once(") ") else {
                return false;
            };
            let ppid = rest.split(' ').nth(1).and_then(|p| p.parse::<u32>().ok());
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            head.ends_with("(pdf-child")
                && ppid == Some(me)
                && cmdline.split(|b| *b == 0).any(|a| a == marker.as_bytes())
        })
        .collect()
}
