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

/// The book's table of examples (docs/src/templates/constructs.md, between the
/// `golden:readme_examples` markers) is the golden case `readme_examples`, line for line: every
/// example there is what the engine prints.
#[test]
fn the_book_examples_are_the_golden_case() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let page_path = "docs/src/templates/constructs.md";
    let page = std::fs::read_to_string(root.join(page_path)).expect(page_path);
    let section = page
        .split("<!-- golden:readme_examples -->")
        .nth(1)
        .and_then(|s| s.split("<!-- /golden:readme_examples -->").next())
        .expect("the book's marked table of examples");
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
    assert_eq!(
        rows.len(),
        lines.len(),
        "the book's rows and the case's lines"
    );
    for (row, (t, e)) in rows.iter().zip(lines) {
        assert_eq!(row.len(), 3, "{row:?}");
        assert_eq!(
            (row[1].as_str(), row[2].as_str()),
            (t, e),
            "the book's row {}",
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

/// Rows handed over in chunks of `size` (a streamed render's feed); with
/// [`ChunkFeed::pieces`], it takes the output in pieces of about that many bytes.
struct ChunkFeed {
    chunks: std::collections::VecDeque<Vec<u8>>,
    ended: bool,
    piece_bytes: Option<usize>,
    pieces: Vec<String>,
}

impl ChunkFeed {
    fn new(rows: &[serde_json::Value], size: usize) -> Self {
        Self {
            chunks: rows
                .chunks(size)
                .map(|c| serde_json::to_vec(c).unwrap())
                .collect(),
            ended: false,
            piece_bytes: None,
            pieces: Vec::new(),
        }
    }

    fn pieces(mut self, bytes: usize) -> Self {
        self.piece_bytes = Some(bytes);
        self
    }

    /// The streamed render's whole output: the pieces handed out, then the result.
    fn render(
        mut self,
        engine: &Pongo2Engine,
        tpl: &str,
        context: &[u8],
        limits: &RenderLimits,
    ) -> Result<String, reporter_ports::ports::RenderError> {
        let rest = engine.render_json_streamed(tpl, context, &mut self, limits)?;
        Ok(self.pieces.concat() + &rest)
    }
}

/// The ways a test feeds `rows`: chunks of 1, 2 and 1000 rows, and output taken in pieces of
/// about 1 and 40 bytes.
fn feeds(rows: &[serde_json::Value]) -> Vec<(String, ChunkFeed)> {
    let mut feeds: Vec<(String, ChunkFeed)> = [1, 2, 1000]
        .into_iter()
        .map(|size| (format!("chunks of {size}"), ChunkFeed::new(rows, size)))
        .collect();
    for piece in [1, 40] {
        feeds.push((
            format!("chunks of 2, output in pieces of {piece}"),
            ChunkFeed::new(rows, 2).pieces(piece),
        ));
    }
    feeds
}

impl reporter_ports::ports::RowFeed for ChunkFeed {
    fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, reporter_ports::ports::RenderError> {
        assert!(!self.ended, "the feed was read past its end");
        let next = self.chunks.pop_front();
        self.ended = next.is_none();
        Ok(next)
    }

    fn output_piece_bytes(&self) -> Option<usize> {
        self.piece_bytes
    }

    fn output(&mut self, piece: String) -> Result<(), reporter_ports::ports::RenderError> {
        assert!(
            self.piece_bytes.is_some(),
            "output handed to a feed that takes none"
        );
        assert!(piece.ends_with('\n'), "a piece ends a line: {piece:?}");
        self.pieces.push(piece);
        Ok(())
    }
}

/// Every case whose template streams a table renders the same when that table's rows come
/// from a feed (in chunks of one, two and many rows) as when they are in the context.
#[test]
fn golden_corpus_streamed_renders_the_same() {
    let engine = Pongo2Engine::with_clock(Arc::new(Fixed));
    let limits = RenderLimits::default();
    let mut streamed = Vec::new();
    let mut failures = Vec::new();
    for case in cases() {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let tpl = std::fs::read_to_string(case.join("template.tpl")).unwrap();
        let Ok(Some(plan)) = engine.stream_plan(&tpl, &limits) else {
            continue;
        };
        let text = std::fs::read(case.join("data.json")).unwrap_or_else(|_| b"{}".to_vec());
        let whole = engine.render_json(&tpl, &text, &limits);
        let mut data: serde_json::Value = serde_json::from_slice(&text).unwrap();
        let rows = match data
            .get_mut(&plan.data_source)
            .and_then(|d| d.get_mut(&plan.table))
        {
            Some(t) => match std::mem::replace(t, serde_json::json!([])) {
                serde_json::Value::Array(rows) => rows,
                other => {
                    // Not a list: the streamed render must see the same value.
                    *t = other;
                    continue;
                }
            },
            None => Vec::new(),
        };
        let context = serde_json::to_vec(&data).unwrap();
        for (how, feed) in feeds(&rows) {
            let got = feed.render(&engine, &tpl, &context, &limits);
            if got != whole {
                failures.push(format!(
                    "{name} ({how}): streamed {got:?}\n  whole {whole:?}"
                ));
            }
        }
        streamed.push(name);
    }
    reporter_contract::figure!(
        "{} golden cases stream a table: {streamed:?}",
        streamed.len()
    );
    assert!(
        streamed.len() >= 5,
        "only {} cases stream a table: {streamed:?}",
        streamed.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Row semantics under streaming: each template streams `bank.accounts` and must render
/// exactly as with the rows in the context (field types, dates, nesting, escaping, the
/// original's helpers and filters on rows, loop state, macros and tags inside the loop).
#[test]
fn streamed_rows_read_as_context_rows() {
    let engine = Pongo2Engine::with_clock(Arc::new(Fixed));
    let limits = RenderLimits::default();
    let rows = serde_json::json!([
        {"id": 1, "holder": "Ana <b>&", "balance": 10.50, "debt": -3, "opened": "2024-01-02T03:04:05Z",
         "day": "2024-01-02", "tags": ["a", "b"], "meta": {"k": "v", "n": 2}, "none": null, "flag": true,
         "big": 12345678901234567890u64, "small": 0.000001},
        {"id": 2, "holder": "Bia", "balance": 1e21, "debt": 0, "opened": "2024-02-03T00:00:00+02:00",
         "day": "2024-02-03", "tags": [], "meta": {}, "none": null, "flag": false, "big": 1, "small": 1.5},
        {"id": 3, "holder": "Bia", "balance": 7, "debt": 4.25, "opened": "not a date",
         "day": "", "tags": ["c"], "meta": {"k": "w"}, "none": null, "flag": true, "big": -1, "small": 2}
    ]);
    let other = serde_json::json!([{"code": "x", "n": 1}, {"code": "y", "n": 2}]);
    let templates = [
        "{% for a in bank.accounts %}{{ a.id }};{{ a.holder }};{{ a.balance }};{{ a.debt }};{{ a.opened }};{{ a.day }};{{ a.tags }};{{ a.meta }};{{ a.none }};{{ a.flag }};{{ a.big }};{{ a.small }}\n{% endfor %}",
        "{% for a in bank.accounts %}{{ a }}|{{ a.meta.k }}|{{ a.tags.0 }}|{{ a.tags|length }}|{{ a|length }}\n{% endfor %}",
        "{% for a in bank.accounts %}{{ a.opened|date:\"2006-01-02 15:04\" }} {{ a.day|date:\"02/01/2006\" }} {{ a.balance|floatformat:2 }} {{ a.holder|upper|safe }} {{ a.holder|escape }}\n{% endfor %}",
        "{% for a in bank.accounts %}{{ forloop.Counter }}/{{ forloop.Counter0 }}/{{ forloop.First }} {% cycle \"odd\" \"even\" %} {% ifchanged a.holder %}new {{ a.holder }}{% endifchanged %}\n{% empty %}none{% endfor %}",
        "{% macro row(x) %}<{{ x.id }}:{{ x.holder }}>{% endmacro %}{% for a in bank.accounts %}{{ row(a) }}{% for t in a.tags %}[{{ t }}{{ forloop.Parentloop.Counter }}]{% endfor %}{% endfor %}",
        "{% for o in bank.other %}{{ o.code }}{% endfor %}|{% for a in bank.accounts %}{% set last = a.holder %}{% if a.balance > 8 %}{{ a.id }}{% elif a.flag %}f{% else %}-{% endif %}{% endfor %}|{{ last }}|{{ bank.other|length }}",
        "{% for a in bank.accounts %}{% with h = a.holder %}{{ h|lower }}{% endwith %} {{ a.balance + a.debt }} {{ a.id * 2 }} {% if \"a\" in a.tags %}has a{% endif %} {% if a.none %}x{% else %}nil{% endif %} {{ a.meta|length }}\n{% endfor %}",
        "{% for a in bank.accounts %}{% for k, v in a.meta %}{{ k }}={{ v }},{% endfor %};{% endfor %}",
        "{% autoescape off %}{% for a in bank.accounts %}{{ a.holder }}{% endfor %}{% endautoescape %}{% filter upper %}{% for o in bank.other %}{{ o.code }}{% endfor %}{% endfilter %}",
        "{% if bank.other %}{% for a in bank.accounts %}{{ a.id }}{% endfor %}{% endif %}",
        "{% for a in bank.accounts %}{% counter \"c\" %}{% endfor %}{% counter_show \"c\" %}",
        "{% for a in bank.accounts %}{{ a.day|add_day:1 }}{% endfor %}",
        // The number clean-up across the output's pieces, and the XML declaration (whose
        // clean-up depends on the text around it) before and after streamed lines.
        "{% for a in bank.accounts %}{{ a.id }}.50\n0.0{{ a.debt }}.00\n{{ a.balance }}\n1.1.0\n{% endfor %}",
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<r>{% for a in bank.accounts %}<v>{{ a.id }}.10</v>\n{% endfor %}</r>",
        "{% for a in bank.accounts %}{{ a.id }}.20\n{% endfor %}<?xml\nversion=\"1.0\"\n?>2.50\n",
        "{% for a in bank.accounts %}{% filter upper %}{{ a.holder }}\n{{ a.id }}.0{% endfilter %}\n{% endfor %}",
    ];
    let mut failures = Vec::new();
    for tpl in templates {
        match engine.stream_plan(tpl, &limits) {
            Ok(Some(p)) if p.data_source == "bank" && p.table == "accounts" => {}
            other => {
                failures.push(format!("{tpl}: plan {other:?}, expected bank.accounts"));
                continue;
            }
        }
        let whole = serde_json::json!({"bank": {"accounts": rows, "other": other}});
        let whole = engine.render_json(tpl, &serde_json::to_vec(&whole).unwrap(), &limits);
        let context = serde_json::json!({"bank": {"accounts": [], "other": other}});
        let context = serde_json::to_vec(&context).unwrap();
        for (how, feed) in feeds(rows.as_array().unwrap()) {
            let got = feed.render(&engine, tpl, &context, &limits);
            if got != whole {
                failures.push(format!(
                    "{tpl} ({how}):\n  streamed {got:?}\n  whole    {whole:?}"
                ));
            }
        }
        // No rows at all (and a data source the context lacks) read as an empty table.
        let mut feed = ChunkFeed::new(&[], 1);
        let empty = serde_json::json!({"bank": {"accounts": [], "other": other}});
        let want = engine.render_json(tpl, &serde_json::to_vec(&empty).unwrap(), &limits);
        let got = engine.render_json_streamed(tpl, &context, &mut feed, &limits);
        if got != want {
            failures.push(format!("{tpl} (no rows): streamed {got:?}, whole {want:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The output bound counts the pieces already handed out: a render whose output passes it
/// fails as the whole render does, however small each piece.
#[test]
fn the_output_bound_counts_the_pieces_handed_out() {
    let engine = Pongo2Engine::with_clock(Arc::new(Fixed));
    let limits = RenderLimits {
        max_output_bytes: 250,
        ..RenderLimits::default()
    };
    let tpl = "{% for a in bank.accounts %}{{ a.line }}\n{% endfor %}";
    let rows: Vec<serde_json::Value> = (0..3)
        .map(|_| serde_json::json!({"line": "x".repeat(99)}))
        .collect();
    let whole = serde_json::json!({"bank": {"accounts": rows}});
    let want = engine.render_json(tpl, &serde_json::to_vec(&whole).unwrap(), &limits);
    assert_eq!(
        want,
        Err(reporter_ports::ports::RenderError::OutputTooLarge(250))
    );
    let context = serde_json::to_vec(&serde_json::json!({"bank": {"accounts": []}})).unwrap();
    let mut feed = ChunkFeed::new(&rows, 1).pieces(10);
    let got = engine.render_json_streamed(tpl, &context, &mut feed, &limits);
    assert_eq!(got, want);
    // The first line was handed out when the second was written; the 199 bytes left in
    // the render's buffer fit the bound, the 299 written do not.
    assert_eq!(feed.pieces, vec![format!("{}\n", "x".repeat(99))]);
    // Pieces handed out before an XML declaration stopped them still count.
    let tpl = "{% for a in bank.accounts %}{{ a.line }}\n{% if a.x %}<?xml version=\"1.0\"?>\n{% endif %}{% endfor %}";
    let mut rows = rows;
    rows[1]["x"] = serde_json::json!(true);
    let whole = serde_json::json!({"bank": {"accounts": rows}});
    let want = engine.render_json(tpl, &serde_json::to_vec(&whole).unwrap(), &limits);
    assert_eq!(
        want,
        Err(reporter_ports::ports::RenderError::OutputTooLarge(250))
    );
    let got = ChunkFeed::new(&rows, 1)
        .pieces(10)
        .render(&engine, tpl, &context, &limits);
    assert_eq!(got, want);
}

/// Rows that are not objects read as the context reads them (a time-like string stays a
/// string; a list is a list).
#[test]
fn streamed_rows_that_are_not_objects_read_as_context_rows() {
    let engine = Pongo2Engine::with_clock(Arc::new(Fixed));
    let limits = RenderLimits::default();
    let tpl = "{% for a in bank.accounts %}{{ a }}|{{ a.0 }}|{{ a|length }};{% endfor %}";
    let rows =
        serde_json::json!(["2024-01-02T03:04:05Z", [1, "2024-01-02T03:04:05Z"], 7, null, {"k": 1}]);
    let whole = serde_json::json!({"bank": {"accounts": rows}});
    let want = engine.render_json(tpl, &serde_json::to_vec(&whole).unwrap(), &limits);
    let context = serde_json::to_vec(&serde_json::json!({"bank": {"accounts": []}})).unwrap();
    let mut feed = ChunkFeed::new(rows.as_array().unwrap(), 2);
    let got = engine.render_json_streamed(tpl, &context, &mut feed, &limits);
    assert_eq!(got, want);
}

/// Templates that need a table whole never stream it.
#[test]
fn tables_a_template_needs_whole_are_not_streamed() {
    let engine = Pongo2Engine::new();
    let limits = RenderLimits::default();
    for tpl in [
        "{% for a in bank.accounts %}{{ forloop.Last }}{% endfor %}",
        "{% for a in bank.accounts %}{{ forloop.Revcounter }}{% endfor %}",
        "{% for a in bank.accounts %}{{ forloop.Parentloop.Revcounter0 }}{% endfor %}",
        "{% for a in bank.accounts %}{% with f = forloop %}{{ f.Last }}{% endwith %}{% endfor %}",
        "{% for a in bank.accounts %}{% for t in a.tags %}{% with o = forloop.Parentloop %}{{ o.Revcounter }}{% endwith %}{% endfor %}{% endfor %}",
        "{% for a in bank.accounts %}{% for t in a.tags %}{% set o = forloop.Parentloop %}{{ o.Last }}{% endfor %}{% endfor %}",
        "{% macro m(l) %}{{ l.Last }}{% endmacro %}{% for a in bank.accounts %}{% for t in a.tags %}{{ m(forloop.Parentloop) }}{% endfor %}{% endfor %}",
        "{% for a in bank.accounts %}{{ a.id }}{% endfor %}{{ bank.accounts|length }}",
        "{% for a in bank.accounts %}{% endfor %}{% for a in bank.accounts %}{% endfor %}",
        "{% for a in bank.accounts reversed %}{{ a.id }}{% endfor %}",
        "{% for a in bank.accounts sorted %}{{ a.id }}{% endfor %}",
        "{% for x in bank.other %}{% for a in bank.accounts %}{{ a.id }}{% endfor %}{% endfor %}{{ bank.other.0 }}",
        "{% macro m() %}{% for a in bank.accounts %}{{ a.id }}{% endfor %}{% endmacro %}{{ m() }}",
        "{% for a in bank.accounts %}{{ a.id }}{% endfor %}{{ bank }}",
        "{% for a in bank.accounts %}{{ a.id }}{% endfor %}{{ bank[\"accounts\"] }}",
        "{% set bank = 1 %}{% for a in bank.accounts %}{{ a.id }}{% endfor %}",
        "{% for a in bank.accounts %}{{ a.id }}{% endfor %}{% calc bank.accounts.0.id + 1 %}",
        "{% for a in bank.accounts %}{{ a.id }}{% endfor %}{% sum_by bank.accounts by \"id\" %}",
        "{% for a in bank.accounts|slice:\":2\" %}{{ a.id }}{% endfor %}",
        "{% for a in bank.accounts %}{% calc forloop.Counter * 2 %}{% endfor %}",
    ] {
        assert_eq!(
            engine.stream_plan(tpl, &limits),
            Ok(None),
            "{tpl} must not stream"
        );
    }
    assert_eq!(
        engine.stream_plan(
            "{% for a in x.y %}{% endfor %}{% for b in bank.accounts %}{% endfor %}",
            &limits
        ),
        Ok(Some(reporter_ports::ports::StreamPlan {
            data_source: "x".into(),
            table: "y".into()
        })),
        "the first streamable table in the text"
    );
    assert!(matches!(
        engine.stream_plan("{% for a in %}", &limits),
        Err(reporter_ports::ports::RenderError::Syntax(_))
    ));
}
