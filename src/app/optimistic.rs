//! Load, change, commit, retry on conflict: the one optimistic write behind every update.
use super::{App, CONFLICT_RETRIES};
use reporter_ports::ports::UnitOfWork;
use reporter_ports::{StoreError, TenantId};

/// What one attempt of an update decided.
pub(super) enum Attempt<T> {
    /// Commit this unit of work, then answer `value`.
    Commit {
        /// The next revision(s) and their events (boxed: an attempt that writes nothing
        /// should not carry its size).
        uow: Box<UnitOfWork>,
        /// The answer once committed.
        value: T,
    },
    /// Nothing to write (the change is moot in the state read): answer this.
    Done(T),
}

impl<T> Attempt<T> {
    /// Commit `uow`, then answer `value`.
    pub(super) fn commit(uow: UnitOfWork, value: T) -> Self {
        Self::Commit {
            uow: Box::new(uow),
            value,
        }
    }
}

impl App {
    /// Runs `attempt` (read the current state, build its next revision and events) and commits
    /// the unit of work it returns. On `VersionConflict` (another writer came between) it runs
    /// `attempt` again on what is stored then, at most [`CONFLICT_RETRIES`] more times, and
    /// then answers the conflict through `on_store`. An `Err` of `attempt` is answered as is;
    /// any other commit error through `on_store`. Every update of a stored record MUST go
    /// through here, so that the retry policy is the same everywhere.
    ///
    /// `attempt` is a closure that returns a future (not an async closure: the futures of
    /// those are not `Send` for every lifetime, which poem and tokio need); state it keeps
    /// between attempts is taken synchronously before the future starts.
    pub(super) async fn write_retrying<T, E, F>(
        &self,
        tenant: &TenantId,
        on_store: impl Fn(StoreError) -> E,
        mut attempt: impl FnMut() -> F,
    ) -> Result<T, E>
    where
        F: Future<Output = Result<Attempt<T>, E>>,
    {
        let mut conflicts = 0;
        loop {
            let (uow, value) = match attempt().await? {
                Attempt::Done(value) => return Ok(value),
                Attempt::Commit { uow, value } => (uow, value),
            };
            match self.commit(tenant, *uow).await {
                Ok(()) => return Ok(value),
                Err(StoreError::VersionConflict) if conflicts < CONFLICT_RETRIES => {
                    conflicts += 1;
                    tracing::debug!(conflicts, "concurrent change: retrying on the stored state");
                }
                Err(e) => return Err(on_store(e)),
            }
        }
    }

    /// [`write_retrying`](Self::write_retrying) for an update that has already read the
    /// record: the first attempt builds on `read`, each retry on what `reread` loads then
    /// (the state another writer left). `attempt` builds the unit of work from that state.
    pub(super) async fn write_retrying_from<R, T, E, G, F>(
        &self,
        tenant: &TenantId,
        on_store: impl Fn(StoreError) -> E,
        read: R,
        reread: impl Fn() -> G,
        attempt: impl Fn(R) -> F,
    ) -> Result<T, E>
    where
        G: Future<Output = Result<R, E>>,
        F: Future<Output = Result<Attempt<T>, E>>,
    {
        let mut read = Some(read);
        let (reread, attempt) = (&reread, &attempt);
        self.write_retrying(tenant, on_store, || {
            let given = read.take();
            async move {
                let base = match given {
                    Some(base) => base,
                    None => reread().await?,
                };
                attempt(base).await
            }
        })
        .await
    }
}
