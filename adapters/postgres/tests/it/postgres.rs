//! PostgresDataSource against a real server: `POSTGRES_URL`, e.g.
//! `postgres://postgres@127.0.0.1:5432/postgres`. Each test creates its own database and
//! drops it afterwards. The breaker test needs no server.
use futures_util::FutureExt;
use reporter_adapter_postgres::{
    BreakerConfig, BreakerState, PostgresConfig, PostgresDataSource, SslMode,
};
use reporter_contract::datasource::people_rows;
use reporter_contract::services::{service_url, unique_name};
use reporter_ports::datasource::DataSourceId;
use reporter_ports::ports::{DataSource, DataSourceError, Row, RowSink};
use serde_json::{Value, json};
use std::panic::AssertUnwindSafe;
use std::str::FromStr;
use std::time::{Duration, Instant};
use tokio_postgres::{Client, NoTls};

fn id() -> DataSourceId {
    DataSourceId::parse("pg_test").expect("id")
}

async fn connect(config: tokio_postgres::Config) -> Client {
    let (client, connection) = config.connect(NoTls).await.expect("connect to PostgreSQL");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

/// A fresh database for one test.
struct TestDb {
    admin_url: String,
    name: String,
}

impl TestDb {
    /// A client connected to the test database.
    async fn client(&self) -> Client {
        let mut config = tokio_postgres::Config::from_str(&self.admin_url).expect("POSTGRES_URL");
        config.dbname(&self.name);
        connect(config).await
    }

    /// Source configuration for the test database.
    fn config(&self) -> PostgresConfig {
        let mut config = PostgresConfig::from_url(id(), &self.admin_url).expect("config");
        config.database = self.name.clone();
        config.pool_size = 4;
        config
    }

    fn source(&self) -> PostgresDataSource {
        PostgresDataSource::new(self.config()).expect("source")
    }
}

/// Runs `body` on a fresh database (dropped afterwards, even when `body` panics); skips when
/// `POSTGRES_URL` is unset.
async fn with_db<F, Fut>(body: F)
where
    F: FnOnce(TestDb) -> Fut,
    Fut: Future<Output = ()>,
{
    let Some(admin_url) = service_url("POSTGRES_URL", "PostgreSQL") else {
        return;
    };
    let admin = connect(tokio_postgres::Config::from_str(&admin_url).expect("POSTGRES_URL")).await;
    let name = unique_name("reporter_pg");
    admin
        .batch_execute(&format!("CREATE DATABASE \"{name}\""))
        .await
        .expect("create test database");
    let db = TestDb {
        admin_url,
        name: name.clone(),
    };
    let outcome = AssertUnwindSafe(body(db)).catch_unwind().await;
    let dropped = admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
        .await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
    dropped.expect("drop test database");
}

/// `people` in `schema`, holding the contract fixture.
async fn create_people(client: &Client, schema: &str) {
    client
        .batch_execute(&format!(
            "CREATE SCHEMA IF NOT EXISTS \"{schema}\";
             CREATE TABLE \"{schema}\".people (
                 id integer PRIMARY KEY, name text NOT NULL,
                 score double precision, joined date NOT NULL)"
        ))
        .await
        .expect("create people");
    let insert = format!(
        "INSERT INTO \"{schema}\".people (id, name, score, joined) \
         VALUES ($1::int8, $2::text, $3::float8, $4::text::date)"
    );
    for row in people_rows() {
        let id = row["id"].as_i64().expect("id");
        let name = row["name"].as_str().expect("name").to_owned();
        let score = row["score"].as_f64();
        let joined = row["joined"].as_str().expect("joined").to_owned();
        client
            .execute(&insert, &[&id, &name, &score, &joined])
            .await
            .expect("insert person");
    }
}

use reporter_contract::fixtures::table_query as query;

fn sorted(rows: Vec<Row>, key: &str) -> Vec<Value> {
    let mut rows: Vec<Value> = rows.into_iter().map(Value::Object).collect();
    rows.sort_by(|a, b| a[key].to_string().cmp(&b[key].to_string()));
    rows
}

