//! The port contract suites against the filesystem adapters, plus adapter-specific behaviour:
//! file loading and validation, CSV typing, file-order rows, on-disk storage layout, and the
//! example data set shipped in `examples/`.
use bytes::Bytes;
use reporter_adapter_fs::{FileDataSource, LocalObjectStorage};
use reporter_contract::datasource::{PEOPLE_TABLE, people_csv, people_json};
use reporter_ports::StoreError;
use reporter_ports::datasource::{DataSourceId, DataSourceKind};
use reporter_ports::ports::{DataSource, DataSourceError, ObjectStorage, TableQuery};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

fn id(raw: &str) -> DataSourceId {
    DataSourceId::parse(raw).expect("valid data source id")
}

/// A fresh directory under `parent` on every call.
fn fresh_dir(parent: &Path, counter: &AtomicUsize) -> PathBuf {
    let dir = parent.join(format!("d{}", counter.fetch_add(1, Ordering::Relaxed)));
    std::fs::create_dir_all(&dir).expect("create dir");
    dir
}

fn write(dir: &Path, name: &str, content: &str) {
    std::fs::write(dir.join(name), content).expect("write fixture file");
}

fn open(dir: &Path) -> Result<FileDataSource, DataSourceError> {
    FileDataSource::open(id("src"), dir.to_path_buf())
}

fn all_rows(source: &FileDataSource, table: &str, fields: &[&str]) -> Vec<Value> {
    let q = TableQuery {
        table: table.to_owned(),
        fields: fields.iter().map(|f| (*f).to_owned()).collect(),
        filters: BTreeMap::new(),
        max_rows: 10_000,
    };
    futures_block_on(source.query(&q))
        .expect("query")
        .into_iter()
        .map(Value::Object)
        .collect()
}

fn futures_block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(f)
}

// ---------------------------------------------------------------- contract suites

reporter_contract::object_storage_contract!(mod object_storage, |check| async {
    let parent = tempfile::tempdir().expect("tempdir");
    let dir = fresh_dir(parent.path(), &AtomicUsize::new(0));
    check(&LocalObjectStorage::new(dir)).await
});

reporter_contract::data_source_contract!(mod data_source_json_fixture, |check| async {
    let parent = tempfile::tempdir().expect("tempdir");
    let dir = fresh_dir(parent.path(), &AtomicUsize::new(0));
    write(&dir, &format!("{PEOPLE_TABLE}.json"), &people_json());
    // A second table checks that tables come sorted.
    write(&dir, "audit.csv", "event,at\nloaded,2024-01-01\n");
    check(&open(&dir).expect("open json fixture")).await
});

reporter_contract::data_source_contract!(mod data_source_csv_fixture, |check| async {
    let parent = tempfile::tempdir().expect("tempdir");
    let dir = fresh_dir(parent.path(), &AtomicUsize::new(0));
    write(&dir, &format!("{PEOPLE_TABLE}.csv"), &people_csv());
    write(&dir, "zeta.json", r#"[{"k": 1}]"#);
    check(&open(&dir).expect("open csv fixture")).await
});

// ---------------------------------------------------------------- FileDataSource

#[test]
fn descriptor_names_the_directory() {
    let parent = tempfile::tempdir().expect("tempdir");
    let dir = parent.path().join("ledger");
    std::fs::create_dir(&dir).expect("mkdir");
    let source = FileDataSource::open(id("ledger_src"), dir).expect("open empty dir");
    let d = source.descriptor();
    assert_eq!(d.id.as_str(), "ledger_src");
    assert_eq!(d.external_name, "ledger");
    assert_eq!(d.kind, DataSourceKind::File);
    let schema = futures_block_on(source.schema()).expect("schema");
    assert!(schema.tables.is_empty(), "an empty directory has no tables");
}

#[test]
fn json_rows_keep_file_order_and_missing_keys_read_null() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "t.json",
        r#"[{"b": 2, "a": "z"}, {"a": "a"}, {"c": true, "a": "m"}]"#,
    );
    let source = open(dir.path()).expect("open");
    let schema = futures_block_on(source.schema()).expect("schema");
    assert_eq!(schema.tables[0].fields, ["a", "b", "c"]);
    assert_eq!(
        all_rows(&source, "t", &["a", "c"]),
        [
            json!({"a": "z", "c": null}),
            json!({"a": "a", "c": null}),
            json!({"a": "m", "c": true}),
        ]
    );
    assert_eq!(
        all_rows(&source, "t", &[]),
        [json!({}), json!({}), json!({})],
        "an empty projection answers empty rows"
    );
}

