//! The golden corpus: for every construct of the original's template language, a template,
//! the data it reads and the exact expected output (`tests/golden/<case>/`):
//! `template.tpl`, `data.json`, `expected.txt` (or `error.txt`: the start of the expected
//! error), `mapped.json` (the mapped fields `analyze` must return), and `columns.json` where a
//! column has a database type of its own (read by `tests/tools/golden_corpus.rs`, which runs the
//! corpus through PostgreSQL, MongoDB and JSON files).
//!
//! Mapped fields are checked against what rendering reads, both ways: rendering reads no
//! data field outside the mapped fields (the upload fetches every field a render can use),
//! and every mapped field is read by the case's render except those in [`UNREAD`], each
//! with the reason this data does not reach it (a mapped field that no render could read
//! would make an upload refuse a template for a field it never uses).
//! `GOLDEN_BLESS=1` writes the actual results (review them before committing).
use chrono::{DateTime, TimeZone, Utc};
use reporter_adapter_pongo2::Pongo2Engine;
use reporter_ports::clock::Clock;
use reporter_ports::ports::{RenderLimits, TemplateEngine};
use reporter_ports::template::MappedFields;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

struct Fixed;
impl Clock for Fixed {
    fn now(&self) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2025, 6, 1, 10, 4, 5)
            .single()
            .unwrap_or_default()
    }
}

fn cases() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("golden dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("template.tpl").exists())
        .collect();
    v.sort();
    v
}

/// Mapped fields (`case`, `ds.table.field`) that the case's render does not read, and why.
/// Every other mapped field must be read; every entry here must be mapped and unread.
const UNREAD: &[(&str, &str, &str)] = &[
    (
        "data_addressing",
        "bank.accounts.balance",
        "read only through row 9, past the end of this data (nil compares as 0)",
    ),
    (
        "field_of_a_list_is_an_error",
        "bank.accounts.holder",
        "the render fails before reading: a field of the table (a list) is an error; the \
         original's scan maps it all the same",
    ),
];

fn covered(mapped: &MappedFields, ds: &str, t: &str, f: &str) -> bool {
    mapped
        .get(ds)
        .and_then(|m| m.get(t))
        .is_some_and(|fs| fs.contains(f))
}

