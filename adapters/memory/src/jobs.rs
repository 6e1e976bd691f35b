//! [`MemoryJobQueue`] and [`MemoryJobReceiver`].
use async_trait::async_trait;
use reporter_ports::StoreError;
use reporter_ports::ports::{JobQueue, ReportJob};
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

#[cfg(test)]
mod tests {
    use super::*;
    use reporter_ports::{ReportId, TenantId};

    fn job() -> ReportJob {
        ReportJob {
            tenant: TenantId::parse("t").unwrap(),
            report_id: ReportId::new(),
            request_id: None,
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