#[test]
fn csv_cells_are_typed_per_column() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "t.csv",
        "int,dec,money,flag,code,text,blank\n\
         1,12.5,1250.00,true,0042,hello,\n\
         -20,0.1,99.95,false,7,\"a, b\",\n\
         ,,,,,,\n",
    );
    let source = open(dir.path()).expect("open");
    let rows = all_rows(
        &source,
        "t",
        &["int", "dec", "money", "flag", "code", "text", "blank"],
    );
    assert_eq!(
        rows,
        [
            json!({"int": 1, "dec": 12.5, "money": "1250.00", "flag": true, "code": "0042", "text": "hello", "blank": null}),
            json!({"int": -20, "dec": 0.1, "money": "99.95", "flag": false, "code": "7", "text": "a, b", "blank": null}),
            json!({"int": null, "dec": null, "money": null, "flag": null, "code": null, "text": null, "blank": null}),
        ]
    );
}

#[test]
fn a_leading_byte_order_mark_is_skipped() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "a.csv", "\u{feff}id,name\n1,x\n");
    write(dir.path(), "b.json", "\u{feff}[{\"id\": 2}]");
    let source = open(dir.path()).expect("open");
    assert_eq!(
        all_rows(&source, "a", &["id", "name"]),
        [json!({"id": 1, "name": "x"})]
    );
    assert_eq!(all_rows(&source, "b", &["id"]), [json!({"id": 2})]);
}

#[test]
fn mixed_types_never_match_and_numbers_compare_numerically() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "t.json",
        r#"[{"v": 10}, {"v": "10"}, {"v": 10.0}, {"v": null}, {"v": true}]"#,
    );
    let source = open(dir.path()).expect("open");
    let count = |cond: Value| {
        let q = TableQuery {
            table: "t".into(),
            fields: vec!["v".into()],
            filters: BTreeMap::from([(
                "v".to_owned(),
                serde_json::from_value(cond).expect("condition"),
            )]),
            max_rows: 100,
        };
        futures_block_on(source.query(&q)).expect("query").len()
    };
    assert_eq!(count(json!({"eq": [10]})), 2, "10 and 10.0");
    assert_eq!(count(json!({"eq": ["10"]})), 1);
    assert_eq!(count(json!({"gte": [5]})), 2);
    assert_eq!(count(json!({"gte": ["0"]})), 1);
    assert_eq!(count(json!({"eq": [true]})), 1);
    assert_eq!(count(json!({"nin": [10]})), 3);
}

#[test]
fn bad_files_are_refused_naming_the_file() {
    let cases: &[(&str, &str, &str)] = &[
        ("broken.json", "[{\"a\": 1,]", "invalid JSON"),
        ("scalar.json", "{\"a\": 1}", "array"),
        (
            "mixed.json",
            "[{\"a\": 1}, 2]",
            "row 1 is not a JSON object",
        ),
        ("nested.json", "[{\"a\": {\"b\": 1}}]", "nested"),
        ("ragged.csv", "a,b\n1,2\n3\n", "invalid CSV"),
        ("dupcol.csv", "a,b,a\n1,2,3\n", "repeats column"),
        ("emptycol.csv", "a,,c\n1,2,3\n", "empty"),
        ("empty.csv", "", "header"),
        ("bad name.json", "[]", "not an identifier"),
        ("9lives.csv", "a\n1\n", "not an identifier"),
    ];
    for (name, content, needle) in cases {
        let dir = tempfile::tempdir().expect("tempdir");
        write(dir.path(), name, content);
        let err = open(dir.path()).expect_err(name);
        let DataSourceError::Unavailable(message) = &err else {
            panic!("{name}: expected Unavailable, got {err:?}");
        };
        assert!(message.contains(name), "{name}: {message}");
        assert!(message.contains(needle), "{name}: {message}");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("latin1.csv"), b"a\n\xff\xfe\n").expect("write bytes");
    let err = open(dir.path()).expect_err("not UTF-8");
    assert!(
        matches!(&err, DataSourceError::Unavailable(m) if m.contains("latin1.csv") && m.contains("cannot read")),
        "{err:?}"
    );
}

#[test]
fn duplicate_table_names_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "t.json", "[]");
    write(dir.path(), "t.csv", "a\n1\n");
    let err = open(dir.path()).expect_err("duplicate table");
    let message = err.to_string();
    assert!(
        message.contains("t.json") && message.contains("t.csv"),
        "{message}"
    );
    assert!(message.contains("already defined"), "{message}");
}

