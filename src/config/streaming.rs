//! The streaming section: publication, the broker, the circuit breaker, the outbox.
use super::{
    Checker, RawConfig, StreamingSettings, event_policies_problem, problem, streaming_rules,
};
use std::time::Duration;

/// The circuit breaker's settings.
struct Breaker {
    failure_ratio: f64,
    min_requests: u32,
    open: Duration,
}

/// The outbox dispatcher's settings.
struct OutboxNumbers {
    max_attempts: u32,
    retention: chrono::Duration,
    batch: usize,
    poll: Duration,
    lease: chrono::Duration,
    memory_max_published: usize,
}

impl RawConfig {
    /// The streaming section. Every value is read in the order its problems are reported.
    pub(super) fn streaming(&self, rabbitmq: Option<&str>, c: &mut Checker) -> StreamingSettings {
        let enabled = c.boolean("STREAMING_ENABLED", &self.streaming_enabled);
        c.problems.extend(streaming_rules(
            enabled,
            self.events_exchange.as_deref(),
            super::secret(&self.streaming_brokers),
            self.streaming_source.as_deref(),
        ));
        let exchange = self
            .events_exchange
            .as_deref()
            .map(str::trim)
            .unwrap_or_default()
            .to_owned();
        let (broker, broker_origin) = self.event_broker(enabled, rabbitmq, c);
        if let Some(p) = event_policies_problem(self.streaming_event_policies.as_deref()) {
            c.problems.push(p);
        }
        let breaker = self.breaker(c);
        let publish_ms = c.int::<u64>(
            "STREAMING_PUBLISH_TIMEOUT_MS",
            &self.streaming_publish_timeout_ms,
        );
        let outbox = self.outbox(c);
        let alternate_exchange = self.alternate_exchange(&exchange);
        let (unroutable_ttl, unroutable_max_length) = self.unroutable(c);
        StreamingSettings {
            enabled,
            exchange,
            alternate_exchange,
            broker,
            broker_origin,
            unroutable_ttl,
            unroutable_max_length,
            cb_failure_ratio: breaker.failure_ratio,
            cb_min_requests: breaker.min_requests,
            cb_open: breaker.open,
            publish_timeout: Duration::from_millis(publish_ms),
            outbox_max_attempts: outbox.max_attempts,
            outbox_retention: outbox.retention,
            dispatch_batch: outbox.batch,
            dispatch_poll: outbox.poll,
            outbox_lease: outbox.lease,
            memory_max_published: outbox.memory_max_published,
        }
    }

    /// `STREAMING_CB_FAILURE_RATIO` in (0, 1], `STREAMING_CB_MIN_REQUESTS`,
    /// `STREAMING_CB_TIMEOUT_S`.
    fn breaker(&self, c: &mut Checker) -> Breaker {
        let failure_ratio = match self.streaming_cb_failure_ratio.trim().parse::<f64>() {
            Ok(r) if r > 0.0 && r <= 1.0 => r,
            _ => {
                c.problems.push(problem(
                    "STREAMING_CB_FAILURE_RATIO",
                    format!("'{}' is not in (0, 1]", self.streaming_cb_failure_ratio),
                    "a number greater than 0 and at most 1",
                ));
                0.5
            }
        };
        let min_requests =
            c.int::<u32>("STREAMING_CB_MIN_REQUESTS", &self.streaming_cb_min_requests);
        let open_s = c.int::<u64>("STREAMING_CB_TIMEOUT_S", &self.streaming_cb_timeout_s);
        Breaker {
            failure_ratio,
            min_requests,
            open: Duration::from_secs(open_s),
        }
    }

    /// The outbox: attempts before parking, retention, batch, poll, lease, and the memory
    /// outbox's published-row bound.
    fn outbox(&self, c: &mut Checker) -> OutboxNumbers {
        let max_attempts = c.int::<u32>(
            "STREAMING_OUTBOX_MAX_ATTEMPTS",
            &self.streaming_outbox_max_attempts,
        );
        let retention_h = c.int::<i64>(
            "STREAMING_OUTBOX_RETENTION_HOURS",
            &self.streaming_outbox_retention_hours,
        );
        let batch = c.int::<usize>("STREAMING_DISPATCH_BATCH", &self.streaming_dispatch_batch);
        let poll_ms = c.int::<u64>(
            "STREAMING_DISPATCH_POLL_MS",
            &self.streaming_dispatch_poll_ms,
        );
        let lease_s = c.int::<i64>("STREAMING_OUTBOX_LEASE_S", &self.streaming_outbox_lease_s);
        let memory_max_published = c.int::<usize>(
            "STREAMING_OUTBOX_MEMORY_MAX_PUBLISHED",
            &self.streaming_outbox_memory_max_published,
        );
        OutboxNumbers {
            max_attempts,
            retention: chrono::Duration::hours(retention_h),
            batch,
            poll: Duration::from_millis(poll_ms),
            lease: chrono::Duration::seconds(lease_s),
            memory_max_published,
        }
    }

    /// `STREAMING_ALTERNATE_EXCHANGE`, by default `<exchange>.unroutable`.
    fn alternate_exchange(&self, exchange: &str) -> String {
        self.streaming_alternate_exchange
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .unwrap_or_else(|| {
                let base = if exchange.is_empty() {
                    "reporter.events"
                } else {
                    exchange
                };
                format!("{base}.unroutable")
            })
    }

    /// The unroutable queue's message TTL and length bound.
    fn unroutable(&self, c: &mut Checker) -> (Duration, u32) {
        let ttl = Duration::from_secs(c.int::<u64>(
            "STREAMING_UNROUTABLE_TTL_SECONDS",
            &self.streaming_unroutable_ttl_seconds,
        ));
        let max_length = c.int::<u32>(
            "STREAMING_UNROUTABLE_MAX_LENGTH",
            &self.streaming_unroutable_max_length,
        );
        (ttl, max_length)
    }
}
