//! A real OTLP/HTTP receiver for the telemetry tests: it listens on a free local port, takes
//! `POST /v1/traces` and `POST /v1/metrics` bodies (protobuf, as every OTLP exporter sends
//! them), decodes them with the standard generated messages (`opentelemetry-proto`) and
//! records the spans and metric names. Plain threads: no runtime needed by the test.
//! [`Receiver::start_grpc`] takes the same messages over OTLP/gRPC (`TraceService/Export`,
//! `MetricsService/Export` on HTTP/2 without TLS), on a runtime of its own.
#![allow(dead_code)]

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use prost::Message;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One received span.
#[derive(Debug, Clone)]
pub struct Span {
    /// 32 hex.
    pub trace_id: String,
    /// 16 hex.
    pub span_id: String,
    /// 16 hex, empty for a root.
    pub parent: String,
    /// Span name.
    pub name: String,
    /// OTLP span kind (2 server, 3 client, 4 producer, 5 consumer).
    pub kind: i32,
    /// Attributes as text.
    pub attributes: BTreeMap<String, String>,
    /// `service.name` of its resource.
    pub service: String,
}

#[derive(Default)]
struct Received {
    spans: Vec<Span>,
    metrics: Vec<String>,
}

/// The receiver; it stops listening when the test process ends.
#[derive(Clone)]
pub struct Receiver {
    /// `http://127.0.0.1:<port>`, for `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub endpoint: String,
    got: Arc<Mutex<Received>>,
}

fn text(v: &Option<opentelemetry_proto::tonic::common::v1::AnyValue>) -> String {
    match v.as_ref().and_then(|v| v.value.as_ref()) {
        Some(Value::StringValue(s)) => s.clone(),
        Some(Value::IntValue(i)) => i.to_string(),
        Some(Value::BoolValue(b)) => b.to_string(),
        Some(Value::DoubleValue(d)) => d.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

impl Receiver {
    /// Starts listening.
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the OTLP receiver");
        let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
        let got = Arc::new(Mutex::new(Received::default()));
        let sink = got.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let sink = sink.clone();
                std::thread::spawn(move || serve(conn, &sink));
            }
        });
        Self { endpoint, got }
    }

    /// Starts an OTLP/gRPC receiver (`OTEL_EXPORTER_OTLP_PROTOCOL=grpc`).
    pub fn start_grpc() -> Self {
        let std_listener = TcpListener::bind("127.0.0.1:0").expect("bind the OTLP receiver");
        std_listener.set_nonblocking(true).expect("nonblocking");
        let endpoint = format!("http://{}", std_listener.local_addr().expect("addr"));
        let got = Arc::new(Mutex::new(Received::default()));
        let sink = got.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(grpc::serve(std_listener, sink));
        });
        Self { endpoint, got }
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Span> {
        self.got.lock().expect("lock").spans.clone()
    }

    /// Every metric name received so far.
    pub fn metric_names(&self) -> Vec<String> {
        self.got.lock().expect("lock").metrics.clone()
    }

    /// Waits (up to `limit`) until `done` holds for the spans received; answers them.
    pub fn wait_spans(&self, limit: Duration, done: impl Fn(&[Span]) -> bool) -> Vec<Span> {
        let start = Instant::now();
        loop {
            let spans = self.spans();
            if done(&spans) || start.elapsed() > limit {
                return spans;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn serve(conn: TcpStream, sink: &Mutex<Received>) {
    let mut out = match conn.try_clone() {
        Ok(c) => c,
        Err(_) => return,
    };
    let mut reader = BufReader::new(conn);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let path = request_line
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let ok = match path.as_str() {
            "/v1/traces" => record_traces(&body, sink),
            "/v1/metrics" => record_metrics(&body, sink),
            _ => false,
        };
        let status = if ok { "200 OK" } else { "400 Bad Request" };
        let answer = format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n"
        );
        if out.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

fn record_traces(body: &[u8], sink: &Mutex<Received>) -> bool {
    let Ok(req) = ExportTraceServiceRequest::decode(body) else {
        return false;
    };
    let mut got = sink.lock().expect("lock");
    for rs in req.resource_spans {
        let service = rs
            .resource
            .as_ref()
            .and_then(|r| r.attributes.iter().find(|a| a.key == "service.name"))
            .map(|a| text(&a.value))
            .unwrap_or_default();
        for ss in rs.scope_spans {
            for s in ss.spans {
                got.spans.push(Span {
                    trace_id: hex::encode(&s.trace_id),
                    span_id: hex::encode(&s.span_id),
                    parent: hex::encode(&s.parent_span_id),
                    name: s.name,
                    kind: s.kind,
                    attributes: s
                        .attributes
                        .iter()
                        .map(|a| (a.key.clone(), text(&a.value)))
                        .collect(),
                    service: service.clone(),
                });
            }
        }
    }
    true
}

fn record_metrics(body: &[u8], sink: &Mutex<Received>) -> bool {
    let Ok(req) = ExportMetricsServiceRequest::decode(body) else {
        return false;
    };
    let mut got = sink.lock().expect("lock");
    for rm in req.resource_metrics {
        for sm in rm.scope_metrics {
            for m in sm.metrics {
                got.metrics.push(m.name);
            }
        }
    }
    true
}

/// OTLP/gRPC: unary `Export` calls, each a length-prefixed protobuf message, answered with an
/// empty message and `grpc-status: 0`.
mod grpc {
    use super::{Received, record_metrics, record_traces};
    use bytes::Bytes;
    use http_body_util::{BodyExt, StreamBody};
    use hyper::body::{Frame, Incoming};
    use hyper::{Request, Response};
    use std::sync::{Arc, Mutex};

    type Body = StreamBody<
        futures_util::stream::Iter<
            std::vec::IntoIter<Result<Frame<Bytes>, std::convert::Infallible>>,
        >,
    >;

    pub async fn serve(listener: std::net::TcpListener, sink: Arc<Mutex<Received>>) {
        let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let sink = sink.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                    let sink = sink.clone();
                    async move { Ok::<_, std::convert::Infallible>(export(req, &sink).await) }
                });
                let _ =
                    hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
            });
        }
    }

    async fn export(req: Request<Incoming>, sink: &Mutex<Received>) -> Response<Body> {
        let path = req.uri().path().to_owned();
        let body = req
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        // One uncompressed message: flag (0), big-endian length, the protobuf bytes.
        let message = (body.len() >= 5 && body[0] == 0).then(|| body.slice(5..));
        let ok = match (path.as_str(), message) {
            ("/opentelemetry.proto.collector.trace.v1.TraceService/Export", Some(m)) => {
                record_traces(&m, sink)
            }
            ("/opentelemetry.proto.collector.metrics.v1.MetricsService/Export", Some(m)) => {
                record_metrics(&m, sink)
            }
            _ => false,
        };
        let mut trailers = hyper::HeaderMap::new();
        trailers.insert(
            "grpc-status",
            hyper::header::HeaderValue::from_static(if ok { "0" } else { "3" }),
        );
        let frames = vec![
            Ok(Frame::data(Bytes::from_static(&[0, 0, 0, 0, 0]))),
            Ok(Frame::trailers(trailers)),
        ];
        Response::builder()
            .status(200)
            .header("content-type", "application/grpc")
            .body(StreamBody::new(futures_util::stream::iter(frames)))
            .expect("response")
    }
}
