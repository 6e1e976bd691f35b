//! Public operational endpoints: liveness, readiness, build information.
use super::tags::ApiTags;
use futures_util::future::BoxFuture;
use poem::web::Data;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Enum, Object, OpenApi};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A named dependency probe: `Ok` when the dependency answers, else why not.
pub type Probe = Arc<dyn Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync>;

/// A probe that reports a full check (for dependencies that can be degraded or carry a
/// circuit breaker).
pub type CheckProbe = Arc<dyn Fn() -> BoxFuture<'static, ProbeOutcome> + Send + Sync>;

/// What a [`CheckProbe`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeOutcome {
    /// up, down, degraded, skipped or n/a.
    pub status: CheckStatus,
    /// Why it is not up.
    pub error: Option<String>,
    /// `closed`, `open` or `half_open` for a dependency behind a circuit breaker.
    pub breaker_state: Option<String>,
}

#[derive(Clone)]
enum Kind {
    Simple(Probe),
    Full(CheckProbe),
    NotApplicable,
}

/// The dependencies `/readyz` checks, and whether the process is draining.
#[derive(Clone)]
pub struct Readiness {
    probes: Vec<(String, Kind)>,
    draining: Arc<AtomicBool>,
    deployment_mode: String,
}

impl Default for Readiness {
    fn default() -> Self {
        Self {
            probes: Vec::new(),
            draining: Arc::new(AtomicBool::new(false)),
            deployment_mode: "local".into(),
        }
    }
}

/// Turns `/readyz` to 503 `draining` once [`Drain::start`] is called (shutdown began).
#[derive(Debug, Clone)]
pub struct Drain(Arc<AtomicBool>);

