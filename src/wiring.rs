//! Builds the application, the worker and the HTTP layer from a validated [`Config`]: every
//! adapter is chosen here and nowhere else.
use crate::app::{App, DataSourceCatalog, Emitter, KeyLayout, Ports, Settings};
use crate::config::{
    AuthKey, Config, DataSourceSpec, EventBroker, JobQueueChoice, ObjectStorageChoice, PdfChoice,
    Tenancy,
};
use crate::http::auth::{Authenticator, Claims, Scope, mint_hs256};
use crate::http::streaming::StreamingView;
use crate::http::{HttpSetup, Probe, Readiness};
use crate::streaming::{
    BreakerSettings, CircuitBreaker, Delivery, Dispatcher, DispatcherSettings, StreamingMetrics,
};
use crate::worker::Worker;
use anyhow::Context;
use reporter_adapter_fs::{FileDataSource, LocalObjectStorage};
use reporter_adapter_memory::{
    MemoryIdempotencyStore, MemoryJobConsumer, MemoryJobQueue, MemoryObjectStorage,
    MemoryPublisher, MemoryRetryPolicy, MemoryStore,
};
use reporter_adapter_minijinja::MiniJinjaEngine;
use reporter_adapter_mongo::{
    GridFsStorage, MongoDataSource, MongoIdempotencyStore, MongoStore, MongoStoreConfig,
    MongoTenantRouter,
};
use reporter_adapter_pdf::{
    ChromiumOptions, ChromiumPdfRenderer, NativePdfOptions, NativePdfRenderer,
};
use reporter_adapter_postgres::{PostgresConfig, PostgresDataSource};
use reporter_adapter_rabbitmq::{
    RabbitJobConsumer, RabbitJobQueue, RabbitJobsConfig, RabbitPublisher, RabbitPublisherConfig,
};
use reporter_adapter_s3::{S3Config, S3ObjectStorage};
use reporter_ports::TenantId;
use reporter_ports::clock::SystemClock;
use reporter_ports::datasource::DataSourceId;
use reporter_ports::ports::{
    DataSource, EventPublisher, JobConsumer, JobQueue, ObjectStorage, Outbox, PdfRenderer,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What the process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// API, embedded worker and dispatcher.
    Serve,
    /// API and dispatcher.
    Api,
    /// Worker and dispatcher.
    Worker,
}

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

/// Everything a role needs.
pub struct Built {
    /// The application.
    pub app: Arc<App>,
    /// HTTP setup.
    pub http: HttpSetup,
    /// Development token (auth on, no key configured).
    pub dev_token: Option<String>,
    /// Keeps the example data directory alive.
    pub example_dir: Option<TempDirGuard>,
    /// One-line descriptions of the adapters in use.
    pub summary: Vec<String>,
    /// The outbox dispatcher, when publication is on (the caller runs it).
    pub dispatcher: Option<Dispatcher>,
    /// The worker, for the roles that run one (the caller runs it).
    pub worker: Option<Worker>,
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

/// Configured data sources and the example data directory guard.
type Sources = (Vec<Arc<dyn DataSource>>, Option<TempDirGuard>);

async fn data_sources(config: &Config, summary: &mut Vec<String>) -> anyhow::Result<Sources> {
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
            DataSourceSpec::Postgresql {
                host,
                port,
                user,
                password,
                database,
                schemas,
            } => {
                let mut c = PostgresConfig::new(id.clone(), database.clone());
                c.host = host.clone();
                c.port = *port;
                c.user = user.clone();
                c.password = password.clone();
                c.schemas = schemas.clone();
                let source = PostgresDataSource::new(c)
                    .map_err(|e| anyhow::anyhow!("data source '{id}': {e}"))?;
                sources.push(Arc::new(source));
                summary.push(format!(
                    "data source '{id}': PostgreSQL {host}:{port}/{database}"
                ));
            }
            DataSourceSpec::Mongodb { uri, database } => {
                let source = MongoDataSource::connect(id.clone(), uri, database)
                    .await
                    .map_err(|e| anyhow::anyhow!("data source '{id}': {e}"))?;
                sources.push(Arc::new(source));
                summary.push(format!("data source '{id}': MongoDB database '{database}'"));
            }
        }
    }
    Ok((sources, example_dir))
}

