//! Bounded fuzzing of upload validation and rendering through the HTTP harness (real sandbox
//! children): arbitrary Unicode, template-token soup (the original's Pongo2 dialect and its
//! custom tags), deep nesting and huge numbers. Never a 5xx, never a crash; one accepted
//! template in [`RENDER_EVERY`] is also rendered as a report, which must end `Finished`,
//! `Partial` or `Error`; and the service serves afterwards. (NUL and `<script` stay out of the
//! token soup: the checks before the parser refuse them, so soup containing them would never
//! reach the sandbox.) Seeded deterministically (the same cases on every run), a fixed case
//! budget ([`CASES`]) whatever the machine's speed, no regression files; [`SAFETY_CAP`] only
//! stops a run that hangs, and failing loudly when it does.
use crate::common;

use common::{Form, TestApp, start_with, token};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRng, TestRunner};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Fuzzed uploads per run.
const CASES: u32 = 256;
/// Every this many accepted uploads, one is rendered through a report.
const RENDER_EVERY: usize = 2;
/// How long one fuzzed report may take to reach a final state.
const REPORT_DEADLINE: Duration = Duration::from_secs(60);
/// Not a budget: a run that takes longer than this is stuck, and the test fails saying so.
const SAFETY_CAP: Duration = Duration::from_secs(600);

const TOKENS: &[&str] = &[
    "{{",
    "}}",
    "{%",
    "%}",
    "{#",
    "#}",
    " if ",
    "{% if x %}",
    "{% endif %}",
    "{% else %}",
    "{% for a in bank.accounts %}",
    "{% endfor %}",
    "{% set v = ",
    "|",
    "|abs",
    "|slice:\":9\"",
    "(",
    ")",
    "[",
    "]",
    ".",
    ",",
    "\"",
    "'",
    "\\",
    "{% with x = 1 %}",
    "{% endwith %}",
    "{% sum_by bank.accounts by \"balance\" %}",
    "{% calc 1 * 1.05 %}",
    "{% date_time \"YYYYMMdd\" %}",
    "{% counter \"c\" %}",
    "{% last_item_by_group bank.accounts group_by \"branch\" order_by \"account_id\" as x %}",
    "bank:public.accounts",
    "|floatformat:2",
    "|add:",
    "**",
    "*",
    "+",
    "-",
    "not ",
    " and ",
    "bank.accounts.branch",
    "a.account_id",
    "x.y.z",
    "你好.世界",
    "comentário",
    "—",
    "\u{feff}",
    "\u{10ffff}",
    "🙂",
    "99999999999999999999999999999999",
    "1e999",
    "-0",
    "0x7f",
    "<html>",
    "on",
    "load=",
    "&#106;",
    "\n",
    "\t",
    " ",
];

fn template() -> impl Strategy<Value = String> {
    prop_oneof![
        // Arbitrary Unicode.
        any::<String>(),
        // Token soup.
        prop::collection::vec(prop::sample::select(TOKENS), 0..300).prop_map(|t| t.concat()),
        // Deep nesting of one construct.
        (
            1usize..4000,
            prop::sample::select(vec![
                ("(", ")"),
                ("[", "]"),
                ("{% if 1 %}", "{% endif %}"),
                ("{% for a in bank.accounts %}", "{% endfor %}"),
                ("not ", ""),
                ("", "|abs"),
                ("", ".x"),
            ]),
        )
            .prop_map(|(n, (open, close))| {
                format!("{{{{ {}1{} }}}}", open.repeat(n), close.repeat(n))
            }),
        // Huge numbers.
        ("[0-9]{1,300}", "[0-9]{1,300}").prop_map(|(a, b)| format!(
            "{{{{ {a} * {b} ^ {a} }}}}{{{{ -{b}.{a}e{a} }}}}{{% calc {a} * {b} ** {a} %}}{{{{ {a}|floatformat:{b} }}}}{{{{ \"x\"|center:{b} }}}}"
        )),
    ]
}

/// `body` inside the smallest content that fits `format`.
fn fitting(format: &str, body: &str) -> String {
    match format {
        "html" | "pdf" => format!("<html><body>{body}</body></html>"),
        "csv" => format!("a;b\n{body};1\n"),
        "xml" => format!("<r>{body}</r>"),
        _ => body.to_owned(),
    }
}

/// Outcomes seen, by `"<status> <code>"` or `"report <status>"`.
type Seen = Mutex<BTreeMap<String, usize>>;

fn note(seen: &Seen, what: String) {
    if let Ok(mut m) = seen.lock() {
        *m.entry(what).or_default() += 1;
    }
}

/// Uploads `source` as `format`: (status, body).
async fn upload(t: &TestApp, source: &str, format: &str) -> (u16, serde_json::Value) {
    let form = Form::new()
        .file("template", "f.tpl", source.as_bytes())
        .text("outputFormat", format)
        .text("description", "fuzz");
    let resp = t.upload(&token(), form).await;
    let status = resp.0.status().as_u16();
    let body = resp.0.into_body().into_string().await.unwrap_or_default();
    (status, serde_json::from_str(&body).unwrap_or_default())
}

