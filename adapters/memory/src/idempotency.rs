//! [`MemoryIdempotencyStore`].
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use reporter_ports::StoreError;
use reporter_ports::ports::{IdempotencyBegin, IdempotencyScope, IdempotencyStore, StoredResponse};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

/// How many `begin` calls pass between two sweeps of expired entries.
const SWEEP_EVERY: u64 = 256;

#[derive(Debug, Clone)]
enum Entry {
    /// Reserved by a request in flight until the instant.
    InFlight(DateTime<Utc>),
    /// Completed; the response is replayed until the instant.
    Completed(StoredResponse, DateTime<Utc>),
}

impl Entry {
    /// True when the entry still counts at `now` (its end instant is strictly later).
    fn live(&self, now: DateTime<Utc>) -> bool {
        match self {
            Self::InFlight(until) | Self::Completed(_, until) => *until > now,
        }
    }
}

#[derive(Default)]
struct State {
    entries: HashMap<IdempotencyScope, Entry>,
    begins: u64,
}

/// In-memory [`IdempotencyStore`].
///
/// - `begin` is atomic: of concurrent callers with the same scope exactly one gets `Started`.
///   A reservation or a completed record whose end instant is `<= now` counts as free.
/// - `complete` stores the response until `expires_at` whether or not the reservation is still
///   held (the request did run; its response is the one to replay).
/// - `release` frees an in-flight reservation and leaves a completed record alone; releasing a
///   free key succeeds.
///
/// Expired entries are swept every few hundred `begin` calls (and by [`Self::purge_expired`]),
/// so memory stays bounded by the live keys.
#[derive(Clone, Default)]
pub struct MemoryIdempotencyStore {
    inner: Arc<Mutex<State>>,
}

impl fmt::Debug for MemoryIdempotencyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryIdempotencyStore")
            .finish_non_exhaustive()
    }
}

impl MemoryIdempotencyStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> Result<MutexGuard<'_, State>, StoreError> {
        self.inner
            .lock()
            .map_err(|_| StoreError::Unavailable("idempotency store lock poisoned".into()))
    }

    /// Drops every entry no longer live at `now`; answers how many were dropped.
    pub fn purge_expired(&self, now: DateTime<Utc>) -> Result<usize, StoreError> {
        let mut state = self.lock()?;
        let before = state.entries.len();
        state.entries.retain(|_, e| e.live(now));
        Ok(before - state.entries.len())
    }
}

#[async_trait]
impl IdempotencyStore for MemoryIdempotencyStore {
    async fn begin(
        &self,
        scope: &IdempotencyScope,
        now: DateTime<Utc>,
        in_flight_until: DateTime<Utc>,
    ) -> Result<IdempotencyBegin, StoreError> {
        let mut state = self.lock()?;
        state.begins = state.begins.wrapping_add(1);
        if state.begins % SWEEP_EVERY == 0 {
            state.entries.retain(|_, e| e.live(now));
        }
        match state.entries.get(scope) {
            Some(e @ Entry::InFlight(_)) if e.live(now) => Ok(IdempotencyBegin::InFlight),
            Some(Entry::Completed(resp, until)) if *until > now => {
                Ok(IdempotencyBegin::Completed(resp.clone()))
            }
            _ => {
                state
                    .entries
                    .insert(scope.clone(), Entry::InFlight(in_flight_until));
                Ok(IdempotencyBegin::Started)
            }
        }
    }

    async fn complete(
        &self,
        scope: &IdempotencyScope,
        response: StoredResponse,
        expires_at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut state = self.lock()?;
        state
            .entries
            .insert(scope.clone(), Entry::Completed(response, expires_at));
        Ok(())
    }

    async fn release(&self, scope: &IdempotencyScope) -> Result<(), StoreError> {
        let mut state = self.lock()?;
        if matches!(state.entries.get(scope), Some(Entry::InFlight(_))) {
            state.entries.remove(scope);
        }
        Ok(())
    }
}
