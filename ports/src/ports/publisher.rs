use crate::events::EventEnvelope;
use async_trait::async_trait;

/// Why a publish failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PublishError {
    /// The broker returned the message (no queue bound for its routing key).
    #[error("unroutable: {0}")]
    Unroutable(String),
    /// No confirmation within the deadline.
    #[error("publish timed out")]
    Timeout,
    /// The broker negatively acknowledged the message.
    #[error("nacked by the broker")]
    Nacked,
    /// Cannot reach the broker.
    #[error("broker unavailable: {0}")]
    Unavailable(String),
}

/// Publishes events to the broker.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait EventPublisher: Send + Sync {
    /// Publishes the events (pipelined) and answers one result per event, in input order.
    /// `Ok` MUST mean the broker confirmed the message with no return.
    async fn publish(&self, events: &[EventEnvelope]) -> Vec<Result<(), PublishError>>;
}
