//! The sweep of [`S3ObjectStorage`](crate::S3ObjectStorage): multipart uploads a crashed
//! writer never completed nor aborted. `object_store` aborts uploads but does not list them,
//! so the listing (ListMultipartUploads) is a request of its own, signed with the store's
//! credentials (SigV4) and sent with its HTTP client settings.
use crate::S3Config;
use chrono::{DateTime, Utc};
use object_store::ClientOptions;
use object_store::aws::{AmazonS3, AwsAuthorizer};
use object_store::client::{HttpClient, HttpConnector, HttpRequestBody, ReqwestConnector};
use object_store::multipart::MultipartStore;
use object_store::path::Path;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reporter_ports::StoreError;
use serde::Deserialize;
use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The `ListMultipartUploadsResult` fields the sweep reads.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Listing {
    #[serde(default)]
    is_truncated: bool,
    #[serde(default)]
    next_key_marker: Option<String>,
    #[serde(default)]
    next_upload_id_marker: Option<String>,
    #[serde(default, rename = "Upload")]
    uploads: Vec<Upload>,
}

/// One incomplete multipart upload.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Upload {
    key: String,
    upload_id: String,
    initiated: String,
}

/// Lists and aborts the bucket's incomplete multipart uploads under the key prefix.
pub(crate) struct MultipartSweeper {
    s3: AmazonS3,
    http: HttpClient,
    bucket_url: String,
    region: String,
    /// `prefix/` under which this storage writes (`None`: the whole bucket).
    prefix: Option<String>,
    /// When this process's sweep first listed each upload still incomplete (by upload id).
    first_seen: Mutex<HashMap<String, Instant>>,
}

impl fmt::Debug for MultipartSweeper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MultipartSweeper")
            .field("bucket_url", &self.bucket_url)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

fn unavailable(what: impl fmt::Display) -> StoreError {
    StoreError::Unavailable(format!("multipart upload sweep: {what}"))
}

/// The bucket's URL as `object_store` addresses it (its builder's rule).
fn bucket_url(config: &S3Config) -> String {
    let (bucket, region) = (&config.bucket, &config.region);
    match (&config.endpoint, config.virtual_hosted_style) {
        (Some(endpoint), true) => endpoint.trim_end_matches('/').to_owned(),
        (Some(endpoint), false) => format!("{}/{bucket}", endpoint.trim_end_matches('/')),
        (None, true) => format!("https://{bucket}.s3.{region}.amazonaws.com"),
        (None, false) => format!("https://s3.{region}.amazonaws.com/{bucket}"),
    }
}

impl MultipartSweeper {
    pub(crate) fn new(
        s3: AmazonS3,
        config: &S3Config,
        options: &ClientOptions,
        prefix: Option<&str>,
    ) -> Result<Self, StoreError> {
        let http = ReqwestConnector::default()
            .connect(options)
            .map_err(|e| StoreError::Unavailable(format!("S3 configuration: {e}")))?;
        Ok(Self {
            s3,
            http,
            bucket_url: bucket_url(config),
            region: config.region.clone(),
            prefix: prefix.map(|p| format!("{p}/")),
            first_seen: Mutex::new(HashMap::new()),
        })
    }

