//! What the client-observed report figures (issue 34: `report-client`, `report-rows`,
//! `report-cores`) share: a scratch PostgreSQL database on 127.0.0.1:5432 whose tables
//! `wide_<n>` hold n rows of five columns (bigint, text, numeric(14,2), date, a 50-character
//! text), dropped when done; `reporter serve` with that database as data source `bench`, the
//! limits of [`super::pg_reports::LIMITS`] and artifacts on disk (`OBJECT_STORAGE_BACKEND=fs`);
//! the report templates; a report timed as a client sees it (from sending `POST /v1/reports`
//! to the first `GET /v1/reports/{id}` answering `Finished`, polled every 2 ms); and the
//! baselines: `psql \copy (query) TO 'file' CSV HEADER`, and headless Chromium printing an
//! HTML file from disk to PDF.
use super::pg_reports::{LIMITS, psql, timed_copy};
use super::serve::Server;
use super::template_read::upload;
use crate::harness::Ctx;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The five columns, in order, as the templates and psql read them.
const COLUMNS: &str = "id, label, amount, booked_on, memo";

/// How often the client polls a report's status.
pub const POLL: Duration = Duration::from_millis(2);

/// Polls in a row that may fail to connect or be reset before a report's wait fails.
const POLL_RETRIES: usize = 3;

/// The scratch database with one table `wide_<n>` per size n, and a scratch directory (psql's
/// output files, the `fs` storage), both removed when dropped.
pub struct WideDb {
    /// Database name.
    pub name: String,
    /// Scratch directory.
    pub dir: PathBuf,
}

impl WideDb {
    /// Creates the database with one table per size in `sizes`: rows 1..=n of the same
    /// generated data (`label` "entry <id>", `amount` numeric(14,2), `booked_on` a date,
    /// `memo` 50 characters).
    pub fn create(sizes: &[usize]) -> anyhow::Result<Self> {
        let name = format!("reporter_bench_{}", uuid::Uuid::now_v7().simple());
        let dir = std::env::temp_dir().join(format!("{name}-files"));
        std::fs::create_dir_all(&dir)?;
        psql("postgres", &format!("CREATE DATABASE {name}"))?;
        let db = Self { name, dir };
        let largest = sizes.iter().copied().max().unwrap_or(0);
        let mut sql = format!(
            "CREATE TABLE wide_all (id bigint PRIMARY KEY, label text NOT NULL, amount numeric(14,2) NOT NULL, booked_on date NOT NULL, memo text NOT NULL);
             INSERT INTO wide_all SELECT g, 'entry ' || g, ((g::bigint * 7919) % 10000000) / 100.0, DATE '2020-01-01' + (g % 1500), left(md5(g::text) || md5((g + 1)::text), 50) FROM generate_series(1, {largest}) g;"
        );
        for n in sizes {
            sql.push_str(&format!(
                "CREATE TABLE {t} AS SELECT * FROM wide_all WHERE id <= {n} ORDER BY id; ALTER TABLE {t} ADD PRIMARY KEY (id); ANALYZE {t};",
                t = table(*n)
            ));
        }
        sql.push_str("DROP TABLE wide_all; CHECKPOINT;");
        psql(&db.name, &sql)?;
        Ok(db)
    }

    /// `psql \copy (SELECT <the five columns> FROM wide_<rows>) TO '<file>' CSV HEADER`, timed
    /// from spawning psql to its exit: seconds and the file's bytes (read after the timing;
    /// the file is removed).
    pub fn copy_to_file(&self, rows: usize) -> anyhow::Result<(f64, Vec<u8>)> {
        let file = self
            .dir
            .join(format!("psql-{}.csv", uuid::Uuid::now_v7().simple()));
        let secs = timed_copy(
            &self.name,
            &format!(
                "\\copy (SELECT {COLUMNS} FROM {}) TO '{}' CSV HEADER",
                table(rows),
                file.display()
            ),
        )?;
        let bytes = std::fs::read(&file)?;
        std::fs::remove_file(&file)?;
        Ok((secs, bytes))
    }

    /// The `fs` storage's directory.
    fn objects(&self) -> PathBuf {
        self.dir.join("objects")
    }
}

