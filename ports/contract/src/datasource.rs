//! Contract suite for [`DataSource`], over a shared fixture.
//!
//! # Fixture
//! The caller's factory builds a data source holding the table [`PEOPLE_TABLE`] (`people`)
//! with exactly the fields [`PEOPLE_FIELDS`] and exactly the rows [`people_rows`] (other
//! tables may exist too):
//!
//! | id (int) | name (string) | score (number or null) | joined (YYYY-MM-DD string) |
//!
//! A source with typed dates (PostgreSQL) answers `joined` as the original's templates see a
//! date: `2021-03-14 00:00:00 +0000 UTC`; both forms are accepted.
//! |---------:|---------------|-----------------------:|----------------------------|
//! | 1        | Ada           | 91.5                   | 2021-03-14                 |
//! | 2        | Grace         | 78.25                  | 2020-11-02                 |
//! | 3        | Alan          | 66.75                  | 2022-01-31                 |
//! | 4        | Edsger        | 84.5                   | 2021-07-09                 |
//! | 5        | Barbara       | null                   | 2023-05-20                 |
//!
//! [`people_json`] and [`people_csv`] render the fixture as a file-table adapter reads it.
//!
//! # What is checked
//! Schema (tables sorted, `people` fields sorted), projection to exactly the requested fields,
//! each filter operator (`eq`, `in`, `nin`, `gt`, `gte`, `lt`, `lte`, `between` on numbers
//! and ISO dates), conjunction of filters, an empty condition matching everything,
//! `between` with other than two values → `InvalidFilter`, unknown table → `UnknownTable`,
//! unknown field (projected or filtered) → `UnknownField`, more matching rows than
//! `max_rows` → `RowLimit(max_rows)`, and, for a source with a default schema, `people` named
//! with it (`<default>__people`, the template spelling of `ds:<default>.people`). Row order is not part of the port contract: results are
//! compared sorted by `id`.
use reporter_ports::ports::{CollectRows, DataSource, DataSourceError, Row, RowSink, TableQuery};
use serde_json::{Value, json};

/// Name of the fixture table.
pub const PEOPLE_TABLE: &str = "people";

/// Fields of the fixture table, sorted.
pub const PEOPLE_FIELDS: [&str; 4] = ["id", "joined", "name", "score"];

/// The fixture rows, in order (see the module docs).
pub fn people_rows() -> Vec<Row> {
    let rows = [
        json!({"id": 1, "name": "Ada", "score": 91.5, "joined": "2021-03-14"}),
        json!({"id": 2, "name": "Grace", "score": 78.25, "joined": "2020-11-02"}),
        json!({"id": 3, "name": "Alan", "score": 66.75, "joined": "2022-01-31"}),
        json!({"id": 4, "name": "Edsger", "score": 84.5, "joined": "2021-07-09"}),
        json!({"id": 5, "name": "Barbara", "score": null, "joined": "2023-05-20"}),
    ];
    rows.into_iter()
        .filter_map(|row| match row {
            Value::Object(map) => Some(map),
            _ => None,
        })
        .collect()
}

/// The fixture as a JSON array of objects (the content of a `people.json` table file).
pub fn people_json() -> String {
    Value::Array(people_rows().into_iter().map(Value::Object).collect()).to_string()
}

/// The fixture as CSV with a header row (the content of a `people.csv` table file); the null
/// score is an empty cell.
pub fn people_csv() -> String {
    let mut out = String::from("id,name,score,joined\n");
    for row in people_rows() {
        let cell = |field: &str| match row.get(field) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        out.push_str(&format!(
            "{},{},{},{}\n",
            cell("id"),
            cell("name"),
            cell("score"),
            cell("joined")
        ));
    }
    out
}

