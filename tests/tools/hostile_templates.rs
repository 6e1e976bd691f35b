//! The released binary (`reporter serve`, in memory) against a table of hostile templates in the
//! original's Pongo2 dialect, over HTTP: each ends 400 at upload (a bound's code, or a syntax
//! error) or `Error` for its report, within its bound; the service's RSS stays under
//! [`SERVICE_RSS_BOUND_MIB`]; `/health` keeps answering beside a trivial responder on the same
//! host (a concurrent prober measures both): no probe takes [`STALL`] more than the control's
//! slowest, and at most [`SLOW_PER_MILLE`] probes in 1,000 (or one) take [`SLOW`] more; and the sandbox
//! children die with the service.
//!
//! Cases marked `Contained` are hostile to a weak engine but legitimate to this one (a flat
//! filter chain, `calc` parentheses evaluated without recursion, a huge exponent that is
//! simply `+Inf` in float64 as in the original): they
//! may finish, as long as they end within their bound and the service serves on.
use crate::common;
use crate::common::kept_log::KeptLog;

use reporter_adapter_sandbox::BACKSTOP_FACTOR;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A `/health` probe this much slower than the control's slowest is slow. A defect that
/// starves the runtime (a child reaped on a worker, as once) makes one such probe per report.
const SLOW: Duration = Duration::from_millis(100);
/// Slow probes allowed per 1,000: a host running the suite's other processes (SDK builds)
/// stalls a probe now and then on its own, and a maximum alone made the test fail on one.
const SLOW_PER_MILLE: usize = 2;
/// No probe may be this much slower than the control's slowest: a render or a parse on the
/// service's runtime would hold `/health` for the whole of it (seconds).
const STALL: Duration = Duration::from_secs(1);

/// Bound on the service process's resident memory during the whole run (template work runs
/// in sandbox children, each bounded by TEMPLATE_*_MEMORY_MIB on its own).
const SERVICE_RSS_BOUND_MIB: u64 = 200;
/// The bounds the service runs with in this test.
const PARSE_TIMEOUT_MS: u64 = 5_000;
const RENDER_TIMEOUT_S: u64 = 10;
const RENDER_MEMORY_MIB: u64 = 256;

struct Service {
    child: Child,
    addr: String,
    /// The service's log (its errors), shown when the test fails.
    log: KeptLog,
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start() -> Service {
    let addr = common::free_addr();
    let mut child = Command::new(env!("CARGO_BIN_EXE_reporter"))
        .arg("serve")
        .env("TMPDIR", common::children_tmpdir())
        .env("SERVER_ADDRESS", &addr)
        .env("AUTH_JWT_SECRET", common::SECRET)
        .env("LOG_LEVEL", "error")
        .env("TEMPLATE_SANDBOX_POOL_SIZE", "2")
        .env("TEMPLATE_PARSE_TIMEOUT_MS", PARSE_TIMEOUT_MS.to_string())
        .env("TEMPLATE_RENDER_TIMEOUT_SEC", RENDER_TIMEOUT_S.to_string())
        .env("TEMPLATE_RENDER_CPU_SECONDS", RENDER_TIMEOUT_S.to_string())
        .env("TEMPLATE_RENDER_MEMORY_MIB", RENDER_MEMORY_MIB.to_string())
        .env("ENGINE_RENDER_FUEL", "20000000")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start reporter serve");
    let log = KeptLog::keep(child.stderr.take().expect("stderr"));
    common::wait_listening(&addr, &mut child, Duration::from_secs(60));
    Service { child, addr, log }
}

/// A trivial HTTP responder on a thread of this process (`200 ok` to anything): the control
/// of the `/health` prober. Its slowest answer is the latency the host adds on its own (other
/// processes at the service's priority), which a bound on the service cannot ask it to beat.
fn control_responder() -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("control");
    let addr = listener.local_addr().expect("control address").to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            // The whole request (headers, no body) before the answer: closing a socket with
            // unread bytes resets the connection.
            let (mut request, mut buf) = (Vec::new(), [0u8; 1024]);
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
        }
    });
    addr
}

/// What must happen to a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// 400 at upload, or an `Error` report.
    Refused,
    /// Hostile to a weak engine, legitimate to this one: any outcome (400 with a bound's
    /// code, `Error`, `Finished`) as long as it ends within its bound and the service serves.
    Contained,
    /// A legitimate template: 201 and `Finished`.
    Accepted,
}

struct Case {
    name: &'static str,
    source: String,
    expect: Expect,
}

