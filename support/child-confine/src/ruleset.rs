//! The child's Landlock ruleset: no filesystem access at all, no TCP bind or connect, signals
//! and abstract Unix sockets scoped to the child.
use crate::confinement::Enforcement;
use landlock::{
    ABI, Access, AccessFs, AccessNet, LandlockStatus, Ruleset, RulesetAttr, RulesetError,
    RulesetStatus, Scope,
};

/// The Landlock ABI whose rights the ruleset handles (tested on Linux 6.18, ABI 7); an older
/// kernel enforces what it knows of them (best effort) and the child reports it.
const HANDLED_ABI: ABI = ABI::V7;

/// What Landlock enforces on the child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LandlockReport {
    pub abi: u32,
    pub enforcement: Enforcement,
}

/// Restricts the child with a ruleset that handles every filesystem right, both TCP rights
/// and every scope of [`HANDLED_ABI`] and allows nothing: no file or directory can be opened
/// (read, written, created, truncated, renamed, unlinked, executed), no TCP port bound or
/// connected to, no signal sent and no abstract Unix socket reached outside the child.
///
/// MUST run after the change of user (the ruleset fd is created by the new user) and while
/// the process has a single thread (the ruleset binds the calling thread and its future
/// children). A kernel without Landlock is no error: the report says [`Enforcement::None`].
pub(crate) fn restrict() -> Result<LandlockReport, RulesetError> {
    let status = Ruleset::default()
        .handle_access(AccessFs::from_all(HANDLED_ABI))?
        .handle_access(AccessNet::from_all(HANDLED_ABI))?
        .scope(Scope::from_all(HANDLED_ABI))?
        .create()?
        .restrict_self()?;
    let abi = match status.landlock {
        LandlockStatus::Available { effective_abi, .. } => abi_number(effective_abi),
        _ => 0,
    };
    let enforcement = match status.ruleset {
        RulesetStatus::FullyEnforced => Enforcement::Full,
        RulesetStatus::PartiallyEnforced => Enforcement::Partial,
        RulesetStatus::NotEnforced => Enforcement::None,
    };
    Ok(LandlockReport { abi, enforcement })
}

/// The number of a Landlock ABI (0 for none).
fn abi_number(abi: ABI) -> u32 {
    [
        ABI::V1,
        ABI::V2,
        ABI::V3,
        ABI::V4,
        ABI::V5,
        ABI::V6,
        ABI::V7,
        ABI::V8,
        ABI::V9,
        ABI::V10,
    ]
    .iter()
    .position(|known| *known == abi)
    .map_or(0, |i| i as u32 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abi_numbers() {
        assert_eq!(abi_number(ABI::Unsupported), 0);
        assert_eq!(abi_number(ABI::V1), 1);
        assert_eq!(abi_number(ABI::V7), 7);
    }
}