fn object_storage(
    config: &Config,
    mongo_db: Option<&mongodb::Database>,
    summary: &mut Vec<String>,
) -> anyhow::Result<Arc<dyn ObjectStorage>> {
    Ok(match &config.object_storage {
        ObjectStorageChoice::GridFs => {
            let db = mongo_db.context("OBJECT_STORAGE_BACKEND=gridfs needs MONGO_URI")?;
            summary.push(format!(
                "object storage: GridFS in database '{}'",
                db.name()
            ));
            Arc::new(GridFsStorage::new(db.clone()))
        }
        ObjectStorageChoice::Memory => {
            summary.push("object storage: in memory".to_owned());
            Arc::new(MemoryObjectStorage::new())
        }
        ObjectStorageChoice::Filesystem(root) => {
            summary.push(format!("object storage: {}", root.display()));
            Arc::new(LocalObjectStorage::new(root.clone()))
        }
        ObjectStorageChoice::S3(s) => {
            let mut c = S3Config::new(s.bucket.clone());
            c.endpoint = s.endpoint.clone();
            c.region = s.region.clone();
            c.access_key_id = s.access_key_id.clone();
            c.secret_access_key = s.secret_key.clone();
            c.allow_http = s.allow_http;
            c.virtual_hosted_style = !s.path_style;
            summary.push(format!("object storage: S3 bucket '{}'", s.bucket));
            Arc::new(
                S3ObjectStorage::new(c).map_err(|e| anyhow::anyhow!("S3 object storage: {e}"))?,
            )
        }
    })
}

fn pdf_renderer(config: &Config) -> anyhow::Result<Arc<dyn PdfRenderer>> {
    let w = &config.worker;
    Ok(match &w.pdf {
        PdfChoice::Native => Arc::new(
            NativePdfRenderer::new(NativePdfOptions {
                timeout: w.pdf_timeout,
                max_concurrency: w.pdf_pool,
                ..Default::default()
            })
            .map_err(|e| anyhow::anyhow!("PDF renderer: {e}"))?,
        ),
        PdfChoice::Chromium(path) => Arc::new(ChromiumPdfRenderer::new(ChromiumOptions {
            chromium_path: path.clone(),
            pool_size: w.pdf_pool,
            timeout: w.pdf_timeout,
            ..Default::default()
        })),
    })
}

fn rabbit_jobs_config(config: &Config) -> Option<RabbitJobsConfig> {
    match &config.worker.queue {
        JobQueueChoice::Memory => None,
        JobQueueChoice::Rabbit {
            uri,
            exchange,
            queue,
            key,
            dlq,
            dlx,
            prefetch,
        } => {
            let mut c = RabbitJobsConfig::new(uri.clone());
            c.exchange = exchange.clone();
            c.queue = queue.clone();
            c.routing_key = key.clone();
            c.dlq = dlq.clone();
            c.dead_letter_exchange = dlx.clone();
            c.retry_queue = format!("{queue}.retry");
            c.prefetch = *prefetch;
            c.max_retries = config.worker.max_attempts.saturating_sub(1);
            Some(c)
        }
    }
}

