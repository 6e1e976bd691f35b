//! P5 as the client sees it (issue 34, target 1): reports of a five-column PostgreSQL table
//! timed from sending `POST /v1/reports` to the first poll (every 2 ms) that reads `Finished`,
//! artifacts on disk, against `psql \copy (query) TO 'file' CSV HEADER` (CSV, HTML) and
//! headless Chromium printing the same HTML from disk (PDF). See [`DESCRIPTION`].
use super::client_reports::{self, Format, WideDb};
use crate::harness::{Ctx, Figure, Sample, Target};
use async_trait::async_trait;

/// What `BENCHMARKS.md` says of this figure.
pub const DESCRIPTION: &str = "- **P5 as the client sees it** (issue 34, target 1): a scratch database on 127.0.0.1:5432 with tables of five columns (bigint id, text label, numeric(14,2) amount, date, a 50-character text) of 100,000, 10,000 and 1,000 rows (10,000 / 1,000 / 100 with `--quick`), dropped after the run; a fresh release `reporter serve` per round (state in memory, auth on, the P5 limits raised, artifacts on disk: `OBJECT_STORAGE_BACKEND=fs`, everything else at its default), warmed by one report of the smallest table; five reports of each of CSV and HTML per round, alternating with five runs of the baseline, the median of each side kept (one of each with `--quick`, and one PDF per round); each report timed as a client sees it, from sending `POST /v1/reports` to reading the first `GET /v1/reports/{id}` (polled every 2 ms, a new connection each) that answers `Finished`. CSV of the 100,000 rows (a template iterating them once, dates printed as psql prints them: the artifact holds the lines of the file psql writes, which the run checks, but for the amounts, which Reporter prints without trailing zeros, `791.9` for psql's `791.90`) vs `psql \\copy (SELECT the five columns FROM the table) TO 'file' CSV HEADER`, timed from spawning psql to its exit; HTML table of the 10,000 rows vs the same psql run of those rows; PDF (the default renderer) of the 1,000 rows vs headless Chromium (`chromium --headless --no-sandbox --print-to-pdf`, spawn to exit) printing the HTML of those rows (Reporter's HTML report of them) from a file on disk. Given as rows/s, so the ratio is the baseline's time over Reporter's. Target ≥ 0.8 for each.\n";

#[derive(Default)]
pub struct ReportClient {
    db: Option<WideDb>,
}

/// Rows of the CSV table: 100,000 (10,000 with `--quick`); HTML a tenth, PDF a hundredth.
fn sizes(ctx: &Ctx) -> [usize; 3] {
    let n = if ctx.quick { 10_000 } else { 100_000 };
    [n, n / 10, n / 100]
}

/// Pairs (Reporter, baseline) measured per round for CSV and HTML, the median of each side
/// kept (one with `--quick`): one report of a fraction of a second is at the mercy of the
/// other processes on a shared machine.
fn pairs(ctx: &Ctx) -> usize {
    if ctx.quick { 1 } else { 5 }
}

/// The median of `v` (not empty).
fn median(v: Vec<f64>) -> f64 {
    crate::harness::median(v)
}

/// Runs `reporter` and `baseline` in the order given: their results.
fn ordered<A, B>(
    reporter_first: bool,
    reporter: impl FnOnce() -> anyhow::Result<A>,
    baseline: impl FnOnce() -> anyhow::Result<B>,
) -> anyhow::Result<(A, B)> {
    if reporter_first {
        let r = reporter()?;
        Ok((r, baseline()?))
    } else {
        let b = baseline()?;
        Ok((reporter()?, b))
    }
}

/// One round: (format, rows, Reporter's seconds, the baseline's seconds).
fn measure(
    ctx: &Ctx,
    db: &WideDb,
    reporter_first: bool,
) -> anyhow::Result<Vec<(Format, usize, f64, f64)>> {
    let [csv_rows, html_rows, pdf_rows] = sizes(ctx);
    let serve = client_reports::serve(ctx, db)?;
    let csv = client_reports::upload_template(&serve, Format::Csv, csv_rows)?;
    let html = client_reports::upload_template(&serve, Format::Html, html_rows)?;
    let pdf = client_reports::upload_template(&serve, Format::Pdf, pdf_rows)?;
    let html_of_pdf_rows = client_reports::upload_template(&serve, Format::Html, pdf_rows)?;
    // Warm-up: the data source's connections, the sandbox; and the HTML Chromium prints.
    let warm = client_reports::report(&serve, &html_of_pdf_rows)?;
    let page = db.dir.join("wide.html");
    std::fs::write(&page, client_reports::download(&serve, &warm.id)?)?;

    let mut out = Vec::new();
    let (mut rs, mut bs) = (Vec::new(), Vec::new());
    for i in 0..pairs(ctx) {
        let (r, (b, copy)) = ordered(
            reporter_first == (i % 2 == 0),
            || client_reports::report(&serve, &csv),
            || db.copy_to_file(csv_rows),
        )?;
        if i == 0 {
            // The same work: the artifact holds the rows psql wrote.
            client_reports::same_csv(&client_reports::download(&serve, &r.id)?, &copy)
                .map_err(|e| anyhow::anyhow!("the CSV report is not psql's file: {e}"))?;
        }
        rs.push(r.secs);
        bs.push(b);
    }
    out.push((Format::Csv, csv_rows, median(rs), median(bs)));
    let (mut rs, mut bs) = (Vec::new(), Vec::new());
    for i in 0..pairs(ctx) {
        let (r, (b, _)) = ordered(
            reporter_first == (i % 2 == 0),
            || client_reports::report(&serve, &html),
            || db.copy_to_file(html_rows),
        )?;
        rs.push(r.secs);
        bs.push(b);
    }
    out.push((Format::Html, html_rows, median(rs), median(bs)));
    let (r, b) = ordered(
        reporter_first,
        || client_reports::report(&serve, &pdf),
        || client_reports::chromium_print(&page),
    )?;
    out.push((Format::Pdf, pdf_rows, r.secs, b));
    let _ = std::fs::remove_file(&page);
    Ok(out)
}

#[async_trait]
impl Figure for ReportClient {
    fn name(&self) -> &'static str {
        "report-client"
    }

    async fn round(&mut self, ctx: &Ctx, reporter_first: bool) -> anyhow::Result<Vec<Sample>> {
        // Database work, a server process and reports of seconds: block this worker thread.
        tokio::task::block_in_place(|| {
            if self.db.is_none() {
                self.db = Some(WideDb::create(&sizes(ctx))?);
            }
            let db = self.db.as_ref().expect("created above");
            Ok(measure(ctx, db, reporter_first)?
                .into_iter()
                .map(|(format, n, r, b)| {
                    let (row, baseline_name) = match format {
                        Format::Csv => (
                            format!("P5 client-seen {n}-row CSV report (5 columns, fs)"),
                            "psql \\copy to a file",
                        ),
                        Format::Html => (
                            format!("P5 client-seen {n}-row HTML report (5 columns, fs)"),
                            "psql \\copy to a file",
                        ),
                        Format::Pdf => (
                            format!("P5 client-seen {n}-row PDF report (5 columns, fs)"),
                            "chromium --print-to-pdf of the HTML",
                        ),
                    };
                    Sample {
                        row,
                        unit: "rows/s",
                        reporter: n as f64 / r,
                        baseline: n as f64 / b,
                        baseline_name,
                        target: Some(Target::RatioAtLeast(0.8)),
                    }
                })
                .collect())
        })
    }

    async fn finish(&mut self, _ctx: &Ctx) {
        self.db = None;
    }
}
