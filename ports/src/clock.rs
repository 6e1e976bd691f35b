//! The clock port: every use case reads "now" through it so tests can pin time.
use chrono::{DateTime, Utc};

/// Source of the current instant.
pub trait Clock: Send + Sync + 'static {
    /// The current instant in UTC.
    fn now(&self) -> DateTime<Utc>;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}
