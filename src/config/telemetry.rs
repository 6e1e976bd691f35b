//! The telemetry section: OpenTelemetry traces and metrics over OTLP, with the original's
//! variables (`ENABLE_TELEMETRY`, `OTEL_RESOURCE_*`, `OTEL_LIBRARY_NAME`,
//! `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_INSECURE_EXPORTER`) plus the standard
//! `OTEL_EXPORTER_OTLP_PROTOCOL` and `OTEL_METRIC_EXPORT_INTERVAL`. The standard sampler
//! (`OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`) variables are read by the OpenTelemetry
//! SDK itself, the batch processor's (`OTEL_BSP_*`) by the span processor: the SDK's over gRPC,
//! `telemetry::encoding_processor` over HTTP (see `telemetry::otel`).
use super::{Checker, problem};
use clap::Args;
use std::time::Duration;

/// Raw telemetry variables (flattened into [`super::RawConfig`]).
#[derive(Debug, Clone, Args)]
pub struct RawTelemetry {
    /// Export traces and metrics over OTLP. Off: no OpenTelemetry layer, no propagation work.
    #[arg(long, env = "ENABLE_TELEMETRY", default_value = "false")]
    pub enable_telemetry: String,
    /// `service.name` of the exported resource.
    #[arg(long, env = "OTEL_RESOURCE_SERVICE_NAME", default_value = "reporter")]
    pub otel_service_name: String,
    /// Instrumentation scope (tracer and meter) name.
    #[arg(long, env = "OTEL_LIBRARY_NAME", default_value = "reporter")]
    pub otel_library_name: String,
    /// `service.version` of the exported resource (default: this build's version).
    #[arg(long, env = "OTEL_RESOURCE_SERVICE_VERSION")]
    pub otel_service_version: Option<String>,
    /// `deployment.environment.name` of the exported resource (default: ENV_NAME).
    #[arg(long, env = "OTEL_RESOURCE_DEPLOYMENT_ENVIRONMENT")]
    pub otel_deployment_environment: Option<String>,
    /// The OTLP collector: `host:port`, `http://`, `otlp://` (plaintext) or `https://` (TLS).
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    pub otel_endpoint: Option<String>,
    /// The original's collector port: added to OTEL_EXPORTER_OTLP_ENDPOINT when that names
    /// none (an endpoint naming another port is refused).
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT_PORT")]
    pub otel_endpoint_port: Option<String>,
    /// `grpc` (the original's, port 4317) or `http/protobuf` (port 4318).
    #[arg(long, env = "OTEL_EXPORTER_OTLP_PROTOCOL", default_value = "grpc")]
    pub otel_protocol: String,
    /// The original's plaintext switch: `true` exports without TLS (the endpoint MUST then
    /// not be `https://`).
    #[arg(long, env = "OTEL_INSECURE_EXPORTER", default_value = "false")]
    pub otel_insecure: String,
    /// Continue the trace of an incoming W3C `traceparent` header (any client; the original
    /// did so only for its own user agents). `false`: every request starts a new trace.
    #[arg(long, env = "OTEL_TRUST_INCOMING_TRACEPARENT", default_value = "true")]
    pub otel_trust_incoming_traceparent: String,
    /// Milliseconds between two exports of the metrics (1000-3600000).
    #[arg(long, env = "OTEL_METRIC_EXPORT_INTERVAL", default_value = "60000")]
    pub otel_metric_export_interval: String,
}

impl RawTelemetry {
    /// Every default, as its clap attribute declares it.
    pub fn defaults() -> Self {
        super::declared::defaults_of()
    }
}

/// OTLP transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtlpProtocol {
    /// OTLP/gRPC.
    Grpc,
    /// OTLP/HTTP with protobuf bodies.
    HttpProtobuf,
}

/// Validated telemetry settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TelemetrySettings {
    /// `ENABLE_TELEMETRY`.
    pub enabled: bool,
    /// `service.name`.
    pub service_name: String,
    /// Instrumentation scope name.
    pub library_name: String,
    /// `service.version`.
    pub service_version: String,
    /// `deployment.environment.name`.
    pub environment: String,
    /// Collector base URL with its scheme (`http://` plaintext, `https://` TLS); empty when off.
    pub endpoint: String,
    /// Transport.
    pub protocol: OtlpProtocol,
    /// Incoming `traceparent` continues the trace.
    pub trust_incoming_traceparent: bool,
    /// Metrics export interval.
    pub metric_interval: Duration,
}

impl TelemetrySettings {
    /// Telemetry off (tests, commands that export nothing).
    pub fn off() -> Self {
        Self {
            enabled: false,
            service_name: "reporter".into(),
            library_name: "reporter".into(),
            service_version: env!("CARGO_PKG_VERSION").into(),
            environment: "development".into(),
            endpoint: String::new(),
            protocol: OtlpProtocol::Grpc,
            trust_incoming_traceparent: true,
            metric_interval: Duration::from_secs(60),
        }
    }

