//! [`S3Upload`]: an object written a piece at a time, as a multipart upload.
use async_trait::async_trait;
use bytes::Bytes;
use object_store::{MultipartUpload, WriteMultipart};
use reporter_ports::StoreError;
use reporter_ports::ports::ObjectUpload;

/// Bytes of a part: S3's minimum for every part but the last.
const PART_BYTES: usize = 5 * 1024 * 1024;
/// Parts sent at once; a write waits below this, so an upload holds at most about
/// `(PARTS_IN_FLIGHT + 1) * PART_BYTES`.
const PARTS_IN_FLIGHT: usize = 2;

/// A multipart upload ([`WriteMultipart`]): the object appears whole when it completes.
/// Dropped uncommitted, it is aborted in the background (its parts deleted).
pub(crate) struct S3Upload {
    key: String,
    /// `None` once committed or aborted.
    writer: Option<WriteMultipart>,
}

impl S3Upload {
    pub(crate) fn new(key: &str, upload: Box<dyn MultipartUpload>) -> Self {
        Self {
            key: key.to_owned(),
            writer: Some(WriteMultipart::new_with_chunk_size(upload, PART_BYTES)),
        }
    }

    fn failed(&self, e: impl std::fmt::Display) -> StoreError {
        tracing::warn!(key = %self.key, error = %e, "multipart upload failed");
        StoreError::Unavailable(format!("upload of {:?}: {e}", self.key))
    }
}

#[async_trait]
impl ObjectUpload for S3Upload {
    /// A piece larger than a part goes a part at a time, so no more than
    /// [`PARTS_IN_FLIGHT`] parts are ever sent at once. A failed part fails the write (the
    /// upload is then aborted by `abort`, or in the background when dropped).
    async fn write(&mut self, mut piece: Bytes) -> Result<(), StoreError> {
        while !piece.is_empty() {
            let Some(writer) = self.writer.as_mut() else {
                return Err(self.failed("already ended"));
            };
            if let Err(e) = writer.wait_for_capacity(PARTS_IN_FLIGHT).await {
                return Err(self.failed(e));
            }
            let part = piece.split_to(piece.len().min(PART_BYTES));
            writer.put(part);
        }
        Ok(())
    }

    async fn commit(mut self: Box<Self>) -> Result<String, StoreError> {
        let Some(mut writer) = self.writer.take() else {
            return Err(self.failed("already ended"));
        };
        // `finish` aborts a failed completion, but returns without aborting when a part
        // failed: the parts in flight are awaited here first, and the upload aborted then.
        if let Err(e) = writer.wait_for_capacity(0).await {
            if let Err(abort) = writer.abort().await {
                tracing::warn!(key = %self.key, error = %abort, "multipart upload could not be aborted");
            }
            return Err(self.failed(e));
        }
        match writer.finish().await {
            Ok(_) => Ok(std::mem::take(&mut self.key)),
            Err(e) => Err(self.failed(e)),
        }
    }

    async fn abort(mut self: Box<Self>) {
        if let Some(writer) = self.writer.take()
            && let Err(e) = writer.abort().await
        {
            tracing::warn!(key = %self.key, error = %e, "multipart upload could not be aborted");
        }
    }
}

impl Drop for S3Upload {
    fn drop(&mut self) {
        let Some(writer) = self.writer.take() else {
            return;
        };
        let key = std::mem::take(&mut self.key);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = writer.abort().await {
                    tracing::warn!(key = %key, error = %e, "a dropped multipart upload could not be aborted");
                }
            });
        }
    }
}
