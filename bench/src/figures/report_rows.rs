//! How reports scale with rows (issue 34, target 2): the client-seen CSV report of
//! [`super::report_client`] at 10,000, 100,000 and 1,000,000 rows, each on a fresh server
//! with artifacts on disk; time per row and peak RSS above idle against those at 100,000.
//! See [`DESCRIPTION`].
use super::client_reports::{self, Format, WideDb};
use super::serve::{peak_rss_mb, status_mb};
use crate::harness::{Ctx, Figure, Sample, Target};
use async_trait::async_trait;
use std::time::Duration;

/// What `BENCHMARKS.md` says of this figure.
pub const DESCRIPTION: &str = "- **Rows** (issue 34, target 2): the five-column tables of P5-as-the-client-sees-it at 10,000, 100,000 and 1,000,000 rows (1,000 / 10,000 / 100,000 with `--quick`); per size a fresh release `reporter serve` (the same setup: artifacts in `fs`), warmed by one report of the smallest table, then half a second idle; `VmRSS` then is idle; three CSV reports of the size one after another, each timed as the client sees it (`POST` to `Finished` polled every 2 ms), the median kept; peak RSS above idle is `VmHWM` after them minus idle. Rows: time per row at each size vs at 100,000 (target ≤ 1.2× at 1,000,000), and peak RSS above idle at each size vs at 100,000 (target at 1,000,000: at most 4 MB above it — flat, whatever the row count).\n";

#[derive(Default)]
pub struct ReportRows {
    db: Option<WideDb>,
}

/// The sizes: 10,000 / 100,000 / 1,000,000 (a tenth with `--quick`); the middle one is the
/// reference.
fn sizes(ctx: &Ctx) -> [usize; 3] {
    if ctx.quick {
        [1_000, 10_000, 100_000]
    } else {
        [10_000, 100_000, 1_000_000]
    }
}

/// Reports per size and round, the median time kept: one report of a fraction of a second is
/// at the mercy of the other processes on a shared machine.
const REPORTS: usize = 3;

/// [`REPORTS`] reports of `rows` rows on a fresh server: (the median seconds, peak RSS above
/// idle in MB over them).
fn measure(ctx: &Ctx, db: &WideDb, warm_rows: usize, rows: usize) -> anyhow::Result<(f64, f64)> {
    let serve = client_reports::serve(ctx, db)?;
    let warm = client_reports::upload_template(&serve, Format::Csv, warm_rows)?;
    let id = client_reports::upload_template(&serve, Format::Csv, rows)?;
    client_reports::report(&serve, &warm)?;
    std::thread::sleep(Duration::from_millis(500));
    let pid = serve.pid();
    let idle = status_mb(pid, "VmRSS");
    let secs = (0..REPORTS)
        .map(|_| Ok(client_reports::report(&serve, &id)?.secs))
        .collect::<anyhow::Result<Vec<f64>>>()?;
    Ok((crate::harness::median(secs), peak_rss_mb(pid) - idle))
}

#[async_trait]
impl Figure for ReportRows {
    fn name(&self) -> &'static str {
        "report-rows"
    }

    async fn round(&mut self, ctx: &Ctx, reporter_first: bool) -> anyhow::Result<Vec<Sample>> {
        tokio::task::block_in_place(|| {
            let sizes = sizes(ctx);
            if self.db.is_none() {
                self.db = Some(WideDb::create(&sizes)?);
            }
            let db = self.db.as_ref().expect("created above");
            // Alternate the order of the sizes between rounds, as the other figures do.
            let mut order = sizes.to_vec();
            if !reporter_first {
                order.reverse();
            }
            let mut runs = Vec::new();
            for n in order {
                let (secs, peak) = measure(ctx, db, sizes[0], n)?;
                runs.push((n, secs, peak));
            }
            runs.sort_by_key(|r| r.0);
            let (reference, ref_secs, ref_peak) = runs[1];
            let per_row = |n: usize, s: f64| s / n as f64 * 1e6;
            let mut samples = Vec::new();
            for &(n, secs, peak) in runs.iter().filter(|r| r.0 != reference) {
                let largest = n == sizes[2];
                samples.push(Sample {
                    row: format!("Rows: time per row, {n}-row CSV report vs {reference}"),
                    unit: "µs/row",
                    reporter: per_row(n, secs),
                    baseline: per_row(reference, ref_secs),
                    baseline_name: "per row at the reference size",
                    target: largest.then_some(Target::RatioAtMost(1.2)),
                });
                samples.push(Sample {
                    row: format!("Rows: peak RSS above idle, {n}-row CSV report vs {reference}"),
                    unit: "MB",
                    reporter: peak,
                    baseline: ref_peak,
                    baseline_name: "at the reference size",
                    target: largest.then_some(Target::DiffAtMost(4.0)),
                });
            }
            Ok(samples)
        })
    }

    async fn finish(&mut self, _ctx: &Ctx) {
        self.db = None;
    }
}
