//! The confinement of a child, one denial per test: the scripted child (`try:<attempt>`,
//! under the same `confine()` as the real one) tries what the OS must refuse, against targets
//! that its user could otherwise change (a world-writable directory and file), and the test
//! checks the refusal came from the OS and the target is untouched. A live child's
//! `/proc/<pid>/status` shows the user, capabilities, seccomp and `no_new_privs`.
use reporter_adapter_sandbox::{
    Enforcement, NOBODY, NOGROUP, PoolConfig, ProcessPool, ProcessTemplateRunner,
};
use reporter_child_confine::fixtures::assert_confined_status;
use reporter_ports::ports::{RenderContext, RenderJob, RenderLimits, TemplateRunner};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn config(name: &'static str) -> PoolConfig {
    crate::fixture_config(name, 1)
}

/// What the scripted child answers for `try:<attempt>`.
async fn attempt(what: &str) -> String {
    let r = ProcessTemplateRunner::new(
        ProcessPool::new(config("parse")),
        ProcessPool::new(config("render")),
    );
    r.render(RenderJob {
        source: format!("try:{what}").into(),
        data: RenderContext::from_value(&serde_json::json!({})),
        limits: RenderLimits::default(),
        sanitize_html: false,
    })
    .await
    .expect("the child answers its attempt")
}

/// The attempt was refused by the OS (`EPERM` from seccomp, `EACCES` from Landlock), not
/// failed for another reason (a missing target would be `ENOENT`).
fn assert_refused(verdict: &str, what: &str) {
    assert!(
        verdict == "denied errno 1" || verdict == "denied errno 13",
        "{what}: {verdict}"
    );
}

/// A fresh directory that anyone may change, with a file `f` that anyone may write: the
/// child's user could change both without the confinement. Removed when dropped.
fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!(
        "reporter-sandbox-confinement-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let file = dir.join("f");
    std::fs::write(&file, b"kept").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
    Scratch(dir)
}

