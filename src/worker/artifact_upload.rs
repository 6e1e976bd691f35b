//! A streamed render's output written to object storage as it is rendered, so the worker
//! never holds the whole artifact.
//!
//! The render's pieces ([`OutputPieces`]) go to an [`ObjectUpload`] from a task of their own,
//! which keeps reading them even after a write failed (a piece not read would hold the
//! render back). Two steps end it: [`ArtifactUpload::finish`] writes the render's answer
//! (the output after the last piece), and [`Written::commit`] makes the artifact visible;
//! the job commits after its generation deadline, as it would put a whole artifact, so a job
//! that times out or is canceled never leaves one behind. A render that failed or was
//! abandoned, a dropped [`ArtifactUpload`] or [`Written`], or a failed write aborts the
//! upload: nothing partial is ever visible. The output of a format a browser runs as a
//! document is scanned as it passes ([`super::active_content`]): script found in it makes
//! `finish` refuse the artifact, which is then aborted.
use super::active_content::{self, SharedScan};
use super::{Worker, WorkerMetrics};
use bytes::Bytes;
use reporter_ports::StoreError;
use reporter_ports::ports::{ObjectUpload, OutputPieces, RenderSession};
use reporter_ports::report::Report;
use reporter_ports::template::OutputFormat;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// An upload under way: the pieces' task and the signals it waits for.
pub(super) struct ArtifactUpload {
    /// The render's answer (the output after the last piece); dropped: abort.
    answer: oneshot::Sender<Bytes>,
    /// The artifact's size once every byte is written (or why not).
    written: oneshot::Receiver<Result<u64, StoreError>>,
    /// The go-ahead to commit; dropped: abort.
    commit: oneshot::Sender<()>,
    /// The key as stored, once committed.
    done: JoinHandle<Result<String, StoreError>>,
    /// The scan of the pieces, for a checked format.
    scan: Option<SharedScan>,
}

/// Why an artifact written in pieces is not [`Written`] (its upload is aborted).
#[derive(Debug)]
pub(super) enum NotWritten {
    /// A write failed.
    Store(StoreError),
    /// The output holds script-capable markup (what was found).
    Script(String),
}

/// An artifact written whole and not yet visible: [`Self::commit`] or drop (abort).
#[derive(Debug)]
pub(super) struct Written {
    commit: oneshot::Sender<()>,
    done: JoinHandle<Result<String, StoreError>>,
    /// Its size in bytes.
    pub size: u64,
}

/// A committed artifact.
#[derive(Debug)]
pub(super) struct Stored {
    pub key: String,
    pub size: u64,
}

/// The task's signals.
struct Signals {
    answered: oneshot::Receiver<Bytes>,
    written: oneshot::Sender<Result<u64, StoreError>>,
    commit: oneshot::Receiver<()>,
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
        let (pieces, scan) = active_content::scanned(report.output_format, pieces);
        Some(ArtifactUpload::start(
            upload,
            pieces,
            scan,
            self.metrics.clone(),
        ))
    }
}

impl ArtifactUpload {
    fn start(
        upload: Box<dyn ObjectUpload>,
        pieces: Box<dyn OutputPieces>,
        scan: Option<SharedScan>,
        metrics: WorkerMetrics,
    ) -> Self {
        let (answer, answered) = oneshot::channel();
        let (written_tx, written) = oneshot::channel();
        let (commit, commit_rx) = oneshot::channel();
        let signals = Signals {
            answered,
            written: written_tx,
            commit: commit_rx,
        };
        // With telemetry on, the writer task stays in the job's trace (its commit span).
        let parent = if crate::telemetry::otel::enabled() {
            tracing::Span::current()
        } else {
            tracing::Span::none()
        };
        let done = tokio::spawn(tracing::Instrument::instrument(
            async move {
                let (outcome, stored) = write_pieces(upload, pieces, signals).await;
                metrics.upload_ended(outcome);
                stored
            },
            parent,
        ));
        Self {
            answer,
            written,
            commit,
            done,
            scan,
        }
    }

    /// Writes the render's answer `tail` (what follows the last piece) after the pieces.
    /// MUST only be called once the render answered `Ok` (its pieces are then the output's
    /// beginning). An `Err` (a write failed, or the output holds script) has aborted the
    /// upload.
    pub(super) async fn finish(self, tail: String) -> Result<Written, NotWritten> {
        let gone = || StoreError::Unavailable("the artifact upload task ended early".into());
        let tail = Bytes::from(tail);
        // The task only ends after the answer; a send that fails finds it gone.
        let _ = self.answer.send(tail.clone());
        let size = self
            .written
            .await
            .map_err(|_| NotWritten::Store(gone()))?
            .map_err(NotWritten::Store)?;
        // Every piece was read (and scanned) before the size was answered.
        if let Some(found) = self.scan.as_ref().and_then(|s| s.finish(&tail)) {
            // Dropping the go-ahead aborts the upload.
            return Err(NotWritten::Script(found));
        }
        Ok(Written {
            commit: self.commit,
            done: self.done,
            size,
        })
    }
}

impl Written {
    /// Makes the artifact visible under its key.
    pub(super) async fn commit(self) -> Result<Stored, StoreError> {
        let _ = self.commit.send(());
        let key = self.done.await.map_err(|e| {
            StoreError::Unavailable(format!("the artifact upload task failed: {e}"))
        })??;
        Ok(Stored {
            key,
            size: self.size,
        })
    }
}