/// Requests a report of `template` and waits for its final state: `Ok(status)`, or what
/// went wrong (a 5xx, an unexpected answer, no final state in time).
async fn render(t: &TestApp, template: &str) -> Result<String, String> {
    let resp = t
        .post_json(
            &token(),
            "/v1/reports",
            serde_json::json!({"templateId": template, "filters": {}}),
        )
        .await;
    let status = resp.0.status().as_u16();
    let body: serde_json::Value =
        serde_json::from_str(&resp.0.into_body().into_string().await.unwrap_or_default())
            .unwrap_or_default();
    let Some(id) = body["id"].as_str().filter(|_| status == 201) else {
        return Err(format!("report request answered {status}: {body}"));
    };
    let started = Instant::now();
    while started.elapsed() < REPORT_DEADLINE {
        let resp = t.get(&token(), &format!("/v1/reports/{id}")).await;
        let status = resp.0.status().as_u16();
        let text = resp.0.into_body().into_string().await.unwrap_or_default();
        if status != 200 {
            return Err(format!("report read answered {status}: {text}"));
        }
        let r: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        match r["status"].as_str() {
            Some("Processing") => tokio::time::sleep(Duration::from_millis(25)).await,
            Some(s @ ("Finished" | "Partial" | "Error")) => return Ok(s.to_owned()),
            _ => return Err(format!("report in an unexpected state: {r}")),
        }
    }
    Err(format!(
        "report {id} still Processing after {REPORT_DEADLINE:?}"
    ))
}

#[test]
fn uploads_and_renders_never_answer_5xx_nor_crash_the_service() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let t = rt.block_on(start_with(common::Options::default()));
    let config = Config {
        cases: CASES,
        failure_persistence: None,
        max_shrink_iters: 32,
        ..Config::default()
    };
    let rng = TestRng::deterministic_rng(config.rng_algorithm);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let formats = prop::sample::select(vec!["txt", "html", "csv", "xml", "pdf"]);
    let started = Instant::now();
    let cap_hit = AtomicBool::new(false);
    let ran = AtomicUsize::new(0);
    let accepted = AtomicUsize::new(0);
    let seen = Seen::default();
    let result = runner.run(&(template(), formats, 0u8..4), |(source, format, raw)| {
        if started.elapsed() > SAFETY_CAP {
            cap_hit.store(true, Ordering::Relaxed);
            return Ok(());
        }
        ran.fetch_add(1, Ordering::Relaxed);
        // Three cases in four put the fuzz inside content that fits the format, so that it
        // reaches the parser instead of the format check (TPL-0007).
        let source = if raw == 0 {
            source
        } else {
            fitting(format, &source)
        };
        let (status, body) = rt.block_on(upload(&t, &source, format));
        let code = body["code"].as_str().unwrap_or_default();
        note(&seen, format!("{status} {code}"));
        if status >= 500 || !matches!(status, 201 | 400 | 413) {
            return Err(TestCaseError::fail(format!(
                "{status} for a {} byte {format} template: {body}",
                source.len()
            )));
        }
        let id = body["id"].as_str().filter(|_| status == 201);
        let Some(id) = id else {
            return Ok(());
        };
        if !accepted
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(RENDER_EVERY)
        {
            return Ok(());
        }
        let outcome = rt.block_on(render(&t, id)).map_err(|e| {
            TestCaseError::fail(format!("{e} for the {format} template {source:?}"))
        })?;
        note(&seen, format!("report {outcome}"));
        Ok(())
    });
    reporter_contract::figure!(
        "{} fuzzed uploads ({} accepted) in {:?}: outcomes {:?}",
        ran.load(Ordering::Relaxed),
        accepted.load(Ordering::Relaxed),
        started.elapsed(),
        seen.lock().map(|m| m.clone()).unwrap_or_default()
    );
    if let Err(e) = result {
        panic!("{e}");
    }
    assert!(
        !cap_hit.load(Ordering::Relaxed),
        "the fixed budget of {CASES} cases did not finish within the {SAFETY_CAP:?} safety cap \
         (only {} ran): something hangs or the machine is far too slow",
        ran.load(Ordering::Relaxed)
    );
    let renders = seen
        .lock()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| k.starts_with("report "))
                .map(|(_, n)| *n)
                .sum::<usize>()
        })
        .unwrap_or_default();
    assert!(
        renders >= 10,
        "only {renders} fuzzed templates were rendered"
    );
    rt.block_on(async {
        let id = t
            .upload_template(
                "txt",
                "{% for a in bank.accounts %}{{ a.branch }}{% endfor %}",
            )
            .await;
        let report = t.request_report(&id, serde_json::json!({})).await;
        let r = t.wait_report(&report, 600).await;
        assert_eq!(r["status"], "Finished", "{r}");
    });
}
