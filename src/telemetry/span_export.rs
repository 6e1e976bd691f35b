//! Where the OTLP/HTTP (protobuf) spans go: each `ExportTraceServiceRequest` the
//! [`encoding_processor`](super::encoding_processor) writes is POSTed to
//! `<endpoint>/v1/traces` by the [`otlp_http`](super::otlp_http) client, with the headers of
//! the standard `OTEL_EXPORTER_OTLP_TRACES_HEADERS` (else `OTEL_EXPORTER_OTLP_HEADERS`) and
//! the stock exporter's retries. The gRPC protocol keeps the stock exporter.
use super::encoding_processor::Export;
use super::export_body::Body;
use super::otlp_http::{Client, PostError};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

/// POSTs span export requests to the collector's `/v1/traces`.
#[derive(Debug)]
pub struct HttpSpanExport {
    client: Client,
    url: String,
    headers: HeaderMap,
}

impl HttpSpanExport {
    /// An export to `url` (the collector's `/v1/traces`) through `client`, with the headers
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
        }
    }
}

impl Export for HttpSpanExport {
    type Error = PostError;

    /// Blocks the export thread until the collector answered (at most the client's export
    /// time, retries included).
    fn export(&mut self, body: Body) -> Result<(), PostError> {
        self.client
            .post_protobuf_blocking(&self.url, &self.headers, body.into_bytes())
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
