//! The golden corpus of the template language (`adapters/pongo2/tests/golden`) through real
//! data sources: PostgreSQL, the MongoDB stand-in, and the file data source (JSON files).
//! For each case, its data is loaded into the backend (column types from the case's
//! `columns.json` hints or inferred, see `golden_corpus/columns.rs`), read back through the
//! backend's `DataSource` with exactly the case's mapped fields (as a report's extraction
//! does: every row carries every mapped field, `null` where the row has none), rendered,
//! and compared with the expected output or error.
//!
//! Every case runs on every backend except those in [`SKIPS`], each with its reason; a
//! listed case is still tried, and one that passes fails the test (the entry is stale).
//! A mapped table or field the loaded data lacks is what an upload would refuse: the case
//! fails unless listed. MongoDB needs no exception: hinted types are stored as their BSON
//! counterparts (Decimal128, UUID binary, dates) and come back in the printed form the
//! other backends give. It also has a hand-written case for what only it has (ObjectId
//! `_id`, millisecond dates, documents without a field). Skips with a printed reason without
//! `POSTGRES_URL` / `MONGODB_URI`; fails under `REPORTER_REQUIRE_SERVICES=1`.
#[path = "golden_corpus/columns.rs"]
mod columns;
#[path = "golden_corpus/files.rs"]
mod files;
#[path = "golden_corpus/mongo.rs"]
mod mongo;
#[path = "golden_corpus/postgres.rs"]
mod postgres;

use chrono::{DateTime, TimeZone, Utc};
use columns::{Hints, TableTypes};
use reporter_adapter_pongo2::Pongo2Engine;
use reporter_ports::clock::Clock;
use reporter_ports::datasource::DataSourceId;
use reporter_ports::ports::{DataSource, RenderLimits, TableQuery, TemplateEngine};
use reporter_ports::template::MappedFields;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

struct Fixed;
impl Clock for Fixed {
    fn now(&self) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2025, 6, 1, 10, 4, 5)
            .single()
            .unwrap_or_default()
    }
}

fn engine() -> Pongo2Engine {
    Pongo2Engine::with_clock(Arc::new(Fixed))
}

/// Where a case runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    Postgres,
    Mongo,
    Files,
}

const ALL: &[Backend] = &[Backend::Postgres, Backend::Mongo, Backend::Files];

/// A case that does not run on some backends, and why: `(case, backends, reason)`.
type Skip = (&'static str, &'static [Backend], &'static str);

/// Templates that do not parse read no data: `tests/golden.rs` checks their error.
const NO_PARSE: &str =
    "the template does not parse: no data is fetched (tests/golden.rs checks the error)";

/// The file data source takes flat rows only: a JSON object or array in a cell is refused.
const FLAT_FILES: &str =
    "a cell holds a JSON object or array; the file data source takes flat rows only";

/// The cases that do not run on a backend. Every other case runs on every backend.
const SKIPS: &[Skip] = &[
    ("banned_block", ALL, NO_PARSE),
    ("banned_extends", ALL, NO_PARSE),
    ("banned_import", ALL, NO_PARSE),
    ("banned_include", ALL, NO_PARSE),
    ("banned_ssi", ALL, NO_PARSE),
    ("comment_must_be_one_line", ALL, NO_PARSE),
    ("non_ascii_in_tag", ALL, NO_PARSE),
    ("schema_rewrite_catches_filter_args", ALL, NO_PARSE),
    ("tag_calc_as_must_end", ALL, NO_PARSE),
    ("tag_trailing_tokens_refused", ALL, NO_PARSE),
    ("unclosed_block", ALL, NO_PARSE),
    ("unknown_filter", ALL, NO_PARSE),
    ("unknown_tag", ALL, NO_PARSE),
    ("custom_where_sum_count", &[Backend::Files], FLAT_FILES),
    ("filter_random_one_item", &[Backend::Files], FLAT_FILES),
    ("filter_slice", &[Backend::Files], FLAT_FILES),
    ("filters_text", &[Backend::Files], FLAT_FILES),
    ("for_loops", &[Backend::Files], FLAT_FILES),
    ("logic_and_membership", &[Backend::Files], FLAT_FILES),
    ("value_types", &[Backend::Files], FLAT_FILES),
];

/// One golden case.
struct Case {
    name: String,
    template: String,
    data: Value,
    hints: Hints,
    /// The output, or the start of the error.
    expected: Result<String, String>,
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Option<T> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

fn cases() -> Vec<Case> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("adapters/pongo2/tests/golden");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("golden corpus")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("template.tpl").exists())
        .collect();
    dirs.sort();
    dirs.into_iter()
        .map(|d| {
            let expected = match std::fs::read_to_string(d.join("expected.txt")) {
                Ok(s) => Ok(s),
                Err(_) => Err(std::fs::read_to_string(d.join("error.txt"))
                    .expect("expected.txt or error.txt")
                    .trim_end()
                    .to_owned()),
            };
            Case {
                name: d.file_name().expect("name").to_string_lossy().into_owned(),
                template: std::fs::read_to_string(d.join("template.tpl")).expect("template"),
                data: read_json(&d.join("data.json")).unwrap_or_else(|| json!({})),
                hints: read_json(&d.join("columns.json")).unwrap_or_default(),
                expected,
            }
        })
        .collect()
}

