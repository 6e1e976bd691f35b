//! Public operational endpoints: liveness, readiness, build information.
use super::tags::ApiTags;
use futures_util::future::BoxFuture;
use poem::web::Data;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Enum, Object, OpenApi};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A named dependency probe.
pub type Probe = Arc<dyn Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync>;

/// The dependencies `/readyz` checks.
#[derive(Clone, Default)]
pub struct Readiness {
    probes: Vec<(String, Probe)>,
}

impl Readiness {
    /// Adds a probe.
    pub fn with(mut self, name: impl Into<String>, probe: Probe) -> Self {
        self.probes.push((name.into(), probe));
        self
    }
}

/// Liveness answer.
#[derive(Debug, Clone, Object)]
pub struct Health {
    /// Always `ok` while the process serves requests.
    pub status: String,
}

/// Status of one dependency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename_all = "lowercase")]
pub enum CheckStatus {
    /// Answering.
    Up,
    /// Not answering.
    Down,
}

/// One dependency check.
#[derive(Debug, Clone, Object)]
#[oai(rename_all = "camelCase")]
pub struct Check {
    /// up or down.
    pub status: CheckStatus,
    /// Probe latency.
    pub latency_ms: u64,
    /// Why it is down.
    #[oai(skip_serializing_if_is_none)]
    pub error: Option<String>,
}

/// Readiness answer.
#[derive(Debug, Clone, Object)]
pub struct ReadinessReport {
    /// `ready` when every check is up, else `not_ready`.
    pub status: String,
    /// One check per dependency.
    pub checks: BTreeMap<String, Check>,
}

/// Readiness response.
#[derive(Debug, ApiResponse)]
pub enum ReadyResponse {
    /// Every dependency answers.
    #[oai(status = 200)]
    Ready(Json<ReadinessReport>),
    /// At least one dependency is down.
    #[oai(status = 503)]
    NotReady(Json<ReadinessReport>),
}

/// Build information.
#[derive(Debug, Clone, Object)]
#[oai(rename = "VersionInfo", rename_all = "camelCase")]
pub struct VersionInfo {
    /// Application version.
    pub version: String,
    /// Git commit the binary was built from, when known.
    pub commit: String,
    /// Rust compiler the binary was built with.
    pub rustc: String,
}

/// Ops operations.
pub struct OpsApi;

#[OpenApi(tag = "ApiTags::Ops")]
impl OpsApi {
    /// Liveness
    ///
    /// 200 while the process serves HTTP. Public.
    #[oai(path = "/health", method = "get", operation_id = "health")]
    async fn health(&self) -> Json<Health> {
        Json(Health {
            status: "ok".into(),
        })
    }

    /// Readiness
    ///
    /// One check per dependency (storage, object storage, data sources, broker when
    /// configured), each under a 2 s timeout; 503 when any is down. Public.
    #[oai(path = "/readyz", method = "get", operation_id = "readiness")]
    async fn ready(&self, readiness: Data<&Readiness>) -> ReadyResponse {
        let mut checks = BTreeMap::new();
        let mut all_up = true;
        for (name, probe) in &readiness.probes {
            let start = Instant::now();
            let result = match tokio::time::timeout(Duration::from_secs(2), probe()).await {
                Ok(r) => r,
                Err(_) => Err("timed out after 2s".to_owned()),
            };
            let latency_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
            all_up &= result.is_ok();
            checks.insert(
                name.clone(),
                Check {
                    status: if result.is_ok() {
                        CheckStatus::Up
                    } else {
                        CheckStatus::Down
                    },
                    latency_ms,
                    error: result.err(),
                },
            );
        }
        let report = ReadinessReport {
            status: if all_up { "ready" } else { "not_ready" }.into(),
            checks,
        };
        if all_up {
            ReadyResponse::Ready(Json(report))
        } else {
            ReadyResponse::NotReady(Json(report))
        }
    }

    /// Version
    ///
    /// Build information. Public.
    #[oai(path = "/version", method = "get", operation_id = "version")]
    async fn version(&self) -> Json<VersionInfo> {
        Json(VersionInfo {
            version: env!("CARGO_PKG_VERSION").into(),
            commit: option_env!("REPORTER_GIT_COMMIT")
                .unwrap_or("unknown")
                .into(),
            rustc: option_env!("REPORTER_RUSTC").unwrap_or("unknown").into(),
        })
    }
}