/// Builds every adapter the role needs.
pub async fn build(config: &Config, role: Role) -> anyhow::Result<Built> {
    let mut summary = Vec::new();
    let rabbit_jobs = rabbit_jobs_config(config);
    if role != Role::Serve && rabbit_jobs.is_none() {
        anyhow::bail!(
            "`reporter {}` needs RABBITMQ_URI: the API and the worker exchange jobs through RabbitMQ (use `reporter serve` for one process)",
            if role == Role::Api { "api" } else { "worker" }
        );
    }
    let stores = stores(config, &mut summary).await?;
    if role != Role::Serve && matches!(stores.kind, StoreKind::Memory) {
        anyhow::bail!(
            "`reporter api` and `reporter worker` share reports through MongoDB; set MONGO_URI"
        );
    }
    let storage = object_storage(config, stores.database.as_ref(), &mut summary)?;
    let mongo_database = stores.database.clone();
    let (sources, example_dir) = data_sources(config, &mut summary).await?;
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

    // Jobs: RabbitMQ when configured, else an in-process queue for the embedded worker.
    let (jobs, consumer): (Arc<dyn JobQueue>, Option<Arc<dyn JobConsumer>>) = match &rabbit_jobs {
        Some(c) => {
            let q = RabbitJobQueue::connect(c.clone())
                .await
                .map_err(|e| anyhow::anyhow!("RABBITMQ_URI (job queue): {e}"))?;
            summary.push(format!("report jobs: RabbitMQ queue '{}'", c.queue));
            let consumer: Option<Arc<dyn JobConsumer>> = if role == Role::Api {
                None
            } else {
                Some(Arc::new(
                    RabbitJobConsumer::connect(c.clone())
                        .await
                        .map_err(|e| anyhow::anyhow!("RABBITMQ_URI (job consumer): {e}"))?,
                ))
            };
            (Arc::new(q), consumer)
        }
        None => {
            let (q, rx) = MemoryJobQueue::new(10_000);
            let policy = MemoryRetryPolicy {
                max_attempts: config.worker.max_attempts,
                ..Default::default()
            };
            summary.push("report jobs: in-process queue with an embedded worker".to_owned());
            (
                Arc::new(q),
                Some(Arc::new(MemoryJobConsumer::new(rx, policy))),
            )
        }
    };

    let engine: Arc<dyn reporter_ports::ports::TemplateEngine> = Arc::new(MiniJinjaEngine::new());
    let ports = Ports {
        templates: stores.templates,
        deadlines: stores.deadlines,
        reports: stores.reports,
        uow: stores.uow,
        outbox: stores.outbox.clone(),
        storage: storage.clone(),
        idempotency: stores.idempotency,
        jobs,
        engine: engine.clone(),
        clock: Arc::new(SystemClock),
    };
    let settings = Settings {
        max_page_limit: config.max_pagination_limit,
        layout: KeyLayout {
            tenant_prefix: matches!(config.tenancy, Tenancy::Multi),
        },
    };
    let registry = prometheus::Registry::new();
    let outbox: Arc<dyn Outbox> = stores.outbox;
    let (emitter, dispatcher, memory_broker) =
        streaming(config, outbox.clone(), &registry, &mut summary).await?;
    let app = Arc::new(App::new(ports, catalog.clone(), emitter, settings));
    let streaming_view = StreamingView {
        memory_broker,
        exchange: config.streaming.exchange.clone(),
        outbox: outbox.clone(),
    };

    let pdf = pdf_renderer(config)?;
    let worker = match (role, consumer) {
        (Role::Api, _) | (_, None) => None,
        (_, Some(consumer)) => {
            summary.push(format!(
                "worker: {} job(s) at once, PDF via {}",
                config.worker.settings.concurrency,
                match config.worker.pdf {
                    PdfChoice::Native => "the built-in renderer",
                    PdfChoice::Chromium(_) => "headless Chromium",
                }
            ));
            Some(Worker {
                app: app.clone(),
                consumer,
                engine: engine.clone(),
                pdf: pdf.clone(),
                settings: config.worker.settings.clone(),
            })
        }
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
    if let Some(db) = mongo_database.clone() {
        readiness = readiness.with(
            "mongodb",
            probe(move || {
                let db = db.clone();
                async move {
                    db.run_command(mongodb::bson::doc! { "ping": 1 })
                        .await
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                }
            }),
        );
    }
    let s = storage.clone();
    readiness = readiness.with(
        "objectStorage",
        probe(move || {
            let s = s.clone();
            async move { s.check().await.map_err(|e| e.to_string()) }
        }),
    );
    if worker.is_some() {
        let p = pdf.clone();
        readiness = readiness.with(
            "pdfRenderer",
            probe(move || {
                let p = p.clone();
                async move { p.check().await.map_err(|e| e.to_string()) }
            }),
        );
    }
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
        worker,
    })
}

type StreamingParts = (Emitter, Option<Dispatcher>, Option<MemoryPublisher>);

/// Builds event publication: the broker adapter, the breaker, the direct-publish hook and the
/// dispatcher. With `STREAMING_ENABLED=false` the emitter writes nothing.
async fn streaming(
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
        EventBroker::Amqp(uris) => {
            let mut last_err = None;
            let mut connected = None;
            for uri in uris {
                let mut c = RabbitPublisherConfig::new(uri.clone());
                c.exchange = s.exchange.clone();
                if let Some(ae) = c.alternate_exchange.as_mut() {
                    ae.exchange = s.alternate_exchange.clone();
                    ae.queue = s.alternate_exchange.clone();
                }
                c.publish_timeout = s.publish_timeout;
                c.max_in_flight = s.dispatch_batch.max(16);
                match RabbitPublisher::connect(c).await {
                    Ok(p) => {
                        connected = Some(p);
                        break;
                    }
                    Err(e) => last_err = Some(format!("{}: {e}", crate::config::redact(uri))),
                }
            }
            let Some(p) = connected else {
                anyhow::bail!(
                    "STREAMING_BROKERS: no broker answered ({})",
                    last_err.unwrap_or_default()
                );
            };
            summary.push(format!(
                "event publication: RabbitMQ exchange '{}' (unroutable messages kept in '{}')",
                s.exchange, s.alternate_exchange
            ));
            (Arc::new(p), None)
        }
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
            transient_backoff_cap: std::time::Duration::from_secs(5),
        },
    };
    Ok((Emitter::enabled_with(hook), Some(dispatcher), memory))
}