/// Writes every piece, then, with the answer, the tail; then, with the go-ahead, commits
/// (answering the key as stored).
/// Without the answer (the render failed or was abandoned) or the go-ahead, or after a failed
/// write, it aborts. With the outcome ([`UPLOAD_OUTCOMES`](super::metrics::UPLOAD_OUTCOMES)).
async fn write_pieces(
    mut upload: Box<dyn ObjectUpload>,
    mut pieces: Box<dyn OutputPieces>,
    signals: Signals,
) -> (&'static str, Result<String, StoreError>) {
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
    let tail_written = match (failed, signals.answered.await) {
        (Some(e), _) => Err(e),
        (None, Err(_)) => {
            upload.abort().await;
            return ("aborted", Err(not_finished("the render did not finish")));
        }
        (None, Ok(tail)) if tail.is_empty() => Ok(()),
        (None, Ok(tail)) => {
            size += tail.len() as u64;
            upload.write(tail).await
        }
    };
    if let Err(e) = tail_written {
        upload.abort().await;
        let _ = signals.written.send(Err(e.clone()));
        return ("failed", Err(e));
    }
    let _ = signals.written.send(Ok(size));
    if signals.commit.await.is_err() {
        upload.abort().await;
        return (
            "aborted",
            Err(not_finished("the job ended before its commit")),
        );
    }
    let span = crate::telemetry::context::artifact_span();
    let committed = {
        use tracing::Instrument;
        upload.commit().instrument(span.clone()).await
    };
    if committed.is_err() {
        span.record("otel.status_code", "ERROR");
    }
    match committed {
        Ok(key) => ("committed", Ok(key)),
        Err(e) => ("failed", Err(e)),
    }
}

fn not_finished(why: &str) -> StoreError {
    StoreError::Unavailable(why.to_owned())
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

    /// Runs the task over the pieces `a\n`, `b\n`, `c\n`; `tail` is the render's answer
    /// (`None`: it failed); `commit` whether the job commits.
    async fn run(
        fail_at: Option<usize>,
        tail: Option<&str>,
        commit: bool,
    ) -> (&'static str, Seen, usize) {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let read = Arc::new(Mutex::new(0));
        let upload = FakeUpload {
            seen: seen.clone(),
            writes: 0,
            fail_at,
        };
        let pieces = FakePieces(vec!["a\n", "b\n", "c\n"], read.clone());
        let (answer, answered) = oneshot::channel();
        let (written, written_rx) = oneshot::channel();
        let (go, commit_rx) = oneshot::channel();
        match tail {
            Some(tail) => answer.send(Bytes::from(tail.to_owned())).unwrap(),
            None => drop(answer),
        }
        if commit {
            go.send(()).unwrap();
        } else {
            drop(go);
        }
        let signals = Signals {
            answered,
            written,
            commit: commit_rx,
        };
        let (outcome, stored) = write_pieces(Box::new(upload), Box::new(pieces), signals).await;
        let size = written_rx.await;
        if outcome == "committed" {
            assert_eq!(stored.expect("stored"), "the/key");
            assert_eq!(size, Ok(Ok(9)));
        } else {
            assert!(stored.is_err());
        }
        let seen = std::mem::take(&mut *seen.lock().unwrap());
        let read = *read.lock().unwrap();
        (outcome, seen, read)
    }

    #[tokio::test]
    async fn the_pieces_and_the_answer_are_committed_as_one_artifact() {
        let (outcome, seen, read) = run(None, Some("end"), true).await;
        assert_eq!(outcome, "committed");
        assert_eq!(seen.written, b"a\nb\nc\nend");
        assert!(seen.committed && !seen.aborted);
        assert_eq!(read, 3);
    }

    #[tokio::test]
    async fn a_render_without_an_answer_aborts_the_upload() {
        let (outcome, seen, read) = run(None, None, true).await;
        assert_eq!(outcome, "aborted");
        assert!(seen.aborted && !seen.committed);
        assert_eq!(read, 3, "every piece is read");
    }

    #[tokio::test]
    async fn a_job_that_ends_before_its_commit_aborts_the_upload() {
        let (outcome, seen, _) = run(None, Some("end"), false).await;
        assert_eq!(outcome, "aborted");
        assert_eq!(
            seen.written, b"a\nb\nc\nend",
            "written whole, never visible"
        );
        assert!(seen.aborted && !seen.committed);
    }

    #[tokio::test]
    async fn a_failed_write_aborts_after_every_piece_was_read() {
        let (outcome, seen, read) = run(Some(1), Some("end"), true).await;
        assert_eq!(outcome, "failed");
        assert!(seen.aborted && !seen.committed);
        assert_eq!(seen.written, b"a\n", "nothing is written after a failure");
        assert_eq!(read, 3, "the render is never held back by a failed upload");
        // A storage failure counts as one even when the render failed too.
        let (outcome, seen, _) = run(Some(1), None, true).await;
        assert_eq!(outcome, "failed");
        assert!(seen.aborted && !seen.committed);
        // The answer's own write failing aborts too.
        let (outcome, seen, _) = run(Some(3), Some("end"), true).await;
        assert_eq!(outcome, "failed");
        assert!(seen.aborted && !seen.committed);
    }
}