reporter_contract::data_source_contract!(mod contract, |check| with_db(|db| async move {
    create_people(&db.client().await, "public").await;
    check(&db.source()).await;
}));

impl reporter_contract::sql::SqlFixture for TestDb {
    type Source = PostgresDataSource;

    fn source(&self) -> PostgresDataSource {
        TestDb::source(self)
    }

    async fn execute(&self, sql: &str) {
        self.client()
            .await
            .batch_execute(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    fn quote(&self, ident: &str) -> String {
        format!("\"{}\"", ident.replace('"', "\"\""))
    }
}

reporter_contract::sql_data_source_contract!(mod sql_contract, |check| with_db(
    |db| async move { check(&db).await }
));

#[tokio::test]
async fn descriptor_names_the_database() {
    with_db(|db| async move {
        assert_eq!(db.source().descriptor().external_name, db.name);
    })
    .await;
}

#[tokio::test]
async fn sql_injection_attempts_never_execute() {
    with_db(|db| async move {
        let client = db.client().await;
        create_people(&client, "public").await;
        let source = db.source();
        let evil = "'; DROP TABLE people; --";

        let rows = source
            .query(&query(
                "people",
                &["id"],
                json!({"name": {"eq": [evil]}}),
                10,
            ))
            .await
            .expect("a hostile value is just a value");
        assert!(rows.is_empty());
        for cond in [
            json!({"name": {"nin": [evil]}}),
            json!({"name": {"gt": [evil]}}),
            json!({"joined": {"in": ["2021-03-14", evil]}, "name": {"lt": [evil]}}),
        ] {
            let result = source
                .query(&query("people", &["id"], cond.clone(), 10))
                .await;
            assert!(result.is_ok(), "{cond}: {result:?}");
        }
        let err = source
            .query(&query(
                "people",
                &["id"],
                json!({"joined": {"eq": [evil]}}),
                10,
            ))
            .await
            .expect_err("not a date");
        assert!(matches!(err, DataSourceError::InvalidFilter(_)), "{err:?}");

        for field in [
            "na\"me",
            "name\" FROM people; DROP TABLE people; --",
            "id, name",
        ] {
            let unknown = DataSourceError::UnknownField {
                table: "people".into(),
                field: field.into(),
            };
            assert_eq!(
                source
                    .query(&query("people", &[field], json!({}), 10))
                    .await,
                Err(unknown.clone()),
                "projected {field:?}"
            );
            let mut filters = serde_json::Map::new();
            filters.insert(field.to_owned(), json!({"eq": [1]}));
            assert_eq!(
                source
                    .query(&query("people", &["id"], Value::Object(filters), 10))
                    .await,
                Err(unknown),
                "filtered {field:?}"
            );
        }
        for table in [
            "people; drop",
            "people\"; DROP TABLE people; --",
            "public.people",
        ] {
            assert_eq!(
                source.query(&query(table, &["id"], json!({}), 10)).await,
                Err(DataSourceError::UnknownTable(table.into()))
            );
        }

        let count: i64 = client
            .query_one("SELECT count(*) FROM people", &[])
            .await
            .expect("people survived")
            .get(0);
        assert_eq!(count, 5);
    })
    .await;
}

#[tokio::test]
async fn identifiers_with_quotes_and_spaces_are_quoted() {
    with_db(|db| async move {
        db.client()
            .await
            .batch_execute(
                r#"CREATE TABLE "we""ird table" ("co""l" text, "a b" integer);
                   INSERT INTO "we""ird table" VALUES ('x', 1), ('y', 2);"#,
            )
            .await
            .expect("create");
        let source = db.source();
        let schema = source.schema().await.expect("schema");
        let table = schema.table("we\"ird table").expect("listed");
        assert_eq!(table.fields, ["a b", "co\"l"]);
        let rows = source
            .query(&query(
                "we\"ird table",
                &["co\"l", "a b"],
                json!({"a b": {"gte": [2]}}),
                10,
            ))
            .await
            .expect("query");
        assert_eq!(sorted(rows, "a b"), [json!({"co\"l": "y", "a b": 2})]);
        let rows = source
            .query(&query("we\"ird table", &[], json!({}), 10))
            .await
            .expect("empty projection");
        assert_eq!(
            sorted(rows, "x"),
            [json!({}), json!({})],
            "an empty projection answers empty rows"
        );
    })
    .await;
}

#[tokio::test]
async fn other_schemas_get_qualified_names() {
    with_db(|db| async move {
        let client = db.client().await;
        create_people(&client, "public").await;
        client
            .batch_execute(
                "CREATE SCHEMA other; CREATE SCHEMA hidden;
                 CREATE TABLE other.ledger (entry_id bigint, amount numeric(12,2));
                 INSERT INTO other.ledger VALUES (1, 10.00), (2, 20.50);
                 CREATE TABLE hidden.secret (x integer);
                 CREATE VIEW other.big_entries AS SELECT entry_id FROM other.ledger WHERE amount > 15;",
            )
            .await
            .expect("create");
        let mut config = db.config();
        config.schemas = vec!["public".into(), "other".into()];
        let source = PostgresDataSource::new(config).expect("source");
        let schema = source.schema().await.expect("schema");
        let names: Vec<&str> = schema.tables.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["other__big_entries", "other__ledger", "people"]);
        let rows = source
            .query(&query("other__ledger", &["entry_id", "amount"], json!({"amount": {"gt": [15]}}), 10))
            .await
            .expect("query");
        assert_eq!(sorted(rows, "entry_id"), [json!({"entry_id": 2, "amount": "20.50"})]);
        let rows = source
            .query(&query("other__big_entries", &["entry_id"], json!({}), 10))
            .await
            .expect("views are tables too");
        assert_eq!(sorted(rows, "entry_id"), [json!({"entry_id": 2})]);
        for table in ["ledger", "other.ledger", "hidden__secret"] {
            assert_eq!(
                source.query(&query(table, &[], json!({}), 10)).await,
                Err(DataSourceError::UnknownTable(table.into()))
            );
        }
        let mut only_other = db.config();
        only_other.schemas = vec!["other".into()];
        let source = PostgresDataSource::new(only_other).expect("source");
        let schema = source.schema().await.expect("schema");
        let names: Vec<&str> = schema.tables.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["other__big_entries", "other__ledger"]);
    })
    .await;
}

