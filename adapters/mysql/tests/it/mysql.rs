//! MysqlDataSource against a real server: `MYSQL_URL`, e.g.
//! `mysql://root@127.0.0.1:3306/test`. Each test creates its own database and drops it
//! afterwards. The breaker test needs no server.
use futures_util::FutureExt;
use mysql_async::prelude::Queryable;
use reporter_adapter_mysql::{BreakerConfig, BreakerState, MysqlConfig, MysqlDataSource};
use reporter_contract::datasource::people_rows;
use reporter_contract::services::{service_url, unique_name};
use reporter_ports::datasource::{DataSourceId, DataSourceKind};
use reporter_ports::ports::{DataSource, DataSourceError, Row};
use serde_json::{Value, json};
use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

fn id() -> DataSourceId {
    DataSourceId::parse("my_test").expect("id")
}

/// A fresh database for one test.
struct TestDb {
    url: String,
    name: String,
}

impl TestDb {
    /// A connection to the test database.
    async fn conn(&self) -> mysql_async::Conn {
        let opts = mysql_async::OptsBuilder::from_opts(
            mysql_async::Opts::from_url(&self.url).expect("MYSQL_URL"),
        )
        .db_name(Some(self.name.clone()));
        mysql_async::Conn::new(opts)
            .await
            .expect("connect to MySQL")
    }

    async fn exec(&self, sql: &str) {
        let mut conn = self.conn().await;
        conn.query_drop(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        let _ = conn.disconnect().await;
    }

    /// Source configuration for the test database.
    fn config(&self) -> MysqlConfig {
        let mut config = MysqlConfig::from_url(id(), &self.url).expect("config");
        config.database = self.name.clone();
        config.schemas = vec![self.name.clone()];
        config.pool_size = 4;
        config
    }

    fn source(&self) -> MysqlDataSource {
        MysqlDataSource::new(self.config()).expect("source")
    }
}

/// Runs `body` on a fresh database (dropped afterwards, even when `body` panics); skips when
/// `MYSQL_URL` is unset.
async fn with_db<F, Fut>(body: F)
where
    F: FnOnce(TestDb) -> Fut,
    Fut: Future<Output = ()>,
{
    let Some(url) = service_url("MYSQL_URL", "MySQL/MariaDB") else {
        return;
    };
    let mut admin = mysql_async::Conn::new(mysql_async::Opts::from_url(&url).expect("MYSQL_URL"))
        .await
        .expect("connect to MySQL");
    let name = unique_name("reporter_my");
    admin
        .query_drop(format!("CREATE DATABASE `{name}`"))
        .await
        .expect("create test database");
    let db = TestDb {
        url,
        name: name.clone(),
    };
    let outcome = AssertUnwindSafe(body(db)).catch_unwind().await;
    let dropped = admin
        .query_drop(format!("DROP DATABASE IF EXISTS `{name}`"))
        .await;
    let _ = admin.disconnect().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
    dropped.expect("drop test database");
}

/// `people` holding the contract fixture, in database `schema`.
async fn create_people(db: &TestDb, schema: &str) {
    let mut conn = db.conn().await;
    conn.query_drop(format!(
        "CREATE TABLE `{schema}`.people (
             id int PRIMARY KEY, name varchar(50) NOT NULL,
             score double, joined date NOT NULL)"
    ))
    .await
    .expect("create people");
    for row in people_rows() {
        conn.exec_drop(
            format!("INSERT INTO `{schema}`.people (id, name, score, joined) VALUES (?, ?, ?, ?)"),
            (
                row["id"].as_i64(),
                row["name"].as_str(),
                row["score"].as_f64(),
                row["joined"].as_str(),
            ),
        )
        .await
        .expect("insert person");
    }
    let _ = conn.disconnect().await;
}

use reporter_contract::fixtures::table_query as query;

fn sorted(rows: Vec<Row>, key: &str) -> Vec<Value> {
    let mut rows: Vec<Value> = rows.into_iter().map(Value::Object).collect();
    rows.sort_by(|a, b| a[key].to_string().cmp(&b[key].to_string()));
    rows
}

async fn ids(source: &MysqlDataSource, table: &str, filters: Value) -> Vec<i64> {
    let rows = source
        .query(&query(table, &["id"], filters.clone(), 100))
        .await
        .unwrap_or_else(|e| panic!("{filters}: {e}"));
    let mut ids: Vec<i64> = rows.iter().filter_map(|r| r["id"].as_i64()).collect();
    ids.sort_unstable();
    ids
}