/// One table to load: every row has every column (`null` where it had none).
struct Table {
    name: String,
    rows: Vec<Map<String, Value>>,
    types: TableTypes,
}

/// A backend: loads the tables of one data source of one case.
trait Loader {
    async fn load(&mut self, ds: &str, tables: &[Table]) -> Result<Arc<dyn DataSource>, String>;
    /// Removes what the loads created.
    async fn finish(self);
}

/// Why a case did not pass.
enum Outcome {
    Passed,
    /// The backend could not take the data, or an upload would refuse the template.
    NotRunnable(String),
    Failed(String),
}

/// The tables of `ds` the case maps, ready to load.
fn tables_of(
    case: &Case,
    ds: &str,
    mapped: &BTreeMap<String, std::collections::BTreeSet<String>>,
) -> Result<Vec<Table>, String> {
    let Some(Value::Object(ds_tables)) = case.data.get(ds) else {
        return Err(format!("maps data source {ds}, which data.json lacks"));
    };
    let mut out = Vec::new();
    for (name, fields) in mapped {
        let Some(Value::Array(rows)) = ds_tables.get(name) else {
            return Err(format!("maps table {ds}.{name}, which data.json lacks"));
        };
        let mut objects = rows
            .iter()
            .map(|r| r.as_object().cloned())
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| format!("{ds}.{name} has rows that are not objects"))?;
        let columns = columns::columns_of(&objects, fields);
        let types = columns::table_types(&case.hints, ds, name, &columns)?;
        let names: Vec<String> = columns.into_keys().collect();
        for row in &mut objects {
            for c in &names {
                row.entry(c.clone()).or_insert(Value::Null);
            }
        }
        out.push(Table {
            name: name.clone(),
            rows: objects,
            types,
        });
    }
    Ok(out)
}

/// Reads the mapped fields of `source` as a report's extraction does.
async fn extract(
    ds: &str,
    source: &dyn DataSource,
    tables: &BTreeMap<String, std::collections::BTreeSet<String>>,
) -> Result<Value, Outcome> {
    let schema = source
        .schema()
        .await
        .map_err(|e| Outcome::Failed(format!("schema of {ds}: {e}")))?;
    let mut out = Map::new();
    for (table, fields) in tables {
        let Some(t) = schema.table(table) else {
            return Err(Outcome::NotRunnable(format!(
                "the backend has no table {ds}.{table}"
            )));
        };
        if let Some(f) = fields.iter().find(|f| !t.fields.contains(f)) {
            return Err(Outcome::NotRunnable(format!(
                "the backend has no field {ds}.{table}.{f}"
            )));
        }
        let query = TableQuery {
            table: table.clone(),
            fields: fields.iter().cloned().collect(),
            filters: BTreeMap::new(),
            max_rows: 10_000,
        };
        let rows = source
            .query(&query)
            .await
            .map_err(|e| Outcome::Failed(format!("query {ds}.{table}: {e}")))?;
        out.insert(
            table.clone(),
            Value::Array(rows.into_iter().map(Value::Object).collect()),
        );
    }
    Ok(Value::Object(out))
}

async fn run_case(case: &Case, loader: &mut impl Loader) -> Outcome {
    let mapped: MappedFields = match engine().analyze(&case.template, &RenderLimits::default()) {
        Ok(a) => a.mapped_fields,
        Err(e) => return Outcome::NotRunnable(format!("does not parse: {e}")),
    };
    let mut data = Map::new();
    for (ds, tables) in &mapped {
        let loaded = match tables_of(case, ds, tables) {
            Ok(t) => t,
            Err(e) => return Outcome::NotRunnable(e),
        };
        let source = match loader.load(ds, &loaded).await {
            Ok(s) => s,
            Err(e) => return Outcome::NotRunnable(format!("loading {ds}: {e}")),
        };
        match extract(ds, source.as_ref(), tables).await {
            Ok(v) => data.insert(ds.clone(), v),
            Err(o) => return o,
        };
    }
    let got = engine()
        .render(
            &case.template,
            &Value::Object(data),
            &RenderLimits::default(),
        )
        .map_err(|e| e.to_string());
    let same = match (&got, &case.expected) {
        (Ok(out), Ok(want)) => out == want,
        (Err(e), Err(want)) => e.starts_with(want.as_str()),
        _ => false,
    };
    if same {
        Outcome::Passed
    } else {
        Outcome::Failed(format!("got {got:?}\n  expected {:?}", case.expected))
    }
}

