//! SQL extension of the [`DataSource`] contract: what every SQL source (PostgreSQL,
//! MySQL/MariaDB, SQL Server) must show beyond the people fixture, run against its real
//! server.
//!
//! # Fixture
//! The caller implements [`SqlFixture`] over a fresh, empty database of its server: it runs
//! statements there ([`SqlFixture::execute`]; the checks write portable SQL — `integer`,
//! `decimal(12,2)`, `varchar(50)`, `date`, multi-row `VALUES` — and quote names with
//! [`SqlFixture::quote`]) and builds sources over it ([`SqlFixture::source`]) whose default
//! schema is where those statements create tables.
//!
//! # What is checked
//! - hostile table and column names (quotes, backticks, brackets, a semicolon, spaces) are
//!   one identifier each: listed, projected and filtered like any other;
//! - each filter operator on typed columns: decimals compared exactly (numbers or decimal
//!   strings), text with NULLs (`eq [null]`, `nin` letting NULL through unless listed), dates,
//!   values of a JSON type the column never equals matching nothing, values the column type
//!   cannot take (a bad date or decimal) refused with `InvalidFilter`;
//! - a stale schema recovers: a query on a column or table dropped since discovery fails with
//!   `Unavailable`, and the next query sees the new schema without a restart;
//! - the row limit on a larger table: `RowLimit(max_rows)` past it, exactly `max_rows` rows
//!   allowed, an empty projection counted like any other.
use reporter_ports::ports::{DataSource, DataSourceError, Row};
use serde_json::{Value, json};

/// A fresh database of a real SQL server, and sources over it.
pub trait SqlFixture: Sync {
    type Source: DataSource;

    /// A new source over the fixture database (it discovers the schema on first use).
    fn source(&self) -> Self::Source;

    /// Runs `sql` (DDL or DML, one or more statements) in the fixture database; panics on
    /// an error.
    fn execute(&self, sql: &str) -> impl Future<Output = ()> + Send;

    /// `ident` quoted as this server quotes identifiers (for the checks' own statements).
    fn quote(&self, ident: &str) -> String;
}

/// The SQL contract: hostile identifiers, each operator on typed columns, stale-schema
/// recovery, the row limit on a larger table.
///
/// `sql_data_source_contract!(mod <name>, |check| <future>)` emits module `<name>` with one
/// `#[tokio::test]` per check; the future runs `check(&fixture)` on a fresh database.
#[macro_export]
macro_rules! sql_data_source_contract {
    (mod $m:ident, |$check:ident| $run:expr) => {
        $crate::contract_module!(
            $m,
            sql,
            |$check| $run,
            [
                hostile_identifiers_are_quoted,
                each_operator_on_typed_columns,
                a_stale_schema_recovers,
                row_limit_on_a_larger_table,
            ]
        );
    };
}

use crate::fixtures::table_query as query;

/// The integer `field` of each row, sorted.
fn ints(rows: &[Row], field: &str) -> Vec<i64> {
    let mut ids: Vec<i64> = rows
        .iter()
        .map(|r| {
            r.get(field)
                .and_then(Value::as_i64)
                .unwrap_or_else(|| panic!("row without integer {field}: {r:?}"))
        })
        .collect();
    ids.sort_unstable();
    ids
}

/// Ids of the `ledger` rows `filters` select.
async fn ledger_ids<S: DataSource>(source: &S, filters: Value) -> Vec<i64> {
    let rows = source
        .query(&query("ledger", &["id"], filters.clone(), 100))
        .await
        .unwrap_or_else(|e| panic!("{filters}: {e}"));
    ints(&rows, "id")
}

/// `ledger`: id integer, amount decimal(12,2), label varchar(50), day date, with NULLs.
async fn create_ledger<F: SqlFixture>(fx: &F) {
    fx.execute(
        "CREATE TABLE ledger (id integer NOT NULL, amount decimal(12,2), \
         label varchar(50), day date)",
    )
    .await;
    fx.execute(
        "INSERT INTO ledger (id, amount, label, day) VALUES \
         (1, 10.10, 'a', '2024-01-01'), (2, 20.00, NULL, '2024-02-01'), \
         (3, 30.50, 'c', NULL)",
    )
    .await;
}