#[test]
fn other_files_are_ignored_and_missing_directories_fail() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "README.md", "# not a table");
    write(dir.path(), ".hidden.json", "not json");
    write(dir.path(), "upper.JSON", "not json");
    std::fs::create_dir(dir.path().join("sub.json")).expect("mkdir");
    write(dir.path(), "ok.json", "[]");
    let source = open(dir.path()).expect("open");
    let schema = futures_block_on(source.schema()).expect("schema");
    let names: Vec<&str> = schema.tables.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["ok"]);

    let missing = dir.path().join("nope");
    let err = open(&missing).expect_err("missing dir");
    assert!(
        matches!(&err, DataSourceError::Unavailable(m) if m.contains("nope")),
        "{err:?}"
    );
    let file = dir.path().join("README.md");
    assert!(matches!(open(&file), Err(DataSourceError::Unavailable(_))));
}

// ---------------------------------------------------------------- LocalObjectStorage

#[tokio::test]
async fn storage_layout_is_a_plain_tree_with_sidecars() {
    let root = tempfile::tempdir().expect("tempdir");
    let storage = LocalObjectStorage::new(root.path());
    storage
        .put("reports/t1/r.csv", Bytes::from_static(b"a,b\n"), "text/csv")
        .await
        .expect("put");
    let object = root.path().join("reports/t1/r.csv");
    assert_eq!(std::fs::read(&object).expect("object file"), b"a,b\n");
    let meta: Value = serde_json::from_slice(
        &std::fs::read(root.path().join("reports/t1/r.csv.meta")).expect("sidecar"),
    )
    .expect("sidecar json");
    assert_eq!(meta, json!({"content_type": "text/csv"}));
    let leftovers: Vec<String> = std::fs::read_dir(root.path().join("reports/t1"))
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");

    // A missing sidecar falls back to the default type.
    std::fs::remove_file(root.path().join("reports/t1/r.csv.meta")).expect("rm sidecar");
    let got = storage
        .get("reports/t1/r.csv")
        .await
        .expect("get")
        .expect("present");
    assert_eq!(got.content_type, reporter_adapter_fs::DEFAULT_CONTENT_TYPE);

    storage.delete("reports/t1/r.csv").await.expect("delete");
    assert!(!object.exists());
}

#[tokio::test]
async fn storage_rejects_keys_that_collide_with_its_own_files() {
    let root = tempfile::tempdir().expect("tempdir");
    let storage = LocalObjectStorage::new(root.path());
    for key in ["a.meta", "dir.meta/x", ".hidden", "a/.tmp"] {
        let put = storage
            .put(key, Bytes::from_static(b"x"), "text/plain")
            .await;
        assert!(
            matches!(&put, Err(StoreError::Unavailable(m)) if m.contains("invalid object key")),
            "{key}: {put:?}"
        );
    }
    // An object in the way of a deeper key, and a directory in the way of an object.
    storage
        .put("x", Bytes::from_static(b"1"), "text/plain")
        .await
        .expect("put x");
    assert!(matches!(
        storage
            .put("x/y", Bytes::from_static(b"2"), "text/plain")
            .await,
        Err(StoreError::Unavailable(_))
    ));
    assert_eq!(storage.get("x/y").await.expect("get through a file"), None);
    storage.delete("x/y").await.expect("delete through a file");
}

#[tokio::test]
async fn storage_check_requires_a_writable_directory() {
    let parent = tempfile::tempdir().expect("tempdir");
    let missing = LocalObjectStorage::new(parent.path().join("missing"));
    assert!(matches!(
        missing.check().await,
        Err(StoreError::Unavailable(_))
    ));
    let file = parent.path().join("file");
    std::fs::write(&file, b"x").expect("write");
    assert!(matches!(
        LocalObjectStorage::new(file).check().await,
        Err(StoreError::Unavailable(_))
    ));
    let ok = LocalObjectStorage::new(parent.path());
    ok.check().await.expect("check");
    ok.check().await.expect("check twice");
    let entries = std::fs::read_dir(parent.path()).expect("list").count();
    assert_eq!(entries, 1, "check must leave no probe behind");
}

// ---------------------------------------------------------------- example data set

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn cents(amount: &Value) -> i64 {
    let text = amount
        .as_str()
        .unwrap_or_else(|| panic!("money must be a string: {amount}"));
    let (units, frac) = text
        .split_once('.')
        .unwrap_or_else(|| panic!("money needs two decimals: {text}"));
    assert_eq!(frac.len(), 2, "money needs two decimals: {text}");
    let units: i64 = units.parse().expect("units");
    let frac: i64 = frac.parse().expect("cents");
    units * 100 + frac
}

