//! `just bench`: Reporter's speed and memory figures, each a ratio to a baseline measured in
//! the same run, in interleaved rounds (the order of Reporter and baseline alternates), on
//! loopback only, against a private RabbitMQ node the run starts and removes. Prints the table
//! and writes it to `BENCHMARKS.md` with the machine and the command.
//!
//! ```text
//! reporter-bench [--rounds N] [--only NAME[,NAME]] [--quick] [--write PATH]
//! ```
//! Needs `rabbitmq-server` (Debian), `wrk` (Debian), `psql` and PostgreSQL on 127.0.0.1:5432
//! (user `postgres`, trust auth; figures `report-time`, `report-rss`, `report-client`,
//! `report-rows` and `report-cores` create and drop a scratch database; `report-client` also
//! runs headless Chromium, `CHROMIUM_PATH` or `/usr/bin/chromium`), and the release `reporter`, `bare-poem` and `raw-publisher` binaries (`REPORTER_BIN`,
//! `BARE_POEM_BIN`, `RAW_PUBLISHER_BIN`; default: next to this binary, else `target/release/`). A run of in-process figures only
//! (`--only crm-decrypt`) needs none of these.
mod bench_auth;
mod broker;
mod cpu;
mod figures;
mod harness;
mod inproc;
mod otlp_sink;
mod raw;

use anyhow::Context;
use harness::{Ctx, Results};
use std::path::PathBuf;

struct Args {
    rounds: usize,
    only: Vec<String>,
    quick: bool,
    write: Option<PathBuf>,
    command: String,
}

fn args() -> anyhow::Result<Args> {
    let raw: Vec<String> = std::env::args().collect();
    let mut a = Args {
        rounds: 3,
        only: Vec::new(),
        quick: false,
        write: None,
        command: raw.join(" "),
    };
    let mut it = raw.into_iter().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--rounds" => a.rounds = it.next().context("--rounds N")?.parse()?,
            "--only" => {
                a.only = it
                    .next()
                    .context("--only NAME")?
                    .split(',')
                    .map(str::to_owned)
                    .collect();
            }
            "--quick" => a.quick = true,
            "--write" => a.write = Some(it.next().context("--write PATH")?.into()),
            "--help" | "-h" => {
                println!("{}", usage());
                std::process::exit(0);
            }
            other => anyhow::bail!("unknown argument {other}\n{}", usage()),
        }
    }
    anyhow::ensure!(a.rounds >= 1, "--rounds must be at least 1");
    let known: Vec<&str> = figures::all().iter().map(|f| f.name()).collect();
    if let Some(unknown) = a.only.iter().find(|o| !known.contains(&o.as_str())) {
        anyhow::bail!("no figure named {unknown}\n{}", usage());
    }
    Ok(a)
}

fn which(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(tool))
            .find(|f| f.is_file())
    })
}

/// The release binaries of `reporter`, `bare-poem` and `raw-publisher`: `REPORTER_BIN` /
/// `BARE_POEM_BIN` / `RAW_PUBLISHER_BIN`, else the ones built with this one (`cargo build
/// --release -p reporter -p reporter-bench` puts them in the same directory, wherever
/// CARGO_TARGET_DIR points), else `target/release`.
struct Binaries {
    reporter: PathBuf,
    bare_poem: PathBuf,
    raw_publisher: PathBuf,
}

fn release_binaries(repo: &std::path::Path) -> anyhow::Result<Binaries> {
    let bin_dir = std::env::current_exe()?
        .parent()
        .context("the directory of reporter-bench")?
        .to_path_buf();
    let sibling = |name: &str, var: &str| {
        std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
            let next = bin_dir.join(name);
            if next.is_file() {
                next
            } else {
                repo.join("target/release").join(name)
            }
        })
    };
    let bins = Binaries {
        reporter: sibling("reporter", "REPORTER_BIN"),
        bare_poem: sibling("bare-poem", "BARE_POEM_BIN"),
        raw_publisher: sibling("raw-publisher", "RAW_PUBLISHER_BIN"),
    };
    for bin in [&bins.reporter, &bins.bare_poem, &bins.raw_publisher] {
        anyhow::ensure!(
            bin.is_file(),
            "no release binary at {} (cargo build --release -p reporter -p reporter-bench)",
            bin.display()
        );
    }
    Ok(bins)
}

/// The usage line and the names `--only` accepts.
fn usage() -> String {
    let names: Vec<&str> = figures::all().iter().map(|f| f.name()).collect();
    format!(
        "usage: reporter-bench [--rounds N] [--only NAME[,NAME]] [--quick] [--write PATH]\nfigures (NAME): {}",
        names.join(", ")
    )
}

