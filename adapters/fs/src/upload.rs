//! [`LocalUpload`]: an object of [`LocalObjectStorage`](crate::LocalObjectStorage) written a
//! piece at a time.
use crate::storage::{TempObject, blocking, finish_object, write_failed};
use async_trait::async_trait;
use bytes::Bytes;
use reporter_ports::StoreError;
use reporter_ports::ports::ObjectUpload;

/// The pieces go to a temporary file next to the object ([`TempObject`]); [`commit`]
/// renames it over the object and writes the sidecar. Until then the key reads as before.
///
/// [`commit`]: ObjectUpload::commit
pub(crate) struct LocalUpload {
    key: String,
    /// `None` once a write failed (the file is gone with it).
    temp: Option<TempObject>,
    meta: Vec<u8>,
}

impl LocalUpload {
    pub(crate) fn new(key: &str, temp: TempObject, meta: Vec<u8>) -> Self {
        Self {
            key: key.to_owned(),
            temp: Some(temp),
            meta,
        }
    }

    fn failed_before(&self) -> StoreError {
        StoreError::Unavailable(format!("the upload of {:?} failed earlier", self.key))
    }
}

#[async_trait]
impl ObjectUpload for LocalUpload {
    async fn write(&mut self, piece: Bytes) -> Result<(), StoreError> {
        let mut temp = self.temp.take().ok_or_else(|| self.failed_before())?;
        let temp = blocking(move || {
            let written = temp.append(&piece);
            written.map_err(|e| write_failed(temp.target(), e))?;
            Ok(temp)
        })
        .await?;
        self.temp = Some(temp);
        Ok(())
    }

    async fn commit(mut self: Box<Self>) -> Result<String, StoreError> {
        let temp = self.temp.take().ok_or_else(|| self.failed_before())?;
        let Self { key, meta, .. } = *self;
        blocking(move || {
            let target = temp.target().to_owned();
            finish_object(temp, &meta).map_err(|e| write_failed(&target, e))
        })
        .await?;
        tracing::debug!(key = %key, "object stored in pieces");
        Ok(key)
    }

    async fn abort(self: Box<Self>) {
        if let Some(temp) = self.temp {
            // Dropping the temporary file removes it.
            let _ = blocking(move || {
                drop(temp);
                Ok(())
            })
            .await;
        }
    }
}
