//! RabbitMQ adapters of Reporter.
//!
//! * [`cloudevents`]: the CloudEvents binding for AMQP 0-9-1 (`ce-` headers) over
//!   `cloudevents-sdk`.
//! * [`RabbitPublisher`]: the [`EventPublisher`](reporter_ports::ports::EventPublisher) (confirms,
//!   `mandatory`, alternate exchange, timeouts).
//! * [`RabbitJobQueue`] / [`RabbitJobConsumer`]: the report job queue (retry queue with backoff,
//!   dead-letter queue).
//! * [`topology`]: the events exchange, its alternate exchange and the bounded queue of
//!   unroutable events (declared when missing, checked passively when an operator owns them).
//! * [`tail`]: a live view of the events exchange (for `reporter events tail`).
pub mod cloudevents;
mod confirms;
mod error;
pub mod jobs;
mod link;
mod publisher;
pub mod tail;
pub mod topology;

pub use error::RabbitError;
pub use jobs::{RabbitJobConsumer, RabbitJobQueue, RabbitJobsConfig};
pub use link::OnReady;
pub use publisher::{RabbitPublisher, RabbitPublisherConfig};
pub use topology::{AlternateExchange, EventsTopology, TopologyReport, ensure_events_topology};