#[test]
fn golden_corpus() {
    let engine = Pongo2Engine::with_clock(Arc::new(Fixed));
    let limits = RenderLimits::default();
    let bless = std::env::var("GOLDEN_BLESS").is_ok();
    let mut failures = Vec::new();
    let started = Instant::now();
    let cases = cases();
    assert!(cases.len() >= 40, "the corpus has {} cases", cases.len());
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let tpl = std::fs::read_to_string(case.join("template.tpl")).unwrap();
        let data: serde_json::Value = match std::fs::read_to_string(case.join("data.json")) {
            Ok(s) => serde_json::from_str(&s).unwrap_or_else(|e| panic!("{name}: data.json: {e}")),
            Err(_) => serde_json::json!({}),
        };
        let mapped = match engine.analyze(&tpl, &limits) {
            Ok(a) => a.mapped_fields,
            Err(e) => {
                // A template that must not upload: error.txt holds the start of the error.
                let actual = format!("{e}\n");
                if bless {
                    std::fs::write(case.join("error.txt"), &actual).unwrap();
                    continue;
                }
                match std::fs::read_to_string(case.join("error.txt")) {
                    Ok(want) if actual.starts_with(want.trim_end()) => {}
                    _ => failures.push(format!("{name}: analyze failed: {e}")),
                }
                continue;
            }
        };
        let rec = engine.render_recording(&tpl, &data, &limits);
        // The sandbox hands the context over as text, read in place: the same render.
        let text = std::fs::read(case.join("data.json")).unwrap_or_else(|_| b"{}".to_vec());
        let in_place = engine.render_json(&tpl, &text, &limits);
        if in_place != rec.result {
            failures.push(format!(
                "{name}: read in place it renders {in_place:?}, from the value {:?}",
                rec.result
            ));
        }
        for (ds, tables) in &rec.reads {
            for (t, fields) in tables {
                for f in fields {
                    if !covered(&mapped, ds, t, f) {
                        failures.push(format!(
                            "{name}: rendering read {ds}.{t}.{f}, which is not mapped"
                        ));
                    }
                }
            }
        }
        check_unread(&name, &mapped, &rec.reads, &mut failures);
        let mapped_json = serde_json::to_string_pretty(&mapped).unwrap() + "\n";
        let (actual, file) = match &rec.result {
            Ok(out) => (out.clone(), "expected.txt"),
            Err(e) => (format!("{e}\n"), "error.txt"),
        };
        if bless {
            std::fs::write(case.join(file), &actual).unwrap();
            std::fs::write(case.join("mapped.json"), &mapped_json).unwrap();
            continue;
        }
        match std::fs::read_to_string(case.join("mapped.json")) {
            Ok(want) => {
                let want: MappedFields = serde_json::from_str(&want).unwrap();
                if want != mapped {
                    failures.push(format!(
                        "{name}: mapped fields {mapped:?}, expected {want:?}"
                    ));
                }
            }
            Err(_) => failures.push(format!("{name}: no mapped.json")),
        }
        match (
            std::fs::read_to_string(case.join("expected.txt")),
            std::fs::read_to_string(case.join("error.txt")),
        ) {
            (Ok(want), _) => {
                if rec.result.as_ref().ok() != Some(&want) {
                    failures.push(format!("{name}: got {:?}\n  expected {want:?}", rec.result));
                }
            }
            (_, Ok(want)) => match &rec.result {
                Err(e) if e.to_string().starts_with(want.trim_end()) => {}
                other => failures.push(format!(
                    "{name}: got {other:?}, expected the error {want:?}"
                )),
            },
            _ => failures.push(format!("{name}: neither expected.txt nor error.txt")),
        }
    }
    reporter_contract::figure!(
        "rendered {} golden cases in {:?}",
        cases.len(),
        started.elapsed()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The reverse check: mapped fields the render did not read must be exactly the case's
/// [`UNREAD`] entries.
fn check_unread(
    name: &str,
    mapped: &MappedFields,
    reads: &MappedFields,
    failures: &mut Vec<String>,
) {
    let mut unread = Vec::new();
    for (ds, tables) in mapped {
        for (t, fields) in tables {
            for f in fields {
                if !covered(reads, ds, t, f) {
                    unread.push(format!("{ds}.{t}.{f}"));
                }
            }
        }
    }
    let mut listed: Vec<String> = UNREAD
        .iter()
        .filter(|(c, _, _)| *c == name)
        .map(|(_, f, _)| (*f).to_owned())
        .collect();
    unread.sort();
    listed.sort();
    if unread != listed {
        failures.push(format!(
            "{name}: mapped but not read {unread:?}, listed in UNREAD {listed:?}"
        ));
    }
}

/// The cells of a Markdown table row, split at the `|` not escaped as `\|`, unescaped.
fn cells(row: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = row.trim().trim_matches('|').chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some('|')) => {
                cur.push('|');
                chars.next();
            }
            ('|', _) => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter()
        .map(|c| c.trim().trim_matches('`').to_owned())
        .collect()
}

/// The README's table of examples is the golden case `readme_examples`, line for line: every
/// example in the README is what the engine prints.
#[test]
fn the_readme_examples_are_the_golden_case() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let section = readme
        .split("<!-- golden:readme_examples -->")
        .nth(1)
        .and_then(|s| s.split("<!-- /golden:readme_examples -->").next())
        .expect("the README's marked table of examples");
    let rows: Vec<Vec<String>> = section
        .lines()
        .filter(|l| l.starts_with('|'))
        .skip(2)
        .map(cells)
        .collect();
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/readme_examples");
    let template = std::fs::read_to_string(case.join("template.tpl")).expect("template");
    let expected = std::fs::read_to_string(case.join("expected.txt")).expect("expected");
    let lines: Vec<(&str, &str)> = template.lines().zip(expected.lines()).collect();
    assert_eq!(rows.len(), lines.len(), "README rows and case lines");
    for (row, (t, e)) in rows.iter().zip(lines) {
        assert_eq!(row.len(), 3, "{row:?}");
        assert_eq!(
            (row[1].as_str(), row[2].as_str()),
            (t, e),
            "README row {}",
            row[0]
        );
    }
}

/// A context that is not JSON text is an evaluation error, never a panic.
#[test]
fn a_context_that_is_not_json_is_refused() {
    let engine = Pongo2Engine::with_clock(Arc::new(Fixed));
    for text in [&b""[..], b"{", b"\xff", b"{\"a\":1} x"] {
        let r = engine.render_json("{{ a }}", text, &RenderLimits::default());
        assert!(
            matches!(&r, Err(reporter_ports::ports::RenderError::Evaluation(m)) if m.contains("not JSON")),
            "{text:?}: {r:?}"
        );
    }
}
