//! Streaming metrics.
use prometheus::{Histogram, HistogramOpts, IntCounterVec, IntGauge, Opts, Registry};

/// Outcomes counted per event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Published directly (important events).
    Published,
    /// Left in the outbox for the dispatcher (critical events, or the breaker was open).
    Outboxed,
    /// A direct publish failed; the row stays in the outbox.
    Failed,
    /// Published by the dispatcher.
    Dispatched,
    /// Parked after too many attempts.
    Parked,
    /// Lost (no outbox row could be written). Always logged as an error too.
    Lost,
}

impl Outcome {
    fn label(&self) -> &'static str {
        match self {
            Self::Published => "published",
            Self::Outboxed => "outboxed",
            Self::Failed => "failed",
            Self::Dispatched => "dispatched",
            Self::Parked => "parked",
            Self::Lost => "lost",
        }
    }
}

/// Every streaming metric.
#[derive(Clone)]
pub struct StreamingMetrics {
    emitted: IntCounterVec,
    /// Pending outbox rows.
    pub outbox_depth: IntGauge,
    /// Age of the oldest pending row in seconds.
    pub oldest_pending_age: IntGauge,
    /// Parked rows.
    pub parked: IntGauge,
    /// 0 closed, 1 half-open, 2 open.
    pub breaker_state: IntGauge,
    /// Publish + confirm latency.
    pub publish_latency: Histogram,
}

impl StreamingMetrics {
    /// Registers the metrics.
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let emitted = IntCounterVec::new(
            Opts::new(
                "reporter_events_emitted_total",
                "Events by definition key and outcome",
            ),
            &["event", "outcome"],
        )?;
        let outbox_depth = IntGauge::new("reporter_outbox_pending", "Pending outbox rows")?;
        let oldest_pending_age = IntGauge::new(
            "reporter_outbox_oldest_pending_age_seconds",
            "Age of the oldest pending outbox row",
        )?;
        let parked = IntGauge::new("reporter_outbox_parked", "Parked outbox rows")?;
        let breaker_state = IntGauge::new(
            "reporter_events_breaker_state",
            "Direct-publish circuit breaker: 0 closed, 1 half-open, 2 open",
        )?;
        let publish_latency = Histogram::with_opts(
            HistogramOpts::new(
                "reporter_events_publish_seconds",
                "Latency of one publish batch including broker confirms",
            )
            .buckets(vec![
                0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
            ]),
        )?;
        for c in [
            Box::new(emitted.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(outbox_depth.clone()),
            Box::new(oldest_pending_age.clone()),
            Box::new(parked.clone()),
            Box::new(breaker_state.clone()),
            Box::new(publish_latency.clone()),
        ] {
            registry.register(c)?;
        }
        Ok(Self {
            emitted,
            outbox_depth,
            oldest_pending_age,
            parked,
            breaker_state,
            publish_latency,
        })
    }

    /// Counts one event outcome.
    pub fn count(&self, event: &str, outcome: Outcome) {
        self.emitted
            .with_label_values(&[event, outcome.label()])
            .inc();
    }

    /// Rows committed: the backlog grows at once (a gauge that waited for the next stats
    /// query would lag far behind during an outage).
    pub fn pending_added(&self, n: usize) {
        if self.outbox_depth.get() <= 0 {
            self.oldest_pending_age.set(0);
        }
        self.outbox_depth.add(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// Rows that left the backlog (published or parked by this process).
    pub fn pending_settled(&self, n: usize) {
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        let left = (self.outbox_depth.get() - n).max(0);
        self.outbox_depth.set(left);
    }

    /// The backlog as the outbox counts it (every process's rows).
    pub fn backlog(&self, stats: &reporter_ports::ports::OutboxStats) {
        self.outbox_depth
            .set(i64::try_from(stats.pending).unwrap_or(i64::MAX));
        self.parked
            .set(i64::try_from(stats.parked).unwrap_or(i64::MAX));
        self.oldest_pending_age
            .set(stats.oldest_pending_age_secs.unwrap_or(0));
    }

    /// Current count (tests).
    pub fn get(&self, event: &str, outcome: Outcome) -> u64 {
        self.emitted
            .with_label_values(&[event, outcome.label()])
            .get()
    }
}
