//! How tests find the real servers they need, and how a test that cannot run says so.
//!
//! A test that needs a server takes its URL from an environment variable. When the variable is
//! unset the test is skipped with a printed reason, unless `REPORTER_REQUIRE_SERVICES=1` (set by
//! `.ci/run`), where a missing server fails the run instead. (testcontainers would be the next
//! fallback where a Docker engine answers; none does on our machines, so it is not wired in.)
//!
//! libtest captures what a passing test prints, so a skip would be invisible in a plain
//! `cargo test`: every skip is also recorded ([`skipped`]), and when the test binary exits it
//! writes a summary to the real standard error, after libtest's own result line: how many
//! tests of the binary did not run, for want of what, and how to run them.
use std::collections::BTreeMap;
use std::sync::{Mutex, Once};

/// How to get every server the tests use (printed with the summary of skipped tests).
pub const HOW_TO_RUN: &str = "start the servers with `bash scripts/services.sh start` and \
    export what `bash scripts/services.sh env` prints (docs: Contributing, Testing)";

/// The value of `var`, or `None` after recording why the calling test is skipped.
///
/// # Panics
/// When `var` is unset and `REPORTER_REQUIRE_SERVICES=1`: a missing server must fail CI.
pub fn service_url(var: &str, what: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => Some(v),
        _ => {
            if required() {
                panic!("{what} is required (REPORTER_REQUIRE_SERVICES=1) but {var} is not set");
            }
            skipped(&format!("{what} (set {var})"));
            None
        }
    }
}

/// True when `REPORTER_REQUIRE_SERVICES=1`: a test MUST fail rather than skip.
pub fn required() -> bool {
    std::env::var("REPORTER_REQUIRE_SERVICES").is_ok_and(|v| v == "1")
}

/// Records that the calling test (or part of it) did not run for want of `what`: prints the
/// reason now (shown with the test's output) and counts it in the summary the test binary
/// writes to standard error when it exits.
pub fn skipped(what: &str) {
    eprintln!("SKIPPED: {what} is not available");
    let mut seen = SKIPS.lock().unwrap_or_else(|p| p.into_inner());
    *seen.entry(what.to_owned()).or_default() += 1;
    drop(seen);
    AT_EXIT.call_once(|| {
        // SAFETY: `print_summary` is a plain `extern "C" fn` without arguments, as atexit wants;
        // registering it has no other effect.
        unsafe {
            atexit(print_summary);
        }
    });
}

static SKIPS: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());
static AT_EXIT: Once = Once::new();

unsafe extern "C" {
    fn atexit(callback: extern "C" fn()) -> std::ffi::c_int;
}

/// The closing summary of this test binary, or `None` when nothing was skipped.
pub fn summary() -> Option<String> {
    let skips = SKIPS.lock().unwrap_or_else(|p| p.into_inner());
    let binary = std::env::args()
        .next()
        .and_then(|a| {
            std::path::Path::new(&a)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
        })
        .unwrap_or_default();
    // Cargo names a test binary `<target>-<16 hex digits>`: the target is what a reader knows.
    let target = match binary.rsplit_once('-') {
        Some((target, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => {
            target
        }
        _ => binary.as_str(),
    };
    // `cargo test` tells the binary its package; a binary run by hand has only its name.
    match std::env::var("CARGO_PKG_NAME") {
        Ok(package) => render(&skips, &format!("{package} ({target})")),
        Err(_) => render(&skips, target),
    }
}

/// The summary of `skips` (reason → count) for the test binary `binary`.
fn render(skips: &BTreeMap<String, usize>, binary: &str) -> Option<String> {
    if skips.is_empty() {
        return None;
    }
    let total: usize = skips.values().sum();
    let mut out = format!("\nNOT RUN in {binary}: {total} test(s) skipped themselves:\n");
    for (what, n) in skips {
        out.push_str(&format!("  {n:>4} × {what}\n"));
    }
    out.push_str(&format!("  To run them, {HOW_TO_RUN}.\n\n"));
    Some(out)
}

extern "C" fn print_summary() {
    use std::io::Write as _;
    if let Some(text) = summary() {
        // Straight to the process's standard error: libtest's capture is over by now.
        let _ = std::io::stderr().write_all(text.as_bytes());
    }
}

/// A name unique to one test run, safe for databases, queues and exchanges: `<prefix>_<uuid>`.
pub fn unique_name(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::now_v7().simple())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_are_counted_by_reason_in_the_summary() {
        assert_eq!(
            render(&BTreeMap::new(), "api-1a2b"),
            None,
            "no skip, no summary"
        );
        let skips = BTreeMap::from([
            ("PostgreSQL (set DATABASE_URL)".to_owned(), 2),
            ("a private RabbitMQ node".to_owned(), 1),
        ]);
        let text = render(&skips, "api-1a2b").expect("a summary after skips");
        assert!(
            text.contains("NOT RUN in api-1a2b: 3 test(s) skipped"),
            "{text}"
        );
        assert!(
            text.contains("   2 × PostgreSQL (set DATABASE_URL)"),
            "{text}"
        );
        assert!(text.contains("   1 × a private RabbitMQ node"), "{text}");
        assert!(text.contains("scripts/services.sh start"), "{text}");
    }
}
