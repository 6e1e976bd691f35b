//! The template sandbox through the HTTP harness (real sandbox children of the `reporter`
//! binary): upload refusals with the code of the bound, script constructs refused, a sandbox
//! that cannot start, renders over a bound, and the service serving on after each; the live
//! children's confinement (`/proc/<pid>/status`) and its readiness check.
use crate::common;

use common::{Form, expect_error, json, start, start_with, token};
use poem::http::StatusCode;
use reporter_adapter_sandbox::BACKSTOP_FACTOR;
use reporter_child_confine::fixtures::{assert_confined_status, status_field};

async fn upload(t: &common::TestApp, format: &str, source: &str) -> poem::test::TestResponse {
    let form = Form::new()
        .file("template", "t.tpl", source.as_bytes())
        .text("outputFormat", format)
        .text("description", "sandbox");
    t.upload(&token(), form).await
}

/// Still serving: a legitimate template uploads and renders.
async fn still_serving(t: &common::TestApp) {
    let id = t
        .upload_template(
            "txt",
            "{% for a in bank.accounts %}{{ a.account_id }} {% endfor %}",
        )
        .await;
    let report = t.request_report(&id, serde_json::json!({})).await;
    let r = t.wait_report(&report, 600).await;
    assert_eq!(r["status"], "Finished", "{r}");
}

#[tokio::test]
async fn script_frames_objects_and_handlers_are_refused_at_upload() {
    let t = start().await;
    for (source, found) in [
        ("<html><SCRIPT>x</SCRIPT></html>", "<script"),
        ("<html><body onLoad=\"x()\"></body></html>", "onload="),
        (
            "<html><a href=\"JavaScript:x()\">a</a></html>",
            "javascript:",
        ),
        (
            "<html><a href=\"&#106;avascript:x()\">a</a></html>",
            "javascript:",
        ),
        (
            "<html><a href=\"&#x6A;ava&#x09;script&colon;x()\">a</a></html>",
            "javascript:",
        ),
        ("<html><IFrame src=\"x\"></IFrame></html>", "<iframe"),
        ("<html><object data=\"x\"></object></html>", "<object"),
        ("<html><EMBED src=\"x\"></html>", "<embed"),
        ("<html><a href=\"vbscript:x\">a</a></html>", "vbscript:"),
    ] {
        let body = expect_error(upload(&t, "html", source).await, 400, "TPL-0032").await;
        assert!(
            body["message"].as_str().unwrap_or_default().contains(found),
            "{source}: {body}"
        );
    }
    still_serving(&t).await;
}

#[tokio::test]
async fn a_sandbox_that_cannot_start_answers_503() {
    let t = start_with(common::Options {
        tweak: Some(|r| r.template_sandbox_exe = Some("/bin/true".into())),
        ..Default::default()
    })
    .await;
    let body = expect_error(
        upload(&t, "txt", "{{ bank.accounts.branch }}").await,
        503,
        "TPL-0083",
    )
    .await;
    assert!(
        !body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("/bin/true"),
        "{body}"
    );
}

/// `unit` repeated up to (not over) the 1 MiB upload bound.
fn mebibyte_of(unit: &str) -> String {
    unit.repeat((1024 * 1024) / unit.len())
}

/// Uploads a small template until the sandbox answers (its children start with the service),
/// so that what follows meets ready children instead of a start-up wait.
async fn wait_sandbox_ready(t: &common::TestApp) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let resp = upload(t, "txt", "{{ bank.accounts.branch }}").await;
        if resp.0.status() == StatusCode::CREATED {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the sandbox never became ready"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    // The child that served the upload exits; give the pool the time to start its replacement.
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
}

/// Each parse bound with a template that really crosses it: an operator chain past the
/// parser's nesting bound (TPL-0080); a 1 MiB template under the 100 ms floor of
/// TEMPLATE_PARSE_TIMEOUT_MS (TPL-0081; parsing it takes ~0.2 s in release, more in debug);
/// 1 MiB of dense expressions under the 32 MiB floor of TEMPLATE_PARSE_MEMORY_MIB (TPL-0082;
/// its parse needs ~100 MB, under the 256 MiB default). The same 1 MiB templates upload
/// under the default bounds.
#[tokio::test]
async fn templates_over_a_parse_bound_get_the_code_of_the_bound() {
    let t = start().await;
    let chain = format!("{{{{ 1{} }}}}", "+1".repeat(100_000));
    let body = expect_error(upload(&t, "txt", &chain).await, 400, "TPL-0080").await;
    assert!(body["fields"]["template"].is_string(), "{body}");
    let fields = mebibyte_of("{{ bank.accounts.branch }}\n");
    let dense = mebibyte_of("{{a+a+a+a+a}}");
    let accepted = upload(&t, "txt", &fields).await;
    assert_eq!(
        accepted.0.status(),
        StatusCode::CREATED,
        "1 MiB of field references"
    );
    // Parses under the default bounds (`a` is a plain variable, not a data source).
    let accepted = upload(&t, "txt", &dense).await;
    assert_eq!(
        accepted.0.status(),
        StatusCode::CREATED,
        "1 MiB of dense expressions"
    );
    still_serving(&t).await;

    let slow = start_with(common::Options {
        tweak: Some(|r| r.template_parse_timeout_ms = "100".into()),
        ..Default::default()
    })
    .await;
    wait_sandbox_ready(&slow).await;
    expect_error(upload(&slow, "txt", &fields).await, 400, "TPL-0081").await;
    still_serving(&slow).await;

    let small = start_with(common::Options {
        tweak: Some(|r| r.template_parse_memory_mib = "32".into()),
        ..Default::default()
    })
    .await;
    expect_error(upload(&small, "txt", &dense).await, 400, "TPL-0082").await;
    still_serving(&small).await;
}

