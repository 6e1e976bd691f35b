//! The benchmark harness: figures measured in interleaved rounds against a baseline measured in
//! the same run, and the table they make.
//!
//! A figure is one module under `figures/` implementing [`Figure`]; adding one to
//! [`crate::figures::all`] is all it takes to have it measured, tabled and written to
//! `BENCHMARKS.md`.
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

/// What a figure may use: the private RabbitMQ node, the release binaries, the load tool.
pub struct Ctx {
    /// The private broker every figure may stop, alarm and publish to.
    pub broker: crate::broker::Broker,
    /// The release `reporter` binary.
    pub reporter_bin: PathBuf,
    /// The `bare-poem` binary of this crate (the baseline server of P3).
    pub bare_poem_bin: PathBuf,
    /// The `raw-publisher` binary of this crate (the baseline publisher of `publish-cpu`).
    pub raw_publisher_bin: PathBuf,
    /// `wrk` (Debian package).
    pub wrk: PathBuf,
    /// Smaller sizes, for a smoke run (`--quick`).
    pub quick: bool,
}

/// How a row's target reads.
#[derive(Debug, Clone, Copy)]
pub enum Target {
    /// Reporter / baseline at least this.
    RatioAtLeast(f64),
    /// Reporter / baseline at most this.
    RatioAtMost(f64),
    /// Reporter − baseline at most this (in the row's unit).
    DiffAtMost(f64),
    /// Reporter's value at most this (in the row's unit).
    AtMost(f64),
}

impl Target {
    fn met(self, reporter: f64, baseline: f64) -> bool {
        match self {
            Self::RatioAtLeast(r) => reporter / baseline >= r,
            Self::RatioAtMost(r) => reporter / baseline <= r,
            Self::DiffAtMost(d) => reporter - baseline <= d,
            Self::AtMost(v) => reporter <= v,
        }
    }

    /// Whether the rounds meet the target, judged on what each round measured side by side:
    /// the median over rounds of each round's ratio (or difference), the figure the table
    /// prints, not the ratio of two medians taken from different rounds.
    fn met_by(self, samples: &[Sample]) -> bool {
        let per_round = |f: fn(&Sample) -> f64| median(samples.iter().map(f).collect());
        match self {
            Self::RatioAtLeast(_) | Self::RatioAtMost(_) => {
                self.met(per_round(|s| s.reporter / s.baseline), 1.0)
            }
            Self::DiffAtMost(_) => self.met(per_round(|s| s.reporter - s.baseline), 0.0),
            Self::AtMost(_) => self.met(per_round(|s| s.reporter), 0.0),
        }
    }

    fn describe(self, unit: &str) -> String {
        match self {
            Self::RatioAtLeast(r) => format!("ratio ≥ {r}"),
            Self::RatioAtMost(r) => format!("ratio ≤ {r}"),
            Self::DiffAtMost(d) => format!("≤ baseline + {d} {unit}"),
            Self::AtMost(v) => format!("≤ {v} {unit}"),
        }
    }
}

/// One measured row of one round.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Row name (stable across rounds).
    pub row: String,
    /// Unit of the values.
    pub unit: &'static str,
    /// Reporter's value.
    pub reporter: f64,
    /// The baseline's value, measured in the same round.
    pub baseline: f64,
    /// What the baseline is.
    pub baseline_name: &'static str,
    /// The target, if the issue sets one.
    pub target: Option<Target>,
}

/// A benchmark figure: one round measures Reporter and its baseline, in the order given
/// (rounds alternate it, so drift on a shared machine hits both sides alike).
#[async_trait]
pub trait Figure: Send {
    /// Short name (`--only` selects by it).
    fn name(&self) -> &'static str;
    /// One round; `reporter_first` alternates between rounds.
    async fn round(&mut self, ctx: &Ctx, reporter_first: bool) -> anyhow::Result<Vec<Sample>>;
    /// Cleans up after the last round.
    async fn finish(&mut self, _ctx: &Ctx) {}
    /// True when the figure runs in this process and needs none of [`Ctx`]'s services; a run
    /// that selects only such figures starts no broker and needs no release binaries.
    fn in_process(&self) -> bool {
        false
    }
    /// One round without the services (only figures whose [`Figure::in_process`] is true).
    async fn round_in_process(
        &mut self,
        _quick: bool,
        _reporter_first: bool,
    ) -> anyhow::Result<Vec<Sample>> {
        anyhow::bail!("{} needs the broker and the release binaries", self.name())
    }
}

/// Every round's samples, by row.
#[derive(Default)]
pub struct Results {
    rows: BTreeMap<(usize, String), Vec<Sample>>,
    order: usize,
}

impl Results {
    /// Adds a round's samples.
    pub fn add(&mut self, samples: Vec<Sample>) {
        for s in samples {
            let key = self
                .rows
                .keys()
                .find(|(_, r)| r == &s.row)
                .cloned()
                .unwrap_or_else(|| {
                    self.order += 1;
                    (self.order, s.row.clone())
                });
            self.rows.entry(key).or_default().push(s);
        }
    }

