//! The readiness checks of confined children: `templateSandbox` (what the operating system
//! enforces on the template sandbox's children, as they reported it) and `pdfRenderer` (the
//! native renderer's probe, then what its PDF children reported). Both children apply the same
//! confinement (`reporter-child-confine`), so one reading serves both.
use crate::http::ops::{CheckProbe, CheckStatus, ProbeOutcome};
use reporter_adapter_pdf::NativePdfRenderer;
use reporter_adapter_sandbox::{Confinement, ProcessPool};
use reporter_ports::ports::PdfRenderer;
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
        let outcome = outcome(reports, "no sandbox child has reported its confinement yet");
        Box::pin(async move { outcome })
    })
}

/// The `pdfRenderer` check of the native renderer: `down` when its probe fails (the child
/// program is missing); else, as [`sandbox_check`], `up` when its children reported every
/// mechanism enforced and `degraded`, naming what is missing, when they did not or none has
/// reported yet (children start per conversion; the start-up probe gives the first report).
pub(super) fn pdf_check(renderer: Arc<NativePdfRenderer>) -> CheckProbe {
    Arc::new(move || {
        let renderer = renderer.clone();
        Box::pin(async move {
            if let Err(e) = renderer.check().await {
                return ProbeOutcome {
                    status: CheckStatus::Down,
                    error: Some(e.to_string()),
                    breaker_state: None,
                };
            }
            outcome(
                renderer.confinement().into_iter().collect(),
                "no pdf child has reported its confinement yet",
            )
        })
    })
}

/// The check on the children's latest reports; `none_yet` is the reason when there is none.
fn outcome(reports: Vec<Confinement>, none_yet: &str) -> ProbeOutcome {
    let degraded = |why: String| ProbeOutcome {
        status: CheckStatus::Degraded,
        error: Some(why),
        breaker_state: None,
    };
    if reports.is_empty() {
        return degraded(none_yet.to_owned());
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
        Confinement::as_designed()
    }

    #[test]
    fn up_when_confined_degraded_naming_what_is_missing() {
        assert_eq!(
            outcome(vec![confined(), confined()], "none yet").status,
            CheckStatus::Up
        );
        let none = outcome(Vec::new(), "none yet");
        assert_eq!(none.status, CheckStatus::Degraded);
        assert!(none.error.unwrap_or_default().contains("yet"));
        let old_kernel = Confinement {
            landlock: Enforcement::None,
            landlock_abi: 0,
            seccomp: false,
            ..confined()
        };
        let o = outcome(vec![confined(), old_kernel], "none yet");
        assert_eq!(o.status, CheckStatus::Degraded);
        let error = o.error.unwrap_or_default();
        assert!(
            error.contains("Landlock") && error.contains("seccomp"),
            "{error}"
        );
    }
}