enum StoreKind {
    Memory,
    Mongo,
}

/// The record stores, the outbox and the idempotency store, all on one backend.
struct Stores {
    kind: StoreKind,
    templates: Arc<dyn reporter_ports::ports::TemplateRepository>,
    deadlines: Arc<dyn reporter_ports::ports::DeadlineRepository>,
    reports: Arc<dyn reporter_ports::ports::ReportRepository>,
    uow: Arc<dyn reporter_ports::ports::UnitOfWorkPort>,
    outbox: Arc<dyn Outbox>,
    idempotency: Arc<dyn reporter_ports::ports::IdempotencyStore>,
    /// The deployment database (GridFS lives there).
    database: Option<mongodb::Database>,
}

/// The durable outbox of a MongoDB deployment (for `reporter outbox redrive`); `None` when
/// state is in memory, where only the running service can reach its outbox.
pub async fn durable_outbox(config: &Config) -> anyhow::Result<Option<Arc<dyn Outbox>>> {
    if config.mongo.is_none() {
        return Ok(None);
    }
    let mut summary = Vec::new();
    Ok(Some(stores(config, &mut summary).await?.outbox))
}

async fn stores(config: &Config, summary: &mut Vec<String>) -> anyhow::Result<Stores> {
    let Some(m) = &config.mongo else {
        let store = Arc::new(MemoryStore::new());
        summary.push("state, outbox: in memory (lost on exit)".to_owned());
        return Ok(Stores {
            kind: StoreKind::Memory,
            templates: store.clone(),
            deadlines: store.clone(),
            reports: store.clone(),
            uow: store.clone(),
            outbox: store,
            idempotency: Arc::new(MemoryIdempotencyStore::new()),
            database: None,
        });
    };
    let client = m
        .connection
        .client()
        .await
        .map_err(|e| anyhow::anyhow!("MONGO_URI: {e}"))?;
    let config_m = MongoStoreConfig {
        outbox_retention: config
            .streaming
            .outbox_retention
            .to_std()
            .unwrap_or(std::time::Duration::from_secs(86_400)),
        ..Default::default()
    };
    let database = client.database(&m.database);
    match &config.tenancy {
        Tenancy::Single(_) => {
            let store = Arc::new(
                MongoStore::from_client(client.clone(), &m.database, config_m)
                    .await
                    .map_err(|e| anyhow::anyhow!("MongoDB: {e}"))?,
            );
            let idem = MongoIdempotencyStore::new(&database)
                .await
                .map_err(|e| anyhow::anyhow!("MongoDB: {e}"))?;
            summary.push(format!("state, outbox: MongoDB database '{}'", m.database));
            Ok(Stores {
                kind: StoreKind::Mongo,
                templates: store.clone(),
                deadlines: store.clone(),
                reports: store.clone(),
                uow: store.clone(),
                outbox: store,
                idempotency: Arc::new(idem),
                database: Some(database),
            })
        }
        Tenancy::Multi => {
            // Refuse a standalone server now rather than on the first request.
            let hello = client
                .database("admin")
                .run_command(mongodb::bson::doc! { "hello": 1 })
                .await
                .map_err(|e| anyhow::anyhow!("MONGO_URI: {e}"))?;
            reporter_adapter_mongo::check_transaction_support(&hello)
                .map_err(|e| anyhow::anyhow!("MongoDB: {e}"))?;
            let router = Arc::new(MongoTenantRouter::new(
                client.clone(),
                &m.tenant_prefix,
                &m.database,
                config_m,
            ));
            summary.push(format!(
                "state, outbox: MongoDB, one database per tenant ('{}_t_…'), registry in '{}'",
                m.tenant_prefix, m.database
            ));
            Ok(Stores {
                kind: StoreKind::Mongo,
                templates: router.clone(),
                deadlines: router.clone(),
                reports: router.clone(),
                uow: router.clone(),
                outbox: router.clone(),
                idempotency: router,
                database: Some(database),
            })
        }
    }
}
