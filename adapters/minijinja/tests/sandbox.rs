//! Malicious templates end quickly with the right error; no file access.
use reporter_adapter_minijinja::MiniJinjaEngine;
use reporter_ports::ports::{RenderError, RenderLimits, TemplateEngine};
use serde_json::json;
use std::time::{Duration, Instant};

fn run(src: &str, limits: RenderLimits) -> (Result<String, RenderError>, Duration) {
    let started = Instant::now();
    let r = MiniJinjaEngine::new().render(src, &json!({"bank": {"t": [{"a": 1}]}}), &limits);
    (r, started.elapsed())
}

fn fails_fast(src: &str, limits: RenderLimits, want: &RenderError) {
    let (r, took) = run(src, limits);
    match r {
        Err(e) => assert_eq!(
            std::mem::discriminant(&e),
            std::mem::discriminant(want),
            "{src}: got {e:?}, want {want:?}"
        ),
        Ok(out) => panic!("{src}: rendered {} bytes instead of failing", out.len()),
    }
    eprintln!("{src}: failed as expected in {took:?}");
    assert!(took < Duration::from_secs(2), "{src}: took {took:?}");
}

#[test]
fn endless_loops_run_out_of_fuel() {
    // A tenth of the default budget: the default 50M instructions take ~5 s in an
    // unoptimised test build (far less in release); the bound being enforced is what counts.
    let limits = RenderLimits {
        fuel: 5_000_000,
        ..RenderLimits::default()
    };
    fails_fast(
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        limits,
        &RenderError::FuelExhausted,
    );
    fails_fast(
        "{% for i in range(100000) %}{% for j in range(100000) %}{% for k in range(100000) %}{{ k }}{% endfor %}{% endfor %}{% endfor %}",
        RenderLimits {
            fuel: 1_000_000,
            ..limits
        },
        &RenderError::FuelExhausted,
    );
    // A recursive loop over a table.
    fails_fast(
        "{% for i in range(100000) %}{% for r in bank.t recursive %}{{ loop([r, r, r]) }}{% endfor %}{% endfor %}",
        RenderLimits {
            fuel: 2_000_000,
            ..limits
        },
        &RenderError::RecursionLimit,
    );
}

#[test]
fn giant_ranges_are_refused_up_front() {
    // minijinja refuses ranges over 100,000 items before looping (so `range(10**9)|list`
    // cannot allocate either): an evaluation error, immediately.
    fails_fast(
        "{% for i in range(10**9) %}x{% endfor %}",
        RenderLimits::default(),
        &RenderError::Evaluation(String::new()),
    );
}

#[test]
fn recursive_macros_hit_the_recursion_limit() {
    fails_fast(
        "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
        RenderLimits::default(),
        &RenderError::RecursionLimit,
    );
    // A legitimately nested macro within the limit still renders.
    let (r, _) = run(
        "{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(30) }}",
        RenderLimits::default(),
    );
    assert!(r.is_ok_and(|s| s.starts_with("3029")));
    // And the limit is the configured one.
    fails_fast(
        "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(30) }}",
        RenderLimits {
            max_recursion: 8,
            ..RenderLimits::default()
        },
        &RenderError::RecursionLimit,
    );
}

#[test]
fn huge_output_stops_early() {
    let small = RenderLimits {
        max_output_bytes: 1 << 20,
        ..RenderLimits::default()
    };
    let big = RenderError::OutputTooLarge(0);
    fails_fast("{{ 'x' * 10000000 }}", small, &big);
    fails_fast(
        "{% for i in range(100000) %}{% for j in range(1000) %}xxxxxxxxxx{% endfor %}{% endfor %}",
        small,
        &big,
    );
    // Output built inside a capture counts too, before it is ever written.
    fails_fast(
        "{% set s %}{% for i in range(100000) %}{{ 'y' * 100000 }}{% endfor %}{% endset %}done",
        small,
        &big,
    );
    // The reported limit is the configured one, and output right at the limit passes.
    let (r, _) = run(
        "{{ 'x' * 100 }}",
        RenderLimits {
            max_output_bytes: 99,
            ..RenderLimits::default()
        },
    );
    assert_eq!(r, Err(RenderError::OutputTooLarge(99)));
    let (r, _) = run(
        "{{ 'x' * 100 }}",
        RenderLimits {
            max_output_bytes: 100,
            ..RenderLimits::default()
        },
    );
    assert_eq!(r.map(|s| s.len()), Ok(100));
    // `"x" * 10**9` is refused by minijinja itself (strings over 100 MB are not built).
    fails_fast(
        "{{ 'x' * 10**9 }}",
        RenderLimits::default(),
        &RenderError::Evaluation(String::new()),
    );
}

#[test]
fn no_file_access() {
    for src in [
        "{% include '/etc/passwd' %}",
        "{% include '../../../../etc/passwd' %}",
        "{% extends '/etc/passwd' %}",
        "{% import '/etc/passwd' as p %}",
        "{% from '/etc/hostname' import x %}{{ x }}",
        "{% include 'template' %}",
    ] {
        let (r, _) = run(src, RenderLimits::default());
        match r {
            Err(RenderError::Evaluation(msg)) => assert!(!msg.contains("root:"), "{msg}"),
            other => panic!("{src}: {other:?}"),
        }
    }
    // No environment or process access either: such globals do not exist.
    let (r, _) = run(
        "[{{ env }}][{{ environ }}][{{ os }}]",
        RenderLimits::default(),
    );
    assert_eq!(r, Ok("[][][]".into()));
}