    /// The markdown table: median of each side, the ratio's min / median / max over rounds.
    pub fn table(&self) -> String {
        let mut out = String::from(
            "| Figure | Reporter (median) | Baseline (median) | Ratio R/B (median) | Ratio spread min / median / max | Target | Met |\n|---|---|---|---|---|---|---|\n",
        );
        for ((_, row), samples) in &self.rows {
            let r = median(samples.iter().map(|s| s.reporter).collect());
            let b = median(samples.iter().map(|s| s.baseline).collect());
            let mut ratios: Vec<f64> = samples.iter().map(|s| s.reporter / s.baseline).collect();
            ratios.sort_by(f64::total_cmp);
            let s0 = &samples[0];
            let target = s0.target.map(|t| t.describe(s0.unit)).unwrap_or_default();
            let met = s0
                .target
                .map(|t| if t.met_by(samples) { "yes" } else { "**no**" })
                .unwrap_or("");
            let _ = writeln!(
                out,
                "| {row} | {} {u} | {} {u} ({}) | {:.2} | {:.2} / {:.2} / {:.2} ({} rounds) | {target} | {met} |",
                fmt(r),
                fmt(b),
                s0.baseline_name,
                median(ratios.clone()),
                ratios.first().copied().unwrap_or(f64::NAN),
                median(ratios.clone()),
                ratios.last().copied().unwrap_or(f64::NAN),
                samples.len(),
                u = s0.unit,
            );
        }
        out
    }
}

fn fmt(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// The median (the mean of the two middle values for an even count); NaN when empty.
pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The `q` quantile (0..=1) of `v` (nearest rank); NaN when empty.
pub fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

/// One line per fact about the machine.
pub fn machine() -> String {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpu = read("/proc/cpuinfo")
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|| "unknown".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem = read("/proc/meminfo")
        .lines()
        .find(|l| l.starts_with("MemTotal"))
        .map(|l| l.split_whitespace().nth(1).unwrap_or("0").to_owned())
        .and_then(|kb| kb.parse::<u64>().ok())
        .map(|kb| format!("{:.1} GiB", kb as f64 / 1024.0 / 1024.0))
        .unwrap_or_default();
    let kernel = read("/proc/sys/kernel/osrelease").trim().to_owned();
    let load = read("/proc/loadavg");
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    format!(
        "- CPU: {cpu}, {cores} cores\n- Memory: {mem}\n- Kernel: Linux {kernel}\n- Load average when the run started: {} (the machine is shared; compare ratios, not absolute values)\n",
        load.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_quantiles() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(vec![]).is_nan());
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(v.clone(), 0.5), 50.0);
        assert_eq!(quantile(v.clone(), 0.99), 99.0);
        assert_eq!(quantile(v, 1.0), 100.0);
    }

    #[test]
    fn targets_read_as_written() {
        assert!(Target::RatioAtLeast(0.8).met(80.0, 100.0));
        assert!(!Target::RatioAtLeast(0.8).met(79.0, 100.0));
        assert!(Target::RatioAtMost(1.5).met(15.0, 10.0));
        assert!(Target::DiffAtMost(2.0).met(5.0, 3.0));
        assert!(!Target::DiffAtMost(2.0).met(5.1, 3.0));
        assert!(Target::AtMost(1.0).met(0.9, 100.0));
    }

    /// Rounds of one row: (Reporter, baseline) per round, against `target`.
    fn rounds(row: &str, target: Target, pairs: &[(f64, f64)]) -> Results {
        let mut r = Results::default();
        for &(reporter, baseline) in pairs {
            r.add(vec![Sample {
                row: row.into(),
                unit: "u",
                reporter,
                baseline,
                baseline_name: "raw",
                target: Some(target),
            }]);
        }
        r
    }

    #[test]
    fn the_table_has_one_row_per_figure_row_with_the_spread() {
        let r = rounds(
            "rate",
            Target::RatioAtLeast(0.8),
            &[(8.0, 10.0), (9.0, 10.0), (10.0, 10.0)],
        );
        let t = r.table();
        assert_eq!(t.lines().count(), 3, "{t}");
        assert!(
            t.contains("0.90 / 0.90 / 1.00") || t.contains("0.80 / 0.90 / 1.00"),
            "{t}"
        );
        assert!(t.contains("| yes |"), "{t}");
    }

    #[test]
    fn a_target_is_judged_on_the_median_of_the_rounds_ratios() {
        // Medians taken apart give 9 / 12 = 0.75; each round met 0.8.
        let r = rounds(
            "rate",
            Target::RatioAtLeast(0.8),
            &[(8.0, 10.0), (9.0, 11.0), (12.0, 12.0)],
        );
        let t = r.table();
        assert!(t.contains("| 0.82 |"), "{t}");
        assert!(t.contains("| yes |"), "{t}");
        let r = rounds(
            "p99",
            Target::DiffAtMost(2.0),
            &[(5.0, 3.0), (6.0, 3.0), (5.5, 3.0)],
        );
        assert!(r.table().contains("| **no** |"), "{}", r.table());
        assert!(r.table().contains("| ≤ baseline + 2 u |"), "{}", r.table());
        let r = rounds(
            "p99",
            Target::DiffAtMost(2.0),
            &[(5.0, 3.0), (4.9, 3.0), (5.5, 3.0)],
        );
        assert!(r.table().contains("| yes |"), "{}", r.table());
    }
}
