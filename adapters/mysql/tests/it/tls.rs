//! TLS against a private MariaDB this test starts itself (`mariadb-install-db` + `mariadbd`
//! in a temporary directory on a free port, with a certificate generated here and
//! `require_secure_transport=ON`, so that nothing works in the clear). The shared server is
//! never touched. Skips with a printed reason when the binaries are missing, unless
//! `REPORTER_REQUIRE_SERVICES=1`. Takes a few seconds (mariadb-install-db dominates).
use reporter_adapter_mysql::{MysqlConfig, MysqlDataSource, SslMode};
use reporter_ports::datasource::DataSourceId;
use reporter_ports::ports::{DataSource, DataSourceError, TableQuery};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const INSTALL_DB: &str = "/usr/bin/mariadb-install-db";
const MARIADBD: &str = "/usr/sbin/mariadbd";
const CLIENT: &str = "/usr/bin/mariadb";

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
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

struct Certs {
    ca: PathBuf,
    other_ca: PathBuf,
    server_cert: PathBuf,
    server_key: PathBuf,
}

/// A test CA, a server certificate it signed for `localhost` only, and a CA that signed
/// nothing, as PEM files in `dir`.
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

/// A private MariaDB requiring TLS on `port`, killed on drop.
struct PrivateMaria {
    child: Child,
    port: u16,
    socket: PathBuf,
    dir: tempfile::TempDir,
}

impl PrivateMaria {
    fn start() -> (Self, Certs) {
        let dir = tempfile::tempdir().expect("tempdir");
        let certs = certs(dir.path());
        let data = dir.path().join("data");
        let socket = dir.path().join("mysqld.sock");
        let user = if is_root() { "mysql" } else { "" };
        if is_root() {
            run({
                let mut c = Command::new("chown");
                c.args(["-R", "mysql:mysql"]).arg(dir.path());
                c
            });
        }
        let mut install = Command::new(INSTALL_DB);
        install
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .args(["--auth-root-authentication-method=normal", "--skip-test-db"]);
        if !user.is_empty() {
            install.arg(format!("--user={user}"));
        }
        run(install);
        let port = free_port();
        let mut server = Command::new(MARIADBD);
        server
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--port={port}"))
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--socket={}", socket.display()))
            .arg(format!(
                "--pid-file={}",
                dir.path().join("mysqld.pid").display()
            ))
            .arg(format!("--ssl-cert={}", certs.server_cert.display()))
            .arg(format!("--ssl-key={}", certs.server_key.display()))
            .args(["--require-secure-transport=ON", "--skip-log-bin"])
            .args(["--innodb-buffer-pool-size=16M", "--skip-innodb-doublewrite"])
            .arg(format!(
                "--log-error={}",
                dir.path().join("error.log").display()
            ))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if !user.is_empty() {
            server.arg(format!("--user={user}"));
        }
        let child = server.spawn().expect("start mariadbd");
        let maria = Self {
            child,
            port,
            socket,
            dir,
        };
        maria.wait_ready();
        maria.sql(
            "CREATE USER 'tls'@'%' REQUIRE SSL; GRANT ALL ON *.* TO 'tls'@'%';
                   CREATE DATABASE probe;
                   CREATE VIEW probe.tls_probe AS
                     SELECT VARIABLE_VALUE AS cipher FROM information_schema.SESSION_STATUS
                     WHERE VARIABLE_NAME = 'Ssl_cipher';",
        );
        (maria, certs)
    }

    fn client(&self) -> Command {
        let mut c = Command::new(CLIENT);
        c.arg("--no-defaults")
            .arg(format!("--socket={}", self.socket.display()))
            .args(["-uroot", "-e"]);
        c
    }