reporter_contract::data_source_contract!(mod contract, |check| with_db(|db| async move {
    create_people(&db, &db.name).await;
    check(&db.source()).await;
}));

impl reporter_contract::sql::SqlFixture for TestDb {
    type Source = MysqlDataSource;

    fn source(&self) -> MysqlDataSource {
        TestDb::source(self)
    }

    async fn execute(&self, sql: &str) {
        self.exec(sql).await;
    }

    fn quote(&self, ident: &str) -> String {
        format!("`{}`", ident.replace('`', "``"))
    }
}

reporter_contract::sql_data_source_contract!(mod sql_contract, |check| with_db(
    |db| async move { check(&db).await }
));

#[tokio::test]
async fn descriptor_names_the_database() {
    with_db(|db| async move {
        let source = db.source();
        assert_eq!(source.descriptor().external_name, db.name);
        assert_eq!(source.descriptor().kind, DataSourceKind::Mysql);
    })
    .await;
}

#[tokio::test]
async fn sql_injection_attempts_never_execute() {
    with_db(|db| async move {
        create_people(&db, &db.name).await;
        let source = db.source();
        let evil = "'; DROP TABLE people; --";
        let backslash = "\\'; DROP TABLE people; -- ";

        for value in [evil, backslash] {
            let rows = source
                .query(&query(
                    "people",
                    &["id"],
                    json!({"name": {"eq": [value]}}),
                    10,
                ))
                .await
                .expect("a hostile value is just a value");
            assert!(rows.is_empty());
        }
        for cond in [
            json!({"name": {"nin": [evil]}}),
            json!({"name": {"gt": [backslash]}}),
            json!({"joined": {"in": ["2021-03-14"]}, "name": {"lt": [evil]}}),
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
            "na`me",
            "name` FROM people; DROP TABLE people; --",
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
            "people`; DROP TABLE people; --",
            "test.people",
        ] {
            assert_eq!(
                source.query(&query(table, &["id"], json!({}), 10)).await,
                Err(DataSourceError::UnknownTable(table.into()))
            );
        }
        let mut conn = db.conn().await;
        let count: Option<i64> = conn
            .query_first("SELECT count(*) FROM people")
            .await
            .expect("people survived");
        assert_eq!(count, Some(5));
    })
    .await;
}

#[tokio::test]
async fn identifiers_with_backticks_and_spaces_are_quoted() {
    with_db(|db| async move {
        db.exec(
            "CREATE TABLE `we``ird table` (`co``l` text, `a b` integer);
             INSERT INTO `we``ird table` VALUES ('x', 1), ('y', 2);",
        )
        .await;
        let source = db.source();
        let schema = source.schema().await.expect("schema");
        let table = schema.table("we`ird table").expect("listed");
        assert_eq!(table.fields, ["a b", "co`l"]);
        let rows = source
            .query(&query(
                "we`ird table",
                &["co`l", "a b"],
                json!({"a b": {"gte": [2]}}),
                10,
            ))
            .await
            .expect("query");
        assert_eq!(sorted(rows, "a b"), [json!({"co`l": "y", "a b": 2})]);
        let rows = source
            .query(&query("we`ird table", &[], json!({}), 10))
            .await
            .expect("empty projection");
        assert_eq!(sorted(rows, "x"), [json!({}), json!({})]);
    })
    .await;
}

