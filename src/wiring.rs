//! Builds the application, the worker and the HTTP layer from a validated [`Config`]: every
//! adapter is chosen here and nowhere else.
use crate::app::{App, DataSourceCatalog, Emitter, KeyLayout, Ports, Settings};
use crate::config::{
    Config, DataSourceSpec, EventBroker, JobQueueChoice, ObjectStorageChoice, PdfChoice, RootCert,
    Tenancy,
};
use crate::http::auth::Authenticator;
use crate::http::ops::{CheckProbe, CheckStatus, ProbeOutcome};
use crate::http::streaming::StreamingView;
use crate::http::{HttpSetup, Probe};
use crate::streaming::{
    BreakerSettings, BreakerState, CircuitBreaker, Delivery, DeliverySetup, Dispatcher,
    DispatcherSettings, StreamingMetrics,
};
use crate::worker::{Worker, WorkerMetrics};
use anyhow::Context;
use reporter_adapter_ammonia::{AllowedOrigins, AmmoniaSanitizer};
use reporter_adapter_fs::{FileDataSource, LocalObjectStorage};
use reporter_adapter_memory::{ByteBudget, MemoryObjectStorage, MemoryPublisher, MemoryStore};
use reporter_adapter_mongo::{
    CrmSettings, DeploymentDatabase, MongoDataSource, MongoIdempotencyStore, MongoStore,
    MongoStoreConfig, MongoTenantRouter, TransactionCheck,
};
use reporter_adapter_mysql::{MysqlConfig, MysqlDataSource};
use reporter_adapter_pdf::{
    ChromiumOptions, ChromiumPdfRenderer, NativePdfOptions, NativePdfRenderer, PdfChildCommand,
};
use reporter_adapter_pongo2::Pongo2Engine;
use reporter_adapter_postgres::{PostgresConfig, PostgresDataSource};
use reporter_adapter_rabbitmq::{RabbitJobsConfig, RabbitPublisher, RabbitPublisherConfig};
use reporter_adapter_s3::{S3Config, S3ObjectStorage};
use reporter_adapter_sandbox::{ChildLimits, PoolConfig, ProcessPool, ProcessTemplateRunner};
use reporter_adapter_sqlserver::{SqlServerConfig, SqlServerDataSource};
use reporter_ports::clock::{Clock, SystemClock};
use reporter_ports::datasource::DataSourceId;
use reporter_ports::ports::{DataSource, EventPublisher, ObjectStorage, Outbox, PdfRenderer};
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod dev_token;
mod jobs;
mod rate_limit;
mod readiness;
mod sandbox_check;

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
    /// Development token (auth on, no key configured); printed in the banner on purpose.
    pub dev_token: Option<reporter_ports::Secret>,
    /// Keeps the data sources' private directory (example data, inline CA files) alive.
    pub example_dir: Option<TempDirGuard>,
    /// One-line descriptions of the adapters in use.
    pub summary: Vec<String>,
    /// The outbox dispatcher, when publication is on (the caller runs it).
    pub dispatcher: Option<Dispatcher>,
    /// The worker, for the roles that run one (the caller runs it).
    pub worker: Option<Worker>,
    /// The template sandbox (the caller warms up the pools its role uses).
    pub sandbox: ProcessTemplateRunner,
    /// The in-memory broker, when it is the configured one (tests drive its failures).
    pub memory_broker: Option<MemoryPublisher>,
}

/// The hidden subcommand that runs a template sandbox child.
pub const SANDBOX_SUBCOMMAND: &str = "template-sandbox";
/// Stack of the thread that parses or renders in a sandbox child.
pub const SANDBOX_STACK_BYTES: u64 = 64 * 1024 * 1024;
/// Longest wait for a sandbox child to start and confine itself.
const SANDBOX_START_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The template sandbox: a parse pool (uploads) and a render pool (the worker), children of
/// `TEMPLATE_SANDBOX_EXE` (default: this binary) running [`SANDBOX_SUBCOMMAND`].
fn template_runner(config: &Config) -> anyhow::Result<ProcessTemplateRunner> {
    let s = &config.sandbox;
    let exe = child_exe(config)?;
    let mut args = vec![SANDBOX_SUBCOMMAND.to_owned()];
    args.extend(
        s.html_allowed_origins
            .iter()
            .map(|o| format!("{ALLOWED_ORIGIN_ARG}{o}")),
    );
    let pool = |name, memory_bytes, cpu_seconds, time_bound, queue_timeout| {
        ProcessPool::new(PoolConfig {
            name,
            exe: exe.clone(),
            args: args.clone(),
            size: s.pool_size,
            memory_bytes,
            cpu_seconds,
            stack_bytes: SANDBOX_STACK_BYTES,
            max_output_bytes: s.max_output_bytes,
            time_bound,
            queue_timeout,
            start_timeout: SANDBOX_START_TIMEOUT,
        })
    };
    let parse_cpu = s.parse_timeout.as_secs_f64().ceil().max(1.0) as u64;
    Ok(ProcessTemplateRunner::new(
        pool(
            "parse",
            s.parse_memory_bytes,
            parse_cpu,
            s.parse_timeout,
            Some(s.parse_timeout),
        ),
        pool(
            "render",
            s.render_memory_bytes,
            s.render_cpu_seconds,
            s.render_timeout,
            None,
        ),
    ))
}

