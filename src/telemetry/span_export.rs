//! The OTLP/HTTP (protobuf) span exporter: each batch the batch span processor hands over is
//! written as one `ExportTraceServiceRequest` by [`otlp_body`](super::otlp_body) (no copy of
//! the spans into the generated message types) and POSTed by the
//! [`otlp_http`](super::otlp_http) client, with the headers of the standard
//! `OTEL_EXPORTER_OTLP_TRACES_HEADERS` (else `OTEL_EXPORTER_OTLP_HEADERS`) and the stock
//! exporter's retries. The gRPC protocol keeps the stock exporter.
use super::otlp_body::{self, EncodedResource};
use super::otlp_http::Client;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

/// Exports spans to `<endpoint>/v1/traces`.
#[derive(Debug)]
pub struct HttpSpanExporter {
    client: Client,
    url: String,
    headers: HeaderMap,
    resource: EncodedResource,
}

impl HttpSpanExporter {
    /// An exporter to `url` (the collector's `/v1/traces`) through `client`, with the headers
    /// the environment names.
    pub fn new(client: Client, url: String) -> Self {
        let headers = std::env::var("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
            .or_else(|_| std::env::var("OTEL_EXPORTER_OTLP_HEADERS"))
            .map(|v| headers(&v))
            .unwrap_or_default();
        Self {
            client,
            url,
            headers,
            resource: EncodedResource::default(),
        }
    }
}

/// The standard headers variable's value, `key=value` pairs separated by commas with
/// percent-encoded values; a pair that is no valid header is left out (as the stock exporter
/// does).
fn headers(value: &str) -> HeaderMap {
    value
        .split(',')
        .filter_map(|pair| {
            let (k, v) = pair.trim().split_once('=')?;
            let v = percent_encoding::percent_decode_str(v.trim())
                .decode_utf8()
                .ok()?;
            Some((
                HeaderName::from_bytes(k.trim().as_bytes()).ok()?,
                HeaderValue::from_str(&v).ok()?,
            ))
        })
        .collect()
}

impl SpanExporter for HttpSpanExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        if batch.is_empty() {
            return Ok(());
        }
        let body = otlp_body::export_request(&batch, &self.resource);
        drop(batch);
        self.client
            .post_protobuf(&self.url, &self.headers, body)
            .await
            .map_err(|e| OTelSdkError::InternalFailure(e.to_string()))
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.resource = otlp_body::resource(resource);
    }
}

#[cfg(test)]
mod tests {
    use super::headers;

    #[test]
    fn the_headers_variable_is_read_as_the_standard_says() {
        let h = headers("api-key=s%3Dcr%2Cet , x-tenant = acme,broken,bad name=x,=novalue");
        assert_eq!(
            h.get("api-key").map(|v| v.to_str().ok()),
            Some(Some("s=cr,et"))
        );
        assert_eq!(
            h.get("x-tenant").map(|v| v.to_str().ok()),
            Some(Some("acme"))
        );
        assert_eq!(h.len(), 2, "{h:?}");
    }
}
