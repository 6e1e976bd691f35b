//! The [`Outbox`] side of [`MemoryStore`].
use crate::store::MemoryStore;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use reporter_ports::ids::OutboxId;
use reporter_ports::ports::{Lease, Outbox, OutboxRecord, OutboxStats, OutboxStatus};
use reporter_ports::{StoreError, TenantId};
use std::collections::HashSet;
use uuid::Uuid;

/// Checks that `token` holds the lease of a pending row.
fn held(row: &OutboxRecord, token: Uuid) -> Result<(), StoreError> {
    let holds =
        row.status == OutboxStatus::Pending && row.lease.as_ref().is_some_and(|l| l.token == token);
    if holds {
        Ok(())
    } else {
        Err(StoreError::VersionConflict)
    }
}

#[async_trait]
impl Outbox for MemoryStore {
    /// Walks pending rows in commit order. For each aggregate it hands out consecutive rows
    /// until it meets one that is not claimable (leased with a lease still valid at `now`, or
    /// `available_at > now`); every later row of that aggregate is held back. Published and
    /// parked rows do not hold an aggregate back. A lease that ends at `T` is claimable at `T`.
    /// Each row gets its own fresh token. Rows come back in commit order.
    async fn claim(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<OutboxRecord>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut state = self.lock()?;
        let outbox = &mut state.outbox;
        let mut chosen = Vec::new();
        {
            let mut blocked: HashSet<&str> = HashSet::new();
            for (seq, row) in &outbox.rows {
                if chosen.len() >= limit {
                    break;
                }
                if row.status != OutboxStatus::Pending || blocked.contains(row.aggregate.as_str()) {
                    continue;
                }
                let leased = row.lease.as_ref().is_some_and(|l| l.until > now);
                if leased || row.available_at > now {
                    blocked.insert(row.aggregate.as_str());
                    continue;
                }
                chosen.push(*seq);
            }
        }
        let mut out = Vec::with_capacity(chosen.len());
        for seq in chosen {
            if let Some(row) = outbox.rows.get_mut(&seq) {
                row.lease = Some(Lease {
                    token: Uuid::new_v4(),
                    owner: owner.to_owned(),
                    until: lease_until,
                });
                out.push(row.clone());
            }
        }
        Ok(out)
    }

    /// `NotFound` for an unknown id; `VersionConflict` unless the row is pending and `token`
    /// is its current lease token (an expired lease nobody re-claimed still counts as held).
    async fn mark_published(
        &self,
        id: OutboxId,
        token: Uuid,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut state = self.lock()?;
        let row = state.outbox.row_mut(id).ok_or(StoreError::NotFound)?;
        held(row, token)?;
        row.status = OutboxStatus::Published;
        row.published_at = Some(now);
        row.lease = None;
        Ok(())
    }

    /// Same errors as `mark_published`. Sets `available_at = retry_at`.
    async fn mark_failed(
        &self,
        id: OutboxId,
        token: Uuid,
        error: &str,
        retry_at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut state = self.lock()?;
        let row = state.outbox.row_mut(id).ok_or(StoreError::NotFound)?;
        held(row, token)?;
        row.attempts = row.attempts.saturating_add(1);
        row.last_error = Some(error.to_owned());
        row.lease = None;
        row.available_at = retry_at;
        Ok(())
    }

    /// Same errors as `mark_published`. The reason goes to `last_error`.
    async fn park(&self, id: OutboxId, token: Uuid, reason: &str) -> Result<(), StoreError> {
        let mut state = self.lock()?;
        let row = state.outbox.row_mut(id).ok_or(StoreError::NotFound)?;
        held(row, token)?;
        row.status = OutboxStatus::Parked;
        row.last_error = Some(reason.to_owned());
        row.lease = None;
        Ok(())
    }

    /// Redriven rows are claimable at `now`; `last_error` is kept for diagnostics.
    async fn redrive(
        &self,
        tenant: Option<TenantId>,
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let mut state = self.lock()?;
        let mut moved = 0;
        for row in state.outbox.rows.values_mut() {
            if row.status == OutboxStatus::Parked
                && tenant.as_ref().is_none_or(|t| &row.tenant == t)
            {
                row.status = OutboxStatus::Pending;
                row.attempts = 0;
                row.available_at = now;
                row.lease = None;
                moved += 1;
            }
        }
        Ok(moved)
    }

    /// Pending counts leased rows too. The oldest age is `now - created_at` in whole seconds,
    /// never negative.
    async fn stats(&self, now: DateTime<Utc>) -> Result<OutboxStats, StoreError> {
        let state = self.lock()?;
        let mut stats = OutboxStats::default();
        let mut oldest: Option<DateTime<Utc>> = None;
        for row in state.outbox.rows.values() {
            match row.status {
                OutboxStatus::Pending => {
                    stats.pending += 1;
                    oldest = Some(oldest.map_or(row.created_at, |o| o.min(row.created_at)));
                }
                OutboxStatus::Parked => stats.parked += 1,
                OutboxStatus::Published => {}
            }
        }
        stats.oldest_pending_age_secs = oldest.map(|o| (now - o).num_seconds().max(0));
        Ok(stats)
    }

    async fn purge_published(&self, before: DateTime<Utc>) -> Result<u64, StoreError> {
        let mut state = self.lock()?;
        let outbox = &mut state.outbox;
        let doomed: Vec<(u64, OutboxId)> = outbox
            .rows
            .iter()
            .filter(|(_, r)| {
                r.status == OutboxStatus::Published && r.published_at.is_some_and(|p| p < before)
            })
            .map(|(seq, r)| (*seq, r.id))
            .collect();
        for (seq, id) in &doomed {
            outbox.rows.remove(seq);
            outbox.index.remove(id);
        }
        Ok(doomed.len() as u64)
    }

    async fn get(&self, id: OutboxId) -> Result<Option<OutboxRecord>, StoreError> {
        let state = self.lock()?;
        let outbox = &state.outbox;
        Ok(outbox
            .index
            .get(&id)
            .and_then(|seq| outbox.rows.get(seq))
            .cloned())
    }
}
