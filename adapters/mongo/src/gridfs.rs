//! [`GridFsStorage`]: object storage in a GridFS bucket.
use crate::error::unavailable;
use crate::gridfs_upload::GridFsUpload;
use async_trait::async_trait;
use bytes::Bytes;
use futures_util::TryStreamExt;
use futures_util::io::AsyncReadExt;
use mongodb::bson::{Bson, doc, oid::ObjectId};
use mongodb::gridfs::{FilesCollectionDocument, GridFsBucket};
use mongodb::options::GridFsBucketOptions;
use mongodb::{Client, Database};
use reporter_ports::ports::{ObjectStorage, ObjectUpload, StoredObject, SweepReport};
use reporter_ports::{ObjectKey, StoreError};

/// Content type answered for a file written by another tool without one.
pub const GRIDFS_DEFAULT_CONTENT_TYPE: &str = "application/octet-stream";
/// Default bucket name (collections `reporter_objects.files` / `.chunks`).
pub const GRIDFS_DEFAULT_BUCKET: &str = "reporter_objects";

fn check_key(key: &str) -> Result<(), StoreError> {
    ObjectKey::checked(key).map(|_| ())
}

/// Position of a stored version of a key: newer versions compare greater.
fn version_of(f: &FilesCollectionDocument) -> (i64, Option<ObjectId>) {
    let oid = match &f.id {
        Bson::ObjectId(o) => Some(*o),
        _ => None,
    };
    (f.upload_date.timestamp_millis(), oid)
}

/// MongoDB implementation of [`ObjectStorage`] over GridFS.
///
/// An object is a GridFS file whose `filename` is the key, with
/// `metadata: {content_type}`. `put` uploads a new file and then deletes every version of
/// the key but the newest it can see (ordered by `uploadDate`, then file id), so a reader never
/// sees the key absent during an overwrite, and once concurrent puts are done exactly one
/// version — the newest — is left (last writer wins); `get` reads the newest version. Keys are checked like every adapter's ([`ObjectKey`](reporter_ports::ObjectKey)): an invalid key
/// is `Unavailable`, and `put` answers the key unchanged.
#[derive(Debug, Clone)]
pub struct GridFsStorage {
    db: Database,
    bucket: GridFsBucket,
    bucket_name: String,
}

impl GridFsStorage {
    /// Connects to `uri` and uses bucket [`GRIDFS_DEFAULT_BUCKET`] of `db_name`.
    pub async fn connect(uri: &str, db_name: &str) -> Result<Self, StoreError> {
        let client = Client::with_uri_str(uri)
            .await
            .map_err(|e| unavailable("connect", &e))?;
        Ok(Self::new(client.database(db_name)))
    }

    /// Bucket [`GRIDFS_DEFAULT_BUCKET`] of `db`.
    pub fn new(db: Database) -> Self {
        Self::with_bucket(db, GRIDFS_DEFAULT_BUCKET)
    }

    /// Bucket `bucket_name` of `db`. The driver creates the GridFS indexes on the first upload.
    pub fn with_bucket(db: Database, bucket_name: &str) -> Self {
        let bucket = db.gridfs_bucket(
            GridFsBucketOptions::builder()
                .bucket_name(bucket_name.to_owned())
                .build(),
        );
        Self {
            db,
            bucket,
            bucket_name: bucket_name.to_owned(),
        }
    }

    /// Every stored version of `key`, newest first.
    async fn versions(&self, key: &str) -> Result<Vec<FilesCollectionDocument>, StoreError> {
        let mut files: Vec<FilesCollectionDocument> = self
            .bucket
            .find(doc! { "filename": key })
            .await
            .map_err(|e| unavailable("gridfs find", &e))?
            .try_collect()
            .await
            .map_err(|e| unavailable("gridfs cursor", &e))?;
        files.sort_by_key(|f| std::cmp::Reverse(version_of(f)));
        Ok(files)
    }

    /// A new version of `key` written through a GridFS upload stream.
    async fn upload(&self, key: &str, content_type: &str) -> Result<GridFsUpload, StoreError> {
        check_key(key)?;
        let stream = self
            .bucket
            .open_upload_stream(key)
            .metadata(doc! { "content_type": content_type })
            .await
            .map_err(|e| unavailable("gridfs open upload", &e))?;
        Ok(GridFsUpload::new(self.clone(), key, stream))
    }

