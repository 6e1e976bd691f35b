//! S3-compatible object storage.
//!
//! [`S3ObjectStorage`] implements the [`ObjectStorage`] port with the `object_store` crate:
//! AWS S3 or any S3-compatible server (SeaweedFS, MinIO, moto, ...) through [`S3Config`], or
//! any other `object_store` backend (GCS, Azure, in-memory, ...) through
//! [`S3ObjectStorage::from_store`] — this crate enables only the `aws` feature; enable
//! `gcp`/`azure` on `object_store` in the caller to build those stores.
//!
//! # Keys
//! A key is a `/`-separated relative path. Rejected with
//! `StoreError::Unavailable("invalid object key ...")` on `put`, `get` and `delete`, before
//! any request: empty keys, absolute keys (leading `/`), empty segments (`a//b`, trailing
//! `/`), `.` and `..` segments, backslashes, NUL and other ASCII control characters. The
//! optional key prefix (e.g. `reporter`) is prepended as `prefix/key` and is invisible to
//! callers: `put` answers exactly the key it was given.
//!
//! # Objects
//! - `begin_put` starts a multipart upload ([`upload`]): the pieces go up in parts of 5 MiB
//!   (S3's minimum), at most two at a time, and the object appears whole at commit; an
//!   abort (or a dropped upload) aborts the multipart upload, deleting its parts.
//! - `put` writes the bytes in one request (overwriting) with the content type stored as the
//!   object's `Content-Type`, which `get` answers back. For an object written by another tool
//!   without one, `get` answers whatever type the server reports (S3 servers assign a
//!   default), or [`DEFAULT_CONTENT_TYPE`] when the backend reports none.
//! - `get` of an absent key (including a key that is only a "directory" prefix) is `Ok(None)`.
//! - `delete` of an absent key succeeds.
//! - `sweep_abandoned` aborts the multipart uploads under the prefix that a crashed writer
//!   left, once initiated before the cutoff and listed by an earlier sweep at least as long
//!   ago (ListMultipartUploads, signed here: `object_store` does not list them).
//! - `check` lists at most one page under the prefix: it fails when the endpoint cannot be
//!   reached, the credentials are refused or the bucket does not exist.
//! - Any other failure is `StoreError::Unavailable` (the text is for logs). Requests are
//!   retried by `object_store` (up to `max_retries`, bounded by `request_timeout` each).
use async_trait::async_trait;
use bytes::Bytes;
use futures_util::StreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::{
    Attribute, Attributes, ClientOptions, ObjectStore, PutMultipartOptions, PutOptions, PutPayload,
    RetryConfig,
};
use reporter_ports::ports::{ObjectStorage, ObjectUpload, StoredObject, SweepReport};
use reporter_ports::{ObjectKey, StoreError};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

mod sweep;
mod upload;

/// Content type answered for an object stored without one.
pub const DEFAULT_CONTENT_TYPE: &str = "application/octet-stream";

/// How to reach an S3 bucket (the `OBJECT_STORAGE_*` settings). `Debug` never shows the
/// secret key.
#[derive(Clone, PartialEq, Eq)]
pub struct S3Config {
    /// Bucket name (`OBJECT_STORAGE_BUCKET`). It must exist.
    pub bucket: String,
    /// Endpoint URL such as `http://seaweedfs-s3:8333` (`OBJECT_STORAGE_ENDPOINT`); `None`
    /// means AWS itself. Default `None`.
    pub endpoint: Option<String>,
    /// Region (`OBJECT_STORAGE_REGION`). Default `us-east-1`.
    pub region: String,
    /// Access key id (`OBJECT_STORAGE_ACCESS_KEY_ID`). With both keys `None`, `object_store`
    /// falls back to the usual AWS credential sources (web identity, instance metadata).
    pub access_key_id: Option<reporter_ports::Secret>,
    /// Secret access key (`OBJECT_STORAGE_SECRET_KEY`).
    pub secret_access_key: Option<reporter_ports::Secret>,
    /// Allow a plain `http://` endpoint (`OBJECT_STORAGE_DISABLE_SSL`). Default false.
    pub allow_http: bool,
    /// Address the bucket as `https://bucket.host/key` instead of the path style
    /// `https://host/bucket/key` (`OBJECT_STORAGE_USE_PATH_STYLE` = the opposite). Default
    /// false (path style, what S3-compatible servers expect).
    pub virtual_hosted_style: bool,
    /// Prefix under which every key is stored (`prefix/key`), surrounding `/` ignored;
    /// validated like a key. Default `None`.
    pub key_prefix: Option<String>,
    /// Limit for one HTTP request. Default 30 s.
    pub request_timeout: Duration,
    /// Limit for opening a connection. Default 5 s.
    pub connect_timeout: Duration,
    /// Retries of a failed request (with backoff). Default 3.
    pub max_retries: usize,
}

