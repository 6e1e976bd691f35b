//! A streamed render's output written to object storage as it is rendered, so the worker
//! never holds the whole artifact.
//!
//! The render's pieces ([`OutputPieces`]) go to an [`ObjectUpload`] from a task of their own,
//! which keeps reading them even after a write failed (a piece not read would hold the
//! render back). The upload is committed only with the render's answer
//! ([`ArtifactUpload::finish`]); a render that failed, was abandoned or whose
//! [`ArtifactUpload`] is dropped aborts it, so nothing partial is ever visible.
use super::{Worker, WorkerMetrics};
use bytes::Bytes;
use reporter_ports::StoreError;
use reporter_ports::ports::{ObjectUpload, OutputPieces, RenderSession};
use reporter_ports::report::Report;
use reporter_ports::template::OutputFormat;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// An upload under way: the pieces' task and the answer it waits for.
pub(super) struct ArtifactUpload {
    /// The render's answer (the output after the last piece); dropped: abort.
    answer: oneshot::Sender<String>,
    done: JoinHandle<Result<Stored, StoreError>>,
}

/// A committed artifact.
#[derive(Debug)]
pub(super) struct Stored {
    pub key: String,
    pub size: u64,
}

impl Worker {
    /// Starts writing `report`'s artifact from `session`'s output pieces. `None` (the output
    /// then comes whole from `finish`) for a pdf (converted after the render), a sanitized
    /// render (answered whole), a storage that takes whole objects only, or one that cannot
    /// start an upload now (the whole artifact's `put` then meets the same storage).
    pub(super) async fn artifact_upload(
        &self,
        report: &Report,
        sanitize: bool,
        session: &mut dyn RenderSession,
    ) -> Option<ArtifactUpload> {
        if sanitize || report.output_format == OutputFormat::Pdf {
            return None;
        }
        let upload = match self.app.begin_artifact(report).await {
            Ok(upload) => upload?,
            Err(e) => {
                tracing::warn!(error = %e, "the artifact upload could not start; the artifact will be stored whole");
                return None;
            }
        };
        let Some(pieces) = session.take_output() else {
            upload.abort().await;
            return None;
        };
        Some(ArtifactUpload::start(upload, pieces, self.metrics.clone()))
    }
}

impl ArtifactUpload {
    fn start(
        upload: Box<dyn ObjectUpload>,
        pieces: Box<dyn OutputPieces>,
        metrics: WorkerMetrics,
    ) -> Self {
        let (answer, answered) = oneshot::channel();
        let done = tokio::spawn(async move {
            let (outcome, stored) = write_pieces(upload, pieces, answered).await;
            metrics.upload_ended(outcome);
            stored
        });
        Self { answer, done }
    }

    /// Ends the upload with the render's answer `tail` (what follows the last piece) and
    /// commits it. MUST only be called once the render answered `Ok` (its pieces are then
    /// the output's beginning).
    pub(super) async fn finish(self, tail: String) -> Result<Stored, StoreError> {
        // The task ends with an error if it is gone (it only ends after the answer).
        let _ = self.answer.send(tail);
        self.done
            .await
            .map_err(|e| StoreError::Unavailable(format!("the artifact upload task failed: {e}")))?
    }
}

