use crate::deadline::Deadline;
use crate::error::StoreError;
use crate::report::Report;
use crate::template::Template;
use crate::tenant::TenantId;
use async_trait::async_trait;

use super::idempotency::IdempotencyCompletion;
use super::outbox::OutboxRecord;

/// One record write inside a unit of work.
///
/// `expected_version: None` inserts (the id MUST NOT exist); `Some(v)` replaces the stored
/// record whose version is `v` (the new record carries `v + 1`). Soft deletes are updates that
/// set `deleted_at`.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// Insert or update a template.
    Template {
        /// The new state.
        record: Template,
        /// Version the caller read, `None` for an insert.
        expected_version: Option<u64>,
    },
    /// Insert or update a deadline.
    Deadline {
        /// The new state.
        record: Deadline,
        /// Version the caller read, `None` for an insert.
        expected_version: Option<u64>,
    },
    /// Insert or update a report.
    Report {
        /// The new state.
        record: Report,
        /// Version the caller read, `None` for an insert.
        expected_version: Option<u64>,
    },
}

/// A state change and the events it produces, committed as one unit.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct UnitOfWork {
    /// Record writes, applied in order.
    pub changes: Vec<Change>,
    /// Outbox rows, inserted with the changes.
    pub outbox: Vec<OutboxRecord>,
    /// The idempotent request this unit answers: its stored response commits with the changes.
    pub idempotency: Option<IdempotencyCompletion>,
}

impl UnitOfWork {
    /// An empty unit of work.
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds a change.
    pub fn change(mut self, change: Change) -> Self {
        self.changes.push(change);
        self
    }
    /// Adds outbox rows.
    pub fn with_outbox(mut self, rows: impl IntoIterator<Item = OutboxRecord>) -> Self {
        self.outbox.extend(rows);
        self
    }
    /// Completes an idempotent request with the unit.
    pub fn with_idempotency(mut self, completion: Option<IdempotencyCompletion>) -> Self {
        self.idempotency = completion;
        self
    }
}

/// Commits units of work. This is the only write path for templates, deadlines and reports.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait UnitOfWorkPort: Send + Sync {
    /// Applies every change and inserts every outbox row of `uow` for `tenant` atomically:
    /// after an error nothing of it is visible, after success all of it is.
    ///
    /// MUST return:
    /// - `VersionConflict` when an update's `expected_version` is not the stored version, or an
    ///   insert's id already exists;
    /// - `NotFound` when an update names a record that does not exist in this tenant;
    /// - `Duplicate(rule)` when a live deadline would share (type, template, due date,
    ///   frequency) with another live deadline of the tenant;
    /// - `IdempotencyLost` when `uow.idempotency` names a key its owner no longer holds (the
    ///   lease ended and another request took the key, or it completed): nothing applied;
    /// - `Unavailable` when the backing store cannot commit (nothing applied).
    ///
    /// With `uow.idempotency`, the key's stored response is committed with the changes: a
    /// retry after any crash replays it or, when nothing committed, runs once.
    ///
    /// Every record in `uow` MUST belong to `tenant`.
    async fn commit(&self, tenant: &TenantId, uow: UnitOfWork) -> Result<(), StoreError>;
}