/// A sandbox child's argument naming one origin html reports may load from
/// (`REPORT_HTML_ALLOWED_ORIGINS`), before its limits; repeated for each origin.
const ALLOWED_ORIGIN_ARG: &str = "--html-allowed-origin=";

/// The sandbox pools `role` uses: upload parses (not the worker), renders (not the API).
pub fn sandbox_pools(sandbox: &ProcessTemplateRunner, role: Role) -> Vec<ProcessPool> {
    let mut pools = Vec::new();
    if role != Role::Worker {
        pools.push(sandbox.parse_pool().clone());
    }
    if role != Role::Api {
        pools.push(sandbox.render_pool().clone());
    }
    pools
}

/// The body of `reporter template-sandbox …`: one sandbox child with the template engine and
/// the HTML sanitizer (see `reporter_adapter_sandbox::child`), which allows the origins of
/// its `--html-allowed-origin=` arguments.
pub fn template_sandbox_child(args: &[String]) -> std::process::ExitCode {
    let (origins, limits): (Vec<&String>, Vec<&String>) =
        args.iter().partition(|a| a.starts_with(ALLOWED_ORIGIN_ARG));
    let origins: Vec<&str> = origins
        .iter()
        .filter_map(|a| a.strip_prefix(ALLOWED_ORIGIN_ARG))
        .collect();
    let parsed = AllowedOrigins::parse(&origins)
        .map_err(|e| e.to_string())
        .and_then(|o| Ok((o, ChildLimits::parse_args(limits.into_iter().cloned())?)));
    match parsed {
        Ok((origins, limits)) => reporter_adapter_sandbox::child::run(
            &Pongo2Engine::new(),
            &AmmoniaSanitizer::with_allowed_origins(origins),
            &limits,
            Some(&crate::sandbox_warm_up::WARM_UP),
        ),
        Err(e) => {
            eprintln!(
                "reporter {SANDBOX_SUBCOMMAND}: {e} (this subcommand is started by the service itself)"
            );
            std::process::ExitCode::from(2)
        }
    }
}

/// The hidden subcommand that runs one PDF conversion in a bounded child.
pub const PDF_SUBCOMMAND: &str = "pdf-render";

/// The body of `reporter pdf-render …`: one native PDF conversion in a child under OS limits
/// (see `reporter_adapter_pdf::child`).
pub fn pdf_render_child(args: &[String]) -> std::process::ExitCode {
    reporter_adapter_pdf::child::run(args.iter().cloned())
}

/// The program of the service's children (template sandbox, native PDF):
/// `TEMPLATE_SANDBOX_EXE`, default this binary.
fn child_exe(config: &Config) -> anyhow::Result<PathBuf> {
    match &config.sandbox.exe {
        Some(p) => Ok(p.clone()),
        None => std::env::current_exe()
            .context("locating this binary for the child processes (set TEMPLATE_SANDBOX_EXE)"),
    }
}

/// Files the data sources read at run time (the example data set, inline CA certificates),
/// in one private directory created on first use and removed with its [`TempDirGuard`].
#[derive(Default)]
struct Scratch(Option<TempDirGuard>);

impl Scratch {
    fn dir(&mut self) -> anyhow::Result<PathBuf> {
        if let Some(g) = &self.0 {
            return Ok(g.0.clone());
        }
        let root = std::env::temp_dir().join(format!("reporter-{}", uuid::Uuid::now_v7()));
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder
            .create(&root)
            .with_context(|| format!("creating {}", root.display()))?;
        self.0 = Some(TempDirGuard(root.clone()));
        Ok(root)
    }

    fn example(&mut self) -> anyhow::Result<PathBuf> {
        let dir = self.dir()?.join("bank");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        for (name, content) in EXAMPLE_TABLES {
            std::fs::write(dir.join(name), content).with_context(|| format!("writing {name}"))?;
        }
        Ok(dir)
    }

