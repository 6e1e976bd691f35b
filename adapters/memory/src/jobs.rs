//! [`MemoryJobQueue`] and [`MemoryJobReceiver`].
use async_trait::async_trait;
use reporter_ports::StoreError;
use reporter_ports::ports::{JobConsumer, JobDelivery, JobQueue, ReportJob};
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;

/// Producer side of an in-process, bounded job channel.
///
/// `enqueue` never waits: it answers `StoreError::Unavailable` when the channel is full or the
/// receiver is gone. Jobs are not durable: they live only in the channel. Clones share the
/// channel.
#[derive(Debug, Clone)]
pub struct MemoryJobQueue {
    tx: mpsc::Sender<ReportJob>,
}

/// Consumer side of a [`MemoryJobQueue`]. Jobs arrive in enqueue order.
#[derive(Debug)]
pub struct MemoryJobReceiver {
    rx: mpsc::Receiver<ReportJob>,
}

impl MemoryJobQueue {
    /// A queue holding at most `capacity` jobs (at least 1), and its receiver.
    pub fn new(capacity: usize) -> (MemoryJobQueue, MemoryJobReceiver) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        (MemoryJobQueue { tx }, MemoryJobReceiver { rx })
    }
}

impl MemoryJobReceiver {
    /// The next job; `None` once every queue handle is dropped and the channel is drained.
    pub async fn recv(&mut self) -> Option<ReportJob> {
        self.rx.recv().await
    }

    /// The next job if one is waiting right now.
    pub fn try_recv(&mut self) -> Option<ReportJob> {
        self.rx.try_recv().ok()
    }
}

#[async_trait]
impl JobQueue for MemoryJobQueue {
    async fn enqueue(&self, job: &ReportJob) -> Result<(), StoreError> {
        self.tx.try_send(job.clone()).map_err(|e| match e {
            TrySendError::Full(_) => StoreError::Unavailable("job queue full".into()),
            TrySendError::Closed(_) => StoreError::Unavailable("job queue closed".into()),
        })
    }
}

/// Retry policy of [`MemoryJobConsumer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryRetryPolicy {
    /// Deliveries before a job is dead-lettered.
    pub max_attempts: u32,
    /// First retry delay.
    pub base: std::time::Duration,
    /// Largest retry delay.
    pub cap: std::time::Duration,
}

impl Default for MemoryRetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            base: std::time::Duration::from_millis(500),
            cap: std::time::Duration::from_secs(30),
        }
    }
}

/// Dead-lettered jobs with their reasons (inspectable by tests and operators).
pub type DeadLetters = std::sync::Arc<std::sync::Mutex<Vec<(ReportJob, String)>>>;

/// Consumer side for the embedded worker: implements [`JobConsumer`] over a
/// [`MemoryJobReceiver`], with retries after an exponential, jittered delay and an in-memory
/// dead-letter list.
pub struct MemoryJobConsumer {
    main: tokio::sync::Mutex<MemoryJobReceiver>,
    retry_tx: mpsc::UnboundedSender<(ReportJob, u32)>,
    retry_rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<(ReportJob, u32)>>,
    closed: tokio::sync::watch::Sender<bool>,
    policy: MemoryRetryPolicy,
    dead: DeadLetters,
}

impl MemoryJobConsumer {
    /// Wraps a receiver.
    pub fn new(receiver: MemoryJobReceiver, policy: MemoryRetryPolicy) -> Self {
        let (retry_tx, retry_rx) = mpsc::unbounded_channel();
        let (closed, _) = tokio::sync::watch::channel(false);
        Self {
            main: tokio::sync::Mutex::new(receiver),
            retry_tx,
            retry_rx: tokio::sync::Mutex::new(retry_rx),
            closed,
            policy,
            dead: DeadLetters::default(),
        }
    }

    /// The dead-letter list.
    pub fn dead_letters(&self) -> DeadLetters {
        self.dead.clone()
    }

    /// Makes `next` answer `None` from now on.
    pub fn close(&self) {
        let _ = self.closed.send(true);
    }
}

struct MemoryDelivery {
    job: ReportJob,
    attempt: u32,
    retry_tx: mpsc::UnboundedSender<(ReportJob, u32)>,
    policy: MemoryRetryPolicy,
    dead: DeadLetters,
}

fn push_dead(dead: &DeadLetters, job: ReportJob, reason: &str) {
    dead.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push((job, reason.chars().take(256).collect()));
}

#[async_trait]
impl JobDelivery for MemoryDelivery {
    fn job(&self) -> &ReportJob {
        &self.job
    }
    fn attempt(&self) -> u32 {
        self.attempt
    }
    async fn ack(self: Box<Self>) -> Result<(), StoreError> {
        Ok(())
    }
    async fn retry(self: Box<Self>, reason: &str) -> Result<(), StoreError> {
        let next = self.attempt + 1;
        if next >= self.policy.max_attempts {
            push_dead(&self.dead, self.job, reason);
            return Ok(());
        }
        let exp = self
            .policy
            .base
            .saturating_mul(2u32.saturating_pow(self.attempt.min(20)));
        let delay = exp.min(self.policy.cap);
        let jitter = u64::try_from(delay.as_millis() / 2).unwrap_or(0);
        let delay = delay / 2
            + std::time::Duration::from_millis(if jitter == 0 { 0 } else { rand_ms(jitter) });
        let tx = self.retry_tx.clone();
        let job = self.job;
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = tx.send((job, next));
        });
        Ok(())
    }
    async fn dead_letter(self: Box<Self>, reason: &str) -> Result<(), StoreError> {
        push_dead(&self.dead, self.job, reason);
        Ok(())
    }
}

/// A pseudo-random number in `0..=max` (jitter only; not security relevant).
fn rand_ms(max: u64) -> u64 {
    let nanos = u64::from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0),
    );
    nanos % (max + 1)
}

#[async_trait]
impl JobConsumer for MemoryJobConsumer {
    async fn next(&self) -> Result<Option<Box<dyn JobDelivery>>, StoreError> {
        let mut closed = self.closed.subscribe();
        if *closed.borrow() {
            return Ok(None);
        }
        let mut main = self.main.lock().await;
        let mut retry = self.retry_rx.lock().await;
        let (job, attempt) = tokio::select! {
            biased;
            _ = closed.changed() => return Ok(None),
            Some(r) = retry.recv() => r,
            j = main.recv() => match j {
                Some(j) => (j, 0),
                None => return Ok(None),
            },
        };
        Ok(Some(Box::new(MemoryDelivery {
            job,
            attempt,
            retry_tx: self.retry_tx.clone(),
            policy: self.policy,
            dead: self.dead.clone(),
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reporter_ports::{ReportId, TenantId};

    fn job() -> ReportJob {
        ReportJob {
            tenant: TenantId::parse("t").unwrap(),
            report_id: ReportId::new(),
            request_id: None,
            trace: None,
        }
    }

    #[tokio::test]
    async fn full_and_closed_are_unavailable() {
        let (q, mut rx) = MemoryJobQueue::new(1);
        let j = job();
        q.enqueue(&j).await.unwrap();
        assert!(matches!(
            q.enqueue(&job()).await,
            Err(StoreError::Unavailable(_))
        ));
        assert_eq!(rx.recv().await, Some(j));
        drop(rx);
        assert!(matches!(
            q.enqueue(&job()).await,
            Err(StoreError::Unavailable(_))
        ));
    }
}
