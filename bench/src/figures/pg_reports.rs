//! What the report figures (P5, P6) share: a scratch PostgreSQL database on 127.0.0.1:5432
//! (user `postgres`, trust auth) with a `ledger` table of N rows (bigint id, numeric amount,
//! text label, date) and the views `ledger_html` (the first N/10 rows) and `ledger_pdf` (the
//! first N/100), dropped when done; `reporter serve` with that database as data source
//! `bench` and limits raised for it; report templates that iterate a table once; a report
//! timed from its `createdAt` to its `completedAt`; and the `psql \copy` baseline.
use super::serve::Server;
use super::template_read::upload;
use crate::harness::Ctx;
use anyhow::Context;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Rows of `ledger`: 100,000 (10,000 with `--quick`).
pub fn rows(ctx: &Ctx) -> usize {
    if ctx.quick { 10_000 } else { 100_000 }
}

/// `psql` connected to database `db` on 127.0.0.1:5432 as `postgres`, without `~/.psqlrc`.
fn psql_on(db: &str) -> Command {
    let mut c = Command::new("psql");
    c.args([
        "-h",
        "127.0.0.1",
        "-p",
        "5432",
        "-U",
        "postgres",
        "-X",
        "-q",
        "-d",
        db,
    ]);
    c
}

/// Runs `copy` (a `\copy …` command) in database `db`, its stdout discarded; the seconds
/// from spawning psql to its exit.
pub(crate) fn timed_copy(db: &str, copy: &str) -> anyhow::Result<f64> {
    let started = Instant::now();
    let out = psql_on(db)
        .args(["-c", copy])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()?;
    let secs = started.elapsed().as_secs_f64();
    anyhow::ensure!(
        out.status.success(),
        "psql \\copy: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(secs)
}

pub(crate) fn psql(db: &str, sql: &str) -> anyhow::Result<()> {
    let out = psql_on(db)
        .args(["-v", "ON_ERROR_STOP=1", "-c", sql])
        .stdout(Stdio::null())
        .output()
        .context("running psql (apt-get install postgresql-client)")?;
    anyhow::ensure!(
        out.status.success(),
        "psql -c {sql:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// The scratch database, dropped (with its connections) when dropped.
pub struct ScratchDb {
    /// Database name.
    pub name: String,
    /// Rows of `ledger`.
    pub rows: usize,
}

impl ScratchDb {
    /// Creates the database and fills `ledger` with `rows` rows.
    pub fn create(rows: usize) -> anyhow::Result<Self> {
        let name = format!("reporter_bench_{}", uuid::Uuid::now_v7().simple());
        psql("postgres", &format!("CREATE DATABASE {name}"))?;
        let db = Self { name, rows };
        psql(
            &db.name,
            &format!(
                "CREATE TABLE ledger (id bigint PRIMARY KEY, amount numeric(14,2) NOT NULL, label text NOT NULL, booked_on date NOT NULL);
                 INSERT INTO ledger SELECT g, ((g::bigint * 7919) % 10000000) / 100.0, 'entry ' || g || ' ' || md5(g::text), DATE '2020-01-01' + (g % 1500) FROM generate_series(1, {rows}) g;
                 CREATE VIEW ledger_html AS SELECT * FROM ledger WHERE id <= {};
                 CREATE VIEW ledger_pdf AS SELECT * FROM ledger WHERE id <= {};
                 ANALYZE ledger;",
                rows / 10,
                rows / 100
            ),
        )?;
        Ok(db)
    }

    /// `psql \copy (SELECT …) TO STDOUT CSV HEADER` of `table`'s four columns to /dev/null,
    /// timed from spawning psql to its exit.
    pub fn copy_secs(&self, table: &str) -> anyhow::Result<f64> {
        timed_copy(
            &self.name,
            &format!(
                "\\copy (SELECT id, amount, label, booked_on FROM {table}) TO STDOUT CSV HEADER"
            ),
        )
    }
}

impl Drop for ScratchDb {
    fn drop(&mut self) {
        if let Err(e) = psql(
            "postgres",
            &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        ) {
            eprintln!("bench: dropping {}: {e:#}", self.name);
        }
    }
}

/// The limits raised for the run, so no 100k-row report meets one: rows per table
/// (`ENGINE_MAX_ROWS`, default exactly 100,000), bytes per section
/// (`ENGINE_MAX_RESULT_BYTES`, default 100 MiB), output bytes (`ENGINE_MAX_OUTPUT_BYTES`,
/// default 64 MiB), render fuel (`ENGINE_RENDER_FUEL`, default 50 M), job and render time.
pub const LIMITS: [(&str, &str); 6] = [
    ("ENGINE_MAX_ROWS", "10000000"),
    ("ENGINE_MAX_RESULT_BYTES", "4294967296"),
    ("ENGINE_MAX_OUTPUT_BYTES", "1073741824"),
    ("ENGINE_RENDER_FUEL", "10000000000"),
    ("ENGINE_TIMEOUT_SEC", "600"),
    ("TEMPLATE_RENDER_TIMEOUT_SEC", "600"),
];

/// `reporter serve` (in memory, auth on) with `db` as data source `bench` and [`LIMITS`].
pub fn serve(ctx: &Ctx, db: &ScratchDb) -> anyhow::Result<Server> {
    serve_with(ctx, db, &[])
}

/// [`serve`] with `extra` variables set too.
pub fn serve_with(ctx: &Ctx, db: &ScratchDb, extra: &[(&str, &str)]) -> anyhow::Result<Server> {
    let mut env: Vec<(&str, String)> = vec![
        ("DATASOURCE_BENCH_TYPE", "postgresql".into()),
        ("DATASOURCE_BENCH_HOST", "127.0.0.1".into()),
        ("DATASOURCE_BENCH_PORT", "5432".into()),
        ("DATASOURCE_BENCH_USER", "postgres".into()),
        ("DATASOURCE_BENCH_DATABASE", db.name.clone()),
    ];
    env.extend(LIMITS.iter().map(|(k, v)| (*k, (*v).to_owned())));
    env.extend(extra.iter().map(|(k, v)| (*k, (*v).to_owned())));
    Server::reporter(ctx, &env)
}

/// A report kind: the table it reads and its format.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// `ledger` as CSV.
    Csv,
    /// `ledger_html` as an HTML table.
    Html,
    /// `ledger_pdf` as an HTML table converted to PDF (native renderer).
    Pdf,
}

impl Kind {
    /// The table (or view) the template iterates.
    pub fn table(self) -> &'static str {
        match self {
            Self::Csv => "ledger",
            Self::Html => "ledger_html",
            Self::Pdf => "ledger_pdf",
        }
    }

    /// Rows it reads from a database of `rows` rows.
    pub fn rows(self, rows: usize) -> usize {
        match self {
            Self::Csv => rows,
            Self::Html => rows / 10,
            Self::Pdf => rows / 100,
        }
    }

    /// Uploads its template (one pass over the rows, dates printed as psql prints them):
    /// the template id.
    pub fn upload(self, serve: &Server) -> anyhow::Result<String> {
        let t = self.table();
        match self {
            Self::Csv => upload(
                serve,
                "ledger.csv.tpl",
                &format!(
                    "id,amount,label,booked_on\n{{% for r in bench.{t} %}}{{{{ r.id }}}},{{{{ r.amount }}}},{{{{ r.label }}}},{{{{ r.booked_on|date:\"2006-01-02\" }}}}\n{{% endfor %}}"
                ),
                "csv",
            ),
            Self::Html | Self::Pdf => upload(
                serve,
                "ledger.html.tpl",
                &format!(
                    "<html><body><table><tr><th>id</th><th>amount</th><th>label</th><th>booked on</th></tr>\n{{% for r in bench.{t} %}}<tr><td>{{{{ r.id }}}}</td><td>{{{{ r.amount }}}}</td><td>{{{{ r.label }}}}</td><td>{{{{ r.booked_on|date:\"2006-01-02\" }}}}</td></tr>\n{{% endfor %}}</table></body></html>"
                ),
                if matches!(self, Self::Pdf) {
                    "pdf"
                } else {
                    "html"
                },
            ),
        }
    }
}

/// What one report took.
#[derive(Debug, Clone, Copy)]
pub struct ReportRun {
    /// `completedAt − createdAt`, seconds.
    pub secs: f64,
    /// `artifactSizeBytes`.
    pub bytes: u64,
}

/// `POST /v1/reports` of `template_id`, then `GET /v1/reports/{id}` every 10 ms until it is
/// no longer `Processing` (at most 600 s); fails unless it is `Finished`.
pub fn report(serve: &Server, template_id: &str) -> anyhow::Result<ReportRun> {
    let id = super::client_reports::request(serve, template_id)?;
    let path = format!("/v1/reports/{id}");
    let started = Instant::now();
    let v = loop {
        let (status, answer) = serve.call("GET", &path, None, b"")?;
        anyhow::ensure!(status == 200, "GET {path}: {status}");
        let v: serde_json::Value = serde_json::from_slice(&answer)?;
        if v["status"] != "Processing" {
            break v;
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(600),
            "report still Processing after 600 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    anyhow::ensure!(v["status"] == "Finished", "report not Finished: {v}");
    let at = |k: &str| -> anyhow::Result<chrono::DateTime<chrono::FixedOffset>> {
        let s = v[k].as_str().with_context(|| format!("no {k} in {v}"))?;
        Ok(chrono::DateTime::parse_from_rfc3339(s)?)
    };
    let secs = (at("completedAt")? - at("createdAt")?)
        .num_microseconds()
        .context("duration")? as f64
        / 1e6;
    Ok(ReportRun {
        secs,
        bytes: v["artifactSizeBytes"].as_u64().unwrap_or(0),
    })
}
