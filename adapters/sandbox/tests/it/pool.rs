//! The process pool against a scripted child: every way a child can die is read right, the
//! pool stays usable and replaces its children, the OS bounds hold.
use reporter_adapter_sandbox::{PoolConfig, ProcessPool, ProcessTemplateRunner};
use reporter_ports::ports::{
    RenderContext, RenderError, RenderJob, RenderLimits, RenderSession, RunnerError, StreamPlan,
    TemplateRunner,
};
use std::time::{Duration, Instant};

fn config(name: &'static str) -> PoolConfig {
    crate::fixture_config(name, 2)
}

/// The nice value of this process's thread whose name starts with `name` (thread names are
/// cut at 15 bytes).
fn spawner_niceness(name: &str) -> Option<i64> {
    let tasks = std::fs::read_dir("/proc/self/task").ok()?;
    tasks.flatten().find_map(|task| {
        let comm = std::fs::read_to_string(task.path().join("comm")).ok()?;
        if !comm.starts_with(name) {
            return None;
        }
        let stat = std::fs::read_to_string(task.path().join("stat")).ok()?;
        // Fields after the name in parentheses: state is the 3rd field, nice the 19th.
        let after = stat.rsplit_once(')')?.1;
        after.split_whitespace().nth(16)?.parse().ok()
    })
}

/// The nice value of process `pid`.
fn process_niceness(pid: u32) -> Option<i64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(16)?
        .parse()
        .ok()
}

/// Running (not gone, not a zombie).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

fn runner() -> ProcessTemplateRunner {
    runner_with_output(1024 * 1024)
}