    /// The CA file of source `id`: the configured file, or the inline PEM written to
    /// `ca-<id>.pem` here (readable by this user only).
    fn root_cert(
        &mut self,
        id: &DataSourceId,
        cert: Option<&RootCert>,
    ) -> anyhow::Result<Option<PathBuf>> {
        match cert {
            None => Ok(None),
            Some(RootCert::File(path)) => Ok(Some(path.clone())),
            Some(RootCert::Pem(pem)) => {
                let path = self.dir()?.join(format!("ca-{id}.pem"));
                let mut options = std::fs::OpenOptions::new();
                options.write(true).create_new(true);
                #[cfg(unix)]
                std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
                let mut file = options
                    .open(&path)
                    .with_context(|| format!("creating {}", path.display()))?;
                std::io::Write::write_all(&mut file, pem)
                    .with_context(|| format!("writing {}", path.display()))?;
                Ok(Some(path))
            }
        }
    }
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
    let mut scratch = Scratch::default();
    if config.data_sources.example {
        let dir = scratch.example()?;
        let id = DataSourceId::parse("bank").context("example id")?;
        sources.push(open_file_source(&id, &dir)?);
        summary.push("data source 'bank': bundled example data set".to_owned());
    }
    for (id, spec) in &config.data_sources.sources {
        let (source, line) = open_source(id, spec, &mut scratch)
            .await
            .map_err(|e| anyhow::anyhow!("data source '{id}': {e}"))?;
        sources.push(source);
        summary.push(format!("data source '{id}': {line}"));
    }
    Ok((sources, scratch.0))
}

/// The config of a SQL adapter (`PostgresConfig`, `MysqlConfig`, `SqlServerConfig`: the same
/// connection fields) from a parsed `SqlConnection`.
macro_rules! sql_config {
    ($config:ty, $id:expr, $m:expr, $scratch:expr) => {{
        let mut c = <$config>::new($id.clone(), $m.database.clone());
        c.host = $m.host.clone();
        c.port = $m.port;
        c.user = $m.user.clone();
        c.password = $m.password.clone();
        c.schemas = $m.schemas.clone();
        c.sslmode = $m.tls.mode;
        c.ssl_root_cert = $scratch.root_cert($id, $m.tls.root_cert.as_ref())?;
        // The row limit is `ENGINE_MAX_ROWS`, sent with every query: no second, lower cap of
        // the adapter's own (100,000) may end a report that setting allows.
        c.max_rows = usize::MAX;
        c
    }};
}

/// The data source `spec` describes, and its line of the start-up summary.
async fn open_source(
    id: &DataSourceId,
    spec: &DataSourceSpec,
    scratch: &mut Scratch,
) -> anyhow::Result<(Arc<dyn DataSource>, String)> {
    let place = |kind: &str, host: &str, port: u16, db: &str| format!("{kind} {host}:{port}/{db}");
    Ok(match spec {
        DataSourceSpec::File { path } => (
            open_file_source(id, path)?,
            format!("files in {}", path.display()),
        ),
        DataSourceSpec::Postgresql(m) => (
            Arc::new(PostgresDataSource::new(sql_config!(
                PostgresConfig,
                id,
                m,
                scratch
            ))?),
            place("PostgreSQL", &m.host, m.port, &m.database),
        ),
        DataSourceSpec::Mysql(m) => (
            Arc::new(MysqlDataSource::new(sql_config!(
                MysqlConfig,
                id,
                m,
                scratch
            ))?),
            place("MySQL", &m.host, m.port, &m.database),
        ),
        DataSourceSpec::Sqlserver(m) => (
            Arc::new(SqlServerDataSource::new(sql_config!(
                SqlServerConfig,
                id,
                m,
                scratch
            ))?),
            place("SQL Server", &m.host, m.port, &m.database) + " (untested here)",
        ),
        DataSourceSpec::Mongodb { uri, database, crm } => {
            let source = MongoDataSource::connect(id.clone(), uri.expose(), database).await?;
            match crm {
                None => (Arc::new(source), format!("MongoDB database '{database}'")),
                Some(crm) => {
                    let settings = CrmSettings::new(
                        crm.encrypt_key.as_deref(),
                        crm.hash_key.as_deref(),
                        crm.organization_id.as_deref(),
                    )?;
                    let keys = match (crm.encrypt_key.is_some(), crm.hash_key.is_some()) {
                        (true, true) => "both keys",
                        (true, false) => "no hash key: filters on encrypted fields refused",
                        (false, true) => "no encryption key: encrypted fields fail their section",
                        (false, false) => "no keys: encrypted fields fail their section",
                    };
                    let orgs = crm.organization_id.as_deref().map_or_else(
                        || "every organization".to_owned(),
                        |o| format!("organization {o}"),
                    );
                    (
                        Arc::new(source.with_crm(settings)),
                        format!("MongoDB database '{database}', Midaz CRM ({orgs}; {keys})"),
                    )
                }
            }
        }
    })
}

