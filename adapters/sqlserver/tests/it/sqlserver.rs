//! SqlServerDataSource against a real server: `SQLSERVER_URL`, e.g.
//! `sqlserver://sa:Secret_123@127.0.0.1:1433/master?sslmode=require`. No SQL Server can run
//! on our machines, so these tests skip with a printed reason without the variable — even
//! under `REPORTER_REQUIRE_SERVICES=1` (README: SQL Server is untested here). Each test
//! creates its own database and drops it. The unreachable-server tests need no server.
use reporter_adapter_sqlserver::{
    BreakerConfig, BreakerState, SqlServerConfig, SqlServerDataSource,
};
use reporter_contract::datasource::people_rows;
use reporter_contract::services::unique_name;
use reporter_ports::datasource::DataSourceId;
use reporter_ports::ports::{DataSource, DataSourceError};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn id() -> DataSourceId {
    DataSourceId::parse("ms_test").expect("id")
}

fn server_url() -> Option<String> {
    match std::env::var("SQLSERVER_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            // Not `service_url`: no SQL Server runs on this machine kind, so CI skips these too.
            reporter_contract::services::skipped(
                "SQL Server (none runs on this machine kind; set SQLSERVER_URL)",
            );
            None
        }
    }
}

use reporter_contract::fixtures::table_query as query;

