//! [`GridFsUpload`]: an object of [`GridFsStorage`] written a piece at a time.
use crate::gridfs::GridFsStorage;
use async_trait::async_trait;
use bytes::Bytes;
use futures_util::io::AsyncWriteExt;
use mongodb::gridfs::GridFsUploadStream;
use reporter_ports::StoreError;
use reporter_ports::ports::ObjectUpload;

/// A GridFS upload stream: readers see nothing of it until its `files` document is written
/// at commit. Dropped uncommitted, the driver deletes its chunks.
pub(crate) struct GridFsUpload {
    storage: GridFsStorage,
    key: String,
    stream: GridFsUploadStream,
}

impl GridFsUpload {
    pub(crate) fn new(storage: GridFsStorage, key: &str, stream: GridFsUploadStream) -> Self {
        Self {
            storage,
            key: key.to_owned(),
            stream,
        }
    }
}

#[async_trait]
impl ObjectUpload for GridFsUpload {
    async fn write(&mut self, piece: Bytes) -> Result<(), StoreError> {
        self.stream
            .write_all(&piece)
            .await
            .map_err(|e| StoreError::Unavailable(format!("gridfs write: {e}")))
    }

    async fn commit(mut self: Box<Self>) -> Result<String, StoreError> {
        self.stream
            .close()
            .await
            .map_err(|e| StoreError::Unavailable(format!("gridfs close: {e}")))?;
        self.storage.keep_newest(&self.key).await?;
        Ok(std::mem::take(&mut self.key))
    }

    async fn abort(mut self: Box<Self>) {
        if let Err(e) = self.stream.abort().await {
            tracing::warn!(key = %self.key, error = %e, "gridfs upload could not be aborted");
        }
    }
}
