//! Builds the application and the HTTP layer from a validated [`Config`].
use crate::app::{App, DataSourceCatalog, Emitter, KeyLayout, Ports, Settings};
use crate::config::{AuthKey, Config, DataSourceSpec, EventBroker, ObjectStorageChoice, Tenancy};
use crate::http::auth::{Authenticator, Claims, Scope, mint_hs256};
use crate::http::streaming::StreamingView;
use crate::http::{HttpSetup, Probe, Readiness};
use crate::streaming::{
    BreakerSettings, CircuitBreaker, Delivery, Dispatcher, DispatcherSettings, StreamingMetrics,
};
use anyhow::Context;
use reporter_adapter_fs::{FileDataSource, LocalObjectStorage};
use reporter_adapter_memory::{
    MemoryIdempotencyStore, MemoryObjectStorage, MemoryPublisher, MemoryStore,
};
use reporter_ports::TenantId;
use reporter_ports::clock::SystemClock;
use reporter_ports::datasource::DataSourceId;
use reporter_ports::ports::{DataSource, EventPublisher, ObjectStorage, Outbox};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The bundled example data set (`examples/data/bank`), registered as data source `bank`.
const EXAMPLE_TABLES: &[(&str, &str)] = &[
    (
        "accounts.csv",
        include_str!("../examples/data/bank/accounts.csv"),
    ),
    (
        "balances.csv",
        include_str!("../examples/data/bank/balances.csv"),
    ),
    (
        "transactions.json",
        include_str!("../examples/data/bank/transactions.json"),
    ),
];

/// A directory removed when dropped (the materialised example data set).
#[derive(Debug)]
pub struct TempDirGuard(PathBuf);

impl Drop for TempDirGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Everything `serve` / `api` needs.
pub struct Built {
    /// The application.
    pub app: Arc<App>,
    /// HTTP setup.
    pub http: HttpSetup,
    /// Development token (auth on, no key configured).
    pub dev_token: Option<String>,
    /// Keeps the example data directory alive.
    pub example_dir: Option<TempDirGuard>,
    /// One-line description of the adapters in use.
    pub summary: Vec<String>,
    /// The outbox dispatcher, when publication is on (the caller runs it).
    pub dispatcher: Option<Dispatcher>,
}

fn materialise_example() -> anyhow::Result<(PathBuf, TempDirGuard)> {
    let root = std::env::temp_dir().join(format!("reporter-example-{}", uuid::Uuid::now_v7()));
    let dir = root.join("bank");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for (name, content) in EXAMPLE_TABLES {
        std::fs::write(dir.join(name), content).with_context(|| format!("writing {name}"))?;
    }
    Ok((dir, TempDirGuard(root)))
}

fn open_file_source(id: &DataSourceId, path: &Path) -> anyhow::Result<Arc<dyn DataSource>> {
    let source = FileDataSource::open(id.clone(), path.to_path_buf())
        .map_err(|e| anyhow::anyhow!("data source '{id}' ({}): {e}", path.display()))?;
    Ok(Arc::new(source))
}

fn probe<F, Fut>(f: F) -> Probe
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), String>> + Send + 'static,
{
    Arc::new(move || Box::pin(f()))
}