/// `ds:public.people` reaches the adapter as `public__people`: the same table as `people`
/// (same rows, same filters); `ds:other.ledger` as `other__ledger`. The schema finds both
/// spellings too (and the filters' `public.people`, `other.ledger`).
#[tokio::test]
async fn the_public_schema_may_be_named() {
    with_db(|db| async move {
        let client = db.client().await;
        create_people(&client, "public").await;
        client
            .batch_execute(
                "CREATE SCHEMA other;
                 CREATE TABLE other.ledger (entry_id bigint, amount numeric(12,2));
                 INSERT INTO other.ledger VALUES (1, 10.00), (2, 20.50);",
            )
            .await
            .expect("create");
        let mut config = db.config();
        config.schemas = vec!["public".into(), "other".into()];
        let source = PostgresDataSource::new(config).expect("source");
        let filter = json!({"score": {"gt": [80]}});
        let bare = source
            .query(&query("people", &["id", "name"], filter.clone(), 10))
            .await
            .expect("bare name");
        let named = source
            .query(&query("public__people", &["id", "name"], filter, 10))
            .await
            .expect("the default schema named");
        assert_eq!(sorted(named.clone(), "id"), sorted(bare, "id"));
        assert_eq!(
            sorted(named, "id"),
            [
                json!({"id": 1, "name": "Ada"}),
                json!({"id": 4, "name": "Edsger"})
            ]
        );
        let ledger = source
            .query(&query("other__ledger", &["entry_id"], json!({}), 10))
            .await
            .expect("another schema");
        assert_eq!(
            sorted(ledger, "entry_id"),
            [json!({"entry_id": 1}), json!({"entry_id": 2})]
        );
        for table in ["public__ledger", "other__people", "public__"] {
            assert_eq!(
                source.query(&query(table, &[], json!({}), 10)).await,
                Err(DataSourceError::UnknownTable(table.into()))
            );
        }
        let schema = source.schema().await.expect("schema");
        assert_eq!(schema.default_schema.as_deref(), Some("public"));
        for (spelling, listed) in [
            ("public__people", "people"),
            ("public.people", "people"),
            ("other.ledger", "other__ledger"),
        ] {
            assert_eq!(
                schema.table(spelling).map(|t| t.name.as_str()),
                Some(listed)
            );
        }
    })
    .await;
}

