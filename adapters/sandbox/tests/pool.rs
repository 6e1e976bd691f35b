//! The process pool against a scripted child: every way a child can die is read right, the
//! pool stays usable and replaces its children, the OS bounds hold.
use reporter_adapter_sandbox::{PoolConfig, ProcessPool, ProcessTemplateRunner};
use reporter_ports::ports::{
    RenderContext, RenderError, RenderJob, RenderLimits, RunnerError, TemplateRunner,
};
use std::time::{Duration, Instant};

fn config(name: &'static str) -> PoolConfig {
    PoolConfig {
        name,
        exe: env!("CARGO_BIN_EXE_sandbox-fixture").into(),
        args: Vec::new(),
        size: 2,
        memory_bytes: 128 * 1024 * 1024,
        cpu_seconds: 2,
        stack_bytes: 8 * 1024 * 1024,
        max_output_bytes: 1024 * 1024,
        wall_timeout: Duration::from_secs(5),
        queue_timeout: Some(Duration::from_secs(10)),
        start_timeout: Duration::from_secs(10),
    }
}

/// Running (not gone, not a zombie).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

fn runner() -> ProcessTemplateRunner {
    ProcessTemplateRunner::new(
        ProcessPool::new(config("parse")),
        ProcessPool::new(config("render")),
    )
}

async fn render(r: &ProcessTemplateRunner, source: &str) -> Result<String, RunnerError> {
    r.render(RenderJob {
        source: source.into(),
        data: RenderContext::from_value(&serde_json::json!({"ds": {"t": [{"a": 1}]}})),
        limits: RenderLimits::default(),
        sanitize_html: false,
    })
    .await
}