/// A [`scratch`] directory, removed with what it holds when dropped.
struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn path(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_cannot_create_a_file() {
    let dir = scratch("create");
    let target = dir.join("new");
    assert_refused(
        &attempt(&format!("create:{}", path(&target))).await,
        "create",
    );
    assert!(!target.exists(), "the child created a file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_cannot_truncate_a_file() {
    let dir = scratch("truncate");
    let file = dir.join("f");
    assert_refused(
        &attempt(&format!("truncate:{}", path(&file))).await,
        "truncate",
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_cannot_rename_a_file() {
    let dir = scratch("rename");
    let (file, moved) = (dir.join("f"), dir.join("moved"));
    assert_refused(
        &attempt(&format!("rename:{}:{}", path(&file), path(&moved))).await,
        "rename",
    );
    assert!(file.exists() && !moved.exists(), "the child renamed a file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_cannot_unlink_a_file() {
    let dir = scratch("unlink");
    let file = dir.join("f");
    assert_refused(&attempt(&format!("unlink:{}", path(&file))).await, "unlink");
    assert!(file.exists(), "the child removed a file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_cannot_make_a_directory() {
    let dir = scratch("mkdir");
    let made = dir.join("d");
    assert_refused(&attempt(&format!("mkdir:{}", path(&made))).await, "mkdir");
    assert!(!made.exists(), "the child made a directory");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_cannot_read_a_file() {
    let dir = scratch("read");
    assert_refused(
        &attempt(&format!("read:{}", path(&dir.join("f")))).await,
        "read",
    );
}

/// The service's environment (secrets) is in `/proc/<pid>/environ`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_cannot_read_the_parents_environment() {
    assert!(
        std::fs::read(format!("/proc/{}/environ", std::process::id())).is_ok(),
        "the test itself reads it"
    );
    assert_refused(&attempt("environ").await, "environ");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_cannot_connect_to_a_local_tcp_port() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    assert_refused(&attempt(&format!("connect:{port}")).await, "connect");
    listener.set_nonblocking(true).unwrap();
    assert!(
        listener.accept().is_err(),
        "the child's connection reached the listener"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_cannot_exec() {
    assert!(std::path::Path::new("/bin/true").exists());
    assert_refused(&attempt("exec").await, "exec");
}

/// Neither a process of its own (a `clone` without `CLONE_THREAD`): a grandchild would
/// outlive the child's parent-death signal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_cannot_start_a_process() {
    assert_refused(&attempt("fork").await, "fork");
}

/// A waiting child (confined, hello said): unprivileged user and group (`nobody`/`nogroup`
/// when the test runs as root, as in CI), every capability set empty, seccomp filter mode,
/// `no_new_privs`, an empty environment, and no descriptor but its three pipes, although
/// the service held one open without `O_CLOEXEC` when it forked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_child_runs_unprivileged_under_seccomp_with_only_its_pipes() {
    let leaked = std::fs::File::open("/dev/null").unwrap();
    rustix::io::fcntl_setfd(&leaked, rustix::io::FdFlags::empty()).unwrap();
    let pool = ProcessPool::new(config("render"));
    pool.warm_up();
    let deadline = Instant::now() + Duration::from_secs(10);
    while pool.idle_children() < 1 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pid = *pool.idle_pids().first().expect("a waiting child");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    assert_confined_status(&status);
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    assert!(environ.is_empty(), "{}", String::from_utf8_lossy(&environ));
    let mut fds: Vec<u32> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    fds.sort_unstable();
    assert_eq!(fds, vec![0, 1, 2], "the child kept an inherited descriptor");
    drop(leaked);
}

/// The hello reports what confines the child, and the pool keeps it: on this kernel
/// (Landlock ABI ≥ 6, seccomp filters) nothing is missing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_report_their_confinement() {
    let pool = ProcessPool::new(config("parse"));
    assert_eq!(pool.confinement(), None, "no child said hello yet");
    pool.warm_up();
    let deadline = Instant::now() + Duration::from_secs(10);
    while pool.confinement().is_none() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let c = pool.confinement().expect("a child said hello");
    assert!(c.seccomp, "{c:?}");
    assert_eq!(c.landlock, Enforcement::Full, "{c:?}");
    assert!(c.landlock_abi >= 6, "{c:?}");
    assert!(c.capabilities_dropped, "{c:?}");
    assert!(c.missing().is_empty(), "{:?}", c.missing());
    if rustix::process::geteuid().is_root() {
        assert_eq!((c.uid, c.gid), (NOBODY, NOGROUP));
        assert!(c.bounding_set_dropped, "{c:?}");
    }
}

/// A root service without `CAP_SETUID`, `CAP_SETGID` and `CAP_SETPCAP` (a container that
/// dropped them; here `setpriv` drops them from the bounding set before it runs the child):
/// the child stays root but without capabilities, the rest of the confinement holds, and its
/// report names what is missing. Only as root (as in CI).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_child_that_cannot_change_user_keeps_the_rest_and_says_so() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    let render = PoolConfig {
        exe: "/usr/bin/setpriv".into(),
        args: vec![
            "--bounding-set=-setuid,-setgid,-setpcap".into(),
            "--".into(),
            env!("CARGO_BIN_EXE_sandbox-fixture").into(),
        ],
        ..config("render")
    };
    let pool = ProcessPool::new(render);
    let r = ProcessTemplateRunner::new(ProcessPool::new(config("parse")), pool.clone());
    let dir = scratch("root");
    let target = dir.join("new");
    let verdict = r
        .render(RenderJob {
            source: format!("try:create:{}", path(&target)).into(),
            data: RenderContext::from_value(&serde_json::json!({})),
            limits: RenderLimits::default(),
            sanitize_html: false,
        })
        .await
        .expect("the child answers");
    assert_refused(&verdict, "create as root");
    assert!(!target.exists(), "the child created a file");
    let c = pool.confinement().expect("the child said hello");
    assert_eq!(c.uid, 0, "{c:?}");
    assert!(c.capabilities_dropped && !c.bounding_set_dropped, "{c:?}");
    assert!(c.seccomp && c.landlock == Enforcement::Full, "{c:?}");
    let missing = c.missing();
    assert!(
        missing.len() == 1 && missing[0].starts_with("unprivileged user"),
        "{missing:?}"
    );
}
