//! How tests find the real servers they need.
//!
//! A test that needs a server takes its URL from an environment variable. When the variable is
//! unset the test is skipped with a printed reason, unless `REPORTER_REQUIRE_SERVICES=1` (set by
//! `.ci/run`), where a missing server fails the run instead. (testcontainers would be the next
//! fallback where a Docker engine answers; none does on our machines, so it is not wired in.)

/// The value of `var`, or `None` after printing why the calling test is skipped.
///
/// # Panics
/// When `var` is unset and `REPORTER_REQUIRE_SERVICES=1`: a missing server must fail CI.
pub fn service_url(var: &str, what: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => Some(v),
        _ => {
            if std::env::var("REPORTER_REQUIRE_SERVICES").is_ok_and(|v| v == "1") {
                panic!("{what} is required (REPORTER_REQUIRE_SERVICES=1) but {var} is not set");
            }
            eprintln!("SKIPPED: {what} not available: set {var} to run this test");
            None
        }
    }
}

/// A name unique to one test run, safe for databases, queues and exchanges: `<prefix>_<uuid>`.
pub fn unique_name(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::now_v7().simple())
}
