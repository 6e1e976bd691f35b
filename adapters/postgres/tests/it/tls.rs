//! TLS against a private PostgreSQL this test starts itself (`initdb` / `pg_ctl` from
//! `/usr/lib/postgresql/*/bin`, a temporary directory, a free port, `ssl=on` with a
//! certificate generated here, and `hostnossl … reject` so that nothing works in the clear).
//! The shared server is never touched. Skips with a printed reason when the binaries are
//! missing, unless `REPORTER_REQUIRE_SERVICES=1`. Takes a few seconds (initdb dominates).
use reporter_adapter_postgres::{PostgresConfig, PostgresDataSource, SslMode};
use reporter_ports::datasource::DataSourceId;
use reporter_ports::ports::{DataSource, DataSourceError, TableQuery};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The newest `/usr/lib/postgresql/<version>/bin` holding `initdb` and `pg_ctl`.
fn pg_bin() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|bin| bin.join("initdb").is_file() && bin.join("pg_ctl").is_file())
        .collect();
    dirs.sort_by_key(|d| {
        d.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
    });
    dirs.pop()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// `program` run as the `postgres` user when we are root (initdb refuses root).
fn command(program: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

fn run(mut c: Command) {
    let out = c.output().unwrap_or_else(|e| panic!("{c:?}: {e}"));
    assert!(
        out.status.success(),
        "{c:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

/// A test CA, a server certificate it signed for `localhost` only, and a CA that signed
/// nothing, as PEM files in `dir`.
struct Certs {
    ca: PathBuf,
    other_ca: PathBuf,
    server_cert: PathBuf,
    server_key: PathBuf,
}

fn certs(dir: &Path) -> Certs {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
    let ca = |name: &str| {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        CertifiedIssuer::self_signed(params, KeyPair::generate().expect("key")).expect("ca")
    };
    let issuer = ca("Reporter test CA");
    let other = ca("Some other CA");
    let key = KeyPair::generate().expect("key");
    let mut params = CertificateParams::new(vec!["localhost".to_owned()]).expect("params");
    params
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    let server = params.signed_by(&key, &issuer).expect("server cert");
    let write = |name: &str, pem: String| {
        let path = dir.join(name);
        std::fs::write(&path, pem).expect("write");
        path
    };
    Certs {
        ca: write("ca.pem", issuer.pem()),
        other_ca: write("other-ca.pem", other.pem()),
        server_cert: write("server.pem", server.pem()),
        server_key: write("server.key", key.serialize_pem()),
    }
}

/// A private PostgreSQL with TLS on `port`, stopped on drop.
struct PrivatePg {
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    _dir: tempfile::TempDir,
}

impl PrivatePg {
    fn start(bin: PathBuf) -> (Self, Certs) {
        let dir = tempfile::tempdir().expect("tempdir");
        let certs = certs(dir.path());
        let data = dir.path().join("data");
        if is_root() {
            // The postgres user must own the directory and read the key.
            run({
                let mut c = Command::new("chown");
                c.args(["-R", "postgres:postgres"]).arg(dir.path());
                c
            });
        }
        let mut init = command(&bin.join("initdb"));
        init.args(["-A", "trust", "-U", "postgres", "--no-sync", "-D"])
            .arg(&data);
        run(init);
        let port = free_port();
        let conf = format!(
            "port = {port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\n\
             ssl = on\nssl_cert_file = '{}'\nssl_key_file = '{}'\nfsync = off\n",
            dir.path().display(),
            certs.server_cert.display(),
            certs.server_key.display()
        );
        append(&data.join("postgresql.conf"), &conf);
        std::fs::write(
            data.join("pg_hba.conf"),
            "hostssl all all 127.0.0.1/32 trust\nhostnossl all all 127.0.0.1/32 reject\n\
             local all all trust\n",
        )
        .expect("pg_hba");
        let key_mode = std::os::unix::fs::PermissionsExt::from_mode(0o600);
        std::fs::set_permissions(&certs.server_key, key_mode).expect("chmod key");
        let mut start = command(&bin.join("pg_ctl"));
        start
            .args(["-w", "-t", "30", "-l"])
            .arg(dir.path().join("log"))
            .arg("-D")
            .arg(&data)
            .arg("start");
        run(start);
        (
            Self {
                bin,
                data,
                port,
                _dir: dir,
            },
            certs,
        )
    }

    fn config(&self, host: &str, mode: SslMode, ca: Option<&Path>) -> PostgresConfig {
        let mut c = PostgresConfig::new(DataSourceId::parse("tls").expect("id"), "postgres");
        c.host = host.to_owned();
        c.port = self.port;
        c.sslmode = mode;
        c.ssl_root_cert = ca.map(Path::to_path_buf);
        c
    }
}

impl Drop for PrivatePg {
    fn drop(&mut self) {
        let mut stop = command(&self.bin.join("pg_ctl"));
        stop.args(["-m", "immediate", "-D"])
            .arg(&self.data)
            .arg("stop");
        let _ = stop.output();
    }
}

fn append(path: &Path, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .expect("open");
    f.write_all(text.as_bytes()).expect("append");
}

/// Whether this session runs over TLS, read through the data source itself.
async fn session_is_tls(config: PostgresConfig) -> Result<bool, DataSourceError> {
    let source = PostgresDataSource::new(config)?;
    let rows = source
        .query(&TableQuery {
            table: "tls_probe".into(),
            fields: vec!["on".into()],
            filters: Default::default(),
            max_rows: 10,
        })
        .await?;
    Ok(rows
        .first()
        .and_then(|r| r["on"].as_bool())
        .unwrap_or(false))
}

#[tokio::test]
async fn each_sslmode_against_a_private_tls_server() {
    let Some(bin) = pg_bin() else {
        let why = "no initdb/pg_ctl under /usr/lib/postgresql/*/bin";
        if reporter_contract::services::required() {
            panic!("PostgreSQL binaries are required (REPORTER_REQUIRE_SERVICES=1): {why}");
        }
        reporter_contract::services::skipped(&format!("a private TLS PostgreSQL ({why})"));
        return;
    };
    let started = std::time::Instant::now();
    let (pg, certs) = PrivatePg::start(bin);
    let mut psql = Command::new(pg.bin.join("psql"));
    psql.args([
        "-h",
        pg.data.parent().expect("dir").to_str().expect("utf-8"),
    ])
    .args([
        "-p",
        &pg.port.to_string(),
        "-U",
        "postgres",
        "-d",
        "postgres",
        "-c",
    ])
    .arg(
        "CREATE VIEW tls_probe AS SELECT ssl AS on FROM pg_stat_ssl \
             WHERE pid = pg_backend_pid()",
    );
    run(psql);

    let ok = |host: &str, mode, ca: Option<&Path>| {
        let config = pg.config(host, mode, ca);
        async move { session_is_tls(config).await }
    };
    // Encrypted in every mode that connects; plain TCP is refused by the server.
    assert_eq!(ok("127.0.0.1", SslMode::Require, None).await, Ok(true));
    assert_eq!(ok("127.0.0.1", SslMode::Prefer, None).await, Ok(true));
    assert_eq!(
        ok("127.0.0.1", SslMode::VerifyCa, Some(&certs.ca)).await,
        Ok(true)
    );
    assert_eq!(
        ok("localhost", SslMode::VerifyFull, Some(&certs.ca)).await,
        Ok(true)
    );
    let refused = |r: Result<bool, DataSourceError>, why: &str| {
        assert!(
            matches!(r, Err(DataSourceError::Unavailable(_))),
            "{why}: {r:?}"
        );
    };
    refused(
        ok("127.0.0.1", SslMode::Disable, None).await,
        "hostnossl reject",
    );
    // The certificate names localhost only: verify-full checks the name, verify-ca does not.
    refused(
        ok("127.0.0.1", SslMode::VerifyFull, Some(&certs.ca)).await,
        "name mismatch",
    );
    refused(
        ok("localhost", SslMode::VerifyCa, Some(&certs.other_ca)).await,
        "untrusted CA",
    );
    refused(
        ok("localhost", SslMode::VerifyFull, None).await,
        "not signed by a built-in root",
    );
    // As in libpq, `require` with a CA file verifies the chain.
    refused(
        ok("127.0.0.1", SslMode::Require, Some(&certs.other_ca)).await,
        "require + CA file = verify-ca",
    );
    assert_eq!(
        ok("127.0.0.1", SslMode::Require, Some(&certs.ca)).await,
        Ok(true)
    );
    drop(pg);
    eprintln!("private TLS PostgreSQL test took {:?}", started.elapsed());
}