impl Drain {
    /// From now on `/readyz` answers 503 `draining`.
    pub fn start(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
    /// True once draining started.
    pub fn is_draining(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

impl Readiness {
    /// Adds an up/down probe.
    pub fn with(mut self, name: impl Into<String>, probe: Probe) -> Self {
        self.probes.push((name.into(), Kind::Simple(probe)));
        self
    }
    /// Adds a probe that reports a full check (degraded, breaker state).
    pub fn with_check(mut self, name: impl Into<String>, probe: CheckProbe) -> Self {
        self.probes.push((name.into(), Kind::Full(probe)));
        self
    }
    /// Lists a dependency this process does not use (`n/a`).
    pub fn not_applicable(mut self, name: impl Into<String>) -> Self {
        self.probes.push((name.into(), Kind::NotApplicable));
        self
    }
    /// The `deployment_mode` reported (`DEPLOYMENT_MODE`).
    pub fn deployment_mode(mut self, mode: impl Into<String>) -> Self {
        self.deployment_mode = mode.into();
        self
    }
    /// The handle the shutdown path uses to turn readiness to `draining`.
    pub fn drain(&self) -> Drain {
        Drain(self.draining.clone())
    }

    /// Runs every probe (each under [`PROBE_TIMEOUT`], all at once) and builds the answer.
    /// While draining no probe runs: every check is `skipped`.
    pub async fn report(&self) -> (bool, ReadinessReport) {
        let draining = self.draining.load(Ordering::SeqCst);
        let runs = self.probes.iter().map(|(name, kind)| async move {
            if draining {
                let skipped = Check {
                    status: CheckStatus::Skipped,
                    latency_ms: None,
                    error: None,
                    breaker_state: None,
                };
                return (name.clone(), skipped);
            }
            (name.clone(), run(kind).await)
        });
        let checks: BTreeMap<String, Check> = futures_util::future::join_all(runs)
            .await
            .into_iter()
            .collect();
        let down = checks.values().any(|c| c.status == CheckStatus::Down);
        let (status, reason) = if draining {
            (
                OverallStatus::Draining,
                Some("service is draining; refusing new traffic".to_owned()),
            )
        } else if down {
            let names: Vec<&str> = checks
                .iter()
                .filter(|(_, c)| c.status == CheckStatus::Down)
                .map(|(n, _)| n.as_str())
                .collect();
            (
                OverallStatus::Unhealthy,
                Some(format!("down: {}", names.join(", "))),
            )
        } else {
            (OverallStatus::Healthy, None)
        };
        let ready = status == OverallStatus::Healthy;
        (
            ready,
            ReadinessReport {
                status,
                reason,
                checks,
                version: env!("CARGO_PKG_VERSION").into(),
                deployment_mode: self.deployment_mode.clone(),
            },
        )
    }
}

/// Deadline of one probe.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

async fn run(kind: &Kind) -> Check {
    let start = Instant::now();
    let outcome = match kind {
        Kind::NotApplicable => {
            return Check {
                status: CheckStatus::NotApplicable,
                latency_ms: None,
                error: None,
                breaker_state: None,
            };
        }
        Kind::Simple(p) => match tokio::time::timeout(PROBE_TIMEOUT, p()).await {
            Ok(Ok(())) => ProbeOutcome {
                status: CheckStatus::Up,
                error: None,
                breaker_state: None,
            },
            Ok(Err(e)) => ProbeOutcome {
                status: CheckStatus::Down,
                error: Some(e),
                breaker_state: None,
            },
            Err(_) => ProbeOutcome {
                status: CheckStatus::Down,
                error: Some(format!("timed out after {}s", PROBE_TIMEOUT.as_secs())),
                breaker_state: None,
            },
        },
        Kind::Full(p) => match tokio::time::timeout(PROBE_TIMEOUT, p()).await {
            Ok(o) => o,
            Err(_) => ProbeOutcome {
                status: CheckStatus::Down,
                error: Some(format!("timed out after {}s", PROBE_TIMEOUT.as_secs())),
                breaker_state: None,
            },
        },
    };
    Check {
        status: outcome.status,
        latency_ms: Some(u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)),
        error: outcome.error,
        breaker_state: outcome.breaker_state,
    }
}

/// Liveness answer.
#[derive(Debug, Clone, Object)]
pub struct Health {
    /// Always `ok` while the process serves requests.
    pub status: String,
}

/// Status of one dependency, as the original spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
pub enum CheckStatus {
    /// Answering.
    #[oai(rename = "up")]
    Up,
    /// Not answering: the service cannot do its work (readiness fails).
    #[oai(rename = "down")]
    Down,
    /// Not answering, but the service works around it (e.g. the event broker: events wait in
    /// the outbox). Readiness does not fail.
    #[oai(rename = "degraded")]
    Degraded,
    /// Not probed (while draining).
    #[oai(rename = "skipped")]
    Skipped,
    /// Not used by this process or configuration.
    #[oai(rename = "n/a")]
    NotApplicable,
}

/// One dependency check (snake_case keys, as the original).
#[derive(Debug, Clone, Object)]
#[oai(rename_all = "snake_case")]
pub struct Check {
    /// up, down, degraded, skipped or n/a.
    pub status: CheckStatus,
    /// Probe latency, when the probe ran.
    #[oai(skip_serializing_if_is_none)]
    pub latency_ms: Option<u64>,
    /// Why it is not up (never credentials).
    #[oai(skip_serializing_if_is_none)]
    pub error: Option<String>,
    /// `closed`, `open` or `half_open` for a dependency behind a circuit breaker.
    #[oai(skip_serializing_if_is_none)]
    pub breaker_state: Option<String>,
}

/// Overall readiness.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename_all = "lowercase")]
pub enum OverallStatus {
    /// Every check is up, degraded, skipped or n/a.
    Healthy,
    /// At least one check is down.
    Unhealthy,
    /// Shutdown began: the process finishes what it has and takes no new traffic.
    Draining,
}

/// Readiness answer (the original's body).
#[derive(Debug, Clone, Object)]
#[oai(rename = "ReadinessReport", rename_all = "snake_case")]
pub struct ReadinessReport {
    /// healthy, unhealthy or draining.
    pub status: OverallStatus,
    /// Why it is not healthy.
    #[oai(skip_serializing_if_is_none)]
    pub reason: Option<String>,
    /// One check per dependency.
    pub checks: BTreeMap<String, Check>,
    /// Application version.
    pub version: String,
    /// `DEPLOYMENT_MODE`: local, byoc or saas.
    pub deployment_mode: String,
}

/// Readiness response.
#[derive(Debug, ApiResponse)]
pub enum ReadyResponse {
    /// healthy.
    #[oai(status = 200)]
    Ready(Json<ReadinessReport>),
    /// unhealthy (a dependency is down) or draining (shutdown began).
    #[oai(status = 503)]
    NotReady(Json<ReadinessReport>),
}

/// Build information, recorded by the build script (`build.rs`).
#[derive(Debug, Clone, Object)]
#[oai(rename = "VersionInfo", rename_all = "camelCase")]
pub struct VersionInfo {
    /// Application version.
    pub version: String,
    /// Git commit the binary was built from; `unknown` when built without git (a source
    /// tarball) and `REPORTER_BUILD_COMMIT` was not set.
    pub commit: String,
    /// When the binary was built (RFC 3339, UTC; `SOURCE_DATE_EPOCH` when set).
    pub build_time: String,
    /// True when the working tree had uncommitted changes at build time (false when unknown).
    pub dirty: bool,
    /// Rust compiler the binary was built with.
    pub rustc: String,
}

/// What the build script recorded about this binary.
pub fn version_info() -> VersionInfo {
    VersionInfo {
        version: env!("CARGO_PKG_VERSION").into(),
        commit: env!("REPORTER_BUILD_COMMIT").into(),
        build_time: env!("REPORTER_BUILD_TIME").into(),
        dirty: env!("REPORTER_BUILD_DIRTY") == "true",
        rustc: env!("REPORTER_BUILD_RUSTC").into(),
    }
}

/// Ops operations.
#[derive(Default)]
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
    /// The original's body: `status` healthy, unhealthy or draining; one check per dependency
    /// (`status` up, down, degraded, skipped or n/a, `latency_ms`, `error`, `breaker_state`),
    /// each probe under a 2 s timeout; `version` and `deployment_mode`. 503 while a
    /// dependency is down or once shutdown began (draining). Public.
    #[oai(path = "/readyz", method = "get", operation_id = "readiness")]
    async fn ready(&self, ops: Data<&Arc<super::request_data::OpsData>>) -> ReadyResponse {
        let (ready, report) = ops.readiness.report().await;
        if ready {
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
        Json(version_info())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(status: CheckStatus, breaker: Option<&str>) -> CheckProbe {
        let breaker = breaker.map(str::to_owned);
        Arc::new(move || {
            let breaker = breaker.clone();
            Box::pin(async move {
                ProbeOutcome {
                    status,
                    error: (status != CheckStatus::Up).then(|| "unreachable".to_owned()),
                    breaker_state: breaker,
                }
            })
        })
    }

    fn up() -> Probe {
        Arc::new(|| Box::pin(async { Ok(()) }))
    }

    fn down() -> Probe {
        Arc::new(|| Box::pin(async { Err("connection refused".to_owned()) }))
    }

    #[tokio::test]
    async fn down_is_unhealthy_degraded_is_not_and_draining_skips_the_probes() {
        let r = Readiness::default()
            .deployment_mode("saas")
            .with("store", up())
            .with_check("events", fixed(CheckStatus::Degraded, Some("open")))
            .not_applicable("rabbitmq");
        let (ready, report) = r.report().await;
        assert!(ready, "a degraded event broker does not fail readiness");
        assert_eq!(report.status, OverallStatus::Healthy);
        assert_eq!(report.deployment_mode, "saas");
        let events = &report.checks["events"];
        assert_eq!(events.status, CheckStatus::Degraded);
        assert_eq!(events.breaker_state.as_deref(), Some("open"));
        assert!(events.latency_ms.is_some());
        assert_eq!(report.checks["rabbitmq"].status, CheckStatus::NotApplicable);
        assert_eq!(report.checks["rabbitmq"].latency_ms, None);

        let r = r.with("mongodb", down());
        let (ready, report) = r.report().await;
        assert!(!ready);
        assert_eq!(report.status, OverallStatus::Unhealthy);
        assert_eq!(report.reason.as_deref(), Some("down: mongodb"));
        assert_eq!(
            report.checks["mongodb"].error.as_deref(),
            Some("connection refused")
        );

        r.drain().start();
        assert!(r.drain().is_draining());
        let (ready, report) = r.report().await;
        assert!(!ready);
        assert_eq!(report.status, OverallStatus::Draining);
        assert!(
            report
                .checks
                .values()
                .all(|c| c.status == CheckStatus::Skipped && c.latency_ms.is_none())
        );
    }

    #[tokio::test]
    async fn a_probe_that_hangs_is_down_after_the_timeout() {
        let hang: Probe = Arc::new(|| Box::pin(std::future::pending()));
        let r = Readiness::default().with("slow", hang);
        let (ready, report) = r.report().await;
        assert!(!ready);
        assert_eq!(report.checks["slow"].status, CheckStatus::Down);
        assert!(
            report.checks["slow"]
                .error
                .as_deref()
                .unwrap()
                .contains("timed out")
        );
    }
}
