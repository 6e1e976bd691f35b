//! Chaos: brokers, databases and processes fail under load (private servers the tests start,
//! stop and remove; loopback only). One module per family; the families never overlap
//! ([`common::chaos::family`]).

#[path = "../common/mod.rs"]
mod common;

mod broker;
mod processes;
mod scale_out;

/// The scenarios of this binary, all families together (the `#[tokio::test]`s of the three
/// modules). MUST be kept in step with them: `every_scenario_has_a_thread` fails otherwise.
const SCENARIOS: usize = 7;

/// Gives each scenario a test thread of its own (`RUST_TEST_THREADS`, read by libtest when it
/// starts), unless the caller chose a number (`--test-threads` or the variable).
///
/// libtest's default is one thread per core, two here, and a chaos scenario holds its thread
/// while it mostly waits: on a stopped broker, a lease, a sweep, or on
/// [`common::chaos::family`] for another family to end. With two threads the three broker
/// scenarios ran two and then one, and a scenario of the next family held the second thread
/// while it waited for the 120 s outage to end (302 s for the binary in one measured run,
/// families one after another: 161 s, 60 s, 71 s). With a thread each, every family runs
/// all its scenarios at once and the binary takes about the sum of the families' longest
/// scenarios. Families still never overlap: that is the gate's job, not the thread count's.
#[ctor::ctor(unsafe)]
fn every_scenario_side_by_side() {
    if std::env::var_os("RUST_TEST_THREADS").is_none() {
        // SAFETY: this runs before `main`, so before any other thread of the process exists
        // and before anything reads the environment.
        unsafe { std::env::set_var("RUST_TEST_THREADS", SCENARIOS.to_string()) };
    }
}

/// [`SCENARIOS`] counts this binary's tests (this one excluded), so that none of them waits
/// for a thread.
#[test]
fn every_scenario_has_a_thread() {
    let sources = [
        include_str!("broker.rs"),
        include_str!("processes.rs"),
        include_str!("scale_out.rs"),
    ];
    let tests: usize = sources
        .iter()
        .map(|s| s.matches("#[tokio::test").count() + s.matches("#[test]").count())
        .sum();
    assert_eq!(tests, SCENARIOS, "update SCENARIOS in tests/chaos/main.rs");
    // The constructor ran (or the caller chose a number itself).
    assert!(std::env::var_os("RUST_TEST_THREADS").is_some());
}