/// Runs `sql` on the server, in `database` when given, through a throw-away source-less
/// client (the adapter is read-only).
async fn exec(url: &str, database: Option<&str>, sql: &str) {
    use tokio_util::compat::TokioAsyncWriteCompatExt;
    let c = SqlServerConfig::from_url(id(), url).expect("SQLSERVER_URL");
    let mut config = tiberius::Config::new();
    config.host(&c.host);
    config.port(c.port);
    config.database(database.unwrap_or(&c.database));
    config.authentication(tiberius::AuthMethod::sql_server(
        &c.user,
        c.password.as_ref().map_or("", |p| p.expose()),
    ));
    config.trust_cert();
    let tcp = tokio::net::TcpStream::connect((c.host.as_str(), c.port))
        .await
        .expect("tcp");
    let mut client = tiberius::Client::connect(config, tcp.compat_write())
        .await
        .expect("connect");
    let stream = client
        .simple_query(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    stream
        .into_results()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// A fresh database holding the contract fixture; dropped by [`drop_db`].
async fn people_db(url: &str) -> (String, SqlServerConfig) {
    let name = unique_name("reporter_ms");
    exec(url, None, &format!("CREATE DATABASE [{name}]")).await;
    let mut inserts = String::new();
    for row in people_rows() {
        inserts.push_str(&format!(
            "INSERT INTO people VALUES ({}, N'{}', {}, '{}');",
            row["id"],
            row["name"].as_str().unwrap_or_default(),
            row["score"]
                .as_f64()
                .map_or("NULL".to_owned(), |s| s.to_string()),
            row["joined"].as_str().unwrap_or_default()
        ));
    }
    exec(
        url,
        Some(&name),
        &format!(
            "CREATE TABLE people (id int PRIMARY KEY, name nvarchar(50) NOT NULL, \
             score float, joined date NOT NULL); {inserts}"
        ),
    )
    .await;
    let mut config = SqlServerConfig::from_url(id(), url).expect("config");
    config.database = name.clone();
    (name, config)
}

async fn drop_db(url: &str, name: &str) {
    exec(
        url,
        None,
        &format!("ALTER DATABASE [{name}] SET SINGLE_USER WITH ROLLBACK IMMEDIATE; DROP DATABASE [{name}]"),
    )
    .await;
}

reporter_contract::data_source_contract!(mod contract, |check| async {
    let Some(url) = server_url() else {
        return;
    };
    let (name, config) = people_db(&url).await;
    check(&SqlServerDataSource::new(config).expect("source")).await;
    drop_db(&url, &name).await;
});

/// A fresh database of the server (the people fixture in it too) for the SQL contract.
struct MsFixture {
    url: String,
    name: String,
    config: SqlServerConfig,
}

impl reporter_contract::sql::SqlFixture for MsFixture {
    type Source = SqlServerDataSource;

    fn source(&self) -> SqlServerDataSource {
        SqlServerDataSource::new(self.config.clone()).expect("source")
    }

    async fn execute(&self, sql: &str) {
        exec(&self.url, Some(&self.name), sql).await;
    }

    fn quote(&self, ident: &str) -> String {
        format!("[{}]", ident.replace(']', "]]"))
    }
}

reporter_contract::sql_data_source_contract!(mod sql_contract, |check| async {
    let Some(url) = server_url() else {
        return;
    };
    let (name, config) = people_db(&url).await;
    let fixture = MsFixture {
        url: url.clone(),
        name: name.clone(),
        config,
    };
    check(&fixture).await;
    drop_db(&url, &name).await;
});

#[tokio::test]
async fn injection_types_and_timeouts() {
    let Some(url) = server_url() else {
        return;
    };
    let (name, config) = people_db(&url).await;
    exec(
        &url,
        Some(&name),
        "CREATE TABLE money (id int, amount decimal(14,2), at datetimeoffset, g uniqueidentifier);
         INSERT INTO money VALUES (1, 1250.10, '2024-03-31T12:00:00+02:00', '6F9619FF-8B86-D011-B42D-00C04FC964FF');
         EXEC('CREATE VIEW slow AS SELECT 1 AS id FROM sys.objects a CROSS JOIN sys.objects b CROSS JOIN sys.objects c CROSS JOIN sys.objects d');",
    )
    .await;
    let source = SqlServerDataSource::new(config.clone()).expect("source");
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
    assert_eq!(
        source
            .query(&query(
                "people",
                &["id]; DROP TABLE people; --"],
                json!({}),
                10
            ))
            .await,
        Err(DataSourceError::UnknownField {
            table: "people".into(),
            field: "id]; DROP TABLE people; --".into()
        })
    );
    let rows = source
        .query(&query(
            "money",
            &["id", "amount", "at", "g"],
            json!({"amount": {"eq": ["1250.1"]}}),
            10,
        ))
        .await
        .expect("types");
    assert_eq!(
        Value::Object(rows[0].clone()),
        json!({"id": 1, "amount": "1250.10", "at": "2024-03-31 10:00:00 +0000 UTC",
               "g": "6f9619ff-8b86-d011-b42d-00c04fc964ff"})
    );
    let mut slow = config.clone();
    slow.query_timeout = Duration::from_millis(300);
    let slow = SqlServerDataSource::new(slow).expect("source");
    slow.schema().await.expect("discover");
    let started = Instant::now();
    let result = slow
        .query(&query("slow", &["id"], json!({}), 1_000_000_000))
        .await;
    assert!(
        matches!(
            result,
            Err(DataSourceError::Timeout | DataSourceError::RowLimit(_))
        ),
        "{result:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
    drop_db(&url, &name).await;
}

/// A local port with nothing listening.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

#[tokio::test]
async fn an_unreachable_server_opens_the_breaker() {
    let mut config = SqlServerConfig::new(id(), "nowhere");
    config.port = closed_port();
    config.breaker = BreakerConfig {
        failure_threshold: 2,
        open_for: Duration::from_secs(30),
    };
    let source = SqlServerDataSource::new(config).expect("source");
    let q = query("people", &["id"], json!({}), 10);
    for _ in 0..2 {
        let err = source.query(&q).await.expect_err("nothing listens");
        assert!(
            matches!(&err, DataSourceError::Unavailable(m) if !m.contains("circuit")),
            "{err:?}"
        );
    }
    assert_eq!(source.breaker_state(), BreakerState::Open);
    let err = source.schema().await.expect_err("open");
    assert!(matches!(&err, DataSourceError::Unavailable(m) if m.contains("circuit breaker open")));
}

#[tokio::test]
async fn a_server_that_never_answers_is_bounded_by_the_connect_timeout() {
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
    let mut config = SqlServerConfig::new(id(), "nowhere");
    config.port = port;
    config.connect_timeout = Duration::from_millis(300);
    let source = SqlServerDataSource::new(config).expect("source");
    let started = Instant::now();
    let err = source.schema().await.expect_err("no prelogin answer");
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