/// The selected figures, in order.
fn selected(args: &Args) -> Vec<Box<dyn harness::Figure>> {
    let mut figures = figures::all();
    figures.retain(|f| args.only.is_empty() || args.only.iter().any(|o| o == f.name()));
    figures
}

/// Every selected figure, in interleaved rounds (Reporter first in odd rounds); without `ctx`
/// (only in-process figures selected) each round runs without the services.
async fn run_figures(ctx: Option<&Ctx>, args: &Args) -> anyhow::Result<Results> {
    let mut results = Results::default();
    let mut figures = selected(args);
    for f in &mut figures {
        for round in 0..args.rounds {
            let reporter_first = round % 2 == 0;
            let first = if reporter_first {
                "Reporter"
            } else {
                "baseline"
            };
            eprintln!(
                "bench: {} round {}/{} ({first} first)",
                f.name(),
                round + 1,
                args.rounds,
            );
            let samples = match ctx {
                Some(ctx) => f.round(ctx, reporter_first).await,
                None => f.round_in_process(args.quick, reporter_first).await,
            }
            .with_context(|| format!("figure {}", f.name()))?;
            for s in &samples {
                eprintln!(
                    "bench:   {}: {:.3} vs {:.3} {} (ratio {:.2})",
                    s.row,
                    s.reporter,
                    s.baseline,
                    s.unit,
                    s.reporter / s.baseline
                );
            }
            results.add(samples);
        }
        if let Some(ctx) = ctx {
            f.finish(ctx).await;
        }
    }
    Ok(results)
}

