//! The event catalog: the facts Reporter publishes (one row each in `catalog`), the single source of truth for
//! emission, the manifest and the AsyncAPI document.
mod catalog;
mod envelope;
pub mod payload;
pub mod payloads;
mod schema;

pub use catalog::{
    CE_SOURCE, CE_SPECVERSION, CE_TYPE_PREFIX, DeliveryProfile, EVENT_CLASS, Event, EventKey,
    Resource, SCHEMA_VERSION,
};
pub use envelope::{EventEnvelope, deterministic_event_id, event_id_namespace, sequence_text};
pub use payload::Payload;