#[tokio::test]
async fn numeric_values_stay_exact() {
    with_db(|db| async move {
        db.client()
            .await
            .batch_execute(
                "CREATE TABLE money (id integer, amount numeric(14,2), big numeric);
                 INSERT INTO money VALUES
                   (1, 1250.10, 12345678901234567890.123456789),
                   (2, 0.10, 0.1),
                   (3, 99.95, NULL),
                   (4, -7.00, 1e-20);",
            )
            .await
            .expect("create");
        let source = db.source();
        let rows = source
            .query(&query("money", &["id", "amount", "big"], json!({}), 10))
            .await
            .expect("query");
        assert_eq!(
            sorted(rows, "id"),
            [
                json!({"id": 1, "amount": "1250.10", "big": "12345678901234567890.123456789"}),
                json!({"id": 2, "amount": "0.10", "big": "0.1"}),
                json!({"id": 3, "amount": "99.95", "big": null}),
                json!({"id": 4, "amount": "-7.00", "big": "0.00000000000000000001"}),
            ]
        );
        let ids = |cond: Value| {
            let source = &source;
            async move {
                let rows = source
                    .query(&query("money", &["id"], json!({ "amount": cond }), 10))
                    .await
                    .expect("query");
                let mut ids: Vec<i64> = rows.iter().filter_map(|r| r["id"].as_i64()).collect();
                ids.sort_unstable();
                ids
            }
        };
        assert_eq!(ids(json!({"eq": ["1250.10"]})).await, [1], "decimal string");
        assert_eq!(
            ids(json!({"eq": [1250.1]})).await,
            [1],
            "number, compared numerically"
        );
        assert_eq!(
            ids(json!({"gte": ["100"]})).await,
            [1],
            "numerically, not lexicographically"
        );
        assert_eq!(ids(json!({"between": [0, 100]})).await, [2, 3]);
        assert_eq!(ids(json!({"in": ["0.1", "-7"]})).await, [2, 4]);
        let err = source
            .query(&query(
                "money",
                &["id"],
                json!({"amount": {"eq": ["ten"]}}),
                10,
            ))
            .await
            .expect_err("not a decimal");
        assert!(matches!(err, DataSourceError::InvalidFilter(_)), "{err:?}");
    })
    .await;
}