#[tokio::test]
async fn other_databases_get_qualified_names() {
    with_db(|db| async move {
        create_people(&db, &db.name).await;
        let other = format!("{}_other", db.name);
        db.exec(&format!(
            "CREATE DATABASE `{other}`;
             CREATE TABLE `{other}`.ledger (entry_id bigint, amount decimal(12,2));
             INSERT INTO `{other}`.ledger VALUES (1, 10.00), (2, 20.50);
             CREATE VIEW `{other}`.big_entries AS SELECT entry_id FROM `{other}`.ledger WHERE amount > 15;"
        ))
        .await;
        let outcome = AssertUnwindSafe(async {
            let mut config = db.config();
            config.schemas = vec![db.name.clone(), other.clone()];
            let source = MysqlDataSource::new(config).expect("source");
            let schema = source.schema().await.expect("schema");
            let names: Vec<&str> = schema.tables.iter().map(|t| t.name.as_str()).collect();
            let big = format!("{other}__big_entries");
            let ledger = format!("{other}__ledger");
            assert_eq!(names, ["people", big.as_str(), ledger.as_str()]);
            let rows = source
                .query(&query(&ledger, &["entry_id", "amount"], json!({"amount": {"gt": [15]}}), 10))
                .await
                .expect("query");
            assert_eq!(sorted(rows, "entry_id"), [json!({"entry_id": 2, "amount": "20.50"})]);
            let rows = source
                .query(&query(&big, &["entry_id"], json!({}), 10))
                .await
                .expect("views are tables too");
            assert_eq!(sorted(rows, "entry_id"), [json!({"entry_id": 2})]);
            assert_eq!(
                source.query(&query("ledger", &[], json!({}), 10)).await,
                Err(DataSourceError::UnknownTable("ledger".into()))
            );
            let only_default = db.source();
            let names: Vec<String> = only_default
                .schema()
                .await
                .expect("schema")
                .tables
                .into_iter()
                .map(|t| t.name)
                .collect();
            assert_eq!(names, ["people"]);
        })
        .catch_unwind()
        .await;
        db.exec(&format!("DROP DATABASE `{other}`")).await;
        if let Err(panic) = outcome {
            std::panic::resume_unwind(panic);
        }
    })
    .await;
}

/// The default database is MySQL's default schema: `ds:<db>.people` reaches the adapter as
/// `<db>__people`, the same table as `people` (same rows, same filters); another database's
/// table as `<other>__ledger`. The schema finds both spellings too (and the filters'
/// `<db>.people`, `<other>.ledger`).
#[tokio::test]
async fn the_default_database_may_be_named() {
    with_db(|db| async move {
        create_people(&db, &db.name).await;
        let other = format!("{}_other", db.name);
        db.exec(&format!(
            "CREATE DATABASE `{other}`;
             CREATE TABLE `{other}`.ledger (entry_id bigint, amount decimal(12,2));
             INSERT INTO `{other}`.ledger VALUES (1, 10.00), (2, 20.50);"
        ))
        .await;
        let outcome = AssertUnwindSafe(async {
            let mut config = db.config();
            config.schemas = vec![db.name.clone(), other.clone()];
            let source = MysqlDataSource::new(config).expect("source");
            let named = format!("{}__people", db.name);
            let filter = json!({"score": {"gt": [80]}});
            assert_eq!(ids(&source, &named, filter.clone()).await, [1, 4]);
            assert_eq!(
                ids(&source, &named, filter.clone()).await,
                ids(&source, "people", filter).await
            );
            let ledger = format!("{other}__ledger");
            let rows = source
                .query(&query(
                    &ledger,
                    &["entry_id"],
                    json!({"amount": {"gt": [15]}}),
                    10,
                ))
                .await
                .expect("another database");
            assert_eq!(sorted(rows, "entry_id"), [json!({"entry_id": 2})]);
            for table in [format!("{}__ledger", db.name), format!("{other}__people")] {
                assert_eq!(
                    source.query(&query(&table, &[], json!({}), 10)).await,
                    Err(DataSourceError::UnknownTable(table.clone()))
                );
            }
            let schema = source.schema().await.expect("schema");
            assert_eq!(schema.default_schema.as_deref(), Some(db.name.as_str()));
            for (spelling, listed) in [
                (named.clone(), "people".to_owned()),
                (format!("{}.people", db.name), "people".to_owned()),
                (format!("{other}.ledger"), ledger.clone()),
            ] {
                assert_eq!(
                    schema.table(&spelling).map(|t| t.name.clone()),
                    Some(listed),
                    "{spelling}"
                );
            }
        })
        .catch_unwind()
        .await;
        db.exec(&format!("DROP DATABASE `{other}`")).await;
        if let Err(panic) = outcome {
            std::panic::resume_unwind(panic);
        }
    })
    .await;
}

