//! The [`Outbox`] side of [`MemoryStore`].
use crate::store::MemoryStore;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use reporter_ports::ids::OutboxId;
use reporter_ports::ports::{Lease, Outbox, OutboxRecord, OutboxStats, OutboxStatus, ParkedEvent};
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
    /// Walks pending rows in commit order (an index of pending rows only: retained published
    /// and parked rows cost nothing). For each aggregate it hands out consecutive rows until it
    /// meets one that is not claimable (leased with a lease still valid at `now`, or
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
            for seq in &outbox.pending {
                if chosen.len() >= limit {
                    break;
                }
                let Some(row) = outbox.rows.get(seq) else {
                    continue;
                };
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
        let outbox = &mut state.outbox;
        let seq = outbox.seq_of(id).ok_or(StoreError::NotFound)?;
        let row = outbox.rows.get_mut(&seq).ok_or(StoreError::NotFound)?;
        held(row, token)?;
        row.published_at = Some(now);
        row.lease = None;
        outbox.set_status(seq, OutboxStatus::Published);
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

    /// Same errors as `mark_published`. Attempts and `last_error` are left as they are.
    async fn release(
        &self,
        id: OutboxId,
        token: Uuid,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut state = self.lock()?;
        let row = state.outbox.row_mut(id).ok_or(StoreError::NotFound)?;
        held(row, token)?;
        row.lease = None;
        row.available_at = now;
        Ok(())
    }

    /// Same errors as `mark_published`. Counts the attempt; the reason goes to `last_error`,
    /// `now` to `parked_at`.
    async fn park(
        &self,
        id: OutboxId,
        token: Uuid,
        reason: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut state = self.lock()?;
        let outbox = &mut state.outbox;
        let seq = outbox.seq_of(id).ok_or(StoreError::NotFound)?;
        let row = outbox.rows.get_mut(&seq).ok_or(StoreError::NotFound)?;
        held(row, token)?;
        row.attempts = row.attempts.saturating_add(1);
        row.last_error = Some(reason.to_owned());
        row.lease = None;
        row.parked_at = Some(now);
        outbox.set_status(seq, OutboxStatus::Parked);
        Ok(())
    }

    /// Redriven rows are claimable at `now`; `last_error` is kept for diagnostics.
    async fn redrive(
        &self,
        tenant: Option<TenantId>,
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let mut state = self.lock()?;
        let outbox = &mut state.outbox;
        let chosen: Vec<u64> = outbox
            .parked
            .iter()
            .copied()
            .filter(|seq| {
                outbox
                    .rows
                    .get(seq)
                    .is_some_and(|r| tenant.as_ref().is_none_or(|t| &r.tenant == t))
            })
            .collect();
        for seq in &chosen {
            if let Some(row) = outbox.rows.get_mut(seq) {
                row.attempts = 0;
                row.available_at = now;
                row.lease = None;
                row.parked_at = None;
            }
            outbox.set_status(*seq, OutboxStatus::Pending);
        }
        Ok(chosen.len() as u64)
    }

    /// Walks the index of parked rows only (pending and published rows cost nothing), then
    /// sorts the tenant's by `parked_at` (newest first; the later commit first on a tie).
    async fn list_parked(
        &self,
        tenant: Option<TenantId>,
        limit: usize,
    ) -> Result<Vec<ParkedEvent>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let state = self.lock()?;
        let outbox = &state.outbox;
        let mut found: Vec<(u64, &OutboxRecord)> = outbox
            .parked
            .iter()
            .filter_map(|seq| outbox.rows.get(seq).map(|r| (*seq, r)))
            .filter(|(_, r)| tenant.as_ref().is_none_or(|t| &r.tenant == t))
            .collect();
        found.sort_by(|(sa, a), (sb, b)| b.parked_at.cmp(&a.parked_at).then(sb.cmp(sa)));
        Ok(found
            .into_iter()
            .take(limit)
            .map(|(_, r)| ParkedEvent::of(r))
            .collect())
    }

    /// Pending counts leased rows too. The oldest age is `now - created_at` of the pending row
    /// committed first, in whole seconds, never negative. Constant time: read from the indexes.
    async fn stats(&self, now: DateTime<Utc>) -> Result<OutboxStats, StoreError> {
        let state = self.lock()?;
        let outbox = &state.outbox;
        let oldest = outbox
            .pending
            .first()
            .and_then(|seq| outbox.rows.get(seq))
            .map(|r| r.created_at);
        Ok(OutboxStats {
            pending: outbox.pending.len() as u64,
            parked: outbox.parked.len() as u64,
            oldest_pending_age_secs: oldest.map(|o| (now - o).num_seconds().max(0)),
        })
    }

    /// Walks the published rows from the first published, and stops at the first one
    /// published at or after `before`: the cost is the number of rows removed, not the number
    /// retained.
    async fn purge_published(&self, before: DateTime<Utc>) -> Result<u64, StoreError> {
        let mut state = self.lock()?;
        let outbox = &mut state.outbox;
        let mut purged = 0;
        while let Some(&seq) = outbox.published.front() {
            let old = match outbox.rows.get(&seq) {
                Some(r) if r.status == OutboxStatus::Published => {
                    r.published_at.is_some_and(|p| p < before)
                }
                // Gone or no longer published: a stale entry.
                _ => true,
            };
            if !old {
                break;
            }
            outbox.published.pop_front();
            if outbox.drop_published(seq) {
                purged += 1;
            }
        }
        Ok(purged)
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

#[cfg(test)]
mod tests {
    use super::*;
    use reporter_ports::events::{EventEnvelope, EventKey};
    use reporter_ports::ports::{UnitOfWork, UnitOfWorkPort};

    fn row(i: usize) -> OutboxRecord {
        let tenant = TenantId::default_tenant();
        let now = Utc::now();
        OutboxRecord::pending(
            EventEnvelope {
                id: format!("id-{i}"),
                key: EventKey::DeadlineCreated,
                tenant,
                subject: format!("s-{i}"),
                time: now,
                payload: serde_json::json!({}).into(),
                sequence: None,
                trace: None,
            },
            format!("deadline:s-{i}"),
            now,
            None,
        )
    }

    async fn publish_all(store: &MemoryStore, n: usize) -> Vec<OutboxId> {
        let rows: Vec<_> = (0..n).map(row).collect();
        let ids: Vec<_> = rows.iter().map(|r| r.id).collect();
        store
            .commit(
                &TenantId::default_tenant(),
                UnitOfWork::new().with_outbox(rows),
            )
            .await
            .unwrap();
        let now = Utc::now();
        let claimed = store
            .claim("t", now, now + chrono::Duration::seconds(60), n)
            .await
            .unwrap();
        for r in claimed {
            let token = r.lease.unwrap().token;
            store.mark_published(r.id, token, now).await.unwrap();
        }
        ids
    }

    #[tokio::test]
    async fn published_rows_are_bounded_in_count_oldest_first() {
        let store = MemoryStore::with_max_published(3);
        let ids = publish_all(&store, 5).await;
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(
                store.get(*id).await.unwrap().is_some(),
                i >= 2,
                "row {i}: only the 3 last published are kept"
            );
        }
        let pending = row(99);
        store
            .commit(
                &TenantId::default_tenant(),
                UnitOfWork::new().with_outbox([pending.clone()]),
            )
            .await
            .unwrap();
        let stats = store.stats(Utc::now()).await.unwrap();
        assert_eq!((stats.pending, stats.parked), (1, 0));
        assert!(store.get(pending.id).await.unwrap().is_some());
    }

    #[tokio::test]
    async fn claims_and_purges_walk_only_what_they_need() {
        let store = MemoryStore::with_max_published(100_000);
        publish_all(&store, 20_000).await;
        let fresh = row(7);
        store
            .commit(
                &TenantId::default_tenant(),
                UnitOfWork::new().with_outbox([fresh.clone()]),
            )
            .await
            .unwrap();
        {
            let state = store.lock().unwrap();
            assert_eq!(state.outbox.pending.len(), 1, "the claim walks one row");
            assert_eq!(state.outbox.published.len(), 20_000);
        }
        let now = Utc::now();
        let got = store
            .claim("t", now, now + chrono::Duration::seconds(60), 10)
            .await
            .unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].id, fresh.id);
        // Nothing old enough: the purge stops at the first published row.
        assert_eq!(
            store
                .purge_published(now - chrono::Duration::hours(1))
                .await
                .unwrap(),
            0
        );
        assert_eq!(
            store
                .purge_published(now + chrono::Duration::seconds(1))
                .await
                .unwrap(),
            20_000
        );
        assert!(store.lock().unwrap().outbox.published.is_empty());
    }
}