/// The data-source contract over the people fixture: schema, projection, every operator, combined filters, unknown names, row limit. Each check takes `&source`.
///
/// `data_source_contract!(mod <name>, |check| <future>)` emits module `<name>` with one
/// `#[tokio::test]` per check; the future runs `check` on a fresh adapter.
#[macro_export]
macro_rules! data_source_contract {
    (mod $m:ident, |$check:ident| $run:expr) => {
        $crate::contract_module!(
            $m,
            datasource,
            |$check| $run,
            [
                schema_lists_the_fixture,
                projection_returns_exactly_the_requested_fields,
                equality_operators,
                ordered_operators,
                between_operator,
                filters_combine,
                unknown_names_are_errors,
                the_default_schema_may_be_named,
                row_limit,
                streamed_rows_are_the_queried_rows,
                a_sink_error_stops_the_stream,
                streamed_row_limit,
            ]
        );
    };
}

fn query(fields: &[&str], filters: &[(&str, Value)], max_rows: usize) -> TableQuery {
    let filters: serde_json::Map<String, Value> = filters
        .iter()
        .map(|(field, cond)| ((*field).to_owned(), cond.clone()))
        .collect();
    crate::fixtures::table_query(PEOPLE_TABLE, fields, Value::Object(filters), max_rows)
}

/// Ids of the rows answered for `filters`, sorted.
async fn ids<D: DataSource>(source: &D, filters: &[(&str, Value)]) -> Vec<i64> {
    let q = query(&["id"], filters, 100);
    let rows = source
        .query(&q)
        .await
        .unwrap_or_else(|e| panic!("query {filters:?} failed: {e}"));
    let mut ids: Vec<i64> = rows
        .iter()
        .map(|r| {
            r.get("id")
                .and_then(Value::as_i64)
                .unwrap_or_else(|| panic!("row without integer id: {r:?}"))
        })
        .collect();
    ids.sort_unstable();
    ids
}

async fn expect_error<D: DataSource>(source: &D, q: &TableQuery) -> DataSourceError {
    match source.query(q).await {
        Ok(rows) => panic!("query {q:?} must fail, answered {} rows", rows.len()),
        Err(e) => e,
    }
}

pub async fn schema_lists_the_fixture<D: DataSource>(source: &D) {
    let schema = source.schema().await.expect("schema");
    let names: Vec<&str> = schema.tables.iter().map(|t| t.name.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "tables must be sorted by name");
    let people = schema
        .table(PEOPLE_TABLE)
        .unwrap_or_else(|| panic!("schema lacks table {PEOPLE_TABLE}: {names:?}"));
    // A document store also exposes its internal key `_id` (MongoDB, as in the original).
    let fields: Vec<&str> = people
        .fields
        .iter()
        .map(String::as_str)
        .filter(|f| *f != "_id")
        .collect();
    assert_eq!(fields, PEOPLE_FIELDS, "fields of {PEOPLE_TABLE}, sorted");
}

pub async fn projection_returns_exactly_the_requested_fields<D: DataSource>(source: &D) {
    let mut rows = source
        .query(&query(&["name", "score"], &[], 100))
        .await
        .expect("projection query");
    assert_eq!(rows.len(), 5);
    rows.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    let expected = [
        json!({"name": "Ada", "score": 91.5}),
        json!({"name": "Alan", "score": 66.75}),
        json!({"name": "Barbara", "score": null}),
        json!({"name": "Edsger", "score": 84.5}),
        json!({"name": "Grace", "score": 78.25}),
    ];
    for (row, want) in rows.iter().zip(expected) {
        assert_eq!(Value::Object(row.clone()), want);
    }

    let all = source
        .query(&query(&PEOPLE_FIELDS, &[], 100))
        .await
        .expect("all fields");
    let mut all: Vec<Value> = all
        .into_iter()
        .map(|mut r| {
            // Typed sources answer a date as a Go time at midnight UTC.
            if let Some(Value::String(j)) = r.get_mut("joined")
                && let Some(day) = j.strip_suffix(" 00:00:00 +0000 UTC")
            {
                *j = day.to_owned();
            }
            Value::Object(r)
        })
        .collect();
    all.sort_by_key(|r| r["id"].as_i64());
    let want: Vec<Value> = people_rows().into_iter().map(Value::Object).collect();
    assert_eq!(all, want, "full projection must answer the fixture rows");
}

