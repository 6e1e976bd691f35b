//! The PDF child's confinement: the same as the template sandbox's children
//! (`reporter-child-confine`). A live child's `/proc/<pid>/status`, descriptors and
//! environment, read while it converts; the report it gives; and conversions that still
//! produce the document (the fonts come from the child's memory, not from files).
use crate::common::{assert_statement_text, lorem_html, pdf_children, statement_html};
use reporter_adapter_pdf::{Enforcement, NativePdfOptions, NativePdfRenderer, PdfChildCommand};
use reporter_child_confine::fixtures::{assert_confined_status, running_as_root, status_field};
use reporter_child_confine::{NOBODY, NOGROUP};
use reporter_ports::ports::PdfRenderer;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const MIB: u64 = 1024 * 1024;

fn renderer(options: NativePdfOptions) -> NativePdfRenderer {
    let child = PdfChildCommand {
        exe: PathBuf::from(env!("CARGO_BIN_EXE_pdf-child")),
        args: Vec::new(),
    };
    match NativePdfRenderer::new(options, child) {
        Ok(r) => r,
        Err(e) => panic!("renderer: {e}"),
    }
}

/// The user and group a child of this test process runs as: `nobody`/`nogroup` when the
/// test runs as root (as in CI), else the test's own.
fn expected_ids() -> (bool, String, String) {
    if running_as_root() {
        return (true, NOBODY.to_string(), NOGROUP.to_string());
    }
    let own = std::fs::read_to_string("/proc/self/status").expect("own status");
    let first = |s: String| s.split(' ').next().unwrap_or_default().to_owned();
    (
        false,
        first(status_field(&own, "Uid")),
        first(status_field(&own, "Gid")),
    )
}

/// A child that is converting (a long document): unprivileged user and group, every
/// capability set empty, seccomp filter mode, `no_new_privs`, an empty environment and no
/// descriptor but pipes (its three, the font pipes), although this process held one open
/// without `O_CLOEXEC` when it forked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_pdf_child_runs_unprivileged_under_seccomp_with_only_pipes() {
    let leaked = std::fs::File::open("/dev/null").expect("/dev/null");
    rustix::io::fcntl_setfd(&leaked, rustix::io::FdFlags::empty()).expect("fcntl");
    let bound = 1024 * MIB + 3;
    let r = renderer(NativePdfOptions {
        memory_bytes: bound,
        timeout: Duration::from_secs(30),
        ..NativePdfOptions::default()
    });
    let html = lorem_html(4_000);
    let render = r.render(&html);
    tokio::pin!(render);
    // The child is seen once it confined itself (seccomp is its last step).
    let started = Instant::now();
    let (pid, status) = loop {
        tokio::select! {
            result = &mut render => panic!("the conversion ended before its child was seen: {result:?}"),
            () = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
        let confined = pdf_children(bound).into_iter().find_map(|pid| {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
            (status_field(&status, "Seccomp") == "2").then_some((pid, status))
        });
        if let Some(found) = confined {
            break found;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no confined pdf child was seen"
        );
    };
    assert_confined_status(&status);
    let environ = std::fs::read(format!("/proc/{pid}/environ")).expect("environ");
    assert!(environ.is_empty(), "{}", String::from_utf8_lossy(&environ));
    let fds: Vec<(String, String)> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("fd dir")
        .filter_map(|e| {
            let e = e.ok()?;
            let target = std::fs::read_link(e.path()).ok()?;
            Some((
                e.file_name().to_string_lossy().into_owned(),
                target.display().to_string(),
            ))
        })
        .collect();
    assert!(
        fds.len() >= 3 && fds.iter().all(|(_, target)| target.starts_with("pipe:")),
        "the child holds more than pipes: {fds:?}"
    );
    drop(leaked);
}

/// A conversion in a confined child still gives the whole document (text, bold, italic and
/// UTF-8 through pdftotext: the fonts load without any file), and the renderer keeps the
/// child's report: on this kernel (Landlock ABI ≥ 6, seccomp filters) nothing is missing.
#[tokio::test]
async fn a_confined_child_converts_and_reports_its_confinement() {
    let r = renderer(NativePdfOptions::default());
    assert_eq!(r.confinement(), None, "no child ran yet");
    let pdf = match r.render(&statement_html(30)).await {
        Ok(pdf) => pdf,
        Err(e) => panic!("render: {e}"),
    };
    assert!(pdf.starts_with(b"%PDF-"));
    assert_statement_text(&pdf, 30);
    let c = r.confinement().expect("the child reported its confinement");
    assert!(c.seccomp, "{c:?}");
    assert_eq!(c.landlock, Enforcement::Full, "{c:?}");
    assert!(c.landlock_abi >= 6, "{c:?}");
    assert!(c.capabilities_dropped, "{c:?}");
    assert!(c.missing().is_empty(), "{:?}", c.missing());
    let (root, uid, gid) = expected_ids();
    assert_eq!((c.uid.to_string(), c.gid.to_string()), (uid, gid));
    if root {
        assert!(c.bounding_set_dropped, "{c:?}");
    }
}

/// The start-up probe converts a small document and returns the report it kept.
#[tokio::test]
async fn the_confinement_probe_returns_the_childs_report() {
    let r = renderer(NativePdfOptions::default());
    let c = match r.probe_confinement().await {
        Ok(c) => c,
        Err(e) => panic!("probe: {e}"),
    };
    assert_eq!(r.confinement(), Some(c.clone()));
    assert!(c.seccomp && c.capabilities_dropped, "{c:?}");
}
