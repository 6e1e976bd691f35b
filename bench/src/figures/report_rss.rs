//! P6 (issue 13) What report generation keeps in memory: a fresh release `reporter serve` (in
//! memory, so artifacts too, bounded to 8 MiB: one report's; the P5 setup) generates the 100,000-row CSV report of P5 ten
//! times in a row. Peak RSS above idle is `VmHWM` after the first report minus `VmRSS` before
//! it (after start-up and the template upload), against the report's size; RSS after ten
//! reports is `VmRSS` after the tenth against after the first. Templates render in sandbox
//! child processes (a fresh one per render, as a profile shows): their memory is not counted.
//!
//! The same peak with artifacts on disk (`OBJECT_STORAGE_BACKEND=fs`, written while rendered),
//! for that table and one four times its size: what generation itself holds, whatever the
//! row count.
use super::pg_reports::{self, Kind, ScratchDb};
use super::serve::{peak_rss_mb, status_mb};
use crate::harness::{Ctx, Figure, Sample, Target};
use async_trait::async_trait;
use std::time::Duration;

#[derive(Default)]
pub struct ReportRss {
    db: Option<ScratchDb>,
    /// The table four times larger, for the `fs` rows.
    large: Option<ScratchDb>,
    /// The `fs` storage's directory (removed with the figure).
    objects: Option<std::path::PathBuf>,
}

/// Reports per round.
const REPEATS: usize = 10;

/// The in-memory artifacts are bounded to one 100,000-row report (8 MiB; each new artifact
/// evicts the one before), so that RSS after ten reports shows what generation leaves behind
/// rather than the artifacts the storage keeps by design (256 MiB by default).
const STORAGE_BOUND_VAR: &str = "OBJECT_STORAGE_MEMORY_MAX_BYTES";
const STORAGE_BOUND: &str = "8388608";

/// What one round measured, MB.
struct Run {
    idle: f64,
    peak_after_one: f64,
    rss_after_one: f64,
    rss_after_all: f64,
    artifact: f64,
}

fn measure(ctx: &Ctx, db: &ScratchDb) -> anyhow::Result<Run> {
    let serve = pg_reports::serve_with(ctx, db, &[(STORAGE_BOUND_VAR, STORAGE_BOUND)])?;
    let id = Kind::Csv.upload(&serve)?;
    std::thread::sleep(Duration::from_millis(500));
    let pid = serve.pid();
    let idle = status_mb(pid, "VmRSS");
    let first = pg_reports::report(&serve, &id)?;
    let peak_after_one = peak_rss_mb(pid);
    let rss_after_one = status_mb(pid, "VmRSS");
    for _ in 1..REPEATS {
        pg_reports::report(&serve, &id)?;
    }
    let rss_after_all = status_mb(pid, "VmRSS");
    Ok(Run {
        idle,
        peak_after_one,
        rss_after_one,
        rss_after_all,
        artifact: first.bytes as f64 / 1024.0 / 1024.0,
    })
}

/// Peak RSS above idle (MB) of one report of `db`'s table with artifacts in `objects`
/// (`fs` storage), and the report's size (MB).
fn measure_on_disk(
    ctx: &Ctx,
    db: &ScratchDb,
    objects: &std::path::Path,
) -> anyhow::Result<(f64, f64)> {
    let path = objects.display().to_string();
    let extra = [
        ("OBJECT_STORAGE_BACKEND", "fs"),
        ("OBJECT_STORAGE_PATH", path.as_str()),
    ];
    let serve = pg_reports::serve_with(ctx, db, &extra)?;
    let id = Kind::Csv.upload(&serve)?;
    std::thread::sleep(Duration::from_millis(500));
    let pid = serve.pid();
    let idle = status_mb(pid, "VmRSS");
    let run = pg_reports::report(&serve, &id)?;
    let peak = peak_rss_mb(pid) - idle;
    Ok((peak, run.bytes as f64 / 1024.0 / 1024.0))
}

impl ReportRss {
    /// The `fs` rows: one report of each table, artifacts on disk.
    fn on_disk(&mut self, ctx: &Ctx) -> anyhow::Result<Vec<Sample>> {
        let rows = pg_reports::rows(ctx);
        if self.large.is_none() {
            self.large = Some(ScratchDb::create(rows * 4)?);
        }
        let objects = self
            .objects
            .get_or_insert_with(|| {
                std::env::temp_dir().join(format!("reporter-bench-objects-{}", std::process::id()))
            })
            .clone();
        let mut samples = Vec::new();
        for db in [self.db.as_ref(), self.large.as_ref()]
            .into_iter()
            .flatten()
        {
            let (peak, size) = measure_on_disk(ctx, db, &objects)?;
            samples.push(Sample {
                row: format!(
                    "P6 peak RSS above idle, one {}-row CSV report, artifacts in fs",
                    db.rows
                ),
                unit: "MB",
                reporter: peak,
                baseline: size,
                baseline_name: "the report's size",
                target: Some(Target::AtMost(16.0)),
            });
        }
        let _ = std::fs::remove_dir_all(&objects);
        Ok(samples)
    }
}

#[async_trait]
impl Figure for ReportRss {
    fn name(&self) -> &'static str {
        "report-rss"
    }

    async fn round(&mut self, ctx: &Ctx, _reporter_first: bool) -> anyhow::Result<Vec<Sample>> {
        // Database work, a server process and ten reports: block this worker thread.
        tokio::task::block_in_place(|| {
            if self.db.is_none() {
                self.db = Some(ScratchDb::create(pg_reports::rows(ctx))?);
            }
            let db = self.db.as_ref().expect("created above");
            let r = measure(ctx, db)?;
            let n = db.rows;
            let on_disk = self.on_disk(ctx)?;
            Ok([
                Sample {
                    row: format!("P6 peak RSS above idle, one {n}-row CSV report"),
                    unit: "MB",
                    reporter: r.peak_after_one - r.idle,
                    baseline: r.artifact,
                    baseline_name: "the report's size",
                    target: Some(Target::AtMost(64.0)),
                },
                Sample {
                    row: format!("P6 RSS after {REPEATS} {n}-row CSV reports vs after 1"),
                    unit: "MB",
                    reporter: r.rss_after_all,
                    baseline: r.rss_after_one,
                    baseline_name: "RSS after 1",
                    target: Some(Target::RatioAtMost(1.1)),
                },
            ]
            .into_iter()
            .chain(on_disk)
            .collect())
        })
    }

    async fn finish(&mut self, _ctx: &Ctx) {
        self.db = None;
        self.large = None;
        if let Some(objects) = self.objects.take() {
            let _ = std::fs::remove_dir_all(objects);
        }
    }
}
