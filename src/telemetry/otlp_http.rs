//! The OTLP HTTP/protobuf exporters' client: the reqwest (0.12) the object store already
//! builds, driven on the service's tokio runtime (the SDK's batch and periodic exporters call
//! it from their own threads, where no runtime runs).
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};

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