#[tokio::test]
async fn decimal_values_stay_exact() {
    with_db(|db| async move {
        db.exec(
            "CREATE TABLE money (id integer, amount decimal(14,2), big decimal(40,20));
             INSERT INTO money VALUES
               (1, 1250.10, 12345678901234567890.12345678901234567890),
               (2, 0.10, 0.1),
               (3, 99.95, NULL),
               (4, -7.00, 0.00000000000000000001);",
        )
        .await;
        let source = db.source();
        let rows = source
            .query(&query("money", &["id", "amount", "big"], json!({}), 10))
            .await
            .expect("query");
        assert_eq!(
            sorted(rows, "id"),
            [
                json!({"id": 1, "amount": "1250.10", "big": "12345678901234567890.12345678901234567890"}),
                json!({"id": 2, "amount": "0.10", "big": "0.10000000000000000000"}),
                json!({"id": 3, "amount": "99.95", "big": null}),
                json!({"id": 4, "amount": "-7.00", "big": "0.00000000000000000001"}),
            ]
        );
        let ids = |cond: Value| ids(&source, "money", json!({ "amount": cond }));
        assert_eq!(ids(json!({"eq": ["1250.10"]})).await, [1], "decimal string");
        assert_eq!(ids(json!({"eq": [1250.1]})).await, [1], "number, compared exactly");
        assert_eq!(ids(json!({"gte": ["100"]})).await, [1], "numerically, not as text");
        assert_eq!(ids(json!({"between": [0, 100]})).await, [2, 3]);
        assert_eq!(ids(json!({"in": ["0.1", "-7"]})).await, [2, 4]);
        assert_eq!(ids(json!({"lt": ["1e3"]})).await, [2, 3, 4]);
        let big = source
            .query(&query(
                "money",
                &["id"],
                json!({"big": {"eq": ["0.00000000000000000001"]}}),
                10,
            ))
            .await
            .expect("tiny decimal");
        assert_eq!(sorted(big, "id"), [json!({"id": 4})]);
        let err = source
            .query(&query("money", &["id"], json!({"amount": {"eq": ["ten"]}}), 10))
            .await
            .expect_err("not a decimal");
        assert!(matches!(err, DataSourceError::InvalidFilter(_)), "{err:?}");
    })
    .await;
}

#[tokio::test]
async fn column_types_map_to_json() {
    with_db(|db| async move {
        db.exec(
            "CREATE TABLE typed (
               ti tinyint, si smallint, mi mediumint, i int, bi bigint, ub bigint unsigned,
               flag boolean, y year, r float, f double, d date, dt datetime, dt6 datetime(6),
               ts timestamp NULL, t time(3), j json, b bit(4), b1 bit(1), bl blob, vb varbinary(8),
               ch char(3), vc varchar(10), tx text, e enum('sad','ok','happy'), st set('a','b'));
             SET time_zone = '+02:00';
             INSERT INTO typed VALUES (
               -3, -300, 8000000, -2147483648, 9007199254740993, 18446744073709551615,
               TRUE, 2024, 0.1, 2.5, '2024-03-31', '2024-03-31 12:34:56', '2024-03-31 12:34:56.500000',
               '2024-03-31 12:00:00', '-26:03:04.5', '{\"a\": [1, 2], \"b\": {\"c\": null}}', b'1010', b'1',
               x'00FF01', x'CAFE', 'xy', 'abc', 'long text', 'happy', 'a,b');
             INSERT INTO typed (ti) VALUES (NULL);",
        )
        .await;
        let source = db.source();
        let fields = [
            "ti", "si", "mi", "i", "bi", "ub", "flag", "y", "r", "f", "d", "dt", "dt6", "ts", "t",
            "j", "b", "b1", "bl", "vb", "ch", "vc", "tx", "e", "st",
        ];
        let rows = source
            .query(&query("typed", &fields, json!({"ti": {"eq": [-3]}}), 10))
            .await
            .expect("query");
        assert_eq!(
            sorted(rows, "ti"),
            [json!({
                "ti": -3, "si": -300, "mi": 8_000_000, "i": -2_147_483_648_i64,
                "bi": 9_007_199_254_740_993_i64, "ub": 18_446_744_073_709_551_615_u64,
                "flag": 1, "y": 2024, "r": 0.1, "f": 2.5,
                "d": "2024-03-31 00:00:00 +0000 UTC",
                "dt": "2024-03-31 12:34:56 +0000 UTC",
                "dt6": "2024-03-31 12:34:56.5 +0000 UTC",
                // Inserted at +02:00: TIMESTAMP is an instant, read in UTC.
                "ts": "2024-03-31 10:00:00 +0000 UTC",
                "t": "-26:03:04.500000",
                "j": {"a": [1, 2], "b": {"c": null}},
                "b": 10, "b1": 1, "bl": "AP8B", "vb": "yv4=",
                "ch": "xy", "vc": "abc", "tx": "long text", "e": "happy", "st": "a,b",
            })]
        );
        let nulls = source
            .query(&query("typed", &fields, json!({"ti": {"eq": [null]}}), 10))
            .await
            .expect("null row");
        assert_eq!(nulls.len(), 1);
        assert!(nulls[0].values().all(Value::is_null), "{:?}", nulls[0]);
        let err = source
            .query(&query("typed", &["ti"], json!({"j": {"eq": ["x"]}}), 10))
            .await
            .expect_err("JSON is not filterable");
        assert!(matches!(err, DataSourceError::InvalidFilter(_)), "{err:?}");
    })
    .await;
}