/// Builds every adapter named by the configuration.
pub fn build(config: &Config) -> anyhow::Result<Built> {
    let mut summary = Vec::new();
    let store = MemoryStore::new();
    summary.push("state, outbox: in memory (lost on exit)".to_owned());
    let storage: Arc<dyn ObjectStorage> = match &config.object_storage {
        ObjectStorageChoice::Memory => {
            summary.push("object storage: in memory".to_owned());
            Arc::new(MemoryObjectStorage::new())
        }
        ObjectStorageChoice::Filesystem(root) => {
            summary.push(format!("object storage: {}", root.display()));
            Arc::new(LocalObjectStorage::new(root.clone()))
        }
    };
    let mut sources: Vec<Arc<dyn DataSource>> = Vec::new();
    let mut example_dir = None;
    if config.data_sources.example {
        let (dir, guard) = materialise_example()?;
        let id = DataSourceId::parse("bank").context("example id")?;
        sources.push(open_file_source(&id, &dir)?);
        example_dir = Some(guard);
        summary.push("data source 'bank': bundled example data set".to_owned());
    }
    for (id, spec) in &config.data_sources.sources {
        match spec {
            DataSourceSpec::File { path } => {
                sources.push(open_file_source(id, path)?);
                summary.push(format!("data source '{id}': files in {}", path.display()));
            }
        }
    }
    let catalog = DataSourceCatalog::new(sources);

    let (generated_secret, dev_token) = match (&config.auth.key, config.auth.enabled) {
        (AuthKey::Generated, true) => {
            let secret: [u8; 32] = rand::random();
            let secret = hex::encode(secret).into_bytes();
            let tenant = match &config.tenancy {
                Tenancy::Single(t) => t.clone(),
                Tenancy::Multi => TenantId::default_tenant(),
            };
            let claims = Claims {
                sub: Some("dev".into()),
                exp: (chrono::Utc::now() + chrono::Duration::hours(12)).timestamp(),
                scope: Some(Scope::all_claim()),
                tenant_id: Some(tenant.to_string()),
                iss: config.auth.issuer.clone(),
                aud: config.auth.audience.clone(),
            };
            let token = mint_hs256(&secret, &claims)
                .map_err(|e| anyhow::anyhow!("minting the development token: {e}"))?;
            (Some(secret), Some(token))
        }
        _ => (None, None),
    };
    let authenticator = Arc::new(
        Authenticator::new(
            &config.auth,
            config.tenancy.clone(),
            generated_secret.as_deref(),
        )
        .map_err(|e| anyhow::anyhow!("auth: {e}"))?,
    );

    let store_arc = Arc::new(store.clone());
    let ports = Ports {
        templates: store_arc.clone(),
        deadlines: store_arc.clone(),
        reports: store_arc.clone(),
        uow: store_arc.clone(),
        outbox: store_arc.clone(),
        storage: storage.clone(),
        idempotency: Arc::new(MemoryIdempotencyStore::new()),
        clock: Arc::new(SystemClock),
    };
    let settings = Settings {
        max_page_limit: config.max_pagination_limit,
        layout: KeyLayout {
            tenant_prefix: matches!(config.tenancy, Tenancy::Multi),
        },
    };
    let registry = prometheus::Registry::new();
    let outbox: Arc<dyn Outbox> = store_arc;
    let (emitter, dispatcher, memory_broker) =
        streaming(config, outbox.clone(), &registry, &mut summary)?;
    let app = Arc::new(App::new(ports, catalog.clone(), emitter, settings));
    let streaming_view = StreamingView {
        memory_broker,
        exchange: config.streaming.exchange.clone(),
        outbox: outbox.clone(),
    };

    let mut readiness = Readiness::default().with(
        "store",
        probe(move || {
            let outbox = outbox.clone();
            async move {
                outbox
                    .stats(chrono::Utc::now())
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
        }),
    );
    let s = storage.clone();
    readiness = readiness.with(
        "objectStorage",
        probe(move || {
            let s = s.clone();
            async move { s.check().await.map_err(|e| e.to_string()) }
        }),
    );
    for d in catalog.descriptors() {
        let source = catalog.get(d.id.as_str());
        readiness = readiness.with(
            format!("dataSource:{}", d.id),
            probe(move || {
                let source = source.clone();
                async move {
                    match source {
                        Some(s) => s.schema().await.map(|_| ()).map_err(|e| e.to_string()),
                        None => Err("not configured".into()),
                    }
                }
            }),
        );
    }
    let http = HttpSetup {
        authenticator,
        readiness,
        registry,
        max_body_bytes: config.max_request_body_bytes,
        idempotency_ttl: config.idempotency_ttl,
        idempotency_in_flight: config.idempotency_in_flight,
        cors_origins: config.cors_origins.clone(),
        streaming: streaming_view,
    };
    Ok(Built {
        app,
        http,
        dev_token,
        example_dir,
        summary,
        dispatcher,
    })
}

type StreamingParts = (Emitter, Option<Dispatcher>, Option<MemoryPublisher>);

/// Builds event publication: the broker adapter, the breaker, the direct-publish hook and the
/// dispatcher. With `STREAMING_ENABLED=false` the emitter writes nothing.
fn streaming(
    config: &Config,
    outbox: Arc<dyn Outbox>,
    registry: &prometheus::Registry,
    summary: &mut Vec<String>,
) -> anyhow::Result<StreamingParts> {
    let s = &config.streaming;
    if !s.enabled {
        summary.push("event publication: off (STREAMING_ENABLED=false)".to_owned());
        return Ok((Emitter::disabled(), None, None));
    }
    let metrics = StreamingMetrics::register(registry).context("streaming metrics")?;
    let (publisher, memory): (Arc<dyn EventPublisher>, Option<MemoryPublisher>) = match &s.broker {
        EventBroker::Memory => {
            let p = MemoryPublisher::new();
            summary.push(format!(
                "event publication: in-memory broker, exchange '{}' (GET /v1/streaming/deliveries shows what was published)",
                s.exchange
            ));
            (Arc::new(p.clone()), Some(p))
        }
        EventBroker::Amqp(_) => anyhow::bail!(
            "STREAMING_BROKERS: the RabbitMQ publisher is not available in this build"
        ),
    };
    let breaker = Arc::new(CircuitBreaker::new(BreakerSettings {
        failure_ratio: s.cb_failure_ratio,
        min_requests: s.cb_min_requests,
        open_for: s.cb_open,
    }));
    let wake = Arc::new(tokio::sync::Notify::new());
    let hook = Arc::new(Delivery {
        publisher: publisher.clone(),
        outbox: outbox.clone(),
        breaker,
        metrics: metrics.clone(),
        wake: wake.clone(),
        publish_timeout: s.publish_timeout,
    });
    let dispatcher = Dispatcher {
        outbox,
        publisher,
        metrics,
        wake,
        settings: DispatcherSettings {
            owner: format!(
                "reporter-{}-{}",
                std::process::id(),
                uuid::Uuid::now_v7().simple()
            ),
            batch: s.dispatch_batch,
            lease: s.outbox_lease,
            poll: s.dispatch_poll,
            max_attempts: s.outbox_max_attempts,
            retention: s.outbox_retention,
            backoff_base: std::time::Duration::from_millis(500),
            backoff_cap: std::time::Duration::from_secs(300),
        },
    };
    Ok((Emitter::enabled_with(hook), Some(dispatcher), memory))
}
