//! The `templateSandbox` readiness check: what the operating system enforces on the template
//! sandbox's children, as they reported it.
use crate::http::ops::{CheckProbe, CheckStatus, ProbeOutcome};
use reporter_adapter_sandbox::{Confinement, ProcessPool};
use std::collections::BTreeSet;
use std::sync::Arc;

/// A check on the confinement the children of `pools` (those this process uses) reported in
/// their hello: `up` when every mechanism is enforced; `degraded`, naming what is missing,
/// when the kernel lacks one (Landlock, part of it, seccomp), a root service could not switch
/// its children to `nobody`, or no child has said hello yet.
/// It never fails readiness: the rlimits and the engine's own bounds still hold.
pub(super) fn sandbox_check(pools: Vec<ProcessPool>) -> CheckProbe {
    Arc::new(move || {
        let reports = pools.iter().filter_map(ProcessPool::confinement).collect();
        let outcome = outcome(reports);
        Box::pin(async move { outcome })
    })
}

/// The check on the pools' latest reports.
fn outcome(reports: Vec<Confinement>) -> ProbeOutcome {
    let degraded = |why: String| ProbeOutcome {
        status: CheckStatus::Degraded,
        error: Some(why),
        breaker_state: None,
    };
    if reports.is_empty() {
        return degraded("no sandbox child has reported its confinement yet".into());
    }
    let missing: BTreeSet<String> = reports.iter().flat_map(|c| c.missing()).collect();
    if missing.is_empty() {
        return ProbeOutcome {
            status: CheckStatus::Up,
            error: None,
            breaker_state: None,
        };
    }
    let missing: Vec<String> = missing.into_iter().collect();
    degraded(format!("not enforced: {}", missing.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reporter_adapter_sandbox::Enforcement;

    fn confined() -> Confinement {
        Confinement {
            uid: 65534,
            gid: 65534,
            capabilities_dropped: true,
            bounding_set_dropped: true,
            landlock_abi: 7,
            landlock: Enforcement::Full,
            seccomp: true,
        }
    }

    #[test]
    fn up_when_confined_degraded_naming_what_is_missing() {
        assert_eq!(
            outcome(vec![confined(), confined()]).status,
            CheckStatus::Up
        );
        let none = outcome(Vec::new());
        assert_eq!(none.status, CheckStatus::Degraded);
        assert!(none.error.unwrap_or_default().contains("yet"));
        let old_kernel = Confinement {
            landlock: Enforcement::None,
            landlock_abi: 0,
            seccomp: false,
            ..confined()
        };
        let o = outcome(vec![confined(), old_kernel]);
        assert_eq!(o.status, CheckStatus::Degraded);
        let error = o.error.unwrap_or_default();
        assert!(
            error.contains("Landlock") && error.contains("seccomp"),
            "{error}"
        );
    }
}