/// A table and a column named with every quoting character of the three servers, a
/// semicolon and spaces: each is one identifier, listed, projected and filtered.
pub async fn hostile_identifiers_are_quoted<F: SqlFixture>(fx: &F) {
    let table = "t\"a`b]c; drop x";
    let column = "c\"o`l]; --";
    fx.execute(&format!(
        "CREATE TABLE {} (id integer NOT NULL, {} varchar(50))",
        fx.quote(table),
        fx.quote(column)
    ))
    .await;
    fx.execute(&format!(
        "INSERT INTO {} (id, {}) VALUES (1, 'x'), (2, 'y')",
        fx.quote(table),
        fx.quote(column)
    ))
    .await;
    let source = fx.source();
    let schema = source.schema().await.expect("schema");
    let listed = schema
        .table(table)
        .unwrap_or_else(|| panic!("{table:?} listed: {schema:?}"));
    assert_eq!(listed.fields, vec![column.to_owned(), "id".to_owned()]);
    let rows = source
        .query(&query(
            table,
            &["id", column],
            json!({column: {"eq": ["y"]}}),
            10,
        ))
        .await
        .expect("a hostile name is just a name");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].get(column), Some(&json!("y")));
    assert_eq!(rows[0].get("id"), Some(&json!(2)));
    let unknown = source
        .query(&query(table, &["id; --"], json!({}), 10))
        .await;
    assert!(
        matches!(unknown, Err(DataSourceError::UnknownField { .. })),
        "{unknown:?}"
    );
}

/// Every operator on decimal, text and date columns, NULLs, mixed types, refused values.
pub async fn each_operator_on_typed_columns<F: SqlFixture>(fx: &F) {
    create_ledger(fx).await;
    let s = fx.source();
    for (filters, want) in [
        (json!({"amount": {"eq": ["10.10"]}}), vec![1]),
        (json!({"amount": {"eq": [10.1]}}), vec![1]),
        (json!({"amount": {"in": [20, "30.50"]}}), vec![2, 3]),
        (json!({"amount": {"nin": ["10.1"]}}), vec![2, 3]),
        (json!({"amount": {"gt": [20]}}), vec![3]),
        (json!({"amount": {"gte": ["20.00"]}}), vec![2, 3]),
        (json!({"amount": {"lt": [20]}}), vec![1]),
        (json!({"amount": {"lte": [20]}}), vec![1, 2]),
        (
            json!({"amount": {"between": ["10.00", "20.00"]}}),
            vec![1, 2],
        ),
        (json!({"label": {"eq": [null]}}), vec![2]),
        (json!({"label": {"in": ["a", null]}}), vec![1, 2]),
        (json!({"label": {"nin": ["a"]}}), vec![2, 3]),
        (json!({"label": {"nin": ["a", null]}}), vec![3]),
        (json!({"label": {"in": ["a", 5]}}), vec![1]),
        (json!({"id": {"eq": ["1"]}}), vec![]),
        (json!({"id": {"between": [2, 3]}}), vec![2, 3]),
        (json!({"day": {"gte": ["2024-01-15"]}}), vec![2]),
        (json!({"day": {"eq": [null]}}), vec![3]),
        (
            json!({"day": {"between": ["2023-12-31", "2024-01-31"]}}),
            vec![1],
        ),
        (json!({"day": {"lt": [5]}}), vec![]),
        (
            json!({"amount": {"gte": [10]}, "label": {"nin": [null]}, "day": {"lte": ["2024-12-31"]}}),
            vec![1],
        ),
    ] {
        assert_eq!(ledger_ids(&s, filters.clone()).await, want, "{filters}");
    }
    for bad in [
        json!({"day": {"eq": ["2021-13-45"]}}),
        json!({"amount": {"eq": ["ten"]}}),
        json!({"amount": {"between": [1]}}),
        json!({"amount": {"between": [1, "2"]}}),
        json!({"label": {"gt": [true]}}),
        json!({"label": {"eq": [["a"]]}}),
    ] {
        let result = s.query(&query("ledger", &["id"], bad.clone(), 100)).await;
        assert!(
            matches!(result, Err(DataSourceError::InvalidFilter(_))),
            "{bad}: {result:?}"
        );
    }
}