impl fmt::Debug for S3Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Config")
            .field("bucket", &self.bucket)
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("access_key_id", &self.access_key_id)
            .field(
                "secret_access_key",
                &self.secret_access_key.as_ref().map(|_| "<redacted>"),
            )
            .field("allow_http", &self.allow_http)
            .field("virtual_hosted_style", &self.virtual_hosted_style)
            .field("key_prefix", &self.key_prefix)
            .field("request_timeout", &self.request_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_retries", &self.max_retries)
            .finish()
    }
}

impl S3Config {
    /// Defaults (documented on each field) for `bucket`.
    pub fn new(bucket: impl Into<String>) -> Self {
        Self {
            bucket: bucket.into(),
            endpoint: None,
            region: "us-east-1".to_owned(),
            access_key_id: None,
            secret_access_key: None,
            allow_http: false,
            virtual_hosted_style: false,
            key_prefix: None,
            request_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            max_retries: 3,
        }
    }
}

/// [`ObjectStorage`] over an S3 bucket (or any `object_store` backend). See the crate docs.
#[derive(Clone)]
pub struct S3ObjectStorage {
    store: Arc<dyn ObjectStore>,
    prefix: Option<String>,
    /// Lists and aborts abandoned multipart uploads (built by [`S3ObjectStorage::new`] only).
    sweeper: Option<Arc<sweep::MultipartSweeper>>,
}

impl fmt::Debug for S3ObjectStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3ObjectStorage")
            .field("store", &self.store.to_string())
            .field("prefix", &self.prefix)
            .field("sweeper", &self.sweeper)
            .finish()
    }
}

fn unavailable(what: impl fmt::Display) -> StoreError {
    StoreError::Unavailable(what.to_string())
}

/// Checks a key against the rule every adapter shares ([`ObjectKey`]).
fn validate_key(key: &str) -> Result<(), StoreError> {
    ObjectKey::checked(key).map(|_| ())
}

impl S3ObjectStorage {
    /// Builds the S3 client for `config` (no request is made; see [`ObjectStorage::check`]).
    ///
    /// Fails with [`StoreError::Unavailable`] on an invalid key prefix or a configuration
    /// `object_store` refuses (e.g. an `http://` endpoint without `allow_http`, a malformed
    /// endpoint URL, an empty bucket name).
    pub fn new(config: S3Config) -> Result<Self, StoreError> {
        let client_options = ClientOptions::new()
            .with_allow_http(config.allow_http)
            .with_timeout(config.request_timeout)
            .with_connect_timeout(config.connect_timeout);
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(&config.bucket)
            .with_region(&config.region)
            .with_allow_http(config.allow_http)
            .with_virtual_hosted_style_request(config.virtual_hosted_style)
            .with_client_options(client_options.clone())
            .with_retry(RetryConfig {
                max_retries: config.max_retries,
                retry_timeout: config.request_timeout,
                ..RetryConfig::default()
            });
        if let Some(endpoint) = &config.endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        if let Some(key) = &config.access_key_id {
            builder = builder.with_access_key_id(key.expose());
        }
        if let Some(secret) = &config.secret_access_key {
            builder = builder.with_secret_access_key(secret.expose());
        }
        let store = builder
            .build()
            .map_err(|e| unavailable(format!("S3 configuration: {e}")))?;
        let mut storage = Self::from_store(Arc::new(store.clone()), config.key_prefix.as_deref())?;
        let sweeper = sweep::MultipartSweeper::new(
            store,
            &config,
            &client_options,
            storage.prefix.as_deref(),
        )?;
        storage.sweeper = Some(Arc::new(sweeper));
        Ok(storage)
    }

    /// Wraps any `object_store` backend (GCS, Azure, local, in-memory, ...) with this
    /// adapter's key rules, content types and error mapping. Its
    /// [`sweep_abandoned`](ObjectStorage::sweep_abandoned) answers `Ok(None)`: `object_store`
    /// lists no incomplete uploads, so the backend's own expiry (an S3 lifecycle rule on
    /// incomplete multipart uploads; GCS and Azure expire uncommitted parts) removes them.
    ///
    /// Fails with [`StoreError::Unavailable`] when `key_prefix` (surrounding `/` ignored) is
    /// not a valid key.
    pub fn from_store(
        store: Arc<dyn ObjectStore>,
        key_prefix: Option<&str>,
    ) -> Result<Self, StoreError> {
        let prefix = match key_prefix.map(|p| p.trim_matches('/')) {
            None | Some("") => None,
            Some(prefix) => {
                validate_key(prefix)
                    .map_err(|e| unavailable(format!("invalid key prefix: {e}")))?;
                Some(prefix.to_owned())
            }
        };
        Ok(Self {
            store,
            prefix,
            sweeper: None,
        })
    }

    /// The store path of a valid key.
    fn path(&self, key: &str) -> Result<Path, StoreError> {
        validate_key(key)?;
        let full = match &self.prefix {
            Some(prefix) => format!("{prefix}/{key}"),
            None => key.to_owned(),
        };
        Path::parse(&full).map_err(|e| unavailable(format!("invalid object key {key:?}: {e}")))
    }
}

/// The object's `Content-Type`.
fn content_type_attribute(content_type: &str) -> Attributes {
    let mut attributes = Attributes::new();
    attributes.insert(Attribute::ContentType, content_type.to_owned().into());
    attributes
}