#[tokio::test]
async fn column_types_map_to_json() {
    with_db(|db| async move {
        db.client()
            .await
            .batch_execute(
                "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
                 CREATE TABLE typed (
                   i2 smallint, i8 bigint, r real, f double precision, b boolean,
                   d date, ts timestamp, tstz timestamptz, u uuid, j jsonb, m mood,
                   vc varchar(10), ch char(3), t time, tags text[]);
                 INSERT INTO typed VALUES (
                   -3, 9007199254740993, 0.1, 2.5, true,
                   '2024-03-31', '2024-03-31 12:34:56.5', '2024-03-31 12:00:00+02',
                   '6f9619ff-8b86-d011-b42d-00cf4fc964ff', '{\"a\": [1, 2]}', 'happy',
                   'abc', 'xy', '08:30', '{a,b}');
                 INSERT INTO typed (i2) VALUES (NULL);",
            )
            .await
            .expect("create");
        let source = db.source();
        let fields = [
            "i2", "i8", "r", "f", "b", "d", "ts", "tstz", "u", "j", "m", "vc", "ch", "t", "tags",
        ];
        let rows = source
            .query(&query("typed", &fields, json!({"i2": {"eq": [-3]}}), 10))
            .await
            .expect("query");
        assert_eq!(
            sorted(rows, "i2"),
            [json!({
                "i2": -3, "i8": 9007199254740993_i64, "r": 0.1, "f": 2.5, "b": true,
                "d": "2024-03-31 00:00:00 +0000 UTC", "ts": "2024-03-31 12:34:56.5 +0000 UTC",
                "tstz": "2024-03-31 10:00:00 +0000 UTC",
                "u": "6f9619ff-8b86-d011-b42d-00cf4fc964ff", "j": {"a": [1, 2]}, "m": "happy",
                "vc": "abc", "ch": "xy ", "t": "08:30:00", "tags": "{a,b}",
            })]
        );
        let nulls = source
            .query(&query("typed", &fields, json!({"i2": {"eq": [null]}}), 10))
            .await
            .expect("null row");
        assert_eq!(nulls.len(), 1);
        assert!(nulls[0].values().all(Value::is_null), "{:?}", nulls[0]);
    })
    .await;
}

/// Every row's JSON text, as a sink that keeps JSON receives it.
#[derive(Default)]
struct Texts(Vec<Vec<u8>>);

impl RowSink for Texts {
    fn push(&mut self, row: Row) -> Result<(), DataSourceError> {
        self.0
            .push(serde_json::to_vec(&row).expect("a row serializes"));
        Ok(())
    }

    fn push_json(&mut self, json: &[u8]) -> Result<(), DataSourceError> {
        self.0.push(json.to_vec());
        Ok(())
    }
}

/// A row written straight from the wire row is the text its row map serializes to, for
/// every column type, NULLs, text that needs escaping, floats that are no numbers, and a
/// statement whose field repeats (which goes through the map).
#[tokio::test]
async fn rows_written_as_json_are_the_text_of_their_row_maps() {
    with_db(|db| async move {
        db.client()
            .await
            .batch_execute(
                "CREATE TABLE typed (
                   b boolean, d date, f double precision, i2 smallint, i4 integer, i8 bigint,
                   j jsonb, n numeric, r real, t text, ts timestamp, tstz timestamptz, u uuid);
                 INSERT INTO typed VALUES
                   (true, '2024-03-31', 2.5, -3, 7, 9007199254740993, '{\"b\": 1, \"a\": [1, 2.50]}',
                    1250.10, 0.1, 'Zoë \"q\" <a> \\ é\u{0001}', '2024-03-31 12:34:56.123456',
                    '0099-12-31 23:59:59+00', '6f9619ff-8b86-d011-b42d-00cf4fc964ff'),
                   (false, '0001-01-01', 'NaN', 0, 0, -1, '[]', -0.5, '-Infinity', '', '2024-01-01',
                    '2024-01-01 00:00:00.5+02', NULL),
                   (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);",
            )
            .await
            .expect("create");
        let source = db.source();
        // Alphabetical fields: a row map keeps this order with or without serde_json's
        // preserve_order, so its text is comparable byte for byte.
        let fields = [
            "b", "d", "f", "i2", "i4", "i8", "j", "n", "r", "t", "ts", "tstz", "u",
        ];
        for fields in [&fields[..], &["i2", "t", "t"][..]] {
            let q = query("typed", fields, json!({}), 10);
            let mut texts = Texts::default();
            source.query_into(&q, &mut texts).await.expect("streamed");
            let rows = source.query(&q).await.expect("collected");
            assert_eq!(texts.0.len(), 3);
            for (text, row) in texts.0.iter().zip(&rows) {
                assert_eq!(
                    String::from_utf8_lossy(text),
                    serde_json::to_string(row).expect("json"),
                    "fields {fields:?}"
                );
            }
        }
    })
    .await;
}

