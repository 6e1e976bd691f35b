//! Event publication: the direct path of important events with its circuit breaker, the outbox
//! dispatcher, metrics, and the manifest / AsyncAPI documents.
pub mod breaker;
pub mod delivery;
pub mod dispatcher;
pub mod manifest;
pub mod metrics;
pub mod spans;

pub use breaker::{BreakerSettings, BreakerState, CircuitBreaker};
pub use delivery::{Delivery, DeliverySetup, DirectLane};
pub use dispatcher::{BatchReport, Dispatcher, DispatcherSettings};
pub use metrics::{Outcome, StreamingMetrics};
