//! [`Confinement`]: what the operating system enforces on a child, as the child reports it to
//! its parent.
use serde::{Deserialize, Serialize};
use std::sync::Mutex;

/// How much of the Landlock ruleset the kernel enforces.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Enforcement {
    /// Every handled right (filesystem, TCP, scopes).
    Full,
    /// Only the rights the kernel's ABI knows (an older kernel: e.g. no TCP rights below
    /// ABI 4, no scopes below ABI 6).
    Partial,
    /// None: the kernel has no Landlock (or it is disabled).
    None,
}

/// The confinement a child applied to itself ([`crate::confine`]) before it did any work.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Confinement {
    /// Real, effective and saved user id the child runs as (`nobody`, 65534, when the service
    /// runs as root; else the service's own).
    pub uid: u32,
    /// Group id, likewise (`nogroup`, 65534, when the service runs as root).
    pub gid: u32,
    /// The effective, permitted, inheritable and ambient capability sets are empty.
    pub capabilities_dropped: bool,
    /// The capability bounding set is empty too (only a root service can empty it).
    pub bounding_set_dropped: bool,
    /// The Landlock ABI of the kernel (0: no Landlock).
    pub landlock_abi: u32,
    /// What the Landlock ruleset (no filesystem access at all, no TCP bind or connect,
    /// signals and abstract sockets scoped to the child) enforces.
    pub landlock: Enforcement,
    /// The seccomp filter is installed.
    pub seccomp: bool,
}

impl Confinement {
    /// The mechanisms the kernel did not provide, one phrase each; empty when the child is
    /// confined as designed.
    pub fn missing(&self) -> Vec<String> {
        let mut missing = Vec::new();
        match self.landlock {
            Enforcement::Full => {}
            Enforcement::Partial => missing.push(format!(
                "part of Landlock (kernel ABI {}: no TCP rules below 4, no scoping below 6)",
                self.landlock_abi
            )),
            Enforcement::None => missing.push("Landlock (not offered by the kernel)".to_owned()),
        }
        if !self.seccomp {
            missing.push("seccomp (not offered by the kernel)".to_owned());
        }
        if !self.capabilities_dropped {
            missing.push("capability drop".to_owned());
        }
        if self.uid == 0 {
            missing.push(
                "unprivileged user (the service runs as root without CAP_SETUID/CAP_SETGID)"
                    .to_owned(),
            );
        }
        missing
    }

    /// One line for logs: what is enforced.
    pub fn summary(&self) -> String {
        let landlock = match self.landlock {
            Enforcement::Full => format!("Landlock ABI {}", self.landlock_abi),
            Enforcement::Partial => format!("Landlock ABI {} (partial)", self.landlock_abi),
            Enforcement::None => "no Landlock".to_owned(),
        };
        format!(
            "uid {} gid {}, {}, {}, {}",
            self.uid,
            self.gid,
            if self.capabilities_dropped {
                "no capabilities"
            } else {
                "capabilities kept"
            },
            landlock,
            if self.seccomp {
                "seccomp filter"
            } else {
                "no seccomp"
            }
        )
    }
}

/// The last [`Confinement`] a parent's children reported (shared by the tasks that start
/// them).
#[derive(Debug, Default)]
pub struct LastReport(Mutex<Option<Confinement>>);

impl LastReport {
    /// Keeps `report` as the last one. Returns `true` when it is the first or differs from
    /// the last: the caller MUST then log it (and warn about [`Confinement::missing`]).
    pub fn record(&self, report: Confinement) -> bool {
        let mut last = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if last.as_ref() == Some(&report) {
            return false;
        }
        *last = Some(report);
        true
    }

    /// The last report; `None` until a child reported.
    pub fn last(&self) -> Option<Confinement> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

#[cfg(any(test, feature = "fixtures"))]
impl Confinement {
    /// For tests: a child confined as designed (`nobody`/`nogroup`, no capabilities, the
    /// Landlock ruleset fully enforced at ABI 7, the seccomp filter installed).
    pub fn as_designed() -> Self {
        Self {
            uid: crate::NOBODY,
            gid: crate::NOGROUP,
            capabilities_dropped: true,
            bounding_set_dropped: true,
            landlock_abi: 7,
            landlock: Enforcement::Full,
            seccomp: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> Confinement {
        Confinement::as_designed()
    }

    #[test]
    fn the_last_report_is_kept_and_changes_are_told() {
        let last = LastReport::default();
        assert_eq!(last.last(), None);
        assert!(last.record(full()));
        assert!(!last.record(full()), "the same report again is no change");
        let root = Confinement { uid: 0, ..full() };
        assert!(last.record(root.clone()));
        assert_eq!(last.last(), Some(root));
    }

    #[test]
    fn missing_names_each_absent_mechanism() {
        assert!(full().missing().is_empty());
        let old = Confinement {
            landlock: Enforcement::Partial,
            landlock_abi: 3,
            ..full()
        };
        assert!(old.missing()[0].contains("ABI 3"), "{:?}", old.missing());
        let bare = Confinement {
            landlock: Enforcement::None,
            landlock_abi: 0,
            seccomp: false,
            ..full()
        };
        let m = bare.missing();
        assert_eq!(m.len(), 2, "{m:?}");
        let root = Confinement { uid: 0, ..full() };
        assert!(root.missing()[0].starts_with("unprivileged user"));
        assert!(m[0].starts_with("Landlock") && m[1].starts_with("seccomp"));
        assert!(bare.summary().contains("no Landlock") && bare.summary().contains("no seccomp"));
    }
}
