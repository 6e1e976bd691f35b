//! Idempotency reservations and stored responses of [`MemoryStore`], kept under the store's
//! lock so that a unit of work completes its key atomically with its changes.
use crate::store::MemoryStore;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use reporter_ports::StoreError;
use reporter_ports::ports::{
    IdempotencyBegin, IdempotencyCompletion, IdempotencyOwner, IdempotencyScope, IdempotencyStore,
    StoredResponse,
};
use std::collections::HashMap;

/// How many `begin` calls pass between two sweeps of expired entries.
const SWEEP_EVERY: u64 = 256;

#[derive(Debug, Clone)]
enum Entry {
    /// Reserved by `owner` until the instant (a lease, renewed while the request runs).
    InFlight(IdempotencyOwner, DateTime<Utc>),
    /// Completed; the response is replayed until the instant.
    Completed(StoredResponse, DateTime<Utc>),
}

impl Entry {
    /// True when the entry still counts at `now` (its end instant is strictly later).
    fn live(&self, now: DateTime<Utc>) -> bool {
        match self {
            Self::InFlight(_, until) | Self::Completed(_, until) => *until > now,
        }
    }
}

/// The keys of one store.
#[derive(Debug, Default)]
pub(crate) struct IdempotencyTable {
    entries: HashMap<IdempotencyScope, Entry>,
    begins: u64,
}

impl IdempotencyTable {
    fn begin(
        &mut self,
        scope: &IdempotencyScope,
        owner: IdempotencyOwner,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> IdempotencyBegin {
        self.begins = self.begins.wrapping_add(1);
        if self.begins.is_multiple_of(SWEEP_EVERY) {
            self.entries.retain(|_, e| e.live(now));
        }
        match self.entries.get(scope) {
            Some(e @ Entry::InFlight(..)) if e.live(now) => IdempotencyBegin::InFlight,
            Some(Entry::Completed(resp, until)) if *until > now => {
                IdempotencyBegin::Completed(resp.clone())
            }
            _ => {
                self.entries
                    .insert(scope.clone(), Entry::InFlight(owner, lease_until));
                IdempotencyBegin::Started
            }
        }
    }

    /// The reservation of `scope` held by `owner`, if any.
    fn held_by(&mut self, scope: &IdempotencyScope, owner: IdempotencyOwner) -> Option<&mut Entry> {
        self.entries
            .get_mut(scope)
            .filter(|e| matches!(e, Entry::InFlight(o, _) if *o == owner))
    }

    /// Checks, before a unit of work applies anything, that it may complete its key.
    pub(crate) fn check(&self, c: &IdempotencyCompletion) -> Result<(), StoreError> {
        match self.entries.get(&c.scope) {
            Some(Entry::InFlight(o, _)) if *o == c.owner => Ok(()),
            _ => Err(StoreError::IdempotencyLost),
        }
    }

    /// Stores the completion (after [`Self::check`], under the same lock).
    pub(crate) fn apply(&mut self, c: IdempotencyCompletion) {
        self.entries
            .insert(c.scope, Entry::Completed(c.response, c.expires_at));
    }

    /// Drops every entry no longer live at `now`; answers how many were dropped.
    pub(crate) fn purge_expired(&mut self, now: DateTime<Utc>) -> usize {
        let before = self.entries.len();
        self.entries.retain(|_, e| e.live(now));
        before - self.entries.len()
    }
}

/// Reservations are leases held by an owner: `begin` is atomic (of concurrent callers with one
/// scope exactly one gets `Started`); `renew` and `release` act only on the caller's own
/// reservation; `complete` stores the response whether or not the reservation is still held
/// (the request did run); a unit of work carrying a completion applies only while its owner
/// holds the key (`StoreError::IdempotencyLost` otherwise). Expired entries are swept every
/// few hundred `begin` calls and by [`MemoryStore::purge_expired_idempotency`].
#[async_trait]
impl IdempotencyStore for MemoryStore {
    async fn begin(
        &self,
        scope: &IdempotencyScope,
        owner: IdempotencyOwner,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<IdempotencyBegin, StoreError> {
        Ok(self
            .lock()?
            .idempotency
            .begin(scope, owner, now, lease_until))
    }

    async fn renew(
        &self,
        scope: &IdempotencyScope,
        owner: IdempotencyOwner,
        lease_until: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let mut state = self.lock()?;
        Ok(match state.idempotency.held_by(scope, owner) {
            Some(entry) => {
                *entry = Entry::InFlight(owner, lease_until);
                true
            }
            None => false,
        })
    }

    async fn complete(
        &self,
        scope: &IdempotencyScope,
        response: StoredResponse,
        expires_at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut state = self.lock()?;
        state
            .idempotency
            .entries
            .insert(scope.clone(), Entry::Completed(response, expires_at));
        Ok(())
    }

    async fn release(
        &self,
        scope: &IdempotencyScope,
        owner: IdempotencyOwner,
    ) -> Result<(), StoreError> {
        let mut state = self.lock()?;
        if state.idempotency.held_by(scope, owner).is_some() {
            state.idempotency.entries.remove(scope);
        }
        Ok(())
    }
}

impl MemoryStore {
    /// Drops every idempotency entry no longer live at `now`; answers how many were dropped.
    pub fn purge_expired_idempotency(&self, now: DateTime<Utc>) -> Result<usize, StoreError> {
        Ok(self.lock()?.idempotency.purge_expired(now))
    }
}