pub async fn equality_operators<D: DataSource>(source: &D) {
    assert_eq!(ids(source, &[("id", json!({"eq": [2]}))]).await, [2]);
    assert_eq!(
        ids(source, &[("name", json!({"eq": ["Ada", "Alan"]}))]).await,
        [1, 3]
    );
    assert_eq!(
        ids(source, &[("name", json!({"in": ["Grace", "Nobody"]}))]).await,
        [2]
    );
    assert_eq!(
        ids(source, &[("name", json!({"nin": ["Ada", "Alan"]}))]).await,
        [2, 4, 5]
    );
    assert_eq!(
        ids(source, &[("joined", json!({"eq": ["2021-07-09"]}))]).await,
        [4]
    );
    assert_eq!(
        ids(source, &[("name", json!({"eq": ["nobody"]}))]).await,
        Vec::<i64>::new()
    );
    assert_eq!(
        ids(source, &[("name", json!({}))]).await,
        [1, 2, 3, 4, 5],
        "a condition without operators matches every row"
    );
}

pub async fn ordered_operators<D: DataSource>(source: &D) {
    // The null score (id 5) is in no range.
    assert_eq!(ids(source, &[("score", json!({"gt": [80]}))]).await, [1, 4]);
    assert_eq!(
        ids(source, &[("score", json!({"gte": [84.5]}))]).await,
        [1, 4]
    );
    assert_eq!(ids(source, &[("score", json!({"lt": [70]}))]).await, [3]);
    assert_eq!(
        ids(source, &[("score", json!({"lte": [78.25]}))]).await,
        [2, 3]
    );
    assert_eq!(ids(source, &[("id", json!({"gt": [3]}))]).await, [4, 5]);
    assert_eq!(
        ids(source, &[("joined", json!({"lt": ["2021-01-01"]}))]).await,
        [2]
    );
    assert_eq!(
        ids(source, &[("joined", json!({"gte": ["2022-01-31"]}))]).await,
        [3, 5]
    );
}

pub async fn between_operator<D: DataSource>(source: &D) {
    assert_eq!(
        ids(
            source,
            &[("joined", json!({"between": ["2021-01-01", "2021-12-31"]}))]
        )
        .await,
        [1, 4]
    );
    assert_eq!(
        ids(source, &[("score", json!({"between": [78.25, 91.5]}))]).await,
        [1, 2, 4],
        "between is inclusive"
    );
    assert_eq!(
        ids(source, &[("id", json!({"between": [2, 3]}))]).await,
        [2, 3]
    );
    for bad in [json!({"between": [1]}), json!({"between": [1, 2, 3]})] {
        let err = expect_error(source, &query(&["id"], &[("id", bad.clone())], 100)).await;
        assert!(
            matches!(err, DataSourceError::InvalidFilter(_)),
            "{bad} must be InvalidFilter, got {err:?}"
        );
    }
}

pub async fn filters_combine<D: DataSource>(source: &D) {
    assert_eq!(
        ids(
            source,
            &[
                ("score", json!({"gte": [70]})),
                ("joined", json!({"lt": ["2022-01-01"]})),
            ]
        )
        .await,
        [1, 2, 4]
    );
    assert_eq!(
        ids(source, &[("score", json!({"gt": [70], "lt": [90]}))]).await,
        [2, 4],
        "operators of one condition all hold"
    );
}

pub async fn unknown_names_are_errors<D: DataSource>(source: &D) {
    let mut q = query(&["id"], &[], 100);
    q.table = "no_such_table".to_owned();
    assert_eq!(
        expect_error(source, &q).await,
        DataSourceError::UnknownTable("no_such_table".to_owned())
    );
    let unknown = DataSourceError::UnknownField {
        table: PEOPLE_TABLE.to_owned(),
        field: "no_such_field".to_owned(),
    };
    assert_eq!(
        expect_error(source, &query(&["id", "no_such_field"], &[], 100)).await,
        unknown,
        "unknown projected field"
    );
    assert_eq!(
        expect_error(
            source,
            &query(&["id"], &[("no_such_field", json!({"eq": [1]}))], 100)
        )
        .await,
        unknown,
        "unknown filtered field"
    );
}