fn case(name: &'static str, source: String) -> Case {
    Case {
        name,
        source,
        expect: Expect::Refused,
    }
}

fn contained(name: &'static str, source: String) -> Case {
    Case {
        name,
        source,
        expect: Expect::Contained,
    }
}

/// A string literal of `n` characters, for `for` loops that iterate characters (Pongo2 has no
/// `range`).
fn chars(n: usize) -> String {
    format!("\"{}\"", "x".repeat(n))
}

fn cases() -> Vec<Case> {
    let n = 100_000;
    let mut field_refs = String::new();
    while field_refs.len() + 34 < 1024 * 1024 {
        field_refs.push_str("{{ bank.accounts.0.holder_name }}\n");
    }
    let thousand = chars(1000);
    vec![
        case("operator chain of 100k", format!("{{{{ 1{} }}}}", "+1".repeat(n))),
        contained(
            "filter chain of 100k",
            format!("{{% with v = \"a\" %}}{{{{ v{} }}}}{{% endwith %}}", "|lower".repeat(n)),
        ),
        case(
            "attribute chain of 100k",
            format!("{{% with v = 1 %}}{{{{ v{} }}}}{{% endwith %}}", ".x".repeat(n)),
        ),
        case("and chain of 100k", format!("{{{{ 1{} }}}}", " and 1".repeat(n))),
        case("not chain of 100k", format!("{{{{ {}1 }}}}", "not ".repeat(n))),
        case(
            "parentheses nested 100k",
            format!("{{{{ {}1{} }}}}", "(".repeat(n), ")".repeat(n)),
        ),
        // `calc` is evaluated in one linear pass (no recursion), so the nesting is harmless.
        contained(
            "calc parentheses nested 100k",
            format!("{{% calc {}1{} %}}", "(".repeat(n), ")".repeat(n)),
        ),
        case(
            "if blocks nested 20k",
            format!(
                "{}x{}",
                "{% if true %}".repeat(20_000),
                "{% endif %}".repeat(20_000)
            ),
        ),
        case(
            "for blocks nested 20k",
            format!(
                "{}x{}",
                "{% for a in bank.accounts %}".repeat(20_000),
                "{% endfor %}".repeat(20_000)
            ),
        ),
        case(
            "with blocks nested 20k",
            format!(
                "{}x{}",
                "{% with a = 1 %}".repeat(20_000),
                "{% endwith %}".repeat(20_000)
            ),
        ),
        case(
            "slice bomb",
            "{% for a in bank.accounts %}{{ a.holder_name|slice:\":999999999\" }}{% endfor %}{{ \"x\"|ljust:\"999999999\" }}".into(),
        ),
        case("center bomb", "{{ \"x\"|center:999999999 }}".into()),
        case(
            "stringformat bomb",
            "{{ 1|stringformat:\"%999999999d\" }}".into(),
        ),
        case("floatformat bomb", "{{ 1.5|floatformat:999999999 }}".into()),
        case("lorem bomb", "{% lorem 999999999 w %}".into()),
        case(
            "join with a 100 MB separator",
            "{% with sep = \"x\"|ljust:99999999 %}{{ bank.accounts|join:sep }}{% endwith %}"
                .into(),
        ),
        case(
            "list of 50M characters",
            "{% with s = \"x\"|ljust:50000000 %}{{ s|make_list|length }}{% endwith %}".into(),
        ),
        // There is no list doubling to try: in Pongo2 (and this engine) `+` on two lists is
        // integer addition of their Integer() values, 0, and `|add` of two lists concatenates
        // their printed forms into a string (golden case arithmetic_pongo2, "lists:"). A list
        // can only grow from a string (`make_list`, `split`), so string doubling and the
        // 50M-character list above cover it.
        case(
            "string doubling in a loop",
            format!(
                "{{% with s = \"xxxxxxxx\" %}}{{% for i in {} %}}{{% set s = s + s %}}{{% endfor %}}{{{{ s|length }}}}{{% endwith %}}",
                chars(64)
            ),
        ),
        case(
            "padding in nested loops over data",
            "{% for a in bank.accounts %}{% for b in bank.accounts %}{% for c in bank.accounts %}{{ a.holder_name|rjust:\"99999999\" }}{% endfor %}{% endfor %}{% endfor %}".into(),
        ),
        contained("huge exponent", "{{ 2 ^ 999999999 }}".into()),
        contained("calc tower of exponents", "{% calc 10 ** 10 ** 10 ** 10 %}".into()),
        case(
            "endless loop",
            format!(
                "{{% for a in {thousand} %}}{{% for b in {thousand} %}}{{% for c in {thousand} %}}{{% endfor %}}{{% endfor %}}{{% endfor %}}"
            ),
        ),
        case(
            "endless loop over data",
            format!(
                "{}{{{{ a.holder_name }}}}{}",
                "{% for a in bank.accounts %}".repeat(12),
                "{% endfor %}".repeat(12)
            ),
        ),
        case(
            "endless aggregation",
            format!(
                "{{% for a in {thousand} %}}{{% for b in {thousand} %}}{{% sum_by bank.transactions by \"amount\" %}}{{% endfor %}}{{% endfor %}}"
            ),
        ),
        case(
            "infinite recursion",
            "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}".into(),
        ),
        Case {
            name: "1 MiB of field references (legitimate)",
            source: field_refs,
            expect: Expect::Accepted,
        },
    ]
}