    fn sql(&self, sql: &str) {
        let mut c = self.client();
        c.arg(sql);
        run(c);
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            let mut c = self.client();
            c.arg("SELECT 1")
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            if c.status().is_ok_and(|s| s.success()) {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let log = std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default();
        panic!("private mariadbd did not start within 30 s:\n{log}");
    }

    fn config(&self, host: &str, mode: SslMode, ca: Option<&Path>) -> MysqlConfig {
        let mut c = MysqlConfig::new(DataSourceId::parse("tls").expect("id"), "probe");
        c.host = host.to_owned();
        c.port = self.port;
        c.user = "tls".into();
        c.sslmode = mode;
        c.ssl_root_cert = ca.map(Path::to_path_buf);
        c.connect_timeout = Duration::from_secs(3);
        c
    }
}

impl Drop for PrivateMaria {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The session's TLS cipher (empty in the clear), read through the data source itself.
async fn cipher(config: MysqlConfig) -> Result<String, DataSourceError> {
    let source = MysqlDataSource::new(config)?;
    let rows = source
        .query(&TableQuery {
            table: "tls_probe".into(),
            fields: vec!["cipher".into()],
            filters: Default::default(),
            max_rows: 10,
        })
        .await;
    source.disconnect().await;
    Ok(rows?
        .first()
        .and_then(|r| r["cipher"].as_str().map(str::to_owned))
        .unwrap_or_default())
}

#[tokio::test]
async fn each_sslmode_against_a_private_tls_server() {
    let missing: Vec<&str> = [INSTALL_DB, MARIADBD, CLIENT]
        .into_iter()
        .filter(|p| !Path::new(p).is_file())
        .collect();
    if !missing.is_empty() {
        if reporter_contract::services::required() {
            panic!(
                "MariaDB binaries are required (REPORTER_REQUIRE_SERVICES=1): missing {missing:?}"
            );
        }
        reporter_contract::services::skipped(&format!(
            "a private TLS MariaDB (missing {missing:?})"
        ));
        return;
    }
    let started = Instant::now();
    let (maria, certs) = PrivateMaria::start();
    let encrypted = |r: Result<String, DataSourceError>, why: &str| match r {
        Ok(cipher) => assert!(!cipher.is_empty(), "{why}: no cipher"),
        Err(e) => panic!("{why}: {e:?}"),
    };
    let refused = |r: Result<String, DataSourceError>, why: &str| {
        assert!(
            matches!(r, Err(DataSourceError::Unavailable(_))),
            "{why}: {r:?}"
        );
    };
    let try_ = |host: &str, mode, ca: Option<&Path>| cipher(maria.config(host, mode, ca));

    encrypted(try_("127.0.0.1", SslMode::Require, None).await, "require");
    encrypted(
        try_("localhost", SslMode::VerifyFull, Some(&certs.ca)).await,
        "verify-full, name matches",
    );
    encrypted(
        try_("localhost", SslMode::VerifyCa, Some(&certs.ca)).await,
        "verify-ca",
    );
    refused(
        try_("127.0.0.1", SslMode::Disable, None).await,
        "plain TCP is refused",
    );
    refused(
        try_("127.0.0.1", SslMode::VerifyFull, Some(&certs.ca)).await,
        "verify-full, the certificate names localhost only",
    );
    refused(
        try_("localhost", SslMode::VerifyCa, Some(&certs.other_ca)).await,
        "untrusted CA",
    );
    refused(
        try_("localhost", SslMode::VerifyFull, None).await,
        "not signed by a built-in root",
    );
    refused(
        try_("localhost", SslMode::Require, Some(&certs.other_ca)).await,
        "require + CA file = verify-ca",
    );
    // mysql_async does not recognise rustls 0.23's host-name error when told to skip the name
    // check, so verify-ca still checks the name (stricter, never weaker; README). When the
    // driver learns it, this becomes a success and the README line goes.
    refused(
        try_("127.0.0.1", SslMode::VerifyCa, Some(&certs.ca)).await,
        "verify-ca also checks the name (driver limitation)",
    );
    drop(maria);
    eprintln!("private TLS MariaDB test took {:?}", started.elapsed());
}