/// The in-memory object storage, its report artifacts bounded to `max_bytes` and each
/// tenant's to `tenant_max_bytes` (see [`ByteBudget`]; each eviction logged and counted in
/// `reporter_object_storage_evicted_total`).
fn memory_storage(
    max_bytes: Option<u64>,
    tenant_max_bytes: Option<u64>,
    registry: &prometheus::Registry,
    summary: &mut Vec<String>,
) -> anyhow::Result<Arc<dyn ObjectStorage>> {
    if max_bytes.is_none() && tenant_max_bytes.is_none() {
        summary.push("object storage: in memory, unbounded".to_owned());
        return Ok(Arc::new(MemoryObjectStorage::new()));
    }
    let evicted = prometheus::IntCounter::new(
        "reporter_object_storage_evicted_total",
        "Report artifacts the in-memory object storage evicted to stay within \
         OBJECT_STORAGE_MEMORY_MAX_BYTES or a tenant's OBJECT_STORAGE_MEMORY_TENANT_MAX_BYTES \
         (their downloads answer 404 TPL-0035)",
    )?;
    registry.register(Box::new(evicted.clone()))?;
    let max_bytes = max_bytes.unwrap_or(u64::MAX);
    let mib = |b: u64| {
        if b == u64::MAX {
            "unbounded".to_owned()
        } else {
            format!("{} MiB", b >> 20)
        }
    };
    summary.push(format!(
        "object storage: in memory, report artifacts up to {} in all, {} per tenant (each tenant's oldest evicted first)",
        mib(max_bytes),
        mib(tenant_max_bytes.unwrap_or(max_bytes)),
    ));
    Ok(Arc::new(MemoryObjectStorage::bounded(ByteBudget {
        max_bytes,
        owner_max_bytes: tenant_max_bytes.unwrap_or(max_bytes),
        evictable: KeyLayout::is_report_artifact,
        owner: KeyLayout::artifact_owner,
        on_evict: Arc::new(move |key, bytes| {
            evicted.inc();
            tracing::warn!(
                key,
                bytes,
                "in-memory object storage full: evicted a report artifact (the oldest of its tenant)"
            );
        }),
    })))
}