#[async_trait]
impl ObjectStorage for S3ObjectStorage {
    async fn put(&self, key: &str, bytes: Bytes, content_type: &str) -> Result<String, StoreError> {
        let path = self.path(key)?;
        let options = PutOptions {
            attributes: content_type_attribute(content_type),
            ..PutOptions::default()
        };
        self.store
            .put_opts(&path, PutPayload::from(bytes), options)
            .await
            .map_err(|e| {
                tracing::warn!(key, error = %e, "object put failed");
                unavailable(e)
            })?;
        Ok(key.to_owned())
    }

    async fn begin_put(
        &self,
        key: &str,
        content_type: &str,
    ) -> Result<Option<Box<dyn ObjectUpload>>, StoreError> {
        let path = self.path(key)?;
        let options = PutMultipartOptions {
            attributes: content_type_attribute(content_type),
            ..PutMultipartOptions::default()
        };
        let upload = self
            .store
            .put_multipart_opts(&path, options)
            .await
            .map_err(|e| {
                tracing::warn!(key, error = %e, "multipart upload could not start");
                unavailable(e)
            })?;
        Ok(Some(Box::new(upload::S3Upload::new(key, upload))))
    }

    async fn get(&self, key: &str) -> Result<Option<StoredObject>, StoreError> {
        let path = self.path(key)?;
        let result = match self.store.get(&path).await {
            Ok(result) => result,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => {
                tracing::warn!(key, error = %e, "object get failed");
                return Err(unavailable(e));
            }
        };
        let content_type = result
            .attributes
            .get(&Attribute::ContentType)
            .map_or_else(|| DEFAULT_CONTENT_TYPE.to_owned(), |v| v.to_string());
        let bytes = match result.bytes().await {
            Ok(bytes) => bytes,
            // Deleted between the response headers and the body.
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(unavailable(e)),
        };
        Ok(Some(StoredObject {
            bytes,
            content_type,
        }))
    }

    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        let path = self.path(key)?;
        match self.store.delete(&path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => {
                tracing::warn!(key, error = %e, "object delete failed");
                Err(unavailable(e))
            }
        }
    }

    /// Aborts the bucket's incomplete multipart uploads under the key prefix (the whole
    /// bucket without one) initiated more than `older_than` ago and first listed by this
    /// storage's sweep at least `older_than` ago (the server's clock and this process's must
    /// both agree): an upload's age is the time since it started, so `older_than` MUST
    /// exceed the longest upload. `Ok(None)` for a
    /// store wrapped by [`S3ObjectStorage::from_store`].
    async fn sweep_abandoned(
        &self,
        older_than: Duration,
    ) -> Result<Option<SweepReport>, StoreError> {
        let Some(sweeper) = &self.sweeper else {
            return Ok(None);
        };
        let removed = sweeper.sweep(older_than).await?;
        Ok(Some(SweepReport { removed }))
    }

    async fn check(&self) -> Result<(), StoreError> {
        let prefix = self.prefix.as_deref().map(Path::from);
        match self.store.list(prefix.as_ref()).next().await {
            None | Some(Ok(_)) => Ok(()),
            Some(Err(e)) => Err(unavailable(format!("object storage check: {e}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_shared_rules() {
        for key in reporter_contract::storage::INVALID_KEYS {
            assert!(validate_key(key).is_err(), "{key:?}");
        }
        for key in [
            "a",
            "a/b.c",
            "reports/t-1/r 1.pdf",
            "ünï/cödé",
            ".hidden",
            "a.meta",
        ] {
            assert!(validate_key(key).is_ok(), "{key:?}");
        }
        assert!(validate_key("tab\there").is_err());
    }

    #[test]
    fn the_prefix_is_prepended_and_validated() {
        let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        let s =
            S3ObjectStorage::from_store(Arc::clone(&store), Some("/tenant/x/")).expect("prefix");
        assert_eq!(s.path("a/b").expect("path").as_ref(), "tenant/x/a/b");
        let s = S3ObjectStorage::from_store(Arc::clone(&store), Some("")).expect("no prefix");
        assert_eq!(s.path("a").expect("path").as_ref(), "a");
        for bad in ["a//b", "..", "x/./y"] {
            assert!(
                S3ObjectStorage::from_store(Arc::clone(&store), Some(bad)).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn debug_redacts_the_secret() {
        let mut c = S3Config::new("b");
        c.secret_access_key = Some("hunter2".into());
        assert!(!format!("{c:?}").contains("hunter2"));
    }

    #[test]
    fn building_is_lazy_and_checks_the_prefix() {
        let mut c = S3Config::new("bucket");
        c.endpoint = Some("http://127.0.0.1:1".into());
        c.access_key_id = Some("k".into());
        c.secret_access_key = Some("s".into());
        assert!(S3ObjectStorage::new(c.clone()).is_ok(), "built lazily");
        c.key_prefix = Some("a/../b".into());
        assert!(matches!(
            S3ObjectStorage::new(c),
            Err(StoreError::Unavailable(_))
        ));
    }
}