/// A column, then a table, dropped after discovery: the query that finds out fails with
/// `Unavailable`, and the next one sees the new schema (no restart, no TTL wait).
pub async fn a_stale_schema_recovers<F: SqlFixture>(fx: &F) {
    create_ledger(fx).await;
    let s = fx.source();
    assert_eq!(ledger_ids(&s, json!({"label": {"eq": ["a"]}})).await, [1]);
    fx.execute("DROP TABLE ledger").await;
    fx.execute("CREATE TABLE ledger (id integer NOT NULL, note varchar(50))")
        .await;
    fx.execute("INSERT INTO ledger (id, note) VALUES (7, 'n')")
        .await;
    let stale = s
        .query(&query("ledger", &["id", "label"], json!({}), 10))
        .await;
    assert!(
        matches!(stale, Err(DataSourceError::Unavailable(_))),
        "a dropped column: {stale:?}"
    );
    let rows = s
        .query(&query("ledger", &["id", "note"], json!({}), 10))
        .await
        .expect("the schema was discovered again");
    assert_eq!(ints(&rows, "id"), [7]);
    assert_eq!(
        s.query(&query("ledger", &["label"], json!({}), 10)).await,
        Err(DataSourceError::UnknownField {
            table: "ledger".into(),
            field: "label".into()
        })
    );
    fx.execute("DROP TABLE ledger").await;
    let gone = s.query(&query("ledger", &["id"], json!({}), 10)).await;
    assert!(
        matches!(gone, Err(DataSourceError::Unavailable(_))),
        "a dropped table: {gone:?}"
    );
    assert_eq!(
        s.query(&query("ledger", &["id"], json!({}), 10)).await,
        Err(DataSourceError::UnknownTable("ledger".into()))
    );
}

/// 30 rows: `RowLimit(max_rows)` past the limit, exactly `max_rows` allowed, a filter
/// bringing the matches under it, and an empty projection (rows without fields) counted.
pub async fn row_limit_on_a_larger_table<F: SqlFixture>(fx: &F) {
    fx.execute("CREATE TABLE numbers (n integer NOT NULL)")
        .await;
    let values: Vec<String> = (1..=30).map(|n| format!("({n})")).collect();
    fx.execute(&format!(
        "INSERT INTO numbers (n) VALUES {}",
        values.join(", ")
    ))
    .await;
    let s = fx.source();
    let all = |max_rows: usize, fields: &'static [&'static str]| {
        query("numbers", fields, json!({}), max_rows)
    };
    assert_eq!(
        s.query(&all(29, &["n"])).await,
        Err(DataSourceError::RowLimit(29))
    );
    assert_eq!(
        s.query(&all(10, &[])).await,
        Err(DataSourceError::RowLimit(10))
    );
    let rows = s.query(&all(30, &["n"])).await.expect("exactly 30 rows");
    assert_eq!(ints(&rows, "n"), (1..=30).collect::<Vec<_>>());
    let empty = s.query(&all(30, &[])).await.expect("no field");
    assert_eq!(empty.len(), 30);
    assert!(empty.iter().all(Row::is_empty), "{:?}", empty.first());
    let rows = s
        .query(&query("numbers", &["n"], json!({"n": {"gt": [25]}}), 5))
        .await
        .expect("five match");
    assert_eq!(ints(&rows, "n"), [26, 27, 28, 29, 30]);
}
