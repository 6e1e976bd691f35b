//! The OTLP HTTP/protobuf exporters' client: the reqwest (0.12) the object store already
//! builds, driven on the service's tokio runtime (the span export thread and the SDK's
//! periodic metric exporter call it from their own threads, where no runtime runs).
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use std::time::{Duration, Instant};

/// A reqwest client bound to the runtime it was made on.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

impl Client {
    /// MUST be called inside the tokio runtime.
    pub fn new() -> Result<Self, HttpError> {
        let runtime = tokio::runtime::Handle::try_current()?;
        let http = reqwest::Client::builder()
            .timeout(super::otel::EXPORT_TIMEOUT)
            .build()?;
        Ok(Self { http, runtime })
    }
}

/// Why an export did not reach the collector.
#[derive(Debug, thiserror::Error)]
pub enum PostError {
    /// The collector answered with an error status.
    #[error("the OTLP collector answered {0}")]
    Status(StatusCode),
    /// The request did not complete (connection, timeout).
    #[error("OTLP export: {0}")]
    Transport(#[from] reqwest::Error),
    /// The export task ended without an answer (runtime shutting down).
    #[error("OTLP export task: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// Retries after the first attempt, as the stock exporter's recommended policy.
const RETRIES: u32 = 3;
/// The first retry's delay, doubled at each retry up to [`MAX_RETRY_DELAY`].
const FIRST_RETRY_DELAY: Duration = Duration::from_millis(100);
const MAX_RETRY_DELAY: Duration = Duration::from_millis(1600);

/// A status worth another attempt: the collector is throttling or briefly unavailable.
fn retryable(status: StatusCode) -> bool {
    matches!(status.as_u16(), 429 | 502 | 503 | 504)
}

impl Client {
    /// POSTs an OTLP/HTTP protobuf `body` to `url` with `headers`. A connection error or a
    /// throttling / unavailable answer (429, 502, 503, 504) is retried up to `RETRIES` (3)
    /// times, 100 ms then doubling up to 1.6 s apart, while the export's time
    /// ([`EXPORT_TIMEOUT`](super::otel::EXPORT_TIMEOUT)) lasts; any other answer but 2xx is
    /// an error at once.
    pub async fn post_protobuf(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<(), PostError> {
        let http = self.http.clone();
        let mut headers = headers.clone();
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/x-protobuf"),
        );
        let url = url.to_owned();
        let call = async move {
            let deadline = Instant::now() + super::otel::EXPORT_TIMEOUT;
            let mut delay = FIRST_RETRY_DELAY;
            let mut attempt = 0;
            loop {
                let answer = http
                    .post(&url)
                    .headers(headers.clone())
                    .body(body.clone())
                    .send()
                    .await;
                let failure = match answer {
                    Ok(r) if r.status().is_success() => {
                        // Read to the end: the connection is then reused.
                        let _ = r.bytes().await;
                        return Ok(());
                    }
                    Ok(r) if !retryable(r.status()) => return Err(PostError::Status(r.status())),
                    Ok(r) => PostError::Status(r.status()),
                    Err(e) => PostError::Transport(e),
                };
                attempt += 1;
                if attempt > RETRIES || Instant::now() + delay >= deadline {
                    return Err(failure);
                }
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(MAX_RETRY_DELAY);
            }
        };
        self.runtime.spawn(call).await?
    }

    /// [`post_protobuf`](Self::post_protobuf) from a thread outside the runtime (the span
    /// export thread), blocked until the answer. MUST NOT be called on a runtime thread.
    pub fn post_protobuf_blocking(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<(), PostError> {
        self.runtime
            .block_on(self.post_protobuf(url, headers, body))
    }
}

#[async_trait::async_trait]
impl HttpClient for Client {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let http = self.http.clone();
        let call = async move {
            let request = reqwest::Request::try_from(request)?;
            let response = http.execute(request).await?;
            let status = response.status();
            let body = response.bytes().await?;
            let mut out = Response::new(body);
            *out.status_mut() = status;
            Ok::<_, HttpError>(out)
        };
        self.runtime.spawn(call).await?
    }
}