    /// Aborts the uploads under the prefix that are older than `older_than` by both
    /// measures: initiated before `now - older_than` (the server's clock; some S3-compatible
    /// servers report a fixed time) and first listed by this sweeper at least `older_than`
    /// ago (this process's clock). So an upload is never aborted early for a clock that
    /// differs; after a restart, or when another process takes the sweep over, a leftover
    /// waits `older_than` more. Answers how many it aborted; an upload gone meanwhile
    /// (completed or aborted by its writer) is not counted.
    pub(crate) async fn sweep(&self, older_than: Duration) -> Result<u64, StoreError> {
        let cutoff =
            Utc::now() - chrono::Duration::from_std(older_than).unwrap_or(chrono::Duration::MAX);
        let mut uploads = Vec::new();
        let mut markers: Option<(String, String)> = None;
        loop {
            let page = self.list(markers.as_ref()).await?;
            uploads.extend(page.uploads);
            markers = match (
                page.is_truncated,
                page.next_key_marker,
                page.next_upload_id_marker,
            ) {
                (true, Some(key), Some(id)) => Some((key, id)),
                _ => break,
            };
        }
        let due = self.due(&uploads, older_than);
        let mut removed = 0;
        for upload in uploads {
            if due.contains(&upload.upload_id)
                && initiated_before(&upload, cutoff)
                && self.abort(&upload).await?
            {
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Records when each of `uploads` was first listed (forgetting those no longer listed)
    /// and answers the ids first listed at least `older_than` ago.
    fn due(&self, uploads: &[Upload], older_than: Duration) -> Vec<String> {
        let now = Instant::now();
        let mut first_seen = self
            .first_seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let listed: HashMap<String, Instant> = uploads
            .iter()
            .map(|u| {
                let seen = first_seen.get(&u.upload_id).copied().unwrap_or(now);
                (u.upload_id.clone(), seen)
            })
            .collect();
        *first_seen = listed;
        first_seen
            .iter()
            .filter(|(_, seen)| now.duration_since(**seen) >= older_than)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// One page of ListMultipartUploads.
    async fn list(&self, markers: Option<&(String, String)>) -> Result<Listing, StoreError> {
        let url = url_with_query(&self.bucket_url, self.prefix.as_deref(), markers)?;
        let mut request = http::Request::builder()
            .method(http::Method::GET)
            .uri(url.as_str())
            .body(HttpRequestBody::empty())
            .map_err(unavailable)?;
        let credential = self
            .s3
            .credentials()
            .get_credential()
            .await
            .map_err(unavailable)?;
        AwsAuthorizer::new(&credential, "s3", &self.region).authorize(&mut request, None);
        let response = self.http.execute(request).await.map_err(unavailable)?;
        let status = response.status();
        let body = response.into_body().bytes().await.map_err(unavailable)?;
        if !status.is_success() {
            return Err(unavailable(format!(
                "list: {status}: {}",
                String::from_utf8_lossy(&body)
            )));
        }
        let text = std::str::from_utf8(&body).map_err(unavailable)?;
        quick_xml::de::from_str(text).map_err(|e| unavailable(format!("list: {e}")))
    }

    /// Aborts `upload`; `false` when it was gone already.
    async fn abort(&self, upload: &Upload) -> Result<bool, StoreError> {
        let Ok(path) = Path::parse(&upload.key) else {
            tracing::warn!(key = %upload.key, "an incomplete multipart upload has a key this storage cannot address; left alone");
            return Ok(false);
        };
        match self.s3.abort_multipart(&path, &upload.upload_id).await {
            Ok(()) => {
                tracing::info!(key = %upload.key, initiated = %upload.initiated, "abandoned multipart upload aborted");
                Ok(true)
            }
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(unavailable(e)),
        }
    }
}

/// True when `upload` started before `cutoff` (an unreadable time: never).
fn initiated_before(upload: &Upload, cutoff: DateTime<Utc>) -> bool {
    match DateTime::parse_from_rfc3339(&upload.initiated) {
        Ok(at) => at < cutoff,
        Err(e) => {
            tracing::warn!(key = %upload.key, initiated = %upload.initiated, error = %e, "unreadable upload time; left alone");
            false
        }
    }
}

/// Characters SigV4 leaves unencoded in a query: letters, digits and `-._~`.
const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `bucket_url?uploads=&prefix=..&key-marker=..&upload-id-marker=..`, each value
/// percent-encoded as SigV4 canonicalizes it (so the signed query is the one sent).
fn url_with_query(
    bucket_url: &str,
    prefix: Option<&str>,
    markers: Option<&(String, String)>,
) -> Result<url::Url, StoreError> {
    let mut url = url::Url::parse(bucket_url).map_err(unavailable)?;
    let mut query = String::from("uploads=");
    let mut pair = |name: &str, value: &str| {
        query.push_str(&format!(
            "&{name}={}",
            utf8_percent_encode(value, QUERY_VALUE)
        ));
    };
    if let Some(prefix) = prefix {
        pair("prefix", prefix);
    }
    if let Some((key, id)) = markers {
        pair("key-marker", key);
        pair("upload-id-marker", id);
    }
    url.set_query(Some(&query));
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bucket_url_follows_object_stores_rule() {
        let mut c = S3Config::new("b");
        assert_eq!(bucket_url(&c), "https://s3.us-east-1.amazonaws.com/b");
        c.virtual_hosted_style = true;
        assert_eq!(bucket_url(&c), "https://b.s3.us-east-1.amazonaws.com");
        c.endpoint = Some("http://h:9000/".into());
        assert_eq!(bucket_url(&c), "http://h:9000");
        c.virtual_hosted_style = false;
        assert_eq!(bucket_url(&c), "http://h:9000/b");
    }

    #[test]
    fn a_listing_page_is_read() {
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Bucket>b</Bucket><KeyMarker></KeyMarker><UploadIdMarker></UploadIdMarker>
  <NextKeyMarker>r/2.csv</NextKeyMarker><NextUploadIdMarker>id2</NextUploadIdMarker>
  <MaxUploads>1000</MaxUploads><IsTruncated>true</IsTruncated>
  <Upload><Key>r/1 &amp; 2.csv</Key><UploadId>id1</UploadId><Initiated>2026-12-05T01:00:00.000Z</Initiated><StorageClass>STANDARD</StorageClass></Upload>
  <Upload><Key>r/2.csv</Key><UploadId>id2</UploadId><Initiated>2026-12-05T02:00:00Z</Initiated></Upload>
</ListMultipartUploadsResult>"#;
        let page: Listing = quick_xml::de::from_str(xml).expect("parsed");
        assert!(page.is_truncated);
        assert_eq!(page.next_key_marker.as_deref(), Some("r/2.csv"));
        assert_eq!(page.uploads.len(), 2);
        assert_eq!(page.uploads[0].key, "r/1 & 2.csv");
        let cutoff = DateTime::parse_from_rfc3339("2026-12-05T01:30:00Z")
            .expect("time")
            .with_timezone(&Utc);
        assert!(initiated_before(&page.uploads[0], cutoff));
        assert!(!initiated_before(&page.uploads[1], cutoff));
        let empty: Listing = quick_xml::de::from_str(
            "<ListMultipartUploadsResult><IsTruncated>false</IsTruncated></ListMultipartUploadsResult>",
        )
        .expect("parsed");
        assert!(empty.uploads.is_empty() && !empty.is_truncated);
    }

    #[test]
    fn the_query_names_the_prefix_and_markers() {
        let markers = ("a b".to_owned(), "id".to_owned());
        let url = url_with_query("http://h/b", Some("t/"), Some(&markers)).expect("url");
        assert_eq!(
            url.as_str(),
            "http://h/b?uploads=&prefix=t%2F&key-marker=a%20b&upload-id-marker=id"
        );
    }
}
