//! Chaos: brokers, databases and processes fail under load (private servers the tests start,
//! stop and remove; loopback only). One module per family; the families never overlap
//! ([`common::chaos::family`]).

#[path = "../common/mod.rs"]
mod common;

mod broker;
mod processes;
mod scale_out;

/// The number of scenarios of this binary, all families together: the `#[tokio::test]`s of
/// the three modules, counted in their sources so that a new scenario needs no other edit.
fn scenarios() -> usize {
    [
        include_str!("broker.rs"),
        include_str!("processes.rs"),
        include_str!("scale_out.rs"),
    ]
    .iter()
    .map(|source| source.matches("#[tokio::test").count())
    .sum()
}

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
        unsafe { std::env::set_var("RUST_TEST_THREADS", scenarios().to_string()) };
    }
}

/// Each scenario has a thread: [`scenarios`] counts every test this binary lists but this
/// one, and the constructor ran (or the caller chose a number itself).
#[test]
fn every_scenario_has_a_thread() {
    let list = std::process::Command::new(std::env::current_exe().expect("this binary"))
        .args(["--list", "--format", "terse"])
        .output()
        .expect("the binary lists its tests");
    let listed = String::from_utf8_lossy(&list.stdout)
        .lines()
        .filter(|l| l.ends_with(": test") && !l.starts_with("every_scenario_has_a_thread"))
        .count();
    assert_eq!(
        scenarios(),
        listed,
        "scenarios() misses some of the binary's tests"
    );
    assert!(std::env::var_os("RUST_TEST_THREADS").is_some());
}