#[tokio::test]
async fn unknown_fields_are_counted_and_the_first_hundred_listed() {
    let t = start().await;
    let source: String = (0..1500)
        .map(|i| format!("{{{{ bank.accounts.f{i} }}}}"))
        .collect();
    let body = expect_error(upload(&t, "txt", &source).await, 400, "TPL-0014").await;
    assert_eq!(
        body["fields"].as_object().map(|f| f.len()),
        Some(100),
        "{body}"
    );
    assert!(
        body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("1500"),
        "{body}"
    );
}

/// The render time bound of the test below (`TEMPLATE_RENDER_TIMEOUT_SEC`), in seconds.
const RENDER_TIMEOUT_S: u64 = 4;

#[tokio::test]
async fn renders_over_a_bound_end_errored_and_the_service_serves_on() {
    let t = start_with(common::Options {
        tweak: Some(|r| {
            r.template_render_timeout_sec = RENDER_TIMEOUT_S.to_string();
            r.template_render_memory_mib = "128".into();
            r.engine_render_fuel = "100000000000".into();
        }),
        ..Default::default()
    })
    .await;
    // The endless loop writes nothing: a faster engine would otherwise reach the output or
    // memory bound before the deadline, and the report would end `failed`, not `timeout`.
    for (source, code) in [
        (
            format!(
                "{}{{% if a.branch == \"nowhere\" %}}{{{{ a.branch }}}}{{% endif %}}{}",
                "{% for a in bank.accounts %}".repeat(12),
                "{% endfor %}".repeat(12)
            ),
            "report_generation_timeout",
        ),
        (
            "{% with s = \"xxxxxxxx\" %}{% for i in \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\" %}{% set s = s + s %}{% endfor %}{{ s|length }}{% endwith %}".to_owned(),
            "report_generation_failed",
        ),
    ] {
        let id = t.upload_template("txt", &source).await;
        let started = std::time::Instant::now();
        let report = t.request_report(&id, serde_json::json!({})).await;
        let r = t.wait_report(&report, 2400).await;
        let took = started.elapsed();
        assert_eq!(r["status"], "Error", "{r}");
        assert_eq!(r["metadata"]["error_code"], code, "{r}");
        // The bound counts the time the render runs or waits on its input; when other processes
        // hold the CPUs (CI runs many tests at once) the wall clock ends it at the backstop,
        // BACKSTOP_FACTOR times the bound. Past that, plus the time to start the job and record
        // its end, is a hang.
        let backstop = std::time::Duration::from_secs(RENDER_TIMEOUT_S) * BACKSTOP_FACTOR;
        assert!(
            took < backstop + std::time::Duration::from_secs(10),
            "{code}: the report ended after {took:?}"
        );
        eprintln!("{code}: the report ended after {took:?}");
        still_serving(&t).await;
    }
    let resp = t.get(&token(), "/health").await;
    assert_eq!(resp.0.status(), StatusCode::OK);
    let _ = json;
}

/// `pid`'s status once it shows the seccomp filter (the child's last confinement step);
/// `None` when it does not within 5 s, or the process is gone.
async fn confined_status(pid: u32) -> Option<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while std::time::Instant::now() < deadline {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        if status_field(&status, "Seccomp") == "2" {
            return Some(status);
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    None
}

/// The live `reporter template-sandbox` children of this test process, with their status.
fn sandbox_children() -> Vec<(u32, String)> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let ours = String::from_utf8_lossy(&cmdline).contains("template-sandbox");
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            continue;
        };
        if ours && status_field(&status, "PPid") == me {
            found.push((pid, status));
        }
    }
    found
}

/// The real children (the `reporter` binary under test) are confined as the README says: an
/// unprivileged user when the service runs as root (as in CI), no capabilities, seccomp
/// filter mode, `no_new_privs`, an empty environment, only their three pipes; `/readyz`
/// reports the confinement as a `templateSandbox` check, `up` on this kernel.
#[tokio::test]
async fn the_live_children_are_confined_and_readyz_says_so() {
    let t = start().await;
    wait_sandbox_ready(&t).await;
    let r = json(t.client.get("/readyz").send().await).await;
    assert_eq!(r["checks"]["templateSandbox"]["status"], "up", "{r}");
    let children = sandbox_children();
    assert!(!children.is_empty(), "no live sandbox child found");
    for (pid, status) in children {
        // A replacement child may be starting: its status is read once it confined itself
        // (seccomp is its last step), or as it was when it still is not after 5 s; a child
        // that is gone by then (it finished its request) is not checked.
        let status = match confined_status(pid).await {
            Some(confined) => confined,
            None if !std::path::Path::new(&format!("/proc/{pid}")).exists() => continue,
            None => status,
        };
        assert_confined_status(&status);
        // A child that just finished its request may be gone: what is still there is checked.
        if let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) {
            assert!(environ.is_empty(), "{}", String::from_utf8_lossy(&environ));
        }
        if let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) {
            let mut fds: Vec<u32> = dir
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect();
            fds.sort_unstable();
            assert!(
                fds.is_empty() || fds == vec![0, 1, 2],
                "child {pid} holds {fds:?}"
            );
        }
    }
    still_serving(&t).await;
}

/// The native PDF children apply the same confinement: the start-up probe's child reports
/// it, and `/readyz` shows it as the `pdfRenderer` check, `up` on this kernel (it is
/// `degraded` until the first report, so the test waits for it).
#[tokio::test]
async fn the_pdf_children_report_their_confinement_to_readyz() {
    let t = start().await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let r = json(t.client.get("/readyz").send().await).await;
        if r["checks"]["pdfRenderer"]["status"] == "up" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the pdfRenderer check is not up: {r}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    still_serving(&t).await;
}
