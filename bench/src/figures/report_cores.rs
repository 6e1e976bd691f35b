//! How reports scale across cores (issue 34, target 3): 8 client-seen CSV reports of
//! 100,000 rows requested at once vs the same 8 one after another. See [`DESCRIPTION`].
use super::client_reports::{self, Format, WideDb};
use crate::harness::{Ctx, Figure, Sample, Target};
use async_trait::async_trait;
use std::time::Instant;

/// What `BENCHMARKS.md` says of this figure.
pub const DESCRIPTION: &str = "- **Cores** (issue 34, target 3): on one fresh release `reporter serve` per round (the P5-as-the-client-sees-it setup: artifacts in `fs`, worker concurrency and everything else at its default), warmed by one report, 8 CSV reports of the 100,000-row five-column table (10,000 with `--quick`) requested at once (8 `POST`s back to back, then each report polled every 2 ms until `Finished`) vs the same 8 one after another (each `POST`ed when the one before was seen `Finished`); the time from the first `POST` to the last `Finished` seen. Target: at once ≤ 0.6× one after another.\n";

/// Reports per run.
const REPORTS: usize = 8;

#[derive(Default)]
pub struct ReportCores {
    db: Option<WideDb>,
}

fn rows(ctx: &Ctx) -> usize {
    if ctx.quick { 10_000 } else { 100_000 }
}

/// Seconds for [`REPORTS`] reports requested at once.
fn at_once(serve: &super::serve::Server, template: &str) -> anyhow::Result<f64> {
    let started = Instant::now();
    let ids = (0..REPORTS)
        .map(|_| client_reports::request(serve, template))
        .collect::<anyhow::Result<Vec<_>>>()?;
    for id in &ids {
        client_reports::wait_finished(serve, id, started)?;
    }
    Ok(started.elapsed().as_secs_f64())
}

/// Seconds for [`REPORTS`] reports one after another.
fn in_turn(serve: &super::serve::Server, template: &str) -> anyhow::Result<f64> {
    let started = Instant::now();
    for _ in 0..REPORTS {
        client_reports::report(serve, template)?;
    }
    Ok(started.elapsed().as_secs_f64())
}

#[async_trait]
impl Figure for ReportCores {
    fn name(&self) -> &'static str {
        "report-cores"
    }

    async fn round(&mut self, ctx: &Ctx, reporter_first: bool) -> anyhow::Result<Vec<Sample>> {
        tokio::task::block_in_place(|| {
            let n = rows(ctx);
            if self.db.is_none() {
                self.db = Some(WideDb::create(&[n])?);
            }
            let db = self.db.as_ref().expect("created above");
            let serve = client_reports::serve(ctx, db)?;
            let template = client_reports::upload_template(&serve, Format::Csv, n)?;
            client_reports::report(&serve, &template)?;
            let (r, b) = if reporter_first {
                let r = at_once(&serve, &template)?;
                (r, in_turn(&serve, &template)?)
            } else {
                let b = in_turn(&serve, &template)?;
                (at_once(&serve, &template)?, b)
            };
            Ok(vec![Sample {
                row: format!("Cores: {REPORTS} {n}-row CSV reports at once vs one after another"),
                unit: "s",
                reporter: r,
                baseline: b,
                baseline_name: "one after another",
                target: Some(Target::RatioAtMost(0.6)),
            }])
        })
    }

    async fn finish(&mut self, _ctx: &Ctx) {
        self.db = None;
    }
}