fn template(e: RunnerError) -> RenderError {
    match e {
        RunnerError::Template(t) => t,
        other => panic!("expected a template error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_and_errors_come_back() {
    let r = runner();
    assert_eq!(render(&r, "echo:hello").await.unwrap(), "hello");
    assert_eq!(
        render(&r, "data").await.unwrap(),
        r#"{"ds":{"t":[{"a":1}]}}"#
    );
    assert_eq!(
        template(render(&r, "syntax").await.unwrap_err()),
        RenderError::Syntax("scripted".into())
    );
    let a = r.analyze("echo:x".into(), RenderLimits::default()).await;
    assert!(a.unwrap().mapped_fields.is_empty());
    let sanitized = r
        .render(RenderJob {
            source: "echo:<p>".into(),
            data: RenderContext::from_value(&serde_json::json!({})),
            limits: RenderLimits::default(),
            sanitize_html: true,
        })
        .await
        .unwrap();
    assert_eq!(sanitized, "[sanitized]<p>");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_child_runs_with_an_empty_environment_and_cannot_write_files() {
    let r = runner();
    assert_eq!(render(&r, "env").await.unwrap(), "0");
    let _ = std::fs::remove_file("/tmp/reporter-sandbox-fixture-write");
    let e = template(render(&r, "write").await.unwrap_err());
    assert!(
        matches!(&e, RenderError::Crashed(m) if m.contains("SIGXFSZ"))
            || matches!(&e, RenderError::Evaluation(_)),
        "{e:?}"
    );
    let written = std::fs::read("/tmp/reporter-sandbox-fixture-write").unwrap_or_default();
    assert!(written.is_empty(), "the child wrote a file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_stack_and_crashes_are_contained() {
    let r = runner();
    let started = Instant::now();
    assert_eq!(
        template(render(&r, "alloc").await.unwrap_err()),
        RenderError::MemoryLimit(128 * 1024 * 1024)
    );
    assert_eq!(
        template(render(&r, "stack").await.unwrap_err()),
        RenderError::Crashed("stack overflow".into())
    );
    assert!(matches!(
        template(render(&r, "abort").await.unwrap_err()),
        RenderError::Crashed(m) if m == "aborted"
    ));
    assert!(matches!(
        template(render(&r, "exit").await.unwrap_err()),
        RenderError::Crashed(m) if m.contains("exited with 3")
    ));
    // The pool keeps working after every death.
    assert_eq!(render(&r, "echo:still here").await.unwrap(), "still here");
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_is_bounded_by_the_cpu_limit_and_the_wall_clock() {
    let r = runner();
    // Busy: SIGXCPU after 2 CPU seconds (or the 5 s wall deadline on a loaded machine).
    let started = Instant::now();
    assert_eq!(
        template(render(&r, "spin").await.unwrap_err()),
        RenderError::Timeout
    );
    let spun = started.elapsed();
    assert!(spun < Duration::from_secs(7), "{spun:?}");
    // Idle: only the wall-clock deadline can stop it.
    let mut c = config("render");
    c.wall_timeout = Duration::from_millis(700);
    let short = ProcessTemplateRunner::new(ProcessPool::new(config("parse")), ProcessPool::new(c));
    let started = Instant::now();
    assert_eq!(
        template(render(&short, "sleep").await.unwrap_err()),
        RenderError::Timeout
    );
    let slept = started.elapsed();
    assert!(
        slept >= Duration::from_millis(700) && slept < Duration::from_secs(4),
        "{slept:?}"
    );
    reporter_contract::figure!("spin stopped after {spun:?}, sleep after {slept:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_is_bounded() {
    let r = runner();
    assert_eq!(render(&r, "big:1000").await.unwrap().len(), 1000);
    assert_eq!(
        template(render(&r, "big:2000000").await.unwrap_err()),
        RenderError::OutputTooLarge(1024 * 1024)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_are_prestarted_replaced_and_bounded_in_number() {
    let pool = ProcessPool::new(config("render"));
    pool.warm_up();
    let deadline = Instant::now() + Duration::from_secs(10);
    while pool.idle_children() < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(pool.idle_children(), 2);
    // A waiting child killed from outside is replaced, and the request still succeeds.
    let pids = pool.idle_pids();
    for pid in &pids {
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|p| alive(*p)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let r = ProcessTemplateRunner::new(ProcessPool::new(config("parse")), pool.clone());
    assert_eq!(render(&r, "echo:ok").await.unwrap(), "ok");
    // Two slots: a third request waits for one.
    let started = Instant::now();
    let (a, b, c) = tokio::join!(render(&r, "spin"), render(&r, "spin"), render(&r, "echo:x"));
    assert!(a.is_err() && b.is_err());
    assert_eq!(c.unwrap(), "x");
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "the third did not wait"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while pool.idle_children() < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(pool.idle_children(), 2, "used children were not replaced");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_and_a_missing_executable_are_unavailable() {
    let mut c = config("parse");
    c.size = 1;
    c.queue_timeout = Some(Duration::from_millis(200));
    let r = ProcessTemplateRunner::new(ProcessPool::new(c), ProcessPool::new(config("render")));
    let (slow, fast) = tokio::join!(r.analyze("spin".into(), RenderLimits::default()), async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        r.analyze("echo:x".into(), RenderLimits::default()).await
    });
    assert_eq!(template(slow.unwrap_err()), RenderError::Timeout);
    assert!(matches!(fast, Err(RunnerError::Unavailable(_))), "{fast:?}");

    let mut c = config("parse");
    c.exe = "/nonexistent/reporter".into();
    let r = ProcessTemplateRunner::new(ProcessPool::new(c), ProcessPool::new(config("render")));
    let e = r.analyze("echo:x".into(), RenderLimits::default()).await;
    assert!(matches!(e, Err(RunnerError::Unavailable(_))), "{e:?}");
    // Something that is not a sandbox child is refused too.
    let mut c = config("parse");
    c.exe = "/bin/true".into();
    let r = ProcessTemplateRunner::new(ProcessPool::new(c), ProcessPool::new(config("render")));
    let e = r.analyze("echo:x".into(), RenderLimits::default()).await;
    assert!(matches!(e, Err(RunnerError::Unavailable(_))), "{e:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_die_with_the_pool() {
    let pool = ProcessPool::new(config("render"));
    pool.warm_up();
    let deadline = Instant::now() + Duration::from_secs(10);
    while pool.idle_children() < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pids = pool.idle_pids();
    assert_eq!(pids.len(), 2);
    drop(pool);
    let deadline = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|p| alive(*p)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        !pids.iter().any(|p| alive(*p)),
        "children outlived their pool"
    );
}