#[tokio::test]
async fn filter_values_are_cast_to_the_column_type() {
    with_db(|db| async move {
        let client = db.client().await;
        create_people(&client, "public").await;
        client
            .batch_execute(
                "CREATE TABLE events (id integer, at timestamptz, ok boolean, ref uuid, code varchar(8));
                 INSERT INTO events VALUES
                   (1, '2024-01-01T00:00:00Z', true, '00000000-0000-0000-0000-000000000001', 'A'),
                   (2, '2024-01-02T12:00:00+02:00', false, '00000000-0000-0000-0000-000000000002', 'B'),
                   (3, NULL, NULL, NULL, NULL);",
            )
            .await
            .expect("create");
        let source = db.source();
        let ids = |table: &'static str, filters: Value| {
            let source = &source;
            async move {
                let rows = source
                    .query(&query(table, &["id"], filters.clone(), 10))
                    .await
                    .unwrap_or_else(|e| panic!("{filters}: {e}"));
                let mut ids: Vec<i64> = rows.iter().filter_map(|r| r["id"].as_i64()).collect();
                ids.sort_unstable();
                ids
            }
        };
        assert_eq!(ids("events", json!({"at": {"gte": ["2024-01-02T10:00:00Z"]}})).await, [2]);
        assert_eq!(ids("events", json!({"at": {"lt": ["2024-01-02"]}})).await, [1], "UTC");
        assert_eq!(ids("events", json!({"ok": {"eq": [true]}})).await, [1]);
        assert_eq!(ids("events", json!({"ok": {"eq": [null]}})).await, [3]);
        assert_eq!(ids("events", json!({"ok": {"nin": [true]}})).await, [2, 3], "NULL is not true");
        assert_eq!(ids("events", json!({"ok": {"nin": [true, null]}})).await, [2]);
        assert_eq!(
            ids("events", json!({"ref": {"in": ["00000000-0000-0000-0000-000000000002"]}})).await,
            [2]
        );
        assert_eq!(ids("events", json!({"code": {"between": ["A", "B"]}})).await, [1, 2]);
        // Mixed types never match, like the file data source.
        assert_eq!(ids("events", json!({"id": {"eq": ["1"]}})).await, Vec::<i64>::new());
        assert_eq!(ids("events", json!({"id": {"gt": ["0"]}})).await, Vec::<i64>::new());
        assert_eq!(ids("events", json!({"code": {"eq": [1]}})).await, Vec::<i64>::new());
        assert_eq!(ids("events", json!({"ok": {"eq": ["true"]}})).await, Vec::<i64>::new());
        assert_eq!(ids("events", json!({"id": {"nin": ["1"]}})).await, [1, 2, 3]);
        // Integer columns take fractional and huge bounds.
        assert_eq!(ids("people", json!({"id": {"lt": [2.5]}})).await, [1, 2]);
        assert_eq!(ids("people", json!({"id": {"lt": [1e20]}})).await, [1, 2, 3, 4, 5]);
        assert_eq!(ids("people", json!({"id": {"in": [2, 3.5, 4.0]}})).await, [2, 4]);
        assert_eq!(ids("people", json!({"score": {"nin": [91.5]}})).await, [2, 3, 4, 5]);
        for bad in [
            json!({"at": {"eq": ["yesterday-ish"]}}),
            json!({"ref": {"eq": ["not-a-uuid"]}}),
            json!({"at": {"gt": [true]}}),
            json!({"id": {"between": [1, "2"]}}),
        ] {
            let err = source
                .query(&query("events", &["id"], bad.clone(), 10))
                .await
                .expect_err("invalid");
            assert!(matches!(err, DataSourceError::InvalidFilter(_)), "{bad}: {err:?}");
        }
        assert_eq!(source.breaker_state(), BreakerState::Closed, "refusals are not outages");
    })
    .await;
}

