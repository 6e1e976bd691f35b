//! P5 (issue 13) Report generation from PostgreSQL: the release `reporter serve` (in memory,
//! auth on, limits raised, see [`super::pg_reports::LIMITS`]) generating a CSV report of the
//! 100,000 rows of a scratch table (a template that iterates them once), timed from the
//! report's `createdAt` to its `completedAt`, against `psql \copy (SELECT …) TO STDOUT CSV`
//! of the same columns to /dev/null; as rows per second, so the ratio is psql's time over
//! Reporter's. Informational: an HTML report of 10,000 rows and a PDF (native renderer) of
//! 1,000 rows, against `psql \copy` of the same rows.
use super::pg_reports::{self, Kind, ScratchDb};
use crate::harness::{Ctx, Figure, Sample, Target};
use async_trait::async_trait;

#[derive(Default)]
pub struct ReportTime {
    db: Option<ScratchDb>,
}

/// One round: per kind, (Reporter's seconds, psql's seconds).
fn measure(
    ctx: &Ctx,
    db: &ScratchDb,
    reporter_first: bool,
) -> anyhow::Result<Vec<(Kind, f64, f64)>> {
    let serve = pg_reports::serve(ctx, db)?;
    let mut out = Vec::new();
    for kind in [Kind::Csv, Kind::Html, Kind::Pdf] {
        let id = kind.upload(&serve)?;
        let (r, b) = if reporter_first {
            let r = pg_reports::report(&serve, &id)?.secs;
            (r, db.copy_secs(kind.table())?)
        } else {
            let b = db.copy_secs(kind.table())?;
            (pg_reports::report(&serve, &id)?.secs, b)
        };
        out.push((kind, r, b));
    }
    Ok(out)
}

#[async_trait]
impl Figure for ReportTime {
    fn name(&self) -> &'static str {
        "report-time"
    }

    async fn round(&mut self, ctx: &Ctx, reporter_first: bool) -> anyhow::Result<Vec<Sample>> {
        // Database work, a server process and reports of seconds: block this worker thread.
        tokio::task::block_in_place(|| {
            if self.db.is_none() {
                self.db = Some(ScratchDb::create(pg_reports::rows(ctx))?);
            }
            let db = self.db.as_ref().expect("created above");
            let runs = measure(ctx, db, reporter_first)?;
            Ok(runs
                .into_iter()
                .map(|(kind, r, b)| {
                    let n = kind.rows(db.rows);
                    let (row, target) = match kind {
                        Kind::Csv => (
                            format!("P5 {n}-row CSV report from PostgreSQL"),
                            Some(Target::RatioAtLeast(0.6)),
                        ),
                        Kind::Html => (format!("P5 {n}-row HTML report"), None),
                        Kind::Pdf => (format!("P5 {n}-row PDF report (native)"), None),
                    };
                    Sample {
                        row,
                        unit: "rows/s",
                        reporter: n as f64 / r,
                        baseline: n as f64 / b,
                        baseline_name: "psql \\copy CSV",
                        target,
                    }
                })
                .collect())
        })
    }

    async fn finish(&mut self, _ctx: &Ctx) {
        self.db = None;
    }
}