/// Writes every piece, then, with the answer, the tail and the commit; without it (the
/// render failed or was abandoned), or after a failed write, the abort. With the outcome
/// ([`UPLOAD_OUTCOMES`](super::metrics::UPLOAD_OUTCOMES)).
async fn write_pieces(
    mut upload: Box<dyn ObjectUpload>,
    mut pieces: Box<dyn OutputPieces>,
    answered: oneshot::Receiver<String>,
) -> (&'static str, Result<Stored, StoreError>) {
    let mut size = 0u64;
    let mut failed = None;
    while let Some(piece) = pieces.next().await {
        if failed.is_some() {
            continue;
        }
        size += piece.len() as u64;
        if let Err(e) = upload.write(piece).await {
            failed = Some(e);
        }
    }
    let tail = match (answered.await, failed) {
        (Ok(tail), None) => tail,
        (Ok(_), Some(e)) => {
            upload.abort().await;
            return ("failed", Err(e));
        }
        (Err(_), _) => {
            upload.abort().await;
            let e = StoreError::Unavailable("the render did not finish".into());
            return ("aborted", Err(e));
        }
    };
    size += tail.len() as u64;
    if !tail.is_empty()
        && let Err(e) = upload.write(Bytes::from(tail)).await
    {
        upload.abort().await;
        return ("failed", Err(e));
    }
    match upload.commit().await {
        Ok(key) => ("committed", Ok(Stored { key, size })),
        Err(e) => ("failed", Err(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use std::sync::{Arc, Mutex};

    /// What a fake upload saw.
    #[derive(Debug, Default, PartialEq)]
    struct Seen {
        written: Vec<u8>,
        committed: bool,
        aborted: bool,
    }

    /// An upload whose `fail_at`-th write (from 0) fails.
    struct FakeUpload {
        seen: Arc<Mutex<Seen>>,
        writes: usize,
        fail_at: Option<usize>,
    }

    #[async_trait]
    impl ObjectUpload for FakeUpload {
        async fn write(&mut self, piece: Bytes) -> Result<(), StoreError> {
            let n = self.writes;
            self.writes += 1;
            if self.fail_at == Some(n) {
                return Err(StoreError::Unavailable("disk full".into()));
            }
            self.seen.lock().unwrap().written.extend_from_slice(&piece);
            Ok(())
        }
        async fn commit(self: Box<Self>) -> Result<String, StoreError> {
            self.seen.lock().unwrap().committed = true;
            Ok("the/key".into())
        }
        async fn abort(self: Box<Self>) {
            self.seen.lock().unwrap().aborted = true;
        }
    }

    /// Pieces from a list; counts how many were read.
    struct FakePieces(Vec<&'static str>, Arc<Mutex<usize>>);

    #[async_trait]
    impl OutputPieces for FakePieces {
        async fn next(&mut self) -> Option<Bytes> {
            if self.0.is_empty() {
                return None;
            }
            *self.1.lock().unwrap() += 1;
            Some(Bytes::from_static(self.0.remove(0).as_bytes()))
        }
    }

    async fn run(fail_at: Option<usize>, tail: Option<&str>) -> (&'static str, Seen, usize) {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let read = Arc::new(Mutex::new(0));
        let upload = FakeUpload {
            seen: seen.clone(),
            writes: 0,
            fail_at,
        };
        let pieces = FakePieces(vec!["a\n", "b\n", "c\n"], read.clone());
        let (answer, answered) = oneshot::channel();
        match tail {
            Some(tail) => answer.send(tail.to_owned()).unwrap(),
            None => drop(answer),
        }
        let (outcome, stored) = write_pieces(Box::new(upload), Box::new(pieces), answered).await;
        if outcome == "committed" {
            let stored = stored.expect("stored");
            assert_eq!((stored.key.as_str(), stored.size), ("the/key", 9));
        } else {
            assert!(stored.is_err());
        }
        let seen = std::mem::take(&mut *seen.lock().unwrap());
        let read = *read.lock().unwrap();
        (outcome, seen, read)
    }

    #[tokio::test]
    async fn the_pieces_and_the_answer_are_committed_as_one_artifact() {
        let (outcome, seen, read) = run(None, Some("end")).await;
        assert_eq!(outcome, "committed");
        assert_eq!(seen.written, b"a\nb\nc\nend");
        assert!(seen.committed && !seen.aborted);
        assert_eq!(read, 3);
    }

    #[tokio::test]
    async fn a_render_without_an_answer_aborts_the_upload() {
        let (outcome, seen, read) = run(None, None).await;
        assert_eq!(outcome, "aborted");
        assert!(seen.aborted && !seen.committed);
        assert_eq!(read, 3, "every piece is read");
    }

    #[tokio::test]
    async fn a_failed_write_aborts_after_every_piece_was_read() {
        let (outcome, seen, read) = run(Some(1), Some("end")).await;
        assert_eq!(outcome, "failed");
        assert!(seen.aborted && !seen.committed);
        assert_eq!(seen.written, b"a\n", "nothing is written after a failure");
        assert_eq!(read, 3, "the render is never held back by a failed upload");
        // The answer's own write failing aborts too.
        let (outcome, seen, _) = run(Some(3), Some("end")).await;
        assert_eq!(outcome, "failed");
        assert!(seen.aborted && !seen.committed);
    }
}