#[tokio::test]
async fn the_source_row_cap_applies_too() {
    with_db(|db| async move {
        db.client()
            .await
            .batch_execute("CREATE TABLE n AS SELECT g AS v FROM generate_series(1, 50) g")
            .await
            .expect("create");
        let mut config = db.config();
        config.max_rows = 10;
        let source = PostgresDataSource::new(config).expect("source");
        let q = |max_rows, filters| query("n", &["v"], filters, max_rows);
        assert_eq!(
            source.query(&q(100, json!({}))).await,
            Err(DataSourceError::RowLimit(10))
        );
        assert_eq!(
            source.query(&q(5, json!({}))).await,
            Err(DataSourceError::RowLimit(5))
        );
        let rows = source
            .query(&q(100, json!({"v": {"lte": [10]}})))
            .await
            .expect("exactly the cap");
        assert_eq!(rows.len(), 10);
        let rows = source
            .query(&q(0, json!({"v": {"gt": [50]}})))
            .await
            .expect("none");
        assert!(rows.is_empty());
        assert_eq!(
            source.query(&q(0, json!({}))).await,
            Err(DataSourceError::RowLimit(0))
        );
    })
    .await;
}

#[tokio::test]
async fn a_slow_query_times_out_and_is_cancelled() {
    with_db(|db| async move {
        let client = db.client().await;
        create_people(&client, "public").await;
        client
            .batch_execute("CREATE VIEW slow AS SELECT 1 AS id FROM pg_sleep(30)")
            .await
            .expect("create view");
        let mut config = db.config();
        config.query_timeout = Duration::from_millis(200);
        let source = PostgresDataSource::new(config).expect("source");
        source.schema().await.expect("discover first");

        let started = Instant::now();
        let result = source.query(&query("slow", &["id"], json!({}), 10)).await;
        assert_eq!(result, Err(DataSourceError::Timeout));
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );

        // The server stops sleeping (cancelled), and the source keeps working.
        let mut still_running = true;
        for _ in 0..50 {
            let active: i64 = client
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity \
                     WHERE datname = current_database() AND query LIKE '%\"slow\"%' \
                     AND state = 'active' AND pid <> pg_backend_pid()",
                    &[],
                )
                .await
                .expect("pg_stat_activity")
                .get(0);
            if active == 0 {
                still_running = false;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(!still_running, "the timed-out statement is still running");
        let rows = source
            .query(&query("people", &["id"], json!({}), 10))
            .await
            .expect("later queries work");
        assert_eq!(rows.len(), 5);
    })
    .await;
}

#[tokio::test]
async fn the_schema_is_cached_until_refreshed() {
    with_db(|db| async move {
        let client = db.client().await;
        create_people(&client, "public").await;
        let source = db.source();
        let names = |schema: reporter_ports::datasource::SourceSchema| -> Vec<String> {
            schema.tables.into_iter().map(|t| t.name).collect()
        };
        assert_eq!(names(source.schema().await.expect("schema")), ["people"]);
        client
            .batch_execute("CREATE TABLE later (x integer)")
            .await
            .expect("create");
        assert_eq!(names(source.schema().await.expect("cached")), ["people"]);
        assert_eq!(
            source.query(&query("later", &["x"], json!({}), 10)).await,
            Err(DataSourceError::UnknownTable("later".into()))
        );
        assert_eq!(
            names(source.refresh_schema().await.expect("refresh")),
            ["later", "people"]
        );
        assert!(
            source
                .query(&query("later", &["x"], json!({}), 10))
                .await
                .is_ok()
        );

        let mut config = db.config();
        config.schema_ttl = Duration::ZERO;
        let uncached = PostgresDataSource::new(config).expect("source");
        assert_eq!(
            names(uncached.schema().await.expect("schema")),
            ["later", "people"]
        );
        client
            .batch_execute("DROP TABLE later")
            .await
            .expect("drop");
        assert_eq!(names(uncached.schema().await.expect("schema")), ["people"]);

        // A table dropped behind a cached schema: Unavailable, and the cache is dropped.
        client
            .batch_execute("ALTER TABLE people RENAME COLUMN score TO points")
            .await
            .expect("alter");
        let err = source
            .query(&query("people", &["score"], json!({}), 10))
            .await
            .expect_err("stale");
        assert!(
            matches!(&err, DataSourceError::Unavailable(m) if m.contains("schema changed")),
            "{err:?}"
        );
        assert_eq!(
            source
                .query(&query("people", &["score"], json!({}), 10))
                .await,
            Err(DataSourceError::UnknownField {
                table: "people".into(),
                field: "score".into()
            })
        );
    })
    .await;
}

