//! Optimistic concurrency: a stored record changes by writing its next revision.
use crate::deadline::Deadline;
use crate::ports::Change;
use crate::report::Report;
use crate::template::Template;
use chrono::{DateTime, Utc};

/// A record stored under optimistic concurrency. Every change MUST be written as the next
/// revision of the state it was read at ([`Revisioned::next_revision`]), committed with
/// [`Revisioned::update`], so that a store answers `VersionConflict` when another writer
/// came between.
pub trait Revisioned: Clone {
    /// The version this state was stored at.
    fn version(&self) -> u64;

    /// Sets the version and the last-change instant (only [`Revisioned::next_revision`]
    /// calls it).
    fn stamp(&mut self, version: u64, at: DateTime<Utc>);

    /// The change that stores `next` in place of this state (expected version: this one's).
    fn change(next: Self, expected_version: Option<u64>) -> Change;

    /// A copy that is the next revision: version + 1, changed at `at`.
    fn next_revision(&self, at: DateTime<Utc>) -> Self {
        let mut next = self.clone();
        next.stamp(self.version() + 1, at);
        next
    }

    /// The change that replaces this state with `next` (which MUST come from
    /// [`Revisioned::next_revision`] of this state).
    fn update(&self, next: Self) -> Change {
        Self::change(next, Some(self.version()))
    }
}

macro_rules! revisioned {
    ($ty:ident) => {
        impl Revisioned for $ty {
            fn version(&self) -> u64 {
                self.version
            }
            fn stamp(&mut self, version: u64, at: DateTime<Utc>) {
                self.version = version;
                self.updated_at = at;
            }
            fn change(record: Self, expected_version: Option<u64>) -> Change {
                Change::$ty {
                    record,
                    expected_version,
                }
            }
        }
    };
}

revisioned!(Template);
revisioned!(Deadline);
revisioned!(Report);