/// A source with a default schema ([`reporter_ports::datasource::SourceSchema::default_schema`])
/// also answers `<default>__people` (what `ds:<default>.people` is rewritten to) with the rows
/// of `people`, and its schema finds `<default>__people` and `<default>.people` as `people`.
/// Nothing to check for a source without schemas.
pub async fn the_default_schema_may_be_named<D: DataSource>(source: &D) {
    let schema = source.schema().await.expect("schema");
    let Some(default) = schema.default_schema.clone() else {
        return;
    };
    let named = format!("{default}__{PEOPLE_TABLE}");
    for spelling in [named.clone(), format!("{default}.{PEOPLE_TABLE}")] {
        assert_eq!(
            schema.table(&spelling).map(|t| t.name.as_str()),
            Some(PEOPLE_TABLE),
            "{spelling}"
        );
    }
    let mut q = query(&["id", "name"], &[("score", json!({"gt": [80]}))], 100);
    let bare = by_id(source.query(&q).await.expect("people"));
    q.table = named;
    let rows = by_id(source.query(&q).await.expect("people, its schema named"));
    assert_eq!(rows, bare);
    assert_eq!(rows.len(), 2, "Ada and Edsger");
}

pub async fn row_limit<D: DataSource>(source: &D) {
    assert_eq!(
        expect_error(source, &query(&["id"], &[], 4)).await,
        DataSourceError::RowLimit(4)
    );
    let rows = source
        .query(&query(&["id"], &[], 5))
        .await
        .expect("exactly max_rows rows is fine");
    assert_eq!(rows.len(), 5);
    let rows = source
        .query(&query(&["id"], &[("id", json!({"lte": [2]}))], 2))
        .await
        .expect("the limit applies to matching rows");
    assert_eq!(rows.len(), 2);
    assert_eq!(
        expect_error(source, &query(&["id"], &[("id", json!({"gte": [2]}))], 3)).await,
        DataSourceError::RowLimit(3)
    );
}

/// Sorted by `id` (row order is not part of the contract).
fn by_id(mut rows: Vec<Row>) -> Vec<Row> {
    rows.sort_by_key(|r| r.get("id").and_then(Value::as_i64));
    rows
}

pub async fn streamed_rows_are_the_queried_rows<D: DataSource>(source: &D) {
    let q = query(&["id", "name"], &[("id", json!({"gte": [2]}))], 100);
    let queried = source.query(&q).await.expect("query");
    let mut streamed = CollectRows::default();
    source
        .query_into(&q, &mut streamed)
        .await
        .expect("query_into");
    assert_eq!(by_id(streamed.0), by_id(queried));
}

/// A sink that takes `left` rows and refuses the next one.
struct Refusing {
    left: usize,
    taken: usize,
}

impl RowSink for Refusing {
    fn push(&mut self, _row: Row) -> Result<(), DataSourceError> {
        if self.left == 0 {
            return Err(DataSourceError::TooLarge(7));
        }
        self.left -= 1;
        self.taken += 1;
        Ok(())
    }
}

pub async fn a_sink_error_stops_the_stream<D: DataSource>(source: &D) {
    let mut sink = Refusing { left: 2, taken: 0 };
    let q = query(&["id"], &[], 100);
    assert_eq!(
        source.query_into(&q, &mut sink).await,
        Err(DataSourceError::TooLarge(7)),
        "the sink's error is the answer"
    );
    assert_eq!(sink.taken, 2, "no row is pushed after the refusal");
    let rows = source
        .query(&q)
        .await
        .expect("the source is usable afterwards");
    assert_eq!(rows.len(), 5);
}

pub async fn streamed_row_limit<D: DataSource>(source: &D) {
    let mut sink = CollectRows::default();
    assert_eq!(
        source.query_into(&query(&["id"], &[], 4), &mut sink).await,
        Err(DataSourceError::RowLimit(4))
    );
    let mut sink = CollectRows::default();
    source
        .query_into(&query(&["id"], &[], 5), &mut sink)
        .await
        .expect("exactly max_rows rows is fine");
    assert_eq!(sink.0.len(), 5);
}