    /// True when the exporter talks to its collector without TLS.
    pub fn plaintext(&self) -> bool {
        self.enabled && !self.endpoint.starts_with("https://")
    }
}

fn non_empty(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

impl RawTelemetry {
    /// Validates the section into `c`; `env_name` is the default environment attribute.
    pub(super) fn validate(&self, c: &mut Checker, env_name: &str) -> TelemetrySettings {
        let enabled = c.boolean("ENABLE_TELEMETRY", &self.enable_telemetry);
        let insecure = c.boolean("OTEL_INSECURE_EXPORTER", &self.otel_insecure);
        let trust = c.boolean(
            "OTEL_TRUST_INCOMING_TRACEPARENT",
            &self.otel_trust_incoming_traceparent,
        );
        let interval_ms = c.int::<u64>(
            "OTEL_METRIC_EXPORT_INTERVAL",
            &self.otel_metric_export_interval,
        );
        let protocol = match self.otel_protocol.trim().to_ascii_lowercase().as_str() {
            "grpc" => OtlpProtocol::Grpc,
            "http/protobuf" => OtlpProtocol::HttpProtobuf,
            other => {
                c.problems.push(problem(
                    "OTEL_EXPORTER_OTLP_PROTOCOL",
                    format!("'{other}' is not a supported OTLP protocol"),
                    "grpc|http/protobuf (http/json is not supported)",
                ));
                OtlpProtocol::Grpc
            }
        };
        for (var, value) in [
            ("OTEL_RESOURCE_SERVICE_NAME", &self.otel_service_name),
            ("OTEL_LIBRARY_NAME", &self.otel_library_name),
        ] {
            if value.trim().is_empty() {
                c.problems
                    .push(problem(var, "is empty", "a non-empty name, e.g. reporter"));
            }
        }
        let endpoint = match non_empty(&self.otel_endpoint) {
            Some(raw) => {
                let url = endpoint_url(c, raw, insecure);
                with_port(c, url, non_empty(&self.otel_endpoint_port))
            }
            None if enabled => {
                c.problems.push(problem(
                    "OTEL_EXPORTER_OTLP_ENDPOINT",
                    "is not set while ENABLE_TELEMETRY=true",
                    "the collector, e.g. http://otel-collector:4317 (grpc) or :4318 (http/protobuf)",
                ));
                String::new()
            }
            None => String::new(),
        };
        TelemetrySettings {
            enabled,
            service_name: self.otel_service_name.trim().to_owned(),
            library_name: self.otel_library_name.trim().to_owned(),
            service_version: non_empty(&self.otel_service_version)
                .unwrap_or(env!("CARGO_PKG_VERSION"))
                .to_owned(),
            environment: non_empty(&self.otel_deployment_environment)
                .unwrap_or(env_name.trim())
                .to_owned(),
            endpoint,
            protocol,
            trust_incoming_traceparent: trust,
            metric_interval: Duration::from_millis(interval_ms),
        }
    }
}

/// `url` with the original's `OTEL_EXPORTER_OTLP_ENDPOINT_PORT`: added when the URL names no
/// port; a URL naming another port is a problem (neither silently wins).
fn with_port(c: &mut Checker, url: String, port: Option<&str>) -> String {
    let Some(raw) = port else {
        return url;
    };
    let port = c.int_or::<u16>("OTEL_EXPORTER_OTLP_ENDPOINT_PORT", raw, 4317);
    let Some((scheme, rest)) = url.split_once("://") else {
        return url;
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once(':').map(|(_, p)| p.parse::<u16>()) {
        Some(Ok(named)) if named != port => {
            c.problems.push(problem(
                "OTEL_EXPORTER_OTLP_ENDPOINT_PORT",
                format!("{port} disagrees with the endpoint's port {named}"),
                "the same port in both, or only one of them",
            ));
            url
        }
        Some(Ok(_)) => url,
        _ => format!("{scheme}://{authority}:{port}{path}"),
    }
}

/// The collector URL: `https://` keeps TLS; `http://`, the original's `otlp://` and a bare
/// `host:port` are plaintext. `OTEL_INSECURE_EXPORTER=true` with `https://` is refused (the
/// two settings contradict each other).
fn endpoint_url(c: &mut Checker, raw: &str, insecure: bool) -> String {
    let (scheme, rest) = match raw.split_once("://") {
        Some((s, rest)) => (s.to_ascii_lowercase(), rest),
        None => (String::new(), raw),
    };
    let rest = rest.trim_end_matches('/');
    let url = match scheme.as_str() {
        "https" => {
            if insecure {
                c.problems.push(problem(
                    "OTEL_INSECURE_EXPORTER",
                    "is true while OTEL_EXPORTER_OTLP_ENDPOINT is https://",
                    "false with an https:// endpoint, or an http:// endpoint for plaintext",
                ));
            }
            format!("https://{rest}")
        }
        "http" | "otlp" | "" => format!("http://{rest}"),
        other => {
            c.problems.push(problem(
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                format!("'{other}://' is not a collector scheme"),
                "host:port, http://host:port, otlp://host:port (plaintext) or https://host:port",
            ));
            return String::new();
        }
    };
    let host_ok = !rest.is_empty()
        && !rest.contains(char::is_whitespace)
        && rest.parse::<http_authority::Probe>().is_ok();
    if !host_ok {
        c.problems.push(problem(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("'{raw}' is not a collector address"),
            "host:port, http://host:port, otlp://host:port or https://host:port",
        ));
    }
    url
}

/// A minimal check that the part after the scheme is an authority with an optional path.
mod http_authority {
    /// Parses as `host[:port][/path]`.
    pub struct Probe;
    impl std::str::FromStr for Probe {
        type Err = ();
        fn from_str(s: &str) -> Result<Self, ()> {
            let authority = s.split('/').next().unwrap_or_default();
            let (host, port) = match authority.rsplit_once(':') {
                Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => (h, Some(p)),
                _ => (authority, None),
            };
            if host.is_empty() || port.is_some_and(|p| p.parse::<u16>().is_err()) {
                return Err(());
            }
            Ok(Probe)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(f: impl FnOnce(&mut RawTelemetry)) -> (TelemetrySettings, Vec<String>) {
        let mut raw = RawTelemetry::defaults();
        f(&mut raw);
        let mut c = Checker {
            problems: Vec::new(),
        };
        let s = raw.validate(&mut c, "development");
        (s, c.problems.iter().map(|p| p.to_string()).collect())
    }

    #[test]
    fn off_by_default_and_valid() {
        let (s, problems) = check(|_| {});
        assert!(problems.is_empty(), "{problems:?}");
        assert!(!s.enabled);
        assert_eq!(s.environment, "development");
    }

    #[test]
    fn on_needs_an_endpoint() {
        let (_, problems) = check(|r| r.enable_telemetry = "true".into());
        assert!(
            problems
                .iter()
                .any(|p| p.contains("OTEL_EXPORTER_OTLP_ENDPOINT")),
            "{problems:?}"
        );
    }

    #[test]
    fn the_originals_endpoint_port_completes_or_agrees_with_the_endpoint() {
        let settings = |endpoint: &str, port: &str| {
            let mut raw = RawTelemetry::defaults();
            raw.otel_endpoint = Some(endpoint.into());
            raw.otel_endpoint_port = Some(port.into());
            let mut c = Checker {
                problems: Vec::new(),
            };
            let s = raw.validate(&mut c, "development");
            let vars: Vec<String> = c.problems.into_iter().map(|p| p.variable).collect();
            (s.endpoint, vars)
        };
        assert_eq!(
            settings("otel-collector", "4317"),
            ("http://otel-collector:4317".to_owned(), vec![])
        );
        assert_eq!(
            settings("http://otel-collector:4317", "4317"),
            ("http://otel-collector:4317".to_owned(), vec![])
        );
        assert_eq!(
            settings("http://otel-collector:4318", "4317").1,
            ["OTEL_EXPORTER_OTLP_ENDPOINT_PORT"]
        );
        assert_eq!(
            settings("otel-collector", "port").1,
            ["OTEL_EXPORTER_OTLP_ENDPOINT_PORT"]
        );
    }

    #[test]
    fn endpoint_schemes() {
        for (raw, want) in [
            ("collector:4317", "http://collector:4317"),
            ("otlp://collector:4317", "http://collector:4317"),
            ("http://collector:4318/", "http://collector:4318"),
            ("https://collector:4317", "https://collector:4317"),
        ] {
            let (s, problems) = check(|r| {
                r.enable_telemetry = "true".into();
                r.otel_endpoint = Some(raw.into());
            });
            assert!(problems.is_empty(), "{raw}: {problems:?}");
            assert_eq!(s.endpoint, want);
            assert_eq!(s.plaintext(), want.starts_with("http://"));
        }
    }

    #[test]
    fn every_problem_at_once() {
        let (_, problems) = check(|r| {
            r.enable_telemetry = "yes please".into();
            r.otel_protocol = "http/json".into();
            r.otel_endpoint = Some("ftp://x:1".into());
            r.otel_insecure = "maybe".into();
            r.otel_trust_incoming_traceparent = "2".into();
            r.otel_metric_export_interval = "5".into();
            r.otel_service_name = " ".into();
        });
        for var in [
            "ENABLE_TELEMETRY",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_INSECURE_EXPORTER",
            "OTEL_TRUST_INCOMING_TRACEPARENT",
            "OTEL_METRIC_EXPORT_INTERVAL",
            "OTEL_RESOURCE_SERVICE_NAME",
        ] {
            assert!(
                problems.iter().any(|p| p.contains(var)),
                "{var}: {problems:?}"
            );
        }
    }

    #[test]
    fn insecure_contradicts_https() {
        let (_, problems) = check(|r| {
            r.enable_telemetry = "true".into();
            r.otel_endpoint = Some("https://c:4317".into());
            r.otel_insecure = "true".into();
        });
        assert!(
            problems
                .iter()
                .any(|p| p.contains("OTEL_INSECURE_EXPORTER"))
        );
    }
}