/// A local port with nothing listening.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

#[tokio::test]
async fn the_breaker_opens_after_consecutive_failures_and_fails_fast() {
    let mut config = PostgresConfig::new(id(), "nowhere");
    config.port = closed_port();
    config.connect_timeout = Duration::from_secs(2);
    config.breaker = BreakerConfig {
        failure_threshold: 3,
        open_for: Duration::from_millis(400),
    };
    let source = PostgresDataSource::new(config).expect("source");
    let q = query("people", &["id"], json!({}), 10);
    for attempt in 0..3 {
        let err = source.query(&q).await.expect_err("nothing listens");
        assert!(
            matches!(&err, DataSourceError::Unavailable(m) if !m.contains("circuit")),
            "attempt {attempt}: {err:?}"
        );
    }
    assert_eq!(source.breaker_state(), BreakerState::Open);
    let started = Instant::now();
    for _ in 0..100 {
        let err = source.query(&q).await.expect_err("open");
        assert!(
            matches!(&err, DataSourceError::Unavailable(m) if m.contains("circuit breaker open")),
            "{err:?}"
        );
        let err = source.schema().await.expect_err("open");
        assert!(
            matches!(&err, DataSourceError::Unavailable(m) if m.contains("circuit breaker open")),
            "{err:?}"
        );
    }
    assert!(
        started.elapsed() < Duration::from_millis(200),
        "fails fast: {:?}",
        started.elapsed()
    );

    tokio::time::sleep(Duration::from_millis(450)).await;
    assert_eq!(source.breaker_state(), BreakerState::HalfOpen);
    let err = source.query(&q).await.expect_err("the probe fails");
    assert!(
        matches!(&err, DataSourceError::Unavailable(m) if !m.contains("circuit")),
        "{err:?}"
    );
    assert_eq!(
        source.breaker_state(),
        BreakerState::Open,
        "a failed probe reopens"
    );
}

#[tokio::test]
async fn prefer_connects_whatever_the_server_offers_and_verify_full_needs_a_trusted_certificate() {
    with_db(|db| async move {
        create_people(&db.client().await, "public").await;
        let mut config = db.config();
        config.sslmode = SslMode::Prefer;
        let rows = PostgresDataSource::new(config)
            .expect("source")
            .query(&query("people", &["id"], json!({}), 10))
            .await
            .expect("prefer: TLS if offered, else plain TCP");
        assert_eq!(rows.len(), 5);
        // A CA of our own signed nothing the shared server presents (if it offers TLS at all).
        let dir = tempfile::tempdir().expect("tempdir");
        let ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        let key = rcgen::KeyPair::generate().expect("key");
        let ca = ca.self_signed(&key).expect("ca");
        let ca_file = dir.path().join("ca.pem");
        std::fs::write(&ca_file, ca.pem()).expect("write");
        let mut config = db.config();
        config.sslmode = SslMode::VerifyFull;
        config.ssl_root_cert = Some(ca_file);
        let err = PostgresDataSource::new(config)
            .expect("source")
            .schema()
            .await
            .expect_err("untrusted");
        assert!(matches!(err, DataSourceError::Unavailable(_)), "{err:?}");
    })
    .await;
}