fn runner_with_output(max_output_bytes: u64) -> ProcessTemplateRunner {
    let render = PoolConfig {
        max_output_bytes,
        ..config("render")
    };
    ProcessTemplateRunner::new(ProcessPool::new(config("parse")), ProcessPool::new(render))
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
    // Busy: SIGXCPU after 2 CPU seconds (on a host that lets the child run only part of the
    // time, at the latest the 5 s bound's wall-clock backstop).
    let started = Instant::now();
    assert_eq!(
        template(render(&r, "spin").await.unwrap_err()),
        RenderError::Timeout
    );
    let spun = started.elapsed();
    let backstop = Duration::from_secs(5) * reporter_adapter_sandbox::BACKSTOP_FACTOR;
    assert!(spun < backstop + Duration::from_secs(2), "{spun:?}");
    // Idle: only the time bound can stop it (a sleeping child is charged its wall time).
    let mut c = config("render");
    c.time_bound = Duration::from_millis(700);
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
    // The third request below waits for a spinning child's bound, which on a busy host
    // (children at the lowest priority, charged their own time) ends at the wall-clock
    // backstop: its queue bound is above that.
    let mut c = config("render");
    c.queue_timeout = Some(c.time_bound * reporter_adapter_sandbox::BACKSTOP_FACTOR * 2);
    let pool = ProcessPool::new(c);
    pool.warm_up();
    let deadline = Instant::now() + Duration::from_secs(10);
    while pool.idle_children() < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(pool.idle_children(), 2);
    // They were forked by a thread at the children's priority: they start at it, and keep it
    // (confinement sets it as a value, not as an increment on the inherited one).
    let nice = i64::from(reporter_child_confine::NICENESS);
    assert_eq!(spawner_niceness("sandbox-render-"), Some(nice));
    let pids = pool.idle_pids();
    for pid in &pids {
        assert_eq!(process_niceness(*pid), Some(nice), "child {pid}");
    }
    // A waiting child killed from outside is replaced, and the request still succeeds.
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

async fn start(r: &ProcessTemplateRunner, source: &str) -> Box<dyn RenderSession> {
    r.start_render(source.into(), RenderLimits::default(), false)
        .await
        .unwrap()
        .expect("the sandbox runner streams")
}

fn ctx() -> RenderContext {
    RenderContext::from_value(&serde_json::json!({"ds": {"t": []}}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_render_takes_its_rows_while_it_runs() {
    let r = runner();
    let mut s = start(&r, "stream").await;
    assert_eq!(
        s.plan(),
        Some(&StreamPlan {
            data_source: "ds".into(),
            table: "t".into()
        })
    );
    s.send_context(&ctx()).await.unwrap();
    assert!(s.send_rows(br#"[{"a":1}]"#).await.unwrap());
    assert!(s.send_rows(br#"[{"a":2},{"a":3}]"#).await.unwrap());
    assert_eq!(
        s.finish().await.unwrap(),
        "{\"ds\":{\"t\":[]}}\n[{\"a\":1}]\n[{\"a\":2},{\"a\":3}]"
    );
    // A template without a plan renders from the context alone.
    let mut s = start(&r, "echo:plain").await;
    assert_eq!(s.plan(), None);
    s.send_context(&ctx()).await.unwrap();
    assert_eq!(s.finish().await.unwrap(), "plain");
    // A template that does not parse fails at the start.
    let e = r
        .start_render("syntax".into(), RenderLimits::default(), false)
        .await
        .unwrap_err();
    assert_eq!(template(e), RenderError::Syntax("scripted".into()));
}

/// The output's pieces, sent while the render runs (more than the pipe holds), reach the
/// answer whole and in order; a sanitized render's output goes to the sanitizer as it is rendered
/// and comes in one piece, sanitized whole;
/// the output bound counts the pieces.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_renders_output_pieces_make_up_its_answer() {
    let n = 120_000;
    let want: String = (0..n).map(|i| format!("piece {i}\n")).collect::<String>() + "end";
    assert!(want.len() > 1024 * 1024, "more than the pipe holds");
    let r = runner_with_output(4 * 1024 * 1024);
    let source = format!("stream-pieces:{n}");
    let mut s = start(&r, &source).await;
    s.send_context(&ctx()).await.unwrap();
    assert!(s.send_rows(br#"[{"a":1}]"#).await.unwrap());
    assert_eq!(s.finish().await.unwrap(), want);
    let mut s = r
        .start_render(source.as_str().into(), RenderLimits::default(), true)
        .await
        .unwrap()
        .expect("the sandbox runner streams");
    s.send_context(&ctx()).await.unwrap();
    assert_eq!(s.finish().await.unwrap(), format!("[sanitized]{want}"));
    // An empty piece is refused at once (a child sending frames without output): the child,
    // which then sleeps, is killed as a crash, not waited for until its deadline (a timeout).
    let mut s = start(&r, "stream-empty-piece").await;
    s.send_context(&ctx()).await.unwrap();
    assert!(matches!(
        template(s.finish().await.unwrap_err()),
        RenderError::Crashed(_)
    ));
    let small = runner_with_output(1024 * 1024);
    let mut s = start(&small, &source).await;
    s.send_context(&ctx()).await.unwrap();
    assert_eq!(
        template(s.finish().await.unwrap_err()),
        RenderError::OutputTooLarge(1024 * 1024)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_render_that_answers_before_the_last_row_stops_the_rows_without_a_deadlock() {
    let r = runner_with_output(4 * 1024 * 1024);
    // The answer (3 MB) is larger than the pipe (1 MiB): the child can only finish writing
    // it if the parent reads it while it still sends rows.
    let mut s = start(&r, "stream-big:3000000").await;
    s.send_context(&ctx()).await.unwrap();
    let chunk = format!("[{}]", vec![r#"{"a":"xxxxxxxxxxxxxxxx"}"#; 2000].join(","));
    let started = Instant::now();
    let mut sent = 0;
    while s.send_rows(chunk.as_bytes()).await.unwrap() {
        sent += 1;
        assert!(
            sent < 10_000,
            "the rows were taken although the render had answered"
        );
    }
    assert_eq!(s.finish().await.unwrap().len(), 3_000_000);
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    let mut s = start(&r, "stream-early").await;
    s.send_context(&ctx()).await.unwrap();
    let mut more = true;
    for _ in 0..10_000 {
        more = s.send_rows(chunk.as_bytes()).await.unwrap();
        if !more {
            break;
        }
    }
    assert!(!more);
    assert!(s.finish().await.unwrap().starts_with("early [{\"a\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_render_fails_times_out_and_is_abandoned_cleanly() {
    let r = runner();
    let mut s = start(&r, "stream-fail").await;
    s.send_context(&ctx()).await.unwrap();
    while s.send_rows(b"[{}]").await.unwrap() {}
    assert_eq!(
        template(s.finish().await.unwrap_err()),
        RenderError::FuelExhausted
    );
    // A child that stops reading: the parent's write waits until the deadline, then the child
    // is killed.
    let mut config = config("render");
    config.time_bound = Duration::from_millis(800);
    let r = ProcessTemplateRunner::new(ProcessPool::new(config.clone()), ProcessPool::new(config));
    let mut s = start(&r, "stream-sleep").await;
    s.send_context(&ctx()).await.unwrap();
    let chunk = vec![b'x'; 256 * 1024];
    let started = Instant::now();
    let e = loop {
        match s.send_rows(&chunk).await {
            Ok(true) => continue,
            Ok(false) => panic!("the child stopped reading without answering"),
            Err(e) => break e,
        }
    };
    assert_eq!(template(e), RenderError::Timeout);
    assert!(started.elapsed() < Duration::from_secs(3));
    drop(s);
    // Abandoning a session kills its child and frees its slot: both slots serve again.
    let pool = r.render_pool().clone();
    for _ in 0..3 {
        let mut s = start(&r, "stream").await;
        s.send_context(&ctx()).await.unwrap();
        drop(s);
    }
    let mut a = start(&r, "stream").await;
    let mut b = start(&r, "stream").await;
    a.send_context(&ctx()).await.unwrap();
    b.send_context(&ctx()).await.unwrap();
    assert!(a.finish().await.is_ok() && b.finish().await.is_ok());
    assert!(pool.idle_children() <= 2);
}

/// Pieces taken before the context come out as the render hands them out, while the rows
/// are still sent; the answer is then only what follows the last piece. Taking them later
/// answers `None` (the answer is already being read).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_pieces_taken_before_the_context_come_out_as_rendered() {
    let n = 120_000;
    let want: String = (0..n).map(|i| format!("piece {i}\n")).collect();
    let r = runner_with_output(4 * 1024 * 1024);
    let mut s = start(&r, &format!("stream-pieces:{n}")).await;
    let mut pieces = s.take_output().expect("a sandbox session hands out pieces");
    let reader = tokio::spawn(async move {
        let mut got = Vec::new();
        let mut count = 0;
        while let Some(piece) = pieces.next().await {
            assert!(piece.ends_with(b"\n"), "a piece ends a line");
            got.extend_from_slice(&piece);
            count += 1;
        }
        (String::from_utf8(got).expect("UTF-8 pieces"), count)
    });
    s.send_context(&ctx()).await.unwrap();
    assert!(s.send_rows(br#"[{"a":1}]"#).await.unwrap());
    assert_eq!(s.finish().await.unwrap(), "end");
    let (got, count) = reader.await.unwrap();
    assert!(count > 1, "{count} pieces");
    assert!(got == want, "the pieces are not the output's beginning");
    // Too late once the context is sent.
    let mut s = start(&r, "stream").await;
    s.send_context(&ctx()).await.unwrap();
    assert!(s.take_output().is_none());
    // Abandoned: the reader sees the end.
    let mut s = start(&r, &format!("stream-pieces:{n}")).await;
    let mut pieces = s.take_output().expect("pieces");
    s.send_context(&ctx()).await.unwrap();
    assert!(s.send_rows(br#"[{"a":1}]"#).await.unwrap());
    drop(s);
    let drained = tokio::time::timeout(Duration::from_secs(5), async {
        while pieces.next().await.is_some() {}
    })
    .await;
    assert!(drained.is_ok(), "the pieces never ended");
}

/// A runner whose parse pool has a smaller heap (64 MiB) and a shorter deadline (1 s) than
/// its render pool (128 MiB, 5 s).
fn runner_with_tight_parse() -> ProcessTemplateRunner {
    let parse = PoolConfig {
        memory_bytes: 64 * 1024 * 1024,
        time_bound: Duration::from_secs(1),
        ..config("parse")
    };
    ProcessTemplateRunner::new(ProcessPool::new(parse), ProcessPool::new(config("render")))
}

async fn start_analyzed(
    r: &ProcessTemplateRunner,
    source: &str,
    sanitize_html: bool,
) -> Result<Box<dyn RenderSession>, RunnerError> {
    let limits = RenderLimits::default();
    let started = r
        .start_analyzed_render(source.into(), limits, limits, sanitize_html)
        .await?
        .expect("the sandbox runner analyzes and renders in one child");
    assert!(started.0.mapped_fields.is_empty());
    assert!(started.1.plan().is_none(), "not a streamed render");
    Ok(started.1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_analyzed_render_parses_within_the_parse_bounds_and_renders_in_the_same_child() {
    let r = runner_with_tight_parse();
    let mut s = start_analyzed(&r, "echo:hi", false).await.unwrap();
    s.send_context(&ctx()).await.unwrap();
    assert_eq!(s.finish().await.unwrap(), "hi");
    let mut s = start_analyzed(&r, "echo:<p>hi</p>", true).await.unwrap();
    s.send_context(&ctx()).await.unwrap();
    assert_eq!(s.finish().await.unwrap(), "[sanitized]<p>hi</p>");
    // One child of the render pool did it all: the parse pool never started one.
    assert_eq!(r.parse_pool().idle_children(), 0);
    // The analysis' failures are answered before the context, as an upload's parse's: its
    // heap bound and its deadline are the parse pool's.
    let e = start_analyzed(&r, "syntax", false).await.unwrap_err();
    assert_eq!(template(e), RenderError::Syntax("scripted".into()));
    let e = start_analyzed(&r, "alloc", false).await.unwrap_err();
    assert_eq!(template(e), RenderError::MemoryLimit(64 * 1024 * 1024));
    let started = Instant::now();
    let e = start_analyzed(&r, "sleep", false).await.unwrap_err();
    assert_eq!(template(e), RenderError::Timeout);
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    // The render has the render pool's heap again: 80 MB is past the analysis' bound.
    let mut s = start_analyzed(&r, "hold:80000000", false).await.unwrap();
    s.send_context(&ctx()).await.unwrap();
    assert_eq!(s.finish().await.unwrap(), "held 80000000");
    // A session dropped before its context kills its child and frees its slot.
    for _ in 0..3 {
        drop(start_analyzed(&r, "echo:x", false).await.unwrap());
    }
    assert_eq!(render(&r, "echo:still here").await.unwrap(), "still here");
}