/// Runs the corpus on one backend; returns the failures.
async fn run_corpus(backend: Backend, mut loader: impl Loader) -> Vec<String> {
    let started = std::time::Instant::now();
    let mut failures = Vec::new();
    let mut passed = 0;
    let cases = cases();
    assert!(cases.len() >= 50, "the corpus has {} cases", cases.len());
    for (name, _, _) in SKIPS {
        assert!(
            cases.iter().any(|c| c.name == *name),
            "SKIPS names {name}, which is not a case"
        );
    }
    for case in &cases {
        let skip = SKIPS
            .iter()
            .find(|(name, on, _)| *name == case.name && on.contains(&backend));
        let outcome = run_case(case, &mut loader).await;
        match (outcome, skip) {
            (Outcome::Passed, None) => passed += 1,
            (Outcome::Passed, Some(_)) => failures.push(format!(
                "{}: passes on {backend:?}; remove it from SKIPS",
                case.name
            )),
            (Outcome::NotRunnable(e) | Outcome::Failed(e), Some((_, _, why))) => {
                println!("{}: skipped on {backend:?} ({why}): {e}", case.name);
            }
            (Outcome::NotRunnable(e) | Outcome::Failed(e), None) => {
                failures.push(format!("{}: {e}", case.name));
            }
        }
    }
    loader.finish().await;
    println!(
        "{passed} of {} golden cases passed through {backend:?} in {:?}",
        cases.len(),
        started.elapsed()
    );
    failures
}

#[tokio::test]
async fn golden_corpus_through_postgresql() {
    let Some(url) = reporter_contract::services::service_url("POSTGRES_URL", "PostgreSQL") else {
        return;
    };
    let failures = run_corpus(Backend::Postgres, postgres::Postgres::new(url)).await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn golden_corpus_through_mongodb() {
    let Some(uri) = reporter_contract::services::service_url("MONGODB_URI", "MongoDB") else {
        return;
    };
    let loader = mongo::Mongo::connect(&uri).await.expect("MongoDB client");
    let failures = run_corpus(Backend::Mongo, loader).await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn golden_corpus_through_json_files() {
    let loader = files::Files::new().expect("temporary directory");
    let failures = run_corpus(Backend::Files, loader).await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// MongoDB hands templates what the original's MongoDB source does: `_id` as hex, dates as
/// Go times, nested documents as maps, Decimal128 as text.
#[tokio::test]
async fn mongodb_values_reach_templates_as_in_the_original() {
    use mongodb::bson::{Bson, DateTime as BsonDate, doc, oid::ObjectId};
    let Some(uri) = reporter_contract::services::service_url("MONGODB_URI", "MongoDB") else {
        return;
    };
    let client = mongodb::Client::with_uri_str(&uri).await.expect("client");
    let db_name = reporter_contract::services::unique_name("golden_mongo");
    let db = client.database(&db_name);
    let oid = ObjectId::parse_str("65f1a2b3c4d5e6f708192a3b").expect("oid");
    db.collection::<mongodb::bson::Document>("clients")
        .insert_many([
            doc! {
                "_id": oid,
                "name": "Ana <Silva>",
                "since": BsonDate::from_millis(1_748_772_000_500),
                "balance": Bson::Decimal128("1250.50".parse().expect("decimal")),
                "address": { "city": "São Paulo", "zip": "01310-100" },
                "visits": 3_i32,
            },
            doc! { "name": "Bruno", "since": BsonDate::from_millis(0), "visits": 10_i64 },
        ])
        .await
        .expect("insert");
    let source = reporter_adapter_mongo::MongoDataSource::new(
        DataSourceId::parse("crm").expect("id"),
        db.clone(),
    );
    let template = "{% for c in crm.clients %}{{ c._id|length }}|{{ c.name }}|{{ c.since }}|{{ c.since|date:\"2006-01-02\" }}|{{ c.balance }}|{{ c.address.city }}|{{ c.address.zip|replace:\"-:\" }}|{{ c.visits + 1 }}\n{% endfor %}{{ crm.clients.0._id }}";
    let mapped = engine()
        .analyze(template, &RenderLimits::default())
        .expect("analyze")
        .mapped_fields;
    let fields: Vec<String> = mapped["crm"]["clients"].iter().cloned().collect();
    assert_eq!(
        fields,
        ["_id", "address", "balance", "name", "since", "visits"]
    );
    let rows = source
        .query(&TableQuery {
            table: "clients".into(),
            fields,
            filters: BTreeMap::new(),
            max_rows: 100,
        })
        .await
        .expect("query");
    let data = json!({"crm": {"clients": rows}});
    let out = engine()
        .render(template, &data, &RenderLimits::default())
        .expect("render");
    if std::env::var("REPORTER_E2E_KEEP_DATABASES").as_deref() != Ok("1") {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), db.drop()).await;
    }
    assert_eq!(
        out,
        "24|Ana &lt;Silva&gt;|2025-06-01 10:00:00.5 +0000 UTC|2025-06-01|1250.5|São Paulo|01310100|4\n\
         24|Bruno|1970-01-01 00:00:00 +0000 UTC|1970-01-01||||11\n\
         65f1a2b3c4d5e6f708192a3b"
    );
}