impl Drop for WideDb {
    fn drop(&mut self) {
        if let Err(e) = psql(
            "postgres",
            &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        ) {
            eprintln!("bench: dropping {}: {e:#}", self.name);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The table of `rows` rows.
pub fn table(rows: usize) -> String {
    format!("wide_{rows}")
}

/// `reporter serve` (in memory, auth on) with `db` as data source `bench`, [`LIMITS`] and
/// artifacts on disk under the database's scratch directory; everything else at its
/// default (worker concurrency among it).
pub fn serve(ctx: &Ctx, db: &WideDb) -> anyhow::Result<Server> {
    let objects = db.objects().display().to_string();
    let mut env: Vec<(&str, String)> = vec![
        ("DATASOURCE_BENCH_TYPE", "postgresql".into()),
        ("DATASOURCE_BENCH_HOST", "127.0.0.1".into()),
        ("DATASOURCE_BENCH_PORT", "5432".into()),
        ("DATASOURCE_BENCH_USER", "postgres".into()),
        ("DATASOURCE_BENCH_DATABASE", db.name.clone()),
        ("OBJECT_STORAGE_BACKEND", "fs".into()),
        ("OBJECT_STORAGE_PATH", objects),
    ];
    env.extend(LIMITS.iter().map(|(k, v)| (*k, (*v).to_owned())));
    Server::reporter(ctx, &env)
}

/// A report format of the figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// CSV, as `psql \copy … CSV HEADER` writes it (but for the amounts' trailing zeros, see
    /// [`same_csv`]).
    Csv,
    /// An HTML table.
    Html,
    /// That HTML table converted to PDF (the default renderer).
    Pdf,
}

/// Uploads the template of `format` iterating `wide_<rows>` once (amounts with two decimals and dates printed as psql
/// prints them): the template id.
pub fn upload_template(serve: &Server, format: Format, rows: usize) -> anyhow::Result<String> {
    let t = table(rows);
    match format {
        Format::Csv => upload(
            serve,
            "wide.csv.tpl",
            &format!(
                "id,label,amount,booked_on,memo\n{{% for r in bench.{t} %}}{{{{ r.id }}}},{{{{ r.label }}}},{{{{ r.amount }}}},{{{{ r.booked_on|date:\"2006-01-02\" }}}},{{{{ r.memo }}}}\n{{% endfor %}}"
            ),
            "csv",
        ),
        Format::Html | Format::Pdf => upload(
            serve,
            "wide.html.tpl",
            &format!(
                "<html><body><table><tr><th>id</th><th>label</th><th>amount</th><th>booked on</th><th>memo</th></tr>\n{{% for r in bench.{t} %}}<tr><td>{{{{ r.id }}}}</td><td>{{{{ r.label }}}}</td><td>{{{{ r.amount }}}}</td><td>{{{{ r.booked_on|date:\"2006-01-02\" }}}}</td><td>{{{{ r.memo }}}}</td></tr>\n{{% endfor %}}</table></body></html>"
            ),
            if format == Format::Pdf { "pdf" } else { "html" },
        ),
    }
}

/// One report as the client saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// From sending the `POST` to reading the answer that said `Finished`, seconds.
    pub secs: f64,
    /// The report's id.
    pub id: String,
}

/// `POST /v1/reports` of `template_id`: the report id.
pub fn request(serve: &Server, template_id: &str) -> anyhow::Result<String> {
    let body = serde_json::json!({ "templateId": template_id, "filters": {} }).to_string();
    let (status, answer) = serve.call(
        "POST",
        "/v1/reports",
        Some("application/json"),
        body.as_bytes(),
    )?;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    anyhow::ensure!(
        (200..300).contains(&status),
        "POST /v1/reports: {status} {answer}"
    );
    let v: serde_json::Value = serde_json::from_str(&answer)?;
    Ok(v["id"].as_str().context("no report id")?.to_owned())
}

/// Polls `GET /v1/reports/{id}` every [`POLL`] until it is no longer `Processing` (at most
/// 600 s after `since`); fails unless it is `Finished`.
pub fn wait_finished(serve: &Server, id: &str, since: Instant) -> anyhow::Result<()> {
    let path = format!("/v1/reports/{id}");
    let mut failed = 0;
    loop {
        // A poll is a new connection: on a loaded machine one is now and then reset; a few
        // in a row fail the run.
        let (status, answer) = match serve.call("GET", &path, None, b"") {
            Ok(answer) => {
                failed = 0;
                answer
            }
            Err(e) if failed < POLL_RETRIES => {
                failed += 1;
                eprintln!("bench: polling {path}: {e:#}; polling again");
                std::thread::sleep(POLL);
                continue;
            }
            Err(e) => return Err(e),
        };
        anyhow::ensure!(status == 200, "GET {path}: {status}");
        let v: serde_json::Value = serde_json::from_slice(&answer)?;
        if v["status"] != "Processing" {
            anyhow::ensure!(v["status"] == "Finished", "report not Finished: {v}");
            return Ok(());
        }
        anyhow::ensure!(
            since.elapsed() < Duration::from_secs(600),
            "report still Processing after 600 s"
        );
        std::thread::sleep(POLL);
    }
}

/// One report of `template_id` as a client sees it: `POST`, then polling every [`POLL`]
/// until `Finished`.
pub fn report(serve: &Server, template_id: &str) -> anyhow::Result<Seen> {
    let started = Instant::now();
    let id = request(serve, template_id)?;
    wait_finished(serve, &id, started)?;
    Ok(Seen {
        secs: started.elapsed().as_secs_f64(),
        id,
    })
}

/// The artifact of report `id` (`GET /v1/reports/{id}/download`).
pub fn download(serve: &Server, id: &str) -> anyhow::Result<Vec<u8>> {
    let path = format!("/v1/reports/{id}/download");
    let (status, body) = serve.call("GET", &path, None, b"")?;
    anyhow::ensure!(status == 200, "GET {path}: {status}");
    Ok(body)
}

/// Headless Chromium (`CHROMIUM_PATH`, default `/usr/bin/chromium`) printing `html` (a file
/// on disk) to PDF, timed from spawning it to its exit: seconds (the PDF is removed).
pub fn chromium_print(html: &Path) -> anyhow::Result<f64> {
    let chromium = std::env::var_os("CHROMIUM_PATH")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    let pdf = html.with_extension("pdf");
    let started = Instant::now();
    let out = Command::new(&chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-pdf-header-footer",
        ])
        .arg(format!("--print-to-pdf={}", pdf.display()))
        .arg(format!("file://{}", html.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .with_context(|| format!("running {}", chromium.display()))?;
    let secs = started.elapsed().as_secs_f64();
    anyhow::ensure!(
        out.status.success() && pdf.is_file(),
        "chromium --print-to-pdf: {} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_file(&pdf)?;
    Ok(secs)
}

/// Whether Reporter's CSV `report` holds exactly the lines of psql's `copy`, but for the
/// amounts (the third field), compared as numbers: Reporter prints a numeric without its
/// trailing zeros (`791.9` where psql prints `791.90`), even through `floatformat:2`.
pub fn same_csv(report: &[u8], copy: &[u8]) -> Result<(), String> {
    let (report, copy) = (
        String::from_utf8_lossy(report),
        String::from_utf8_lossy(copy),
    );
    let (mut r, mut c) = (report.lines(), copy.lines());
    for line in 1.. {
        match (r.next(), c.next()) {
            (None, None) => return Ok(()),
            (Some(a), Some(b)) if a == b => {}
            (Some(a), Some(b)) => {
                let (fa, fb): (Vec<&str>, Vec<&str>) =
                    (a.split(',').collect(), b.split(',').collect());
                let same = fa.len() == fb.len()
                    && fa.iter().zip(&fb).enumerate().all(|(i, (x, y))| {
                        x == y
                            || (i == 2
                                && x.parse::<f64>().ok().is_some()
                                && x.parse::<f64>().ok() == y.parse::<f64>().ok())
                    });
                if !same {
                    return Err(format!("line {line}: Reporter {a:?}, psql {b:?}"));
                }
            }
            (a, b) => return Err(format!("line {line}: Reporter {a:?}, psql {b:?}")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::same_csv;

    #[test]
    fn the_csv_check_allows_only_the_amounts_trailing_zeros() {
        let psql = b"id,label,amount,booked_on,memo\n10,entry 10,791.90,2020-01-11,ab\n11,entry 11,100.00,2020-01-12,cd\n";
        let ours = b"id,label,amount,booked_on,memo\n10,entry 10,791.9,2020-01-11,ab\n11,entry 11,100,2020-01-12,cd\n";
        assert_eq!(same_csv(ours, psql), Ok(()));
        let other_amount = b"id,label,amount,booked_on,memo\n10,entry 10,791.8,2020-01-11,ab\n11,entry 11,100,2020-01-12,cd\n";
        assert!(same_csv(other_amount, psql).is_err());
        let other_memo = b"id,label,amount,booked_on,memo\n10,entry 10,791.9,2020-01-11,ax\n11,entry 11,100,2020-01-12,cd\n";
        assert!(same_csv(other_memo, psql).is_err());
        let missing_row = b"id,label,amount,booked_on,memo\n10,entry 10,791.9,2020-01-11,ab\n";
        assert!(same_csv(missing_row, psql).is_err());
    }
}
