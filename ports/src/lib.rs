//! Reporter's pure domain model and the port traits the application needs.
//!
//! Nothing in this crate performs I/O. Adapters (`adapters/*`) implement the traits in
//! [`ports`]; the application (`src/`) drives them. Dependencies point inward: this crate
//! depends on no other Reporter crate.

pub mod active_content;
pub mod backoff;
pub mod clock;
pub mod datasource;
pub mod deadline;
pub mod error;
pub mod events;
pub mod human_text;
pub mod ids;
pub mod json_text;
pub mod object_key;
pub mod page;
pub mod ports;
pub mod report;
pub mod revision;
pub mod secret;
pub mod source_breaker;
pub mod template;
pub mod tenant;
pub mod trace;

pub use backoff::Backoff;
pub use clock::Clock;
pub use error::StoreError;
pub use ids::{DeadlineId, ReportId, TemplateId};
pub use object_key::{ObjectKey, ObjectKeyError};
pub use revision::Revisioned;
pub use secret::Secret;
pub use tenant::TenantId;
pub use trace::TraceCarrier;
