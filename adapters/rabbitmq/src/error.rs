//! Errors of the adapter's own operations (connect, declare, check).
use reporter_ports::error::StoreError;
use reporter_ports::ports::PublishError;
use std::time::Duration;

/// Why a RabbitMQ operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RabbitError {
    /// The broker cannot be reached, refused the operation, or closed the channel.
    #[error("rabbitmq unavailable: {0}")]
    Unavailable(String),
    /// The broker did not answer within the deadline (e.g. a blocked connection).
    #[error("rabbitmq did not answer within {0:?}")]
    Timeout(Duration),
    /// The broker refused Reporter's topology (e.g. a missing exchange the user may not
    /// declare); the text names the entity and the broker's reply.
    #[error("rabbitmq topology: {0}")]
    Topology(String),
    /// The configuration is unusable (e.g. a name longer than 255 bytes).
    #[error("invalid rabbitmq configuration: {0}")]
    Config(String),
}

impl From<lapin::Error> for RabbitError {
    fn from(e: lapin::Error) -> Self {
        Self::Unavailable(e.to_string())
    }
}

impl From<RabbitError> for PublishError {
    fn from(e: RabbitError) -> Self {
        match e {
            RabbitError::Timeout(_) => PublishError::Timeout,
            other => PublishError::Unavailable(other.to_string()),
        }
    }
}

impl From<RabbitError> for StoreError {
    fn from(e: RabbitError) -> Self {
        StoreError::Unavailable(e.to_string())
    }
}