    /// Keeps only the newest version of `key` this call can see (the caller's, or a
    /// concurrent newer one): whichever writer lists last sees every version and leaves
    /// exactly one.
    pub(crate) async fn keep_newest(&self, key: &str) -> Result<(), StoreError> {
        for old in self.versions(key).await?.into_iter().skip(1) {
            self.delete_file(old.id).await?;
        }
        Ok(())
    }

    async fn delete_file(&self, id: Bson) -> Result<(), StoreError> {
        match self.bucket.delete(id).await {
            Ok(()) => Ok(()),
            // Already deleted by a concurrent put or delete.
            Err(e) if matches!(*e.kind, mongodb::error::ErrorKind::GridFs(_)) => Ok(()),
            Err(e) => Err(unavailable("gridfs delete", &e)),
        }
    }
}

#[async_trait]
impl ObjectStorage for GridFsStorage {
    /// One [`GridFsUpload`] of the whole object.
    async fn put(&self, key: &str, bytes: Bytes, content_type: &str) -> Result<String, StoreError> {
        let mut upload = Box::new(self.upload(key, content_type).await?);
        if let Err(e) = upload.write(bytes).await {
            upload.abort().await;
            return Err(e);
        }
        upload.commit().await
    }

    /// A GridFS upload stream: its chunks are written as the pieces come, and the file (its
    /// `files` document) appears at commit, after which older versions are deleted as `put`
    /// deletes them. An aborted or dropped upload deletes its chunks (the driver's).
    async fn begin_put(
        &self,
        key: &str,
        content_type: &str,
    ) -> Result<Option<Box<dyn ObjectUpload>>, StoreError> {
        Ok(Some(Box::new(self.upload(key, content_type).await?)))
    }

    async fn get(&self, key: &str) -> Result<Option<StoredObject>, StoreError> {
        check_key(key)?;
        // A version deleted by a concurrent put between listing and reading: list again.
        let mut last_error = String::new();
        for _ in 0..3 {
            let Some(file) = self.versions(key).await?.into_iter().next() else {
                return Ok(None);
            };
            let content_type = file
                .metadata
                .as_ref()
                .and_then(|m| m.get_str("content_type").ok())
                .unwrap_or(GRIDFS_DEFAULT_CONTENT_TYPE)
                .to_owned();
            let mut stream = match self.bucket.open_download_stream(file.id.clone()).await {
                Ok(s) => s,
                Err(e) if matches!(*e.kind, mongodb::error::ErrorKind::GridFs(_)) => {
                    last_error = e.to_string();
                    continue;
                }
                Err(e) => return Err(unavailable("gridfs open download", &e)),
            };
            let mut buf = Vec::with_capacity(usize::try_from(file.length).unwrap_or(0));
            match stream.read_to_end(&mut buf).await {
                Ok(_) => {
                    return Ok(Some(StoredObject {
                        bytes: Bytes::from(buf),
                        content_type,
                    }));
                }
                // Chunks deleted under the reader by a concurrent overwrite: read again.
                Err(e) => last_error = e.to_string(),
            }
        }
        Err(StoreError::Unavailable(format!(
            "gridfs get {key:?} failed three times: {last_error}"
        )))
    }

    /// Deletes every stored version of the key; an absent key succeeds.
    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        check_key(key)?;
        for f in self.versions(key).await? {
            self.delete_file(f.id).await?;
        }
        Ok(())
    }

    /// Deletes the chunks of uploads started more than `older_than` ago (by their file id's
    /// time) that never wrote their `files` document: a writer that died before commit. An
    /// upload's age is the time since it started, so `older_than` MUST exceed the longest
    /// upload.
    async fn sweep_abandoned(
        &self,
        older_than: std::time::Duration,
    ) -> Result<Option<SweepReport>, StoreError> {
        let removed =
            crate::gridfs_sweep::sweep_orphan_chunks(&self.db, &self.bucket_name, older_than)
                .await?;
        Ok(Some(SweepReport { removed }))
    }

    async fn check(&self) -> Result<(), StoreError> {
        self.db
            .run_command(doc! { "ping": 1 })
            .await
            .map(|_| ())
            .map_err(|e| unavailable("ping", &e))
    }
}
