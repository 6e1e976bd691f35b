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
    /// Not sent: the publisher's window of messages awaiting their confirm stayed full until
    /// the deadline (other publishes are in flight). Says nothing against the broker's
    /// health — a caller keeping a circuit breaker MUST NOT count it as a broker failure.
    #[error("not sent: the confirm window stayed full")]
    WindowFull,
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
    /// Whether a publish could start now. `false` means a publish would fail at once (the
    /// broker is unreachable or blocks publishing), so a dispatcher may wait for the broker's
    /// return instead of trying. Default: always `true`.
    fn ready(&self) -> bool {
        true
    }
}

/// What a recording broker (the in-memory one) kept of its deliveries, for the deliveries
/// view a tester reads.
#[cfg_attr(feature = "mocks", mockall::automock)]
pub trait DeliveryLog: Send + Sync {
    /// The last `limit` recorded deliveries of `tenant`, oldest first. MUST filter by tenant
    /// before it counts: a tenant gets `limit` of its own deliveries whenever it has that
    /// many, however many other tenants' deliveries came after them.
    fn recent(&self, tenant: &crate::TenantId, limit: usize) -> Vec<EventEnvelope>;
}
