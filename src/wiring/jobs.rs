//! The report-job transport: RabbitMQ when configured, else an in-process queue for the
//! embedded worker.
use super::Role;
use crate::config::Config;
use reporter_adapter_memory::{MemoryJobConsumer, MemoryJobQueue, MemoryRetryPolicy};
use reporter_adapter_rabbitmq::{RabbitJobConsumer, RabbitJobQueue, RabbitJobsConfig};
use reporter_ports::ports::{JobConsumer, JobQueue};
use std::sync::Arc;

/// How jobs go from the API to the worker.
pub(super) struct JobTransport {
    /// Where the API queues jobs.
    pub jobs: Arc<dyn JobQueue>,
    /// Where this process's worker takes them (none for `reporter api`).
    pub consumer: Option<Arc<dyn JobConsumer>>,
    /// The RabbitMQ queue, for the readiness probe.
    pub rabbit: Option<RabbitJobQueue>,
}

/// Connects the transport `rabbit` describes, or the in-process one without it.
pub(super) async fn job_transport(
    config: &Config,
    role: Role,
    rabbit: Option<&RabbitJobsConfig>,
    summary: &mut Vec<String>,
) -> anyhow::Result<JobTransport> {
    let Some(c) = rabbit else {
        let (q, rx) = MemoryJobQueue::new(10_000);
        let policy = MemoryRetryPolicy {
            max_attempts: config.worker.max_attempts,
            ..Default::default()
        };
        summary.push("report jobs: in-process queue with an embedded worker".to_owned());
        return Ok(JobTransport {
            jobs: Arc::new(q),
            consumer: Some(Arc::new(MemoryJobConsumer::new(rx, policy))),
            rabbit: None,
        });
    };
    let q = RabbitJobQueue::connect(c.clone())
        .await
        .map_err(|e| anyhow::anyhow!("RABBITMQ_URI (job queue): {e}"))?;
    summary.push(format!("report jobs: RabbitMQ queue '{}'", c.queue));
    let consumer: Option<Arc<dyn JobConsumer>> = if role == Role::Api {
        None
    } else {
        let consumer = RabbitJobConsumer::connect(c.clone())
            .await
            .map_err(|e| anyhow::anyhow!("RABBITMQ_URI (job consumer): {e}"))?;
        Some(Arc::new(consumer))
    };
    Ok(JobTransport {
        jobs: Arc::new(q.clone()),
        consumer,
        rabbit: Some(q),
    })
}
