//! [`TenantSlots`]: the per-tenant bound on a worker's jobs (`WORKER_MAX_JOBS_PER_TENANT`).
//!
//! A job holds a render child of the sandbox pool from the start of its generation to its
//! end, so bounding the jobs of one tenant bounds the render children it can hold: a tenant
//! at its bound leaves the other slots to the other tenants' jobs.
use reporter_ports::TenantId;
use std::collections::{HashMap, VecDeque};

/// Which jobs may start: at most `max_per_tenant` of one tenant run at once; a job of a
/// tenant at its bound is held back (parked) until one of that tenant's jobs ends.
///
/// Contract: [`TenantSlots::admit`] and [`TenantSlots::next_ready`] MUST never hand out a
/// job whose tenant already runs `max_per_tenant`; parked jobs MUST start in the order they
/// were parked, tenant by tenant (the oldest parked job whose tenant has room goes first);
/// every job handed out MUST be given back with [`TenantSlots::finished`] when it ends.
#[derive(Debug)]
pub(super) struct TenantSlots<J> {
    max_per_tenant: usize,
    running: HashMap<TenantId, usize>,
    parked: VecDeque<(TenantId, J)>,
}

impl<J> TenantSlots<J> {
    /// At most `max_per_tenant` (at least 1) jobs of one tenant at once.
    pub(super) fn new(max_per_tenant: usize) -> Self {
        Self {
            max_per_tenant: max_per_tenant.max(1),
            running: HashMap::new(),
            parked: VecDeque::new(),
        }
    }

    fn has_room(&self, tenant: &TenantId) -> bool {
        self.running.get(tenant).copied().unwrap_or(0) < self.max_per_tenant
    }

    fn start(&mut self, tenant: &TenantId) {
        *self.running.entry(tenant.clone()).or_default() += 1;
    }

    /// `job` to start now (counted as running) when its tenant has room, else parks it and
    /// answers `None`.
    pub(super) fn admit(&mut self, tenant: TenantId, job: J) -> Option<J> {
        if self.has_room(&tenant) {
            self.start(&tenant);
            return Some(job);
        }
        tracing::debug!(%tenant, max_per_tenant = self.max_per_tenant, "job held back: its tenant runs WORKER_MAX_JOBS_PER_TENANT jobs already");
        self.parked.push_back((tenant, job));
        None
    }

    /// The oldest parked job whose tenant has room now (counted as running), if any.
    pub(super) fn next_ready(&mut self) -> Option<(TenantId, J)> {
        let i = self.parked.iter().position(|(t, _)| self.has_room(t))?;
        let (tenant, job) = self.parked.remove(i)?;
        self.start(&tenant);
        Some((tenant, job))
    }

    /// A job of `tenant` ended.
    pub(super) fn finished(&mut self, tenant: &TenantId) {
        if let Some(n) = self.running.get_mut(tenant) {
            *n -= 1;
            if *n == 0 {
                self.running.remove(tenant);
            }
        }
    }

    /// Jobs parked now.
    pub(super) fn parked(&self) -> usize {
        self.parked.len()
    }

    /// Every parked job, oldest first (shutdown: they are not started).
    pub(super) fn take_parked(&mut self) -> Vec<J> {
        self.parked.drain(..).map(|(_, j)| j).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(name: &str) -> TenantId {
        TenantId::parse(name).unwrap()
    }

    #[test]
    fn a_tenant_at_its_bound_waits_and_others_pass() {
        let mut s = TenantSlots::new(2);
        assert_eq!(s.admit(t("a"), 1), Some(1));
        assert_eq!(s.admit(t("a"), 2), Some(2));
        assert_eq!(s.admit(t("a"), 3), None, "a is at its bound");
        assert_eq!(s.admit(t("a"), 4), None);
        assert_eq!(s.admit(t("b"), 5), Some(5), "b passes a's parked jobs");
        assert_eq!(s.parked(), 2);
        assert_eq!(s.next_ready(), None, "nobody ended");
        s.finished(&t("a"));
        assert_eq!(s.next_ready(), Some((t("a"), 3)), "the oldest parked first");
        assert_eq!(s.next_ready(), None, "a is at its bound again");
        s.finished(&t("b"));
        assert_eq!(s.next_ready(), None, "b's room is not a's");
        s.finished(&t("a"));
        assert_eq!(s.next_ready(), Some((t("a"), 4)));
        assert_eq!(s.parked(), 0);
    }

    #[test]
    fn parked_jobs_start_in_order_tenant_by_tenant() {
        let mut s = TenantSlots::new(1);
        assert_eq!(s.admit(t("a"), "a1"), Some("a1"));
        assert_eq!(s.admit(t("b"), "b1"), Some("b1"));
        assert_eq!(s.admit(t("a"), "a2"), None);
        assert_eq!(s.admit(t("b"), "b2"), None);
        assert_eq!(s.admit(t("a"), "a3"), None);
        s.finished(&t("b"));
        assert_eq!(
            s.next_ready(),
            Some((t("b"), "b2")),
            "a2 is older, but a has no room"
        );
        s.finished(&t("a"));
        assert_eq!(s.next_ready(), Some((t("a"), "a2")));
        assert_eq!(s.take_parked(), ["a3"]);
        assert_eq!(s.parked(), 0);
    }

    #[test]
    fn a_bound_of_zero_means_one() {
        let mut s = TenantSlots::new(0);
        assert_eq!(s.admit(t("a"), 1), Some(1));
        assert_eq!(s.admit(t("a"), 2), None);
    }
}