fn object_storage(
    config: &Config,
    mongo_db: Option<&DeploymentDatabase>,
    registry: &prometheus::Registry,
    summary: &mut Vec<String>,
) -> anyhow::Result<Arc<dyn ObjectStorage>> {
    Ok(match &config.object_storage {
        ObjectStorageChoice::GridFs => {
            let db = mongo_db.context("OBJECT_STORAGE_BACKEND=gridfs needs MONGO_URI")?;
            summary.push(format!(
                "object storage: GridFS in database '{}'",
                db.name()
            ));
            Arc::new(db.gridfs())
        }
        ObjectStorageChoice::Memory {
            max_artifact_bytes,
            tenant_max_bytes,
        } => memory_storage(*max_artifact_bytes, *tenant_max_bytes, registry, summary)?,
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

/// The PDF renderer of the configuration, and the same renderer when it is the native one
/// (whose children report their confinement).
type PdfRenderers = (Arc<dyn PdfRenderer>, Option<Arc<NativePdfRenderer>>);

fn pdf_renderer(config: &Config) -> anyhow::Result<PdfRenderers> {
    let w = &config.worker;
    Ok(match &w.pdf {
        PdfChoice::Native => {
            let native = Arc::new(
                NativePdfRenderer::new(
                    NativePdfOptions {
                        timeout: w.pdf_timeout,
                        max_concurrency: w.pdf_pool,
                        memory_bytes: w.pdf_memory_bytes,
                        ..Default::default()
                    },
                    PdfChildCommand {
                        exe: child_exe(config)?,
                        args: vec![PDF_SUBCOMMAND.to_owned()],
                    },
                )
                .map_err(|e| anyhow::anyhow!("PDF renderer: {e}"))?,
            );
            (native.clone(), Some(native))
        }
        PdfChoice::Chromium(path) => (
            Arc::new(ChromiumPdfRenderer::new(ChromiumOptions {
                chromium_path: path.clone(),
                pool_size: w.pdf_pool,
                timeout: w.pdf_timeout,
                ..Default::default()
            })),
            None,
        ),
    })
}

/// Starts one small conversion in the background, so that the PDF children's confinement is
/// logged at start-up (as a warning naming what is missing) and `/readyz` shows it.
fn probe_pdf_confinement(native: Arc<NativePdfRenderer>) {
    tokio::spawn(async move {
        if let Err(e) = native.probe_confinement().await {
            tracing::warn!(error = %e, "the pdf children's confinement could not be probed");
        }
    });
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
            let mut c = RabbitJobsConfig::new(uri.expose());
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
    check_role_transport(role, rabbit_jobs.is_some())?;
    let stores = stores(config, &mut summary).await?;
    check_role_store(role, &stores.kind)?;
    let registry = prometheus::Registry::new();
    crate::telemetry::otel::export_registry(&registry);
    let storage = object_storage(config, stores.database.as_ref(), &registry, &mut summary)?;
    let (sources, example_dir) = data_sources(config, &mut summary).await?;
    let catalog = DataSourceCatalog::new(sources);
    let (generated_secret, dev_token) = dev_token::dev_credentials(config)?;
    let authenticator = Authenticator::new(
        &config.auth,
        config.tenancy.clone(),
        generated_secret.as_ref().map(|s| s.expose().as_bytes()),
    )
    .map_err(|e| anyhow::anyhow!("auth: {e}"))?;
    let transport = jobs::job_transport(config, role, rabbit_jobs.as_ref(), &mut summary).await?;
    let sandbox = template_runner(config)?;
    summary.push(sandbox_summary(config));
    let runner: Arc<dyn reporter_ports::ports::TemplateRunner> = Arc::new(sandbox.clone());
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let outbox: Arc<dyn Outbox> = stores.outbox.clone();
    let (emitter, dispatcher, memory_broker, events_check) = streaming(
        config,
        outbox.clone(),
        clock.clone(),
        &registry,
        &mut summary,
    )
    .await?;
    let ports = Ports {
        templates: stores.templates,
        deadlines: stores.deadlines,
        reports: stores.reports,
        uow: stores.uow,
        outbox: stores.outbox,
        storage: storage.clone(),
        idempotency: stores.idempotency,
        jobs: transport.jobs,
        runner: runner.clone(),
        clock,
        deliveries: memory_broker
            .clone()
            .map(|b| Arc::new(b) as Arc<dyn reporter_ports::ports::DeliveryLog>),
    };
    let settings = Settings {
        max_page_limit: config.max_pagination_limit,
        layout: KeyLayout {
            tenant_prefix: matches!(config.tenancy, Tenancy::Multi),
        },
    };
    let (pdf, native_pdf) = pdf_renderer(config)?;
    let previewer = crate::worker::Previewer {
        catalog: catalog.clone(),
        runner: runner.clone(),
        pdf: pdf.clone(),
        settings: config.worker.settings.clone(),
    };
    let app = Arc::new(
        App::new(ports, catalog.clone(), emitter, settings)
            .with_preview(Arc::new(previewer), config.preview),
    );
    let worker = match (role, transport.consumer) {
        (Role::Api, _) | (_, None) => None,
        (_, Some(consumer)) => {
            summary.push(worker_summary(config));
            Some(Worker {
                app: app.clone(),
                consumer,
                runner: runner.clone(),
                pdf: pdf.clone(),
                settings: config.worker.settings.clone(),
                metrics: WorkerMetrics::register(&registry).context("worker metrics")?,
            })
        }
    };
    if let (Some(_), Some(native)) = (&worker, &native_pdf) {
        probe_pdf_confinement(native.clone());
    }
    let limiter = rate_limit::rate_limiter(config, role != Role::Worker, &mut summary)?;
    let readiness = readiness::readiness(readiness::Dependencies {
        rate_limiter: limiter
            .as_ref()
            .map(|(l, p)| rate_limit::rate_limiter_check(l.clone(), p.fail_open)),
        deployment_mode: config.deployment_mode.as_str(),
        outbox,
        database: stores.database,
        storage,
        pdf: worker.as_ref().map(|_| pdf.clone()),
        native_pdf: worker.as_ref().and(native_pdf.clone()),
        rabbit: transport.rabbit,
        events: events_check,
        sandbox: sandbox_pools(&sandbox, role),
        catalog: &catalog,
        clock: app.ports().clock.clone(),
    });
    Ok(Built {
        app,
        http: HttpSetup {
            rate_limit: limiter,
            ..http_setup(
                config,
                authenticator,
                readiness,
                registry,
                dev_token.as_ref(),
            )
        },
        memory_broker,
        dev_token,
        example_dir,
        summary,
        dispatcher,
        worker,
        sandbox,
    })
}

/// The HTTP layer's part of the wiring.
fn http_setup(
    config: &Config,
    authenticator: Authenticator,
    readiness: crate::http::Readiness,
    registry: prometheus::Registry,
    dev_token: Option<&reporter_ports::Secret>,
) -> HttpSetup {
    HttpSetup {
        authenticator: Arc::new(authenticator),
        readiness,
        registry,
        max_body_bytes: config.max_request_body_bytes,
        body_read_timeout: config.http.body_read_timeout,
        idempotency_ttl: config.idempotency_ttl,
        idempotency_in_flight: config.idempotency_in_flight,
        cors_origins: config.cors_origins.clone(),
        original: config.original.clone(),
        streaming: StreamingView {
            exchange: config.streaming.exchange.clone(),
        },
        console: crate::http::console::ConsoleSetup {
            enabled: config.console_enabled,
            dev_token: dev_token
                .map(|t| Arc::new(reporter_ports::Secret::new(t.expose().to_owned()))),
        },
        rate_limit: None,
    }
}

/// `reporter api` and `reporter worker` MUST be refused without RabbitMQ (the jobs go
/// through it), before anything connects.
fn check_role_transport(role: Role, rabbit_jobs: bool) -> anyhow::Result<()> {
    if role != Role::Serve && !rabbit_jobs {
        anyhow::bail!(
            "`reporter {}` needs RABBITMQ_URI: the API and the worker exchange jobs through RabbitMQ (use `reporter serve` for one process)",
            if role == Role::Api { "api" } else { "worker" }
        );
    }
    Ok(())
}

/// `reporter api` and `reporter worker` MUST be refused without MongoDB (the reports are
/// shared through it).
fn check_role_store(role: Role, stores: &StoreKind) -> anyhow::Result<()> {
    if role != Role::Serve && matches!(stores, StoreKind::Memory) {
        anyhow::bail!(
            "`reporter api` and `reporter worker` share reports through MongoDB; set MONGO_URI"
        );
    }
    Ok(())
}

/// The start-up banner's line about the template sandbox.
fn sandbox_summary(config: &Config) -> String {
    let s = &config.sandbox;
    format!(
        "template sandbox: {} child process(es) per pool; render {} MiB / {} CPU s / {:?}, upload parse {} MiB / {:?}",
        s.pool_size,
        s.render_memory_bytes >> 20,
        s.render_cpu_seconds,
        s.render_timeout,
        s.parse_memory_bytes >> 20,
        s.parse_timeout,
    )
}

/// The start-up banner's line about the worker.
fn worker_summary(config: &Config) -> String {
    format!(
        "worker: {} job(s) at once, at most {} of one tenant, PDF via {}",
        config.worker.settings.concurrency,
        config.worker.settings.max_jobs_per_tenant,
        match config.worker.pdf {
            PdfChoice::Native => "the built-in renderer",
            PdfChoice::Chromium(_) => "headless Chromium",
        }
    )
}

type StreamingParts = (
    Emitter,
    Option<Dispatcher>,
    Option<MemoryPublisher>,
    Option<CheckProbe>,
);

/// Builds event publication: the broker adapter, the breaker, the direct-publish hook and the
/// dispatcher. With `STREAMING_ENABLED=false` the emitter writes nothing.
async fn streaming(
    config: &Config,
    outbox: Arc<dyn Outbox>,
    clock: Arc<dyn Clock>,
    registry: &prometheus::Registry,
    summary: &mut Vec<String>,
) -> anyhow::Result<StreamingParts> {
    let s = &config.streaming;
    if !s.enabled {
        summary.push(s.describe());
        return Ok((Emitter::disabled(), None, None, None));
    }
    let metrics = StreamingMetrics::register(registry).context("streaming metrics")?;
    let mut rabbit: Option<RabbitPublisher> = None;
    let wake = Arc::new(tokio::sync::Notify::new());
    let broker_back = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let window = s.dispatch_batch.max(16);
    let (publisher, memory): (Arc<dyn EventPublisher>, Option<MemoryPublisher>) = match &s.broker {
        EventBroker::Memory => {
            let p = MemoryPublisher::new();
            summary.push(format!(
                "{} (GET /v1/streaming/deliveries shows what was published)",
                s.describe()
            ));
            (Arc::new(p.clone()), Some(p))
        }
        EventBroker::Amqp(uris) => {
            let p = amqp_publisher(s, uris, window).await?;
            // The broker's return wakes the dispatcher and ends its pause at once.
            let (w, back) = (wake.clone(), broker_back.clone());
            p.on_reconnect(Arc::new(move || {
                back.store(true, std::sync::atomic::Ordering::Release);
                w.notify_one();
            }));
            summary.push(format!(
                "{} (unroutable messages kept in '{}', at most {} for {} s)",
                s.describe(),
                s.alternate_exchange,
                s.unroutable_max_length,
                s.unroutable_ttl.as_secs()
            ));
            rabbit = Some(p.clone());
            (Arc::new(p), None)
        }
    };
    let breaker = Arc::new(CircuitBreaker::new(BreakerSettings {
        failure_ratio: s.cb_failure_ratio,
        min_requests: s.cb_min_requests,
        open_for: s.cb_open,
    }));
    let check = events_check(rabbit, breaker.clone());
    let (hook, lane) = Delivery::new(DeliverySetup {
        publisher: publisher.clone(),
        outbox: outbox.clone(),
        breaker,
        metrics: metrics.clone(),
        wake: wake.clone(),
        publish_timeout: s.publish_timeout,
        capacity: window,
        clock: clock.clone(),
    });
    let hook = Arc::new(hook);
    let dispatcher = Dispatcher {
        outbox,
        publisher,
        metrics,
        wake,
        broker_back,
        lane: Some(lane),
        settings: dispatcher_settings(s),
        clock,
    };
    Ok((
        Emitter::enabled_with(hook),
        Some(dispatcher),
        memory,
        Some(check),
    ))
}

/// A publisher on the first of `uris` that accepts a connection (exchange, alternate
/// exchange and unroutable queue as configured; `window` publishes in flight). MUST fail
/// naming every URI tried (redacted) when none does.
async fn amqp_publisher(
    s: &crate::config::StreamingSettings,
    uris: &[reporter_ports::Secret],
    window: usize,
) -> anyhow::Result<RabbitPublisher> {
    let mut failures = Vec::new();
    for uri in uris {
        let mut c = RabbitPublisherConfig::new(uri.expose());
        c.exchange = s.exchange.clone();
        if let Some(ae) = c.alternate_exchange.as_mut() {
            ae.exchange = s.alternate_exchange.clone();
            ae.queue = s.alternate_exchange.clone();
            ae.message_ttl = Some(s.unroutable_ttl);
            ae.max_length = Some(s.unroutable_max_length);
        }
        c.publish_timeout = s.publish_timeout;
        c.max_in_flight = window;
        match RabbitPublisher::connect(c).await {
            Ok(p) => return Ok(p),
            Err(e) => failures.push(format!("{}: {e}", crate::config::redact(uri.expose()))),
        }
    }
    anyhow::bail!(
        "event publication ({}): {}",
        match &s.broker_origin {
            crate::config::BrokerOrigin::StreamingBrokers => "STREAMING_BROKERS",
            crate::config::BrokerOrigin::RabbitmqUri { .. } => "RABBITMQ_URI",
        },
        failures.join("; ")
    )
}

/// The dispatcher's settings: the configured batch, lease, deadline, poll, attempts and
/// retention; retries from 0.5 s, capped at 300 s for a row the broker refused and 5 s for a
/// broker that is down.
fn dispatcher_settings(s: &crate::config::StreamingSettings) -> DispatcherSettings {
    DispatcherSettings {
        owner: format!(
            "reporter-{}-{}",
            std::process::id(),
            uuid::Uuid::now_v7().simple()
        ),
        batch: s.dispatch_batch,
        ahead: 2,
        lease: s.outbox_lease,
        publish_deadline: s.publish_timeout,
        poll: s.dispatch_poll,
        max_attempts: s.outbox_max_attempts,
        retention: s.outbox_retention,
        backoff_base: std::time::Duration::from_millis(500),
        backoff_cap: std::time::Duration::from_secs(300),
        transient_backoff_cap: std::time::Duration::from_secs(5),
    }
}

/// The `/readyz` check of the event broker: `up` while it answers and the direct path's
/// breaker is closed, else `degraded` (events wait in the outbox; the service keeps working),
/// with the breaker state.
fn events_check(rabbit: Option<RabbitPublisher>, breaker: Arc<CircuitBreaker>) -> CheckProbe {
    Arc::new(move || {
        let rabbit = rabbit.clone();
        let breaker = breaker.clone();
        Box::pin(async move {
            let reachable = match &rabbit {
                Some(p) => p.check().await.map_err(|e| e.to_string()),
                None => Ok(()),
            };
            let state = breaker.state();
            let breaker_state = match state {
                BreakerState::Closed => "closed",
                BreakerState::Open => "open",
                BreakerState::HalfOpen => "half_open",
            };
            let (status, error) = match (reachable, state) {
                (Err(e), _) => (CheckStatus::Degraded, Some(e)),
                (Ok(()), BreakerState::Closed) => (CheckStatus::Up, None),
                (Ok(()), _) => (
                    CheckStatus::Degraded,
                    Some("direct publishing is paused by the circuit breaker; events go through the outbox".to_owned()),
                ),
            };
            ProbeOutcome {
                status,
                error,
                breaker_state: Some(breaker_state.to_owned()),
            }
        })
    })
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
    database: Option<DeploymentDatabase>,
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
        summary.push("state, outbox: in memory (lost on exit)".to_owned());
        return Ok(memory_stores(config));
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
    let database = DeploymentDatabase::new(&client, &m.database);
    match &config.tenancy {
        Tenancy::Single(_) => {
            let store = Arc::new(
                MongoStore::from_client(client.clone(), &m.database, config_m)
                    .await
                    .map_err(|e| anyhow::anyhow!("MongoDB: {e}"))?,
            );
            let idem = MongoIdempotencyStore::new(database.database())
                .await
                .map_err(|e| anyhow::anyhow!("MongoDB: {e}"))?;
            summary.push(format!("state, outbox: MongoDB database '{}'", m.database));
            Ok(mongo_stores(store, Arc::new(idem), database))
        }
        Tenancy::Multi => {
            // Refuse a standalone server now rather than on the first request.
            reporter_adapter_mongo::require_transactions(&client)
                .await
                .map_err(|e| match e {
                    TransactionCheck::Unreachable(e) => anyhow::anyhow!("MONGO_URI: {e}"),
                    TransactionCheck::Unsupported(e) => anyhow::anyhow!("MongoDB: {e}"),
                })?;
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
            Ok(mongo_stores(router.clone(), router, database))
        }
    }
}

/// Every store in process memory, one [`MemoryStore`] behind all of them.
fn memory_stores(config: &Config) -> Stores {
    let store = Arc::new(MemoryStore::with_max_published(
        config.streaming.memory_max_published,
    ));
    Stores {
        kind: StoreKind::Memory,
        templates: store.clone(),
        deadlines: store.clone(),
        reports: store.clone(),
        uow: store.clone(),
        outbox: store.clone(),
        idempotency: store,
        database: None,
    }
}

/// The MongoDB stores served by `store` (a database, or the per-tenant router).
fn mongo_stores<S>(
    store: Arc<S>,
    idempotency: Arc<dyn reporter_ports::ports::IdempotencyStore>,
    database: DeploymentDatabase,
) -> Stores
where
    S: reporter_ports::ports::TemplateRepository
        + reporter_ports::ports::DeadlineRepository
        + reporter_ports::ports::ReportRepository
        + reporter_ports::ports::UnitOfWorkPort
        + Outbox
        + 'static,
{
    Stores {
        kind: StoreKind::Mongo,
        templates: store.clone(),
        deadlines: store.clone(),
        reports: store.clone(),
        uow: store.clone(),
        outbox: store,
        idempotency,
        database: Some(database),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The configuration's documentation of the template bounds names the backstop in words.
    #[test]
    fn the_documented_backstop_is_the_sandboxs() {
        assert_eq!(reporter_adapter_sandbox::BACKSTOP_FACTOR, 4);
        let reference = crate::config::reference::markdown();
        for name in ["TEMPLATE_RENDER_TIMEOUT_SEC", "TEMPLATE_PARSE_TIMEOUT_MS"] {
            let row = reference
                .lines()
                .find(|l| l.contains(&format!("`{name}`")))
                .expect("documented");
            assert!(row.contains("four times the bound"), "{row}");
        }
    }

    #[test]
    fn an_inline_ca_is_written_to_a_private_file_removed_with_the_guard() {
        let mut scratch = Scratch::default();
        let id = DataSourceId::parse("ledger").expect("id");
        let pem = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".to_vec();
        let path = scratch
            .root_cert(&id, Some(&RootCert::Pem(pem.clone())))
            .expect("written")
            .expect("a path");
        assert_eq!(std::fs::read(&path).expect("read"), pem);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
            assert_eq!(mode & 0o077, 0, "readable by this user only: {mode:o}");
        }
        let file = PathBuf::from("/etc/ssl/ca.pem");
        assert_eq!(
            scratch
                .root_cert(&id, Some(&RootCert::File(file.clone())))
                .expect("file"),
            Some(file),
            "a CA file is used where it is"
        );
        drop(scratch);
        assert!(!path.exists(), "removed with the guard");
    }
}
