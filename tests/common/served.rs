//! A released `reporter serve` (in memory) as a process, for the tests that drive it with
//! external tools (generated SDK clients, schemathesis), and the check that a tool exists.
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `reporter serve` on a free loopback port; killed when dropped.
pub struct Served {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub url: String,
}

impl Served {
    /// Starts it with the test secret and `extra` variables, and waits until it listens.
    pub fn start(extra: &[(&str, &str)]) -> Self {
        let (child, addr) = spawn_serve("warn", Stdio::piped(), |c| {
            c.envs(extra.iter().copied());
        });
        Self {
            child,
            url: format!("http://{addr}"),
        }
    }
}

/// `reporter serve` on a free loopback port with the test secret, logging at `log_level`,
/// its stderr to `stderr`, and what `configure` adds; answers once it listens.
fn spawn_serve(
    log_level: &str,
    stderr: Stdio,
    configure: impl FnOnce(&mut Command),
) -> (Child, String) {
    let addr = super::free_addr();
    let mut c = Command::new(env!("CARGO_BIN_EXE_reporter"));
    c.arg("serve")
        .env("TMPDIR", super::children_tmpdir())
        .env("SERVER_ADDRESS", &addr)
        .env("AUTH_JWT_SECRET", super::SECRET)
        .env("LOG_LEVEL", log_level)
        .stdout(Stdio::null())
        .stderr(stderr);
    configure(&mut c);
    let mut child = c.spawn().expect("start reporter serve");
    super::wait_listening(&addr, &mut child, Duration::from_secs(60));
    (child, addr)
}

/// `reporter serve` in memory on a free port, isolated from the caller's broker, store and
/// environment name (`STREAMING_ENABLED`, `MONGO_URI`, `RABBITMQ_URI`, `ENV_NAME` removed),
/// logging errors only, with `env`; killed when dropped.
pub struct IsolatedServe {
    child: Child,
    /// `127.0.0.1:<port>`.
    pub addr: String,
}

impl IsolatedServe {
    /// Starts it and waits until it listens.
    pub fn start(env: &[(&str, &str)]) -> Self {
        let (child, addr) = spawn_serve("error", Stdio::null(), |c| {
            c.env_remove("STREAMING_ENABLED")
                .env_remove("MONGO_URI")
                .env_remove("RABBITMQ_URI")
                .env_remove("ENV_NAME")
                .envs(env.iter().copied());
        });
        Self { child, addr }
    }

    /// The process's resident set (`VmRSS`), in bytes.
    pub fn rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("the process's status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .expect("VmRSS")
            * 1024
    }
}

impl Drop for IsolatedServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// True when `program --version` runs; otherwise skips (printed) or, under
/// `REPORTER_REQUIRE_SERVICES=1`, fails.
pub fn require_tool(program: &str) -> bool {
    let found = Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    super::chaos::require(
        &format!("{program} (installed by scripts/services.sh)"),
        found,
    )
}

/// Runs `cmd` in `dir` with a time limit; panics with its output when it fails.
pub fn run(step: &str, cmd: &mut Command, dir: &Path, limit: Duration) -> String {
    cmd.current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap_or_else(|e| panic!("{step}: {e}"));
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(limit) {
        Ok(out) => out.unwrap_or_else(|e| panic!("{step}: {e}")),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            panic!("{step}: still running after {limit:?}");
        }
    };
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{step} failed ({}):\n{text}",
        out.status
    );
    text
}
