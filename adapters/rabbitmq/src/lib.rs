//! RabbitMQ adapters of Reporter.
//!
//! * [`cloudevents`]: the CloudEvents binding for AMQP 0-9-1 (`ce-` headers) over
//!   `cloudevents-sdk`.
//! * [`RabbitPublisher`]: the [`EventPublisher`](reporter_ports::ports::EventPublisher) (confirms,
//!   `mandatory`, alternate exchange, timeouts).
//! * [`RabbitJobQueue`] / [`RabbitJobConsumer`]: the report job queue (retry queue with backoff,
//!   dead-letter queue).
//! * [`tail`]: a live view of the events exchange (for `reporter events tail`).
pub mod cloudevents;
mod error;
pub mod jobs;
mod link;
mod publisher;
pub mod tail;

pub use error::RabbitError;
pub use jobs::{RabbitJobConsumer, RabbitJobQueue, RabbitJobsConfig, backoff_delay};
pub use publisher::{AlternateExchange, RabbitPublisher, RabbitPublisherConfig};