/// BENCHMARKS.md: the command, the machine, the table and what each figure measures.
fn document(args: &Args, machine: &str, table: &str, seconds: f64) -> String {
    let mut doc = format!(
        "# Benchmarks\n\nWritten by `just bench` (`{}`) on {} in {:.0} s. Each figure is measured against a baseline in the same run, in {} interleaved rounds (Reporter first in odd rounds, the baseline first in even ones); the table gives the medians and the spread of the ratio Reporter / baseline. Loopback only; the broker is a private RabbitMQ node the run starts and removes.\n\n## Machine\n\n{machine}\n## Figures\n\n{table}\n## What each figure measures\n\n- **(a) Outage catch-up**: N critical events wait in the outbox while the broker is stopped (`rabbitmqctl stop_app`, 3 s); from `start_app` returning to the last event received by a consumer. Baseline: a raw lapin publisher (confirm window 256, the same messages) that connects after `start_app`. The first-event row is the time to the first event received.\n- **(b) Publication cost**: `wrk -t2 -c32` on `POST /v1/deadlines` against the release `reporter serve` (state in memory), publication on (events to the private node, routed to a queue bounded at 20,000 messages) vs off; peak RSS is the process's `VmHWM`. The CPU rows divide the CPU time the service and the broker used during the load (`/proc/<pid>/stat`) by the requests answered; the outbox row is `reporter_outbox_pending` when the load stops, next to the events committed (the broker did not keep up with the rest during the run).\n- **(c) Commit → consumer latency**: one critical event committed every 5 ms (a unit of work with its outbox row; the dispatcher is woken and publishes it) vs a raw lapin publish of the same message at the same rate, each timed to its arrival at a consumer.\n- **P3 `GET /v1/templates/{{id}}`** (issue 13): `wrk -t2 -c32` with a bearer token against the release `reporter serve` (state in memory, auth on, one template uploaded first) vs `bare-poem` (a bare poem server of `bench/`, one route that parses the id and answers the same JSON bytes, fetched once from Reporter) with the same HS256 check (signature, `exp` with 30 s leeway, `nbf`, the `templates:read` scope) on every request and without any check; req/s and p99. Reporter keeps the tokens it verified (`AUTH_TOKEN_CACHE_SIZE`, default 4096), so with one client token it verifies once per minute; the row with the token cache off is a second Reporter with `AUTH_TOKEN_CACHE_SIZE=0`, verifying every request as the baseline does.\n- **P5 reports from PostgreSQL** (issue 13): a scratch database on 127.0.0.1:5432 with a `ledger` table (bigint, numeric, text, date; 100,000 rows, 10,000 with `--quick`), created for the run and dropped after it; `reporter serve` (in memory, auth on) with it as data source `bench` and its limits raised so no report meets one (`ENGINE_MAX_ROWS` — default exactly 100,000 — to 10 M, `ENGINE_MAX_RESULT_BYTES` to 4 GiB, `ENGINE_MAX_OUTPUT_BYTES` to 1 GiB, `ENGINE_RENDER_FUEL` to 10 G, `ENGINE_TIMEOUT_SEC` and `TEMPLATE_RENDER_TIMEOUT_SEC` to 600); a CSV template that iterates the rows once (`{{% for r in bench.ledger %}}` with the date printed as psql prints it), timed from the report's `createdAt` to its `completedAt` (polled every 10 ms), vs `psql \\copy (SELECT id, amount, label, booked_on FROM ledger) TO STDOUT CSV HEADER` to /dev/null, timed from spawning psql to its exit. Given as rows/s, so the ratio is psql's time over Reporter's. Informational: an HTML table of the first 10,000 rows and a PDF (native renderer) of the first 1,000, vs `psql \\copy` of those rows.\n- **P6 memory of report generation** (issue 13): a fresh `reporter serve` (the P5 setup; artifacts in memory, as `serve` keeps them by default, with `OBJECT_STORAGE_MEMORY_MAX_BYTES` at 8 MiB so that the storage keeps one report's artifact and RSS shows what generation leaves behind) generates the 100,000-row CSV report ten times in a row; peak RSS above idle is `VmHWM` after the first report minus `VmRSS` before it (after start-up and the upload), next to the report's size; then `VmRSS` after the tenth report vs after the first. Then, with artifacts on disk (`OBJECT_STORAGE_BACKEND=fs`, so each artifact is written while rendered), a fresh `reporter serve` generates one report of that table and a fresh one one report of a table four times its size; peak RSS above idle of each, next to the report's size: what generation holds, whatever the row count. Templates render in sandbox child processes (a fresh one per render), whose memory is not counted.\n- **CRM decryption** (issue 33): in process, no services: a 100,000-row holders table (10,000 with `--quick`) built in memory as the Midaz CRM stores it — BSON documents with every encrypted field of `adapters/mongo/src/crm/fields.rs` set (16 values a row, two related parties), each sealed in lib-commons' format (AES-256-GCM with a fixed key; standard base64 of nonce (12) ‖ ciphertext ‖ tag) — and one extraction pass over it: each document cloned (the cursor hands extraction an owned one), decrypted with the mongo adapter's own row transform (`CrmSettings::decrypt_row`) and converted to JSON field by field (`bson_to_json`), vs the same pass without the decryption; rows/s, so the ratio is decrypted / plain. Informational.\n- **Rate limiter** (issue 32): the P3 request (`GET /v1/templates/{{id}}`, `wrk -t2 -c32`, bearer token) against the release `reporter serve` with rate limiting on and its counters in Redis (`REDIS_URL`, default 127.0.0.1:6379; one atomic script per request) vs the same service with rate limiting off; informational, the in-process limiter vs off. Every request comes from another client address (`X-Forwarded-For`, random, from the trusted loopback proxy), so each opens a window of its own and none is refused (global limit 10,000 over a one-second window).\n",
        args.command,
        chrono::Utc::now().format("%Y-%m-%d %H:%M UTC"),
        seconds,
        args.rounds,
    );
    doc.push_str(figures::report_client::DESCRIPTION);
    doc.push_str(figures::report_rows::DESCRIPTION);
    doc.push_str(figures::report_cores::DESCRIPTION);
    doc.push_str(figures::preview_time::DESCRIPTION);
    doc.push_str(figures::telemetry_cost::DESCRIPTION);
    doc.push_str(figures::publish_cpu::DESCRIPTION);
    doc
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let args = args()?;
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("repository root")?
        .to_path_buf();
    let machine = harness::machine();
    let started = std::time::Instant::now();
    let results = if selected(&args).iter().all(|f| f.in_process()) {
        run_figures(None, &args).await?
    } else {
        let bins = release_binaries(&repo)?;
        let wrk = which("wrk").context("wrk not found: apt-get install wrk")?;
        eprintln!("bench: starting a private RabbitMQ node");
        let broker = broker::Broker::start(&repo)?;
        let ctx = Ctx {
            broker,
            reporter_bin: bins.reporter,
            bare_poem_bin: bins.bare_poem,
            raw_publisher_bin: bins.raw_publisher,
            wrk,
            quick: args.quick,
        };
        run_figures(Some(&ctx), &args).await?
    };
    let table = results.table();
    println!("{table}");
    let doc = document(&args, &machine, &table, started.elapsed().as_secs_f64());
    if let Some(path) = &args.write {
        std::fs::write(path, &doc).with_context(|| format!("writing {}", path.display()))?;
        eprintln!("bench: wrote {}", path.display());
    }
    Ok(())
}