#[test]
fn example_bank_data_set_loads_with_the_documented_schema() {
    let source = FileDataSource::open(id("bank"), examples().join("data/bank")).expect("open bank");
    assert_eq!(source.descriptor().external_name, "bank");
    let schema = futures_block_on(source.schema()).expect("schema");
    let tables: Vec<(&str, Vec<&str>)> = schema
        .tables
        .iter()
        .map(|t| {
            (
                t.name.as_str(),
                t.fields.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        tables,
        [
            (
                "accounts",
                vec![
                    "account_id",
                    "branch",
                    "currency",
                    "holder_name",
                    "opened_on"
                ]
            ),
            ("balances", vec!["account_id", "as_of", "balance"]),
            (
                "transactions",
                vec![
                    "account_id",
                    "amount",
                    "booked_on",
                    "category",
                    "currency",
                    "direction",
                    "transaction_id"
                ]
            ),
        ]
    );

    let accounts = all_rows(&source, "accounts", &["account_id", "currency"]);
    let transactions = all_rows(
        &source,
        "transactions",
        &["account_id", "amount", "currency", "direction", "booked_on"],
    );
    let balances = all_rows(&source, "balances", &["account_id", "as_of", "balance"]);
    assert_eq!(accounts.len(), 7);
    assert_eq!(transactions.len(), 32);
    assert_eq!(balances.len(), 14);

    let currency: BTreeMap<&str, &str> = accounts
        .iter()
        .map(|a| {
            (
                a["account_id"].as_str().expect("id"),
                a["currency"].as_str().expect("ccy"),
            )
        })
        .collect();
    let mut net: BTreeMap<&str, i64> = BTreeMap::new();
    let mut previous = "";
    for t in &transactions {
        let account = t["account_id"].as_str().expect("account");
        assert_eq!(
            Some(&t["currency"].as_str().expect("ccy")),
            currency.get(account)
        );
        let booked = t["booked_on"].as_str().expect("date");
        assert!(booked >= previous, "transactions are in booking order");
        previous = booked;
        let signed = match t["direction"].as_str() {
            Some("credit") => cents(&t["amount"]),
            Some("debit") => -cents(&t["amount"]),
            other => panic!("bad direction {other:?}"),
        };
        *net.entry(account).or_default() += signed;
    }
    let balance = |account: &str, as_of: &str| {
        balances
            .iter()
            .find(|b| b["account_id"] == account && b["as_of"] == as_of)
            .map(|b| cents(&b["balance"]))
            .unwrap_or_else(|| panic!("no balance for {account} at {as_of}"))
    };
    for account in currency.keys() {
        assert_eq!(
            balance(account, "2023-12-31") + net.get(account).copied().unwrap_or(0),
            balance(account, "2024-03-31"),
            "{account}: closing = opening + credits - debits"
        );
    }
}

/// Every file below `dir`.
fn files_below(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .expect("a directory")
        .flatten()
        .flat_map(|e| {
            let path = e.path();
            if path.is_dir() {
                files_below(&path)
            } else {
                vec![path]
            }
        })
        .collect()
}

/// An aborted or dropped upload removes its temporary file: only the committed object and
/// its sidecar are left.
#[test]
fn abandoned_uploads_leave_no_temporary_file() {
    futures_block_on(async {
        let dir = tempfile::tempdir().expect("tempdir");
        let storage = LocalObjectStorage::new(dir.path());
        for end in ["commit", "abort", "drop"] {
            let mut upload = storage
                .begin_put("r/artifact.csv", "text/csv")
                .await
                .expect("begin")
                .expect("fs writes in pieces");
            upload
                .write(Bytes::from(end.as_bytes().to_vec()))
                .await
                .expect("write");
            match end {
                "commit" => drop(upload.commit().await.expect("commit")),
                "abort" => upload.abort().await,
                _ => drop(upload),
            }
        }
        let mut left: Vec<String> = files_below(dir.path())
            .iter()
            .map(|p| {
                p.strip_prefix(dir.path())
                    .expect("below")
                    .display()
                    .to_string()
            })
            .collect();
        left.sort();
        assert_eq!(left, ["r/artifact.csv", "r/artifact.csv.meta"]);
        let got = storage
            .get("r/artifact.csv")
            .await
            .expect("get")
            .expect("present");
        assert_eq!(got.bytes.as_ref(), b"commit");
    });
}
