//! Worker metrics.
use prometheus::{IntCounterVec, Opts, Registry};

/// Jobs the worker received.
#[derive(Clone)]
pub struct WorkerMetrics {
    received: IntCounterVec,
}

impl WorkerMetrics {
    /// Registers `reporter_jobs_received_total{redelivered="true|false"}`.
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let received = IntCounterVec::new(
            Opts::new(
                "reporter_jobs_received_total",
                "Jobs received, by whether the queue redelivered them (a consumer that held \
                 the job died or lost its connection before settling it)",
            ),
            &["redelivered"],
        )?;
        registry.register(Box::new(received.clone()))?;
        Ok(Self { received })
    }

    /// Counts one received job.
    pub fn received(&self, redelivered: bool) {
        self.received
            .with_label_values(&[if redelivered { "true" } else { "false" }])
            .inc();
    }

    /// Jobs received with this flag so far (tests).
    pub fn get(&self, redelivered: bool) -> u64 {
        self.received
            .with_label_values(&[if redelivered { "true" } else { "false" }])
            .get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_the_redelivered_flag_and_shows_in_the_registry() {
        let registry = Registry::new();
        let m = WorkerMetrics::register(&registry).expect("register");
        m.received(false);
        m.received(true);
        m.received(true);
        assert_eq!((m.get(false), m.get(true)), (1, 2));
        let families = registry.gather();
        assert_eq!(families[0].name(), "reporter_jobs_received_total");
    }
}