#[tokio::test]
async fn filter_values_are_typed_for_the_column() {
    with_db(|db| async move {
        create_people(&db, &db.name).await;
        db.exec(
            "CREATE TABLE events (id integer, at timestamp NULL, ok boolean, code varchar(8), day date);
             SET time_zone = '+00:00';
             INSERT INTO events VALUES
               (1, '2024-01-01 00:00:00', TRUE, 'A', '2024-01-01'),
               (2, '2024-01-02 10:00:00', FALSE, 'B', '2024-01-02'),
               (3, NULL, NULL, NULL, NULL);",
        )
        .await;
        let source = db.source();
        let ev = |f: Value| ids(&source, "events", f);
        assert_eq!(ev(json!({"at": {"gte": ["2024-01-02T10:00:00Z"]}})).await, [2]);
        assert_eq!(ev(json!({"at": {"gte": ["2024-01-02T12:00:00+02:00"]}})).await, [2]);
        assert_eq!(ev(json!({"at": {"eq": ["2024-01-02 10:00:00 +0000 UTC"]}})).await, [2], "printed form");
        assert_eq!(ev(json!({"at": {"lt": ["2024-01-02"]}})).await, [1], "UTC");
        assert_eq!(ev(json!({"day": {"lte": ["2024-01-01T23:59:59"]}})).await, [1]);
        assert_eq!(ev(json!({"ok": {"eq": [true]}})).await, [1]);
        assert_eq!(ev(json!({"ok": {"eq": [null]}})).await, [3]);
        assert_eq!(ev(json!({"ok": {"nin": [true]}})).await, [2, 3], "NULL is not true");
        assert_eq!(ev(json!({"ok": {"nin": [true, null]}})).await, [2]);
        assert_eq!(ev(json!({"code": {"between": ["A", "B"]}})).await, [1, 2]);
        // Mixed types never match, whatever MySQL's conversions would say.
        assert_eq!(ev(json!({"id": {"eq": ["1"]}})).await, Vec::<i64>::new());
        assert_eq!(ev(json!({"code": {"eq": [0]}})).await, Vec::<i64>::new());
        assert_eq!(ev(json!({"ok": {"eq": ["true"]}})).await, Vec::<i64>::new());
        assert_eq!(ev(json!({"id": {"nin": ["1"]}})).await, [1, 2, 3]);
        // Integer columns take fractional and huge bounds.
        let people = |f: Value| ids(&source, "people", f);
        assert_eq!(people(json!({"id": {"lt": [2.5]}})).await, [1, 2]);
        assert_eq!(people(json!({"id": {"lt": [1e20]}})).await, [1, 2, 3, 4, 5]);
        assert_eq!(people(json!({"id": {"in": [2, 3.5, 4.0]}})).await, [2, 4]);
        assert_eq!(people(json!({"score": {"nin": [91.5]}})).await, [2, 3, 4, 5]);
        assert_eq!(people(json!({"name": {"eq": ["ada"]}})).await, [1], "the column's collation");
        for bad in [
            json!({"at": {"eq": ["yesterday-ish"]}}),
            json!({"day": {"eq": ["2021-02-30"]}}),
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
async fn row_and_byte_caps_apply() {
    with_db(|db| async move {
        db.exec(
            "CREATE TABLE n (v integer, pad varchar(200));
             INSERT INTO n WITH RECURSIVE s(v) AS (SELECT 1 UNION ALL SELECT v + 1 FROM s WHERE v < 50)
               SELECT v, REPEAT('x', 100) FROM s;",
        )
        .await;
        let mut config = db.config();
        config.max_rows = 10;
        let source = MysqlDataSource::new(config).expect("source");
        let q = |max_rows, filters| query("n", &["v"], filters, max_rows);
        assert_eq!(source.query(&q(100, json!({}))).await, Err(DataSourceError::RowLimit(10)));
        assert_eq!(source.query(&q(5, json!({}))).await, Err(DataSourceError::RowLimit(5)));
        let rows = source.query(&q(100, json!({"v": {"lte": [10]}}))).await.expect("the cap");
        assert_eq!(rows.len(), 10);
        assert!(source.query(&q(0, json!({"v": {"gt": [50]}}))).await.expect("none").is_empty());
        assert_eq!(source.query(&q(0, json!({}))).await, Err(DataSourceError::RowLimit(0)));

        let mut config = db.config();
        config.max_bytes = 1_000;
        let source = MysqlDataSource::new(config).expect("source");
        let wide = query("n", &["v", "pad"], json!({}), 100);
        assert_eq!(source.query(&wide).await, Err(DataSourceError::TooLarge(1_000)));
        let narrow = query("n", &["v", "pad"], json!({"v": {"lte": [5]}}), 100);
        assert_eq!(source.query(&narrow).await.expect("under the cap").len(), 5);
        assert_eq!(source.breaker_state(), BreakerState::Closed);
    })
    .await;
}

#[tokio::test]
async fn a_slow_query_times_out_and_is_killed() {
    with_db(|db| async move {
        create_people(&db, &db.name).await;
        db.exec("CREATE VIEW slow AS SELECT SLEEP(30) AS id").await;
        let mut config = db.config();
        config.query_timeout = Duration::from_millis(300);
        let source = MysqlDataSource::new(config).expect("source");
        source.schema().await.expect("discover first");

        let started = Instant::now();
        let result = source.query(&query("slow", &["id"], json!({}), 10)).await;
        assert_eq!(result, Err(DataSourceError::Timeout));
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );

        // The server stops sleeping (killed), and the source keeps working.
        let mut conn = db.conn().await;
        let mut still_running = true;
        for _ in 0..50 {
            let active: Option<i64> = conn
                .exec_first(
                    "SELECT count(*) FROM information_schema.PROCESSLIST \
                     WHERE DB = ? AND INFO LIKE '%`slow`%' AND COMMAND = 'Execute' \
                     AND ID <> CONNECTION_ID()",
                    (db.name.clone(),),
                )
                .await
                .expect("processlist");
            if active == Some(0) {
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
        create_people(&db, &db.name).await;
        let source = db.source();
        let names = |schema: reporter_ports::datasource::SourceSchema| -> Vec<String> {
            schema.tables.into_iter().map(|t| t.name).collect()
        };
        assert_eq!(names(source.schema().await.expect("schema")), ["people"]);
        db.exec("CREATE TABLE later (x integer)").await;
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

        // A column renamed behind a cached schema: Unavailable, and the cache is dropped.
        db.exec("ALTER TABLE people RENAME COLUMN score TO points")
            .await;
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
    let mut config = MysqlConfig::new(id(), "nowhere");
    config.port = closed_port();
    config.connect_timeout = Duration::from_secs(2);
    config.breaker = BreakerConfig {
        failure_threshold: 3,
        open_for: Duration::from_millis(400),
    };
    let source = MysqlDataSource::new(config).expect("source");
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
        for err in [
            source.query(&q).await.expect_err("open"),
            source.schema().await.expect_err("open"),
        ] {
            assert!(
                matches!(&err, DataSourceError::Unavailable(m) if m.contains("circuit breaker open")),
                "{err:?}"
            );
        }
    }
    assert!(
        started.elapsed() < Duration::from_millis(200),
        "{:?}",
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
async fn a_server_that_never_answers_is_bounded_by_the_connect_timeout() {
    // Accepts TCP but never speaks: the MySQL handshake never arrives.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let mut config = MysqlConfig::new(id(), "nowhere");
    config.port = port;
    config.connect_timeout = Duration::from_millis(300);
    let source = MysqlDataSource::new(config).expect("source");
    let started = Instant::now();
    let err = source.schema().await.expect_err("no handshake");
    assert!(
        matches!(&err, DataSourceError::Unavailable(m) if m.contains("no connection")),
        "{err:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    holder.abort();
}

#[tokio::test]
async fn wrong_credentials_are_unavailable() {
    let Some(url) = service_url("MYSQL_URL", "MySQL/MariaDB") else {
        return;
    };
    let mut config = MysqlConfig::from_url(id(), &url).expect("config");
    config.user = unique_name("nobody");
    config.password = Some("wrong".into());
    let source = MysqlDataSource::new(config).expect("source");
    let err = source.schema().await.expect_err("access denied");
    assert!(
        // 1045, or 1698 when the server (MariaDB with unix_socket) reports the unknown account
        // without a password check.
        matches!(&err, DataSourceError::Unavailable(m)
            if m.contains("Access denied") && (m.contains("1045") || m.contains("1698"))),
        "{err:?}"
    );
}
