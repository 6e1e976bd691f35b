//! For tests of the crates whose children confine themselves (feature `fixtures`): reading a
//! live child's `/proc/<pid>/status` and checking it shows the confinement of
//! [`crate::confine`].

/// The value of a `/proc/<pid>/status` field, its columns joined by one space. Panics when
/// the field is absent.
pub fn status_field(status: &str, name: &str) -> String {
    status
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in {status}"))
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// True when the calling process runs as root (effective user id 0).
pub fn running_as_root() -> bool {
    let own = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_else(|e| panic!("reading /proc/self/status: {e}"));
    status_field(&own, "Uid").split(' ').nth(1) == Some("0")
}

/// Asserts that `status` (a child's `/proc/<pid>/status`, the child of the calling process)
/// shows a confined process: `nobody`/`nogroup` as real, effective, saved and filesystem ids
/// and an empty bounding set when the caller runs as root (as in CI), the caller's ids
/// otherwise; no supplementary groups; empty inheritable, permitted, effective and ambient
/// capability sets; seccomp filter mode; `no_new_privs`.
pub fn assert_confined_status(status: &str) {
    let (uid, gid) = if running_as_root() {
        (crate::NOBODY, crate::NOGROUP)
    } else {
        (
            rustix::process::getuid().as_raw(),
            rustix::process::getgid().as_raw(),
        )
    };
    assert_eq!(
        status_field(status, "Uid"),
        format!("{uid} {uid} {uid} {uid}")
    );
    assert_eq!(
        status_field(status, "Gid"),
        format!("{gid} {gid} {gid} {gid}")
    );
    assert_eq!(status_field(status, "Groups"), "");
    for set in ["CapInh", "CapPrm", "CapEff", "CapAmb"] {
        assert_eq!(status_field(status, set), "0000000000000000", "{set}");
    }
    if running_as_root() {
        assert_eq!(status_field(status, "CapBnd"), "0000000000000000");
    }
    assert_eq!(status_field(status, "Seccomp"), "2");
    assert_eq!(status_field(status, "NoNewPrivs"), "1");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unconfined_process_fails_the_check() {
        let own = std::fs::read_to_string("/proc/self/status").expect("own status");
        assert_eq!(status_field("Seccomp:\t2\n", "Seccomp"), "2");
        // This test process has no seccomp filter: the check MUST refuse it.
        let refused = std::panic::catch_unwind(|| assert_confined_status(&own));
        assert!(refused.is_err());
    }
}