/// Upload outcome: (status, code, elapsed).
fn upload(addr: &str, token: &str, source: &str) -> (u16, serde_json::Value, Duration) {
    let form = common::Form::new()
        .file("template", "h.tpl", source.as_bytes())
        .text("outputFormat", "txt")
        .text("description", "hostile");
    let ct = form.content_type();
    let started = Instant::now();
    let (status, body) =
        common::request(addr, "POST", "/v1/templates", token, &ct, &form.into_body());
    let body = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    (status, body, started.elapsed())
}

fn rss_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_owned))
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Pids whose parent is `pid`.
fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
        // pid (comm) state ppid …: the comm may contain spaces, so split after the last ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid) && !stat.contains(") Z ") {
            out.push(child);
        }
    }
    out
}

#[test]
fn hostile_templates_end_within_their_bounds_and_the_service_keeps_serving() {
    let _alone = super::one_at_a_time();
    let service = start();
    let pid = service.child.id();
    let addr = service.addr.clone();
    let log = service.log.clone();
    let token = common::token();
    let stop = Arc::new(AtomicBool::new(false));
    let health_us = Arc::new(std::sync::Mutex::new(Vec::<u64>::new()));
    let worst_control_us = Arc::new(AtomicU64::new(0));
    let case_worst_us = Arc::new(AtomicU64::new(0));
    let control = control_responder();
    let peak_rss = Arc::new(AtomicU64::new(0));
    let prober = {
        let (stop, health, addr) = (stop.clone(), health_us.clone(), addr.clone());
        let case_worst = case_worst_us.clone();
        let (control, worst_control) = (control.clone(), worst_control_us.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let started = Instant::now();
                let (status, _) =
                    common::request(&control, "GET", "/health", "", "text/plain", b"");
                assert_eq!(status, 200, "the control failed");
                worst_control.fetch_max(started.elapsed().as_micros() as u64, Ordering::SeqCst);
                let started = Instant::now();
                let (status, _) = common::request(&addr, "GET", "/health", "", "text/plain", b"");
                let us = started.elapsed().as_micros() as u64;
                assert_eq!(status, 200, "/health failed");
                health.lock().expect("probe times").push(us);
                case_worst.fetch_max(us, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let sampler = {
        let (stop, peak) = (stop.clone(), peak_rss.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                peak.fetch_max(rss_kib(pid, "VmRSS:"), Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(25));
            }
        })
    };

    let mut failures = Vec::new();
    let mut table = Vec::new();
    for c in cases() {
        case_worst_us.store(0, Ordering::SeqCst);
        let (status, body, took) = upload(&addr, &token, &c.source);
        // A bound counts the child's time at work; the wall clock ends it at the backstop
        // (on a host that lets the child run only part of the time).
        let parse_bound =
            Duration::from_millis(PARSE_TIMEOUT_MS) * BACKSTOP_FACTOR + Duration::from_secs(3);
        if took > parse_bound {
            failures.push(format!(
                "{}: upload took {took:?} (bound {parse_bound:?})",
                c.name
            ));
        }
        let outcome = match status {
            400 => {
                let code = body["code"].as_str().unwrap_or_default().to_owned();
                if !["TPL-0008", "TPL-0080", "TPL-0081", "TPL-0082"].contains(&code.as_str()) {
                    failures.push(format!("{}: 400 with unexpected code {body}", c.name));
                }
                if c.expect == Expect::Accepted {
                    failures.push(format!("{}: legitimate template refused: {body}", c.name));
                }
                format!("400 {code} in {took:?}")
            }
            201 => {
                let id = body["id"].as_str().expect("id").to_owned();
                let started = Instant::now();
                let report = common::request_report_raw(&addr, &token, &id);
                let r = common::wait_report_raw(&addr, &token, &report, 600);
                let rendered = started.elapsed();
                let state = r["status"].as_str().unwrap_or_default().to_owned();
                let code = r["metadata"]["error_code"]
                    .as_str()
                    .unwrap_or("-")
                    .to_owned();
                let render_bound = Duration::from_secs(RENDER_TIMEOUT_S) * BACKSTOP_FACTOR
                    + Duration::from_secs(10);
                if rendered > render_bound {
                    failures.push(format!(
                        "{}: report took {rendered:?} (bound {render_bound:?})",
                        c.name
                    ));
                }
                let want = match c.expect {
                    Expect::Refused => "Error",
                    Expect::Accepted => "Finished",
                    Expect::Contained => state.as_str(),
                };
                if state != want || state == "Processing" {
                    failures.push(format!("{}: report {state} ({code}), want {want}", c.name));
                }
                format!("201 in {took:?}, report {state} {code} in {rendered:?}")
            }
            other => {
                failures.push(format!("{}: upload answered {other}: {body}", c.name));
                format!("{other}")
            }
        };
        let slowest = case_worst_us.load(Ordering::SeqCst) as f64 / 1000.0;
        table.push(format!(
            "  {:<42} {} (/health ≤ {slowest:.1} ms){}",
            c.name,
            outcome,
            if c.expect == Expect::Contained {
                "  [contained]"
            } else {
                ""
            }
        ));
    }

    // Children die with the service: SIGKILL the service, its sandbox children follow.
    stop.store(true, Ordering::SeqCst);
    prober.join().expect("prober");
    sampler.join().expect("sampler");
    let peak_hwm = rss_kib(pid, "VmHWM:");
    let children = children_of(pid);
    let mut service = service;
    let _ = service.child.kill();
    let _ = service.child.wait();
    let deadline = Instant::now() + Duration::from_secs(5);
    let alive = |p: &u32| {
        std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| !s.contains(") Z "))
    };
    while children.iter().any(alive) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }

    let health = std::mem::take(&mut *health_us.lock().expect("probe times"));
    let worst = health.iter().copied().max().unwrap_or_default();
    let worst_control = worst_control_us.load(Ordering::SeqCst);
    let slow_from = worst_control + SLOW.as_micros() as u64;
    let slow = health.iter().filter(|&&us| us > slow_from).count();
    let peak = peak_rss.load(Ordering::SeqCst).max(peak_hwm);
    // One record: the table stays in one piece in the figures log.
    reporter_contract::figure!(
        "hostile templates (parse bound {PARSE_TIMEOUT_MS} ms, render bound {RENDER_TIMEOUT_S} s, render memory {RENDER_MEMORY_MIB} MiB):\n{}",
        table.join("\n")
    );
    reporter_contract::figure!(
        "/health: {} probes, slowest {:.1} ms (the control's slowest {:.1} ms), {slow} over {:.1} ms; service RSS peak {} MiB (bound {SERVICE_RSS_BOUND_MIB} MiB); {} sandbox children at the end",
        health.len(),
        worst as f64 / 1000.0,
        worst_control as f64 / 1000.0,
        slow_from as f64 / 1000.0,
        peak / 1024,
        children.len()
    );
    assert!(
        failures.is_empty(),
        "failures:\n{}\nthe service's log (end):\n{}",
        failures.join("\n"),
        log.tail()
    );
    assert!(health.len() > 10, "the prober barely ran");
    // What the service adds to the host's own latency, over the slowest answer of a trivial
    // responder probed the same way: never a stall, and slow only as rarely as the host is.
    assert!(
        worst < worst_control + STALL.as_micros() as u64,
        "/health stalled: {:.1} ms (the control's slowest {:.1} ms)",
        worst as f64 / 1000.0,
        worst_control as f64 / 1000.0
    );
    assert!(
        slow <= (health.len() * SLOW_PER_MILLE / 1000).max(1),
        "{slow} of {} /health probes took over {:.1} ms (the control's slowest + {SLOW:?}; at most {SLOW_PER_MILLE} in 1,000, or one)",
        health.len(),
        slow_from as f64 / 1000.0
    );
    assert!(
        peak / 1024 < SERVICE_RSS_BOUND_MIB,
        "service RSS peaked at {} MiB",
        peak / 1024
    );
    assert!(!children.is_empty(), "no sandbox child was running");
    assert!(
        !children.iter().any(alive),
        "sandbox children outlived the service"
    );
}
