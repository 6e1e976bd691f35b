//! Configuration from environment variables.
//!
//! clap reads every variable (so `reporter --help` lists each with its default); values stay
//! raw strings there and [`RawConfig::validate`] checks them all at once, so a bad deployment
//! learns every problem in one start-up, each naming the variable, the problem and the rule.
//!
//! A variable is declared once: its `#[arg(long, env, default_value)]` attribute and doc
//! comment (name, default, meaning) and, for a number, a boolean or a closed set of words,
//! its row in [`allowed`]. Everything else is derived ([`declared`]): [`RawConfig::defaults`],
//! the checker's bounds and fallbacks, and the configuration reference
//! (`reporter config reference`, docs/src/operations/configuration.md, see [`reference`]).
mod addresses;
pub mod allowed;
mod auth;
mod console;
mod crm;
mod datasource_tls;
mod datasources;
pub mod declared;
mod deployment;
mod mongo;
mod original_names;
pub mod original_settings;
mod preview;
mod production;
mod rate_limit;
pub mod reference;
mod server;
mod storage;
mod streaming;
mod telemetry;
mod worker;

pub use crm::CrmSpec;
pub use datasources::{DataSourceConfig, DataSourceSpec, RootCert, SqlConnection, SqlTls};
pub use mongo::MongoSettings;
pub use original_names::{OriginalExtras, OriginalNames, RunMode};
pub use original_settings::{ORIGINAL_SETTINGS, OriginalSetting, Treatment};
pub use rate_limit::{ProtectionRaw, RateLimitSettings};
pub use telemetry::{OtlpProtocol, RawTelemetry, TelemetrySettings};

use clap::Args;
use reporter_ports::{Secret, TenantId};
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Raw settings as read from the environment (or flags). Every password, key and URI that
/// may hold a password is a [`Secret`] (its `Debug` shows no value) and hides its value in
/// `--help` (`hide_env_values`).
#[derive(Debug, Clone, Args)]
pub struct RawConfig {
    /// The original's names for settings Reporter names otherwise (`SERVER_PORT`, `RUN_MODE`, …).
    #[command(flatten)]
    pub original: OriginalNames,
    /// Address the HTTP API binds to.
    #[arg(long, env = "SERVER_ADDRESS", default_value = "127.0.0.1:4005")]
    pub server_address: String,
    /// Address `reporter worker` serves /health, /readyz, /version and /metrics on
    /// (default 127.0.0.1:4006, or every interface on HEALTH_PORT).
    #[arg(long, env = "HEALTH_ADDRESS")]
    pub health_address: Option<String>,
    /// The original's health port of the worker: every interface on this port, when
    /// HEALTH_ADDRESS is not set.
    #[arg(long, env = "HEALTH_PORT")]
    pub health_port: Option<String>,
    /// Deployment environment name; `production` enables strict checks.
    #[arg(long, env = "ENV_NAME", default_value = "development")]
    pub env_name: String,
    /// Deployment shape reported by /readyz: `local`, `byoc` or `saas` (the original's values).
    #[arg(long, env = "DEPLOYMENT_MODE", default_value = "local")]
    pub deployment_mode: String,
    /// Seconds between the shutdown signal (SIGTERM/SIGINT) and the HTTP server's stop, during
    /// which /readyz answers 503 `draining` while requests are still served (0-300).
    #[arg(long, env = "SHUTDOWN_DRAIN_SECONDS", default_value = "0")]
    pub shutdown_drain_seconds: String,
    /// Log filter (tracing EnvFilter syntax), e.g. `info` or `reporter=debug,info`.
    #[arg(long, env = "LOG_LEVEL", default_value = "info")]
    pub log_level: String,
    /// Log format: `text` or `json`.
    #[arg(long, env = "LOG_FORMAT", default_value = "text")]
    pub log_format: String,
    /// Require a bearer JWT on every /v1 operation. `false` turns auth off (logged as a warning).
    #[arg(long, env = "AUTH_ENABLED", default_value = "true")]
    pub auth_enabled: String,
    /// HS256 shared secret (at least 32 bytes). With neither key set, `serve` generates a
    /// random secret for the run and prints a development token.
    #[arg(long, env = "AUTH_JWT_SECRET", hide_env_values = true)]
    pub auth_jwt_secret: Option<Secret>,
    /// RS256/ES256 public key (PEM text, or a path to a PEM file).
    #[arg(long, env = "AUTH_JWT_PUBLIC_KEY", hide_env_values = true)]
    pub auth_jwt_public_key: Option<String>,
    /// Required `iss` claim, when set.
    #[arg(long, env = "AUTH_JWT_ISSUER")]
    pub auth_jwt_issuer: Option<String>,
    /// Required `aud` claim, when set.
    #[arg(long, env = "AUTH_JWT_AUDIENCE")]
    pub auth_jwt_audience: Option<String>,
    /// Clock skew tolerated on `exp`/`nbf`, in seconds (0-300).
    #[arg(long, env = "AUTH_JWT_LEEWAY_SECONDS", default_value = "30")]
    pub auth_jwt_leeway_seconds: String,
    /// Verified bearer tokens kept so that the same token is not verified again (0-1000000;
    /// 0 verifies every request).
    #[arg(long, env = "AUTH_TOKEN_CACHE_SIZE", default_value = "4096")]
    pub auth_token_cache_size: String,
    /// Longest lifetime of an accepted token, `exp - iat` in seconds (`exp - now` when the
    /// token has no `iat`; 300-31536000).
    #[arg(long, env = "AUTH_MAX_TOKEN_LIFETIME_SECONDS", default_value = "86400")]
    pub auth_max_token_lifetime_seconds: String,
    /// Isolate every record, file and event by the token's `tenant_id` claim.
    #[arg(long, env = "MULTI_TENANT_ENABLED", default_value = "false")]
    pub multi_tenant_enabled: String,
    /// Tenant stamped on everything in single-tenant mode.
    #[arg(long, env = "DEFAULT_TENANT_ID", default_value = "default")]
    pub default_tenant_id: String,
    /// Largest `limit` a list accepts (1-1000).
    #[arg(long, env = "MAX_PAGINATION_LIMIT", default_value = "100")]
    pub max_pagination_limit: String,
    /// How long a completed idempotent response is replayed, in seconds.
    #[arg(long, env = "IDEMPOTENCY_TTL_SECONDS", default_value = "86400")]
    pub idempotency_ttl_seconds: String,
    /// Lease of an in-flight idempotency key, renewed every third of it while its request runs: a key whose process died is free again this long after its last renewal.
    #[arg(long, env = "IDEMPOTENCY_IN_FLIGHT_SECONDS", default_value = "10")]
    pub idempotency_in_flight_seconds: String,
    /// Object storage for template files and report artifacts: `memory`, `fs` (alias
    /// `filesystem`), `gridfs` (the MongoDB of MONGO_URI) or `s3` (S3-compatible, OBJECT_STORAGE_*).
    #[arg(long, env = "OBJECT_STORAGE_BACKEND", default_value = "memory")]
    pub object_storage_backend: String,
    /// Root directory of the `fs` object storage.
    #[arg(long, env = "OBJECT_STORAGE_PATH", default_value = "./.data/objects")]
    pub object_storage_path: String,
    /// Seconds after which an upload neither committed nor aborted (its writer died
    /// mid-write: a hidden temporary file, an incomplete S3 multipart upload, GridFS chunks
    /// without a file) is removed by the worker's sweep; at least 60 and above
    /// ENGINE_TIMEOUT_SEC. 0 turns the sweep off.
    #[arg(
        long,
        env = "OBJECT_STORAGE_ABANDONED_AFTER_SECONDS",
        default_value = "3600"
    )]
    pub object_storage_abandoned_after_seconds: String,
    /// Seconds between two sweeps of abandoned uploads (one process sweeps at a time).
    #[arg(
        long,
        env = "OBJECT_STORAGE_SWEEP_INTERVAL_SECONDS",
        default_value = "600"
    )]
    pub object_storage_sweep_interval_seconds: String,
    /// Bytes the report artifacts of the `memory` object storage may take together; past it
    /// the oldest artifacts of the tenant that takes the most are evicted (template files
    /// never are). `0`: no bound.
    #[arg(
        long,
        env = "OBJECT_STORAGE_MEMORY_MAX_BYTES",
        default_value = "268435456"
    )]
    pub object_storage_memory_max_bytes: String,
    /// Bytes the report artifacts of one tenant may take in the `memory` object storage (its
    /// share); past it that tenant's own oldest artifacts are evicted. `auto`: a quarter of
    /// OBJECT_STORAGE_MEMORY_MAX_BYTES in multi-tenant mode, none in single-tenant mode; `0`:
    /// no share.
    #[arg(
        long,
        env = "OBJECT_STORAGE_MEMORY_TENANT_MAX_BYTES",
        default_value = "auto"
    )]
    pub object_storage_memory_tenant_max_bytes: String,
    /// Register the bundled example data set as data source `bank` (default: only when no
    /// DATASOURCE_* variable is set).
    #[arg(long, env = "EXAMPLE_DATA_ENABLED", default_value = "auto")]
    pub example_data_enabled: String,
    /// Allowed CORS origins, comma-separated (`*` for any; empty disables CORS).
    #[arg(long, env = "CORS_ALLOWED_ORIGINS", default_value = "")]
    pub cors_allowed_origins: String,
    /// Largest accepted request body in bytes.
    #[arg(long, env = "MAX_REQUEST_BODY_BYTES", default_value = "2097152")]
    pub max_request_body_bytes: String,
    /// Longest wait for a request's head (request line and headers), in seconds (1-300).
    #[arg(long, env = "HTTP_HEADER_READ_TIMEOUT_SECONDS", default_value = "10")]
    pub http_header_read_timeout_seconds: String,
    /// Longest wait for a request's whole body, in seconds (1-3600).
    #[arg(long, env = "HTTP_BODY_READ_TIMEOUT_SECONDS", default_value = "60")]
    pub http_body_read_timeout_seconds: String,
    /// Most client connections open at once; more wait to be accepted (1-1000000).
    #[arg(long, env = "HTTP_MAX_CONNECTIONS", default_value = "1024")]
    pub http_max_connections: String,
    /// Publish every state change as a CloudEvent.
    #[arg(long, env = "STREAMING_ENABLED", default_value = "false")]
    pub streaming_enabled: String,
    /// Exchange that carries the events (required when streaming is on; reference value
    /// `reporter.events`).
    #[arg(long, env = "RABBITMQ_REPORT_EVENTS_EXCHANGE")]
    pub events_exchange: Option<String>,
    /// Event brokers (required, non-empty, when streaming is on): comma-separated amqp(s)://
    /// URIs, `memory://` for the in-memory broker that records deliveries, or any other value
    /// (e.g. the original's `rabbitmq:5672`), in which case events go to RABBITMQ_URI.
    #[arg(long, env = "STREAMING_BROKERS", hide_env_values = true)]
    pub streaming_brokers: Option<Secret>,
    /// CloudEvents source; must be exactly `reporter` (required when streaming is on).
    #[arg(long, env = "STREAMING_CLOUDEVENTS_SOURCE")]
    pub streaming_source: Option<String>,
    /// Circuit breaker: failure ratio that opens it, in (0, 1].
    #[arg(long, env = "STREAMING_CB_FAILURE_RATIO", default_value = "0.5")]
    pub streaming_cb_failure_ratio: String,
    /// Circuit breaker: publishes observed before the ratio counts.
    #[arg(long, env = "STREAMING_CB_MIN_REQUESTS", default_value = "10")]
    pub streaming_cb_min_requests: String,
    /// Circuit breaker: seconds it stays open before a probe.
    #[arg(long, env = "STREAMING_CB_TIMEOUT_S", default_value = "30")]
    pub streaming_cb_timeout_s: String,
    /// Deadline of one publish and its broker confirm, in milliseconds.
    #[arg(long, env = "STREAMING_PUBLISH_TIMEOUT_MS", default_value = "5000")]
    pub streaming_publish_timeout_ms: String,
    /// Alternate exchange (and its durable queue) that keeps messages no binding routes.
    /// Default: `<events exchange>.unroutable`.
    #[arg(long, env = "STREAMING_ALTERNATE_EXCHANGE")]
    pub streaming_alternate_exchange: Option<String>,
    /// Seconds an unroutable event is kept in the alternate exchange's queue (its
    /// `x-message-ttl`; the original's DLQ keeps 7 days).
    #[arg(
        long,
        env = "STREAMING_UNROUTABLE_TTL_SECONDS",
        default_value = "604800"
    )]
    pub streaming_unroutable_ttl_seconds: String,
    /// Most unroutable events the alternate exchange's queue keeps (its `x-max-length`; the
    /// oldest is dropped beyond it; the original's DLQ keeps 10,000).
    #[arg(long, env = "STREAMING_UNROUTABLE_MAX_LENGTH", default_value = "10000")]
    pub streaming_unroutable_max_length: String,
    /// The original's per-event policy overrides (lib-streaming's
    /// `<definitionKey>.<attr>=<value>,…`). Reporter's delivery policies are fixed per event
    /// class (docs/src/events/write-path.md), so only the empty value (Helm's default) is
    /// accepted; any override stops start-up with a message rather than being ignored.
    #[arg(long, env = "STREAMING_EVENT_POLICIES", hide_env_values = true)]
    pub streaming_event_policies: Option<String>,
    /// Publish attempts of an outbox row before it is parked.
    #[arg(long, env = "STREAMING_OUTBOX_MAX_ATTEMPTS", default_value = "10")]
    pub streaming_outbox_max_attempts: String,
    /// Hours published outbox rows are kept.
    #[arg(long, env = "STREAMING_OUTBOX_RETENTION_HOURS", default_value = "24")]
    pub streaming_outbox_retention_hours: String,
    /// Rows the dispatcher claims (and keeps in flight) per round.
    #[arg(long, env = "STREAMING_DISPATCH_BATCH", default_value = "256")]
    pub streaming_dispatch_batch: String,
    /// Fallback poll interval of the dispatcher in milliseconds (it is also woken on every write).
    #[arg(long, env = "STREAMING_DISPATCH_POLL_MS", default_value = "1000")]
    pub streaming_dispatch_poll_ms: String,
    /// Seconds a dispatcher's claim on outbox rows lasts.
    #[arg(long, env = "STREAMING_OUTBOX_LEASE_S", default_value = "30")]
    pub streaming_outbox_lease_s: String,
    /// Published outbox rows kept at most when state is in memory (the oldest go first; the
    /// retention in hours applies too).
    #[arg(
        long,
        env = "STREAMING_OUTBOX_MEMORY_MAX_PUBLISHED",
        default_value = "10000"
    )]
    pub streaming_outbox_memory_max_published: String,
    /// MongoDB for durable state, outbox and idempotency (a replica set: transactions are
    /// required): a complete connection string, or only the scheme (`mongodb`,
    /// `mongodb+srv`) with MONGO_HOST. Unset with MONGO_HOST unset: everything in memory.
    #[arg(long, env = "MONGO_URI", hide_env_values = true)]
    pub mongo_uri: Option<Secret>,
    /// MongoDB host (or h1,h2,… for a replica set) when MONGO_URI is unset or only the scheme.
    #[arg(long, env = "MONGO_HOST")]
    pub mongo_host: Option<String>,
    // MongoDB port with MONGO_HOST: help text from mongo::MONGO_PORT.
    #[arg(
        long,
        env = "MONGO_PORT",
        help = mongo::MONGO_PORT.help("MongoDB port with MONGO_HOST (default {default})")
    )]
    pub mongo_port: Option<String>,
    /// MongoDB user with MONGO_HOST.
    #[arg(long, env = "MONGO_USER")]
    pub mongo_user: Option<String>,
    /// MongoDB password with MONGO_HOST.
    #[arg(long, env = "MONGO_PASSWORD", hide_env_values = true)]
    pub mongo_password: Option<Secret>,
    /// Extra connection-string options, e.g. `replicaSet=rs0&authSource=admin`.
    #[arg(long, env = "MONGO_PARAMETERS")]
    pub mongo_parameters: Option<String>,
    /// Most pooled connections (the driver's default: 10).
    #[arg(long, env = "MONGO_MAX_POOL_SIZE")]
    pub mongo_max_pool_size: Option<String>,
    /// Connections the pool keeps open (default 0).
    #[arg(long, env = "MONGO_MIN_POOL_SIZE")]
    pub mongo_min_pool_size: Option<String>,
    /// How long an idle pooled connection is kept: seconds, or 90s / 5m (default: forever).
    #[arg(long, env = "MONGO_MAX_CONN_IDLE_TIME")]
    pub mongo_max_conn_idle_time: Option<String>,
    /// PEM file of the certificate authority; setting it turns TLS on.
    #[arg(long, env = "MONGO_TLS_CA_CERT")]
    pub mongo_tls_ca_cert: Option<String>,
    /// How long a call waits for a reachable MongoDB before it answers 503.
    #[arg(
        long,
        env = "MONGO_SERVER_SELECTION_TIMEOUT_MS",
        default_value = "5000"
    )]
    pub mongo_server_selection_timeout_ms: String,
    /// Database of single-tenant mode (and the tenant registry in multi-tenant mode).
    #[arg(long, env = "MONGO_NAME", default_value = "reporter-db")]
    pub mongo_name: String,
    /// Prefix of the per-tenant databases in multi-tenant mode.
    #[arg(long, env = "MONGO_TENANT_DB_PREFIX", default_value = "reporter")]
    pub mongo_tenant_prefix: String,
    /// RabbitMQ for the report job queue (`reporter api` + `reporter worker` as two processes).
    /// Unset: `reporter serve` uses an in-process queue.
    /// Either a complete amqp(s):// URI, or (as the original) only the scheme with
    /// RABBITMQ_HOST and the variables below.
    #[arg(long, env = "RABBITMQ_URI", hide_env_values = true)]
    pub rabbitmq_uri: Option<Secret>,
    /// RabbitMQ host, when RABBITMQ_URI is only the scheme (or unset).
    #[arg(long, env = "RABBITMQ_HOST")]
    pub rabbitmq_host: Option<String>,
    /// RabbitMQ AMQP port with RABBITMQ_HOST (default 5672, 5671 for amqps).
    #[arg(long, env = "RABBITMQ_PORT_AMQP")]
    pub rabbitmq_port_amqp: Option<String>,
    /// RabbitMQ user with RABBITMQ_HOST.
    #[arg(long, env = "RABBITMQ_DEFAULT_USER")]
    pub rabbitmq_user: Option<String>,
    /// RabbitMQ password with RABBITMQ_HOST.
    #[arg(long, env = "RABBITMQ_DEFAULT_PASS", hide_env_values = true)]
    pub rabbitmq_pass: Option<Secret>,
    /// With RABBITMQ_HOST and no scheme in RABBITMQ_URI: amqps instead of amqp.
    #[arg(long, env = "RABBITMQ_TLS", default_value = "false")]
    pub rabbitmq_tls: String,
    /// Job exchange.
    #[arg(
        long,
        env = "RABBITMQ_EXCHANGE",
        default_value = "reporter.generate-report.exchange"
    )]
    pub rabbitmq_exchange: String,
    /// Job queue.
    #[arg(
        long,
        env = "RABBITMQ_GENERATE_REPORT_QUEUE",
        default_value = "reporter.generate-report.queue"
    )]
    pub rabbitmq_queue: String,
    /// Job routing key.
    #[arg(
        long,
        env = "RABBITMQ_GENERATE_REPORT_KEY",
        default_value = "reporter.generate-report.key"
    )]
    pub rabbitmq_key: String,
    /// Dead-letter queue of jobs that failed for good.
    #[arg(long, env = "RABBITMQ_DLQ_QUEUE", default_value = "reporter.dlq")]
    pub rabbitmq_dlq: String,
    /// Dead-letter exchange of the job queues.
    #[arg(long, env = "RABBITMQ_DLX", default_value = "reporter.dlx")]
    pub rabbitmq_dlx: String,
    /// Jobs a worker prefetches (unsettled at once, running and held back); `auto`: twice
    /// WORKER_CONCURRENCY when one tenant is bounded below it (multi-tenant mode), else 4.
    #[arg(long, env = "RABBITMQ_PREFETCH", default_value = "auto")]
    pub rabbitmq_prefetch: String,
    /// Deliveries of a job before it is dead-lettered.
    #[arg(long, env = "WORKER_MAX_ATTEMPTS", default_value = "5")]
    pub worker_max_attempts: String,
    /// Jobs a worker generates at once (the reference's RABBITMQ_NUMBERS_OF_WORKERS).
    #[arg(long, env = "WORKER_CONCURRENCY", default_value = "4")]
    pub worker_concurrency: String,
    /// Jobs of one tenant a worker generates at once; `auto`: one less than the render slots
    /// (the smaller of WORKER_CONCURRENCY and TEMPLATE_SANDBOX_POOL_SIZE, at least 1) in
    /// multi-tenant mode, WORKER_CONCURRENCY in single-tenant mode.
    #[arg(long, env = "WORKER_MAX_JOBS_PER_TENANT", default_value = "auto")]
    pub worker_max_jobs_per_tenant: String,
    /// Seconds in-flight jobs may finish after shutdown starts; then they are canceled.
    #[arg(long, env = "WORKER_DRAIN_TIMEOUT_SEC", default_value = "20")]
    pub worker_drain_timeout_sec: String,
    /// Deadline of one report generation, in seconds.
    #[arg(long, env = "ENGINE_TIMEOUT_SEC", default_value = "300")]
    pub engine_timeout_sec: String,
    /// Seconds after its last change a report still `Processing` counts as stuck (its job lost
    /// before it was queued, or dead-lettered during an outage) and gets its job queued again;
    /// above ENGINE_TIMEOUT_SEC. 0 turns the sweep off.
    #[arg(long, env = "REPORT_REQUEUE_AFTER_SEC", default_value = "900")]
    pub report_requeue_after_sec: String,
    /// Deadline of one data source query, in seconds.
    #[arg(long, env = "ENGINE_QUERY_TIMEOUT_SEC", default_value = "30")]
    pub engine_query_timeout_sec: String,
    /// Sections (data sources) queried at once within one report.
    #[arg(long, env = "ENGINE_MAX_CONCURRENCY", default_value = "4")]
    pub engine_max_concurrency: String,
    /// Rows a table may return to one report.
    #[arg(long, env = "ENGINE_MAX_ROWS", default_value = "100000")]
    pub engine_max_rows: String,
    /// Bytes of data one section may hold.
    #[arg(long, env = "ENGINE_MAX_RESULT_BYTES", default_value = "104857600")]
    pub engine_max_result_bytes: String,
    /// Instruction budget of one template render.
    #[arg(long, env = "ENGINE_RENDER_FUEL", default_value = "50000000")]
    pub engine_render_fuel: String,
    /// Largest rendered output in bytes.
    #[arg(long, env = "ENGINE_MAX_OUTPUT_BYTES", default_value = "67108864")]
    pub engine_max_output_bytes: String,
    /// Origins (`https://host[:port]`, comma-separated) html and pdf reports may load images,
    /// stylesheets and fonts from. Default: none (a report loads nothing from elsewhere).
    #[arg(long, env = "REPORT_HTML_ALLOWED_ORIGINS", default_value = "")]
    pub report_html_allowed_origins: String,
    /// Template sandbox: the executable of its child processes (run with the hidden
    /// `template-sandbox` subcommand). Default: this `reporter` binary.
    #[arg(long, env = "TEMPLATE_SANDBOX_EXE")]
    pub template_sandbox_exe: Option<String>,
    /// Template sandbox: children kept started per pool (one pool parses uploads, one renders
    /// reports), and so template parses (and renders) running at once.
    #[arg(long, env = "TEMPLATE_SANDBOX_POOL_SIZE", default_value = "4")]
    pub template_sandbox_pool_size: String,
    /// Memory (heap) one render process may use, in MiB: the report's data, what the template
    /// builds and the output. Over it the report ends Error (report_generation_failed).
    #[arg(long, env = "TEMPLATE_RENDER_MEMORY_MIB", default_value = "1024")]
    pub template_render_memory_mib: String,
    /// CPU seconds one render process may use; over it the report ends Error
    /// (report_generation_timeout).
    #[arg(long, env = "TEMPLATE_RENDER_CPU_SECONDS", default_value = "120")]
    pub template_render_cpu_seconds: String,
    /// Time bound of one render in seconds (the process is killed); the report ends Error
    /// (report_generation_timeout). It counts the time the render works or waits on its input,
    /// not the time it waits for a CPU other processes hold; the wall clock ends it at four
    /// times the bound.
    #[arg(long, env = "TEMPLATE_RENDER_TIMEOUT_SEC", default_value = "120")]
    pub template_render_timeout_sec: String,
    /// Memory (heap) one upload parse may use, in MiB; over it the upload answers 400 TPL-0082.
    #[arg(long, env = "TEMPLATE_PARSE_MEMORY_MIB", default_value = "256")]
    pub template_parse_memory_mib: String,
    /// Time bound of one upload parse in milliseconds (CPU, and time as a render's bound
    /// counts it; the wall clock ends it at four times the bound); over it the upload answers
    /// 400 TPL-0081.
    #[arg(long, env = "TEMPLATE_PARSE_TIMEOUT_MS", default_value = "10000")]
    pub template_parse_timeout_ms: String,
    /// HTML to PDF: `native` (pure Rust, bundled fonts) or `chromium` (headless Chromium).
    #[arg(long, env = "PDF_RENDERER", default_value = "native")]
    pub pdf_renderer: String,
    /// Chromium binary for PDF_RENDERER=chromium.
    #[arg(long, env = "PDF_CHROMIUM_PATH", default_value = "/usr/bin/chromium")]
    pub pdf_chromium_path: String,
    /// PDF conversions at once.
    #[arg(long, env = "PDF_POOL_WORKERS", default_value = "2")]
    pub pdf_pool_workers: String,
    /// Deadline of one PDF conversion in seconds.
    #[arg(long, env = "PDF_TIMEOUT_SECONDS", default_value = "90")]
    pub pdf_timeout_seconds: String,
    /// Heap of one native PDF conversion (its child process) in MiB; over it the report ends
    /// `Error` `report_generation_failed`.
    #[arg(long, env = "PDF_MEMORY_MIB", default_value = "1024")]
    pub pdf_memory_mib: String,
    /// S3 bucket for OBJECT_STORAGE_BACKEND=s3.
    #[arg(
        long,
        env = "OBJECT_STORAGE_BUCKET",
        default_value = "reporter-storage"
    )]
    pub s3_bucket: String,
    /// S3 endpoint (MinIO, SeaweedFS, moto...); unset for AWS.
    #[arg(long, env = "OBJECT_STORAGE_ENDPOINT")]
    pub s3_endpoint: Option<String>,
    /// S3 region.
    #[arg(long, env = "OBJECT_STORAGE_REGION", default_value = "us-east-1")]
    pub s3_region: String,
    /// S3 access key id.
    #[arg(long, env = "OBJECT_STORAGE_ACCESS_KEY_ID", hide_env_values = true)]
    pub s3_access_key_id: Option<Secret>,
    /// S3 secret key.
    #[arg(long, env = "OBJECT_STORAGE_SECRET_KEY", hide_env_values = true)]
    pub s3_secret_key: Option<Secret>,
    /// Path-style addressing.
    #[arg(long, env = "OBJECT_STORAGE_USE_PATH_STYLE", default_value = "true")]
    pub s3_path_style: String,
    /// Allow plain http to the endpoint.
    #[arg(long, env = "OBJECT_STORAGE_DISABLE_SSL", default_value = "false")]
    pub s3_disable_ssl: String,

    /// The Console's settings.
    #[command(flatten)]
    pub console: console::ConsoleRaw,
    // The template preview (`POST /v1/templates/preview`; src/config/preview.rs).
    /// Longest a template preview's extraction and render may take, in seconds; past it the
    /// preview answers status Error (report_generation_timeout, cause timeout).
    #[arg(long, env = "PREVIEW_TIMEOUT_SECONDS", default_value = "10")]
    pub preview_timeout_seconds: String,
    /// Most bytes of output a template preview answers: text is cut there (truncated=true),
    /// a larger PDF is left out.
    #[arg(long, env = "PREVIEW_MAX_OUTPUT_BYTES", default_value = "1048576")]
    pub preview_max_output_bytes: String,
    /// OpenTelemetry (`ENABLE_TELEMETRY`, `OTEL_*`; src/config/telemetry.rs).
    #[command(flatten)]
    pub telemetry: RawTelemetry,
    /// Rate limiting, its Redis, and the production escape hatches (src/config/rate_limit.rs).
    #[command(flatten)]
    pub protection: ProtectionRaw,
}

/// One configuration problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    /// The environment variable.
    pub variable: String,
    /// What is wrong with its value.
    pub problem: String,
    /// The rule it must follow.
    pub rule: String,
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} (rule: {})",
            self.variable, self.problem, self.rule
        )
    }
}

/// Every problem found, printed one per line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigErrors(pub Vec<ConfigProblem>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "invalid configuration ({} problem(s)):", self.0.len())?;
        for p in &self.0 {
            writeln!(f, "  - {p}")?;
        }
        Ok(())
    }
}

/// How bearer tokens are verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthKey {
    /// HS256 shared secret.
    Secret(Secret),
    /// RS256 or ES256 public key, PEM.
    PublicKeyPem(String),
    /// No key configured: `serve` generates one for the run.
    Generated,
}

/// Time and connection bounds of the HTTP server: a slow or crowding client cannot hold
/// the port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    /// `HTTP_HEADER_READ_TIMEOUT_SECONDS`: a request head not complete by then closes the
    /// connection.
    pub header_read_timeout: std::time::Duration,
    /// `HTTP_BODY_READ_TIMEOUT_SECONDS`: a body not complete by then answers 408.
    pub body_read_timeout: std::time::Duration,
    /// `HTTP_MAX_CONNECTIONS`: connections served at once.
    pub max_connections: usize,
}

/// Authentication settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthSettings {
    /// False only with `AUTH_ENABLED=false`.
    pub enabled: bool,
    /// Verification key.
    pub key: AuthKey,
    /// Required issuer.
    pub issuer: Option<String>,
    /// Required audience.
    pub audience: Option<String>,
    /// Leeway in seconds.
    pub leeway_seconds: u64,
    /// Verified tokens kept (0: every request is verified).
    pub token_cache_size: u64,
    /// Longest accepted token lifetime, `exp - iat` (`exp - now` without `iat`).
    pub max_token_lifetime_seconds: u64,
}

/// Tenancy mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tenancy {
    /// Every record belongs to this tenant.
    Single(TenantId),
    /// The token's `tenant_id` claim decides.
    Multi,
}

/// Where objects are stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectStorageChoice {
    /// In process memory (lost on exit), report artifacts bounded to `max_artifact_bytes`
    /// and each tenant's to `tenant_max_bytes` (see `reporter_adapter_memory::ByteBudget`;
    /// `None`: no bound).
    Memory {
        /// Bound on the artifacts' bytes.
        max_artifact_bytes: Option<u64>,
        /// Bound on one tenant's artifacts' bytes (its share).
        tenant_max_bytes: Option<u64>,
    },
    /// Local filesystem under a root directory.
    Filesystem(PathBuf),
    /// S3-compatible storage.
    S3(Box<S3Settings>),
    /// GridFS in the MongoDB deployment database (needs MONGO_URI).
    GridFs,
}

impl ObjectStorageChoice {
    /// The backend's name in metrics: `memory`, `fs`, `s3` or `gridfs`.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Memory { .. } => "memory",
            Self::Filesystem(_) => "fs",
            Self::S3(_) => "s3",
            Self::GridFs => "gridfs",
        }
    }
}

/// S3 settings (reference names `OBJECT_STORAGE_*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Settings {
    /// Bucket.
    pub bucket: String,
    /// Endpoint (unset for AWS).
    pub endpoint: Option<String>,
    /// Region.
    pub region: String,
    /// Access key id.
    pub access_key_id: Option<Secret>,
    /// Secret.
    pub secret_key: Option<Secret>,
    /// Path-style addressing.
    pub path_style: bool,
    /// Allow http.
    pub allow_http: bool,
}

/// Validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Bind address.
    pub server_address: SocketAddr,
    /// Bind address of the worker's ops endpoints.
    pub health_address: SocketAddr,
    /// True when `ENV_NAME=production`.
    pub production: bool,
    /// Log filter.
    pub log_level: String,
    /// JSON logs.
    pub log_json: bool,
    /// Auth.
    pub auth: AuthSettings,
    /// Tenancy.
    pub tenancy: Tenancy,
    /// Max page size.
    pub max_pagination_limit: u32,
    /// Idempotency replay window.
    pub idempotency_ttl: chrono::Duration,
    /// Idempotency in-flight reservation.
    pub idempotency_in_flight: chrono::Duration,
    /// Object storage.
    pub object_storage: ObjectStorageChoice,
    /// Data sources.
    pub data_sources: DataSourceConfig,
    /// CORS origins (empty: no CORS).
    pub cors_origins: Vec<String>,
    /// What the original's names add (CORS methods and headers, Swagger UI on or off).
    pub original: OriginalExtras,
    /// Request body limit.
    pub max_request_body_bytes: usize,
    /// Time and connection bounds of the HTTP server.
    pub http: HttpLimits,
    /// Event publication.
    pub streaming: StreamingSettings,
    /// `DEPLOYMENT_MODE`: local, byoc or saas.
    pub deployment_mode: DeploymentMode,
    /// `SHUTDOWN_DRAIN_SECONDS`: readiness answers `draining` this long before the server stops.
    pub shutdown_drain: std::time::Duration,
    /// Report jobs and generation.
    pub worker: WorkerConfig,
    /// The template sandbox.
    pub sandbox: SandboxSettings,
    /// MongoDB, when configured.
    pub mongo: Option<MongoSettings>,

    /// `CONSOLE_ENABLED`: serve the Console at `/console`.
    pub console_enabled: bool,
    /// The template preview's bounds.
    pub preview: crate::app::PreviewSettings,
    /// OpenTelemetry export.
    pub telemetry: TelemetrySettings,
    /// Rate limiting (`RATE_LIMIT_*`, `REDIS_*`, `TRUSTED_PROXIES`).
    pub rate_limit: RateLimitSettings,
}

/// Where report jobs travel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobQueueChoice {
    /// In-process (only `reporter serve`).
    Memory,
    /// RabbitMQ.
    Rabbit {
        /// URI (it may hold the password).
        uri: Secret,
        /// Exchange.
        exchange: String,
        /// Queue.
        queue: String,
        /// Routing key.
        key: String,
        /// Dead-letter queue.
        dlq: String,
        /// Dead-letter exchange.
        dlx: String,
        /// Prefetch.
        prefetch: u16,
    },
}

/// HTML → PDF renderer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PdfChoice {
    /// Pure Rust.
    Native,
    /// Headless Chromium at this path.
    Chromium(PathBuf),
}

/// Worker and generation settings.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Job transport.
    pub queue: JobQueueChoice,
    /// Deliveries before dead-lettering.
    pub max_attempts: u32,
    /// Generation limits.
    pub settings: crate::worker::WorkerSettings,
    /// PDF renderer.
    pub pdf: PdfChoice,
    /// PDF pool size.
    pub pdf_pool: usize,
    /// PDF timeout.
    pub pdf_timeout: std::time::Duration,
    /// Heap of one native PDF conversion's child, bytes.
    pub pdf_memory_bytes: u64,
}

/// The template sandbox: child processes that parse uploads and render reports under OS
/// limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSettings {
    /// Child executable; `None`: this binary (`std::env::current_exe`).
    pub exe: Option<PathBuf>,
    /// Children per pool.
    pub pool_size: usize,
    /// Heap of a render process, bytes.
    pub render_memory_bytes: u64,
    /// CPU seconds of a render process.
    pub render_cpu_seconds: u64,
    /// Wall-clock deadline of a render.
    pub render_timeout: std::time::Duration,
    /// Heap of a parse process, bytes.
    pub parse_memory_bytes: u64,
    /// Deadline of a parse (wall clock; the CPU limit is its whole seconds, at least 1).
    pub parse_timeout: std::time::Duration,
    /// Largest output (ENGINE_MAX_OUTPUT_BYTES).
    pub max_output_bytes: u64,
    /// Origins html (and pdf) reports may load from (REPORT_HTML_ALLOWED_ORIGINS); the
    /// sanitizer in the render children applies them.
    pub html_allowed_origins: reporter_adapter_ammonia::AllowedOrigins,
}

/// Where events are published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventBroker {
    /// RabbitMQ at these URIs (the first that answers is used; they may hold passwords).
    Amqp(Vec<Secret>),
    /// The in-memory broker that records deliveries (testers).
    Memory,
}

/// Which setting named the event broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrokerOrigin {
    /// `STREAMING_BROKERS` holds AMQP URIs (or `memory://`).
    StreamingBrokers,
    /// `STREAMING_BROKERS` holds no AMQP URI (e.g. the original's `rabbitmq:5672`, a
    /// lib-streaming broker list): the AMQP server is `RABBITMQ_URI`.
    RabbitmqUri {
        /// The `STREAMING_BROKERS` value, for messages (shown through [`redact`]).
        brokers: Secret,
    },
}

/// Event publication settings (the seed's rules).
#[derive(Debug, Clone, PartialEq)]
pub struct StreamingSettings {
    /// `STREAMING_ENABLED`.
    pub enabled: bool,
    /// The events exchange (non-blank when enabled).
    pub exchange: String,
    /// Alternate exchange and queue for unroutable messages.
    pub alternate_exchange: String,
    /// Broker (meaningful when enabled).
    pub broker: EventBroker,
    /// Which setting named the broker.
    pub broker_origin: BrokerOrigin,
    /// `x-message-ttl` of the unroutable queue.
    pub unroutable_ttl: std::time::Duration,
    /// `x-max-length` of the unroutable queue.
    pub unroutable_max_length: u32,
    /// Breaker failure ratio.
    pub cb_failure_ratio: f64,
    /// Breaker minimum requests.
    pub cb_min_requests: u32,
    /// Breaker open duration.
    pub cb_open: std::time::Duration,
    /// Publish + confirm deadline.
    pub publish_timeout: std::time::Duration,
    /// Attempts before parking.
    pub outbox_max_attempts: u32,
    /// Published-row retention.
    pub outbox_retention: chrono::Duration,
    /// Dispatcher batch / in-flight window.
    pub dispatch_batch: usize,
    /// Dispatcher fallback poll.
    pub dispatch_poll: std::time::Duration,
    /// Claim lease.
    pub outbox_lease: chrono::Duration,
    /// Published rows kept at most by the in-memory outbox.
    pub memory_max_published: usize,
}

/// Checks the seed's streaming rules: when enabled, `RABBITMQ_REPORT_EVENTS_EXCHANGE`,
/// `STREAMING_BROKERS` and `STREAMING_CLOUDEVENTS_SOURCE` must be non-blank and the source
/// exactly `reporter`; when disabled the source may be unset, but a non-empty value other than
/// `reporter` still fails.
pub fn streaming_rules(
    enabled: bool,
    exchange: Option<&str>,
    brokers: Option<&str>,
    source: Option<&str>,
) -> Vec<ConfigProblem> {
    let mut out = Vec::new();
    let blank = |v: Option<&str>| v.is_none_or(|s| s.trim().is_empty());
    if enabled {
        if blank(exchange) {
            out.push(problem(
                "RABBITMQ_REPORT_EVENTS_EXCHANGE",
                "blank while STREAMING_ENABLED=true",
                "the exchange that carries the events, e.g. reporter.events",
            ));
        }
        if blank(brokers) {
            out.push(problem(
                "STREAMING_BROKERS",
                "blank while STREAMING_ENABLED=true",
                "non-empty: amqp(s):// URIs, memory://, or a broker list such as rabbitmq:5672 (then RABBITMQ_URI names the AMQP server)",
            ));
        }
        if blank(source) {
            out.push(problem(
                "STREAMING_CLOUDEVENTS_SOURCE",
                "blank while STREAMING_ENABLED=true",
                "exactly 'reporter'",
            ));
        }
    }
    if let Some(s) = source.map(str::trim).filter(|s| !s.is_empty())
        && s != "reporter"
    {
        out.push(problem(
            "STREAMING_CLOUDEVENTS_SOURCE",
            format!("'{s}' is not the Reporter source"),
            "exactly 'reporter'",
        ));
    }
    out
}

/// `STREAMING_EVENT_POLICIES`: empty or unset is fine; an override cannot be honoured (the
/// policies are fixed per event class), so it is a problem naming the variable and why.
fn event_policies_problem(value: Option<&str>) -> Option<ConfigProblem> {
    let value = value.map(str::trim).filter(|v| !v.is_empty())?;
    let shown: String = value.chars().take(80).collect();
    Some(problem(
        "STREAMING_EVENT_POLICIES",
        format!(
            "per-event policy overrides ('{shown}') are not supported: Reporter's delivery \
             policies are fixed per event class (important: direct with the outbox as fallback; \
             critical: outbox only), see docs/src/events/write-path.md"
        ),
        "unset or empty",
    ))
}

fn problem(var: &str, problem: impl Into<String>, rule: &str) -> ConfigProblem {
    ConfigProblem {
        variable: var.to_owned(),
        problem: problem.into(),
        rule: rule.to_owned(),
    }
}

/// The value of a secret variable, trimmed; `None` when unset or blank.
fn secret(v: &Option<Secret>) -> Option<&str> {
    v.as_ref()
        .map(|s| s.expose().trim())
        .filter(|s| !s.is_empty())
}

/// Parses a boolean the way operators write them.
pub fn parse_bool(raw: &str) -> Option<bool> {
    match raw.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

struct Checker {
    problems: Vec<ConfigProblem>,
}

/// The integer types a variable is read into.
trait Integer: std::str::FromStr + PartialOrd + fmt::Display + Copy + Default + TryFrom<u64> {}

impl<T: std::str::FromStr + PartialOrd + fmt::Display + Copy + Default + TryFrom<u64>> Integer
    for T
{
}

impl Checker {
    /// A boolean; when the value is not one, a problem, and the declared default (else
    /// `false`) stands in.
    fn boolean(&mut self, var: &str, raw: &str) -> bool {
        parse_bool(raw).unwrap_or_else(|| {
            self.problems.push(problem(
                var,
                format!("'{raw}' is not a boolean"),
                "true|false (also 1/0, yes/no, on/off)",
            ));
            Self::boolean_fallback(var)
        })
    }

    /// What [`Self::boolean`] falls back to: `var`'s declared default, else `false`.
    fn boolean_fallback(var: &str) -> bool {
        declared::default_of(var)
            .and_then(parse_bool)
            .unwrap_or(false)
    }

    /// An escape hatch that is off unless set: blank (as Helm writes an unset value) is
    /// `false`, otherwise a boolean.
    fn switch(&mut self, var: &str, raw: &str) -> bool {
        !raw.trim().is_empty() && self.boolean(var, raw)
    }

    /// lib-commons' allowance (`ALLOW_RATELIMIT_*`): blank is `false`, a boolean is itself,
    /// and any other text is the reason the chart asks for, which allows it (logged).
    fn allowance(&mut self, var: &str, raw: &str) -> bool {
        let raw = raw.trim();
        match parse_bool(raw) {
            _ if raw.is_empty() => false,
            Some(b) => b,
            None => {
                tracing::info!(variable = var, reason = raw, "allowed with a reason");
                true
            }
        }
    }

    /// An integer within the bounds [`allowed`] declares for `var`; when it is not one, a
    /// problem, and `var`'s declared default stands in (see [`Self::int_fallback`]).
    fn int<T: Integer>(&mut self, var: &str, raw: &str) -> T {
        let fallback = Self::int_fallback(var);
        self.declared_int(var, raw, fallback)
    }

    /// What [`Self::int`] falls back to: `var`'s declared default, if it is an integer.
    fn int_fallback<T: Integer>(var: &str) -> Option<T> {
        declared::default_of(var).and_then(|d| d.trim().parse::<T>().ok())
    }

    /// [`Self::int`] for a variable whose default is not a number (`auto`) or which has
    /// none: `fallback` stands in for a bad value.
    fn int_or<T: Integer>(&mut self, var: &str, raw: &str, fallback: T) -> T {
        self.declared_int(var, raw, Some(fallback))
    }

    fn declared_int<T: Integer>(&mut self, var: &str, raw: &str, fallback: Option<T>) -> T {
        let bounds = allowed::bounds(var)
            .and_then(|(min, max)| Some((T::try_from(min).ok()?, T::try_from(max).ok()?)));
        let Some((min, max)) = bounds else {
            self.problems.push(problem(
                var,
                "has no integer bounds of its type",
                "a bug in Reporter: declare them in src/config/allowed.rs",
            ));
            return fallback.unwrap_or_default();
        };
        self.number(var, raw, min, max, fallback.unwrap_or(min))
    }

    /// An integer in `min..=max` (bounds computed from other settings), else `fallback`.
    fn number<T: std::str::FromStr + PartialOrd + fmt::Display + Copy>(
        &mut self,
        var: &str,
        raw: &str,
        min: T,
        max: T,
        fallback: T,
    ) -> T {
        match raw.trim().parse::<T>() {
            Ok(v) if v >= min && v <= max => v,
            Ok(_) => {
                self.problems.push(problem(
                    var,
                    format!("{raw} is out of range"),
                    &format!("an integer between {min} and {max}"),
                ));
                fallback
            }
            Err(_) => {
                self.problems.push(problem(
                    var,
                    format!("'{raw}' is not an integer"),
                    &format!("an integer between {min} and {max}"),
                ));
                fallback
            }
        }
    }
}

impl RawConfig {
    /// The settings as if no variable were set: every default as declared by its clap
    /// attribute (derived by [`declared::defaults_of`], never written again).
    pub fn defaults() -> Self {
        declared::defaults_of()
    }

    /// Validates every value and reports every problem. One call per section (each validates
    /// itself into the shared list of problems), then the rules that span sections, then the
    /// assembled [`Config`]: over 80 lines only because that literal has a line per field.
    pub fn validate(&self, env: &[(String, String)]) -> Result<Config, ConfigErrors> {
        let mut c = Checker {
            problems: Vec::new(),
        };
        original_settings::refusals(env, &mut c);
        self.with_original_names(env, &mut c)
            .validate_mapped(env, c)
    }

    /// [`Self::validate`] once the original's names are applied.
    fn validate_mapped(
        &self,
        env: &[(String, String)],
        mut c: Checker,
    ) -> Result<Config, ConfigErrors> {
        let server_address = self.server_listen(&mut c);
        let health_address = self.health_listen(&mut c);
        let production = self.env_name.trim().eq_ignore_ascii_case("production");
        let log_json = self.logging(&mut c);
        let auth = self.auth(&mut c, production);
        let tenancy = self.tenancy(&mut c, auth.enabled);
        let original = self.original_extras(&mut c, auth.enabled);
        let max_pagination_limit = c.int::<u32>("MAX_PAGINATION_LIMIT", &self.max_pagination_limit);
        let ttl = c.int::<i64>("IDEMPOTENCY_TTL_SECONDS", &self.idempotency_ttl_seconds);
        let in_flight = c.int::<i64>(
            "IDEMPOTENCY_IN_FLIGHT_SECONDS",
            &self.idempotency_in_flight_seconds,
        );
        let object_storage = self.object_storage(&mut c, matches!(tenancy, Tenancy::Multi));
        let data_sources =
            DataSourceConfig::from_env(env, self.example_data(&mut c), &mut c.problems);
        let cors_origins = self.cors_origins(&mut c, production);
        let max_request_body_bytes =
            c.int::<usize>("MAX_REQUEST_BODY_BYTES", &self.max_request_body_bytes);
        let http = self.http_limits(&mut c);

        let rabbitmq = self.rabbitmq_url(&mut c);
        let streaming = self.streaming(rabbitmq.as_deref(), &mut c);
        let mut worker = self.worker(rabbitmq.as_deref(), &mut c);
        let sandbox = self.sandbox(&mut c, worker.settings.render.max_output_bytes);
        worker.settings.max_jobs_per_tenant = self.max_jobs_per_tenant(
            &mut c,
            matches!(tenancy, Tenancy::Multi),
            worker.settings.concurrency,
            sandbox.pool_size,
        );
        self.auto_prefetch(&mut worker);
        worker.settings.storage_sweep =
            self.storage_sweep(&mut c, worker.settings.job_timeout, object_storage.label());
        let mongo = self.mongo(&mut c);
        let deployment_mode = self.deployment_mode(&mut c);
        let shutdown_drain = std::time::Duration::from_secs(
            c.int::<u64>("SHUTDOWN_DRAIN_SECONDS", &self.shutdown_drain_seconds),
        );
        let rate_limit = self.protection.rate_limit(&mut c, production);
        let connections = deployment::Connections {
            mongo: mongo.as_ref(),
            queue: &worker.queue,
            streaming: &streaming,
            storage: &object_storage,
            sources: &data_sources,
            redis: rate_limit.redis.as_ref().filter(|_| rate_limit.enabled),
        };
        let console_enabled = self.console.enabled(&mut c);
        let preview = self.preview(&mut c);
        let cross = deployment::cross_section_problems(deployment_mode, &connections);
        c.problems.extend(cross);
        let telemetry = self.telemetry.validate(&mut c, &self.env_name);
        let allow_insecure_tls =
            c.switch("ALLOW_INSECURE_TLS", &self.protection.allow_insecure_tls);
        let allow_insecure_otel =
            c.switch("ALLOW_INSECURE_OTEL", &self.protection.allow_insecure_otel);
        if production {
            let inputs = production::ProductionInputs {
                env,
                connections,
                cors_origins: &cors_origins,
                allow_insecure_tls,
                allow_insecure_otel,
            };
            c.problems.extend(production::production_problems(&inputs));
        }
        if !c.problems.is_empty() {
            return Err(ConfigErrors(c.problems));
        }
        Ok(Config {
            server_address,
            health_address,
            production,
            log_level: self.log_level.clone(),
            log_json,
            auth,
            tenancy,
            max_pagination_limit,
            idempotency_ttl: chrono::Duration::seconds(ttl),
            idempotency_in_flight: chrono::Duration::seconds(in_flight),
            object_storage,
            data_sources,
            cors_origins,
            original,
            max_request_body_bytes,
            http,
            streaming,
            deployment_mode,
            shutdown_drain,
            worker,
            sandbox,
            mongo,

            console_enabled,
            preview,
            telemetry,
            rate_limit,
        })
    }

    /// `STREAMING_BROKERS` → the broker: `memory://`; its AMQP URIs; or, when it names none
    /// (the original's `rabbitmq:5672`), `RABBITMQ_URI`. Any non-empty value is accepted;
    /// only a missing AMQP server is a problem (when publication is on).
    fn event_broker(
        &self,
        enabled: bool,
        rabbitmq: Option<&str>,
        c: &mut Checker,
    ) -> (EventBroker, BrokerOrigin) {
        let Some(raw) = self
            .streaming_brokers
            .as_ref()
            .map(|s| s.expose().trim())
            .filter(|s| !s.is_empty())
        else {
            return (EventBroker::Memory, BrokerOrigin::StreamingBrokers);
        };
        let entries: Vec<&str> = raw
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        if entries.contains(&"memory://") {
            if entries.len() > 1 {
                c.problems.push(problem(
                    "STREAMING_BROKERS",
                    "memory:// cannot be combined with other brokers",
                    "either memory:// alone, or the brokers of a real deployment",
                ));
            }
            return (EventBroker::Memory, BrokerOrigin::StreamingBrokers);
        }
        let amqp: Vec<Secret> = entries
            .iter()
            .filter(|e| e.starts_with("amqp://") || e.starts_with("amqps://"))
            .map(|e| Secret::from(*e))
            .collect();
        if !amqp.is_empty() {
            return (EventBroker::Amqp(amqp), BrokerOrigin::StreamingBrokers);
        }
        let origin = BrokerOrigin::RabbitmqUri {
            brokers: Secret::from(raw),
        };
        match rabbitmq {
            Some(uri) => (EventBroker::Amqp(vec![Secret::from(uri)]), origin),
            None => {
                if enabled {
                    c.problems.push(problem(
                        "RABBITMQ_URI",
                        format!(
                            "unset, and STREAMING_BROKERS ('{}') names no AMQP URI",
                            redact(raw)
                        ),
                        "the AMQP server of the events: set RABBITMQ_URI (amqp://user:pass@host:port/vhost), or put amqp(s):// URIs in STREAMING_BROKERS",
                    ));
                }
                (EventBroker::Memory, origin)
            }
        }
    }

    fn sandbox(&self, c: &mut Checker, max_output_bytes: usize) -> SandboxSettings {
        const MIB: u64 = 1024 * 1024;
        let exe = self
            .template_sandbox_exe
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from);
        if let Some(p) = &exe
            && !p.is_file()
        {
            c.problems.push(problem(
                "TEMPLATE_SANDBOX_EXE",
                format!("'{}' is not a file", p.display()),
                "the path of a reporter binary (default: this one)",
            ));
        }
        SandboxSettings {
            exe,
            pool_size: c.int::<usize>(
                "TEMPLATE_SANDBOX_POOL_SIZE",
                &self.template_sandbox_pool_size,
            ),
            render_memory_bytes: c.int::<u64>(
                "TEMPLATE_RENDER_MEMORY_MIB",
                &self.template_render_memory_mib,
            ) * MIB,
            render_cpu_seconds: c.int::<u64>(
                "TEMPLATE_RENDER_CPU_SECONDS",
                &self.template_render_cpu_seconds,
            ),
            render_timeout: std::time::Duration::from_secs(c.int::<u64>(
                "TEMPLATE_RENDER_TIMEOUT_SEC",
                &self.template_render_timeout_sec,
            )),
            parse_memory_bytes: c
                .int::<u64>("TEMPLATE_PARSE_MEMORY_MIB", &self.template_parse_memory_mib)
                * MIB,
            parse_timeout: std::time::Duration::from_millis(
                c.int::<u64>("TEMPLATE_PARSE_TIMEOUT_MS", &self.template_parse_timeout_ms),
            ),
            max_output_bytes: max_output_bytes as u64,
            html_allowed_origins: self.html_allowed_origins(c),
        }
    }

    /// `REPORT_HTML_ALLOWED_ORIGINS`: comma-separated `http(s)://host[:port]` origins.
    fn html_allowed_origins(&self, c: &mut Checker) -> reporter_adapter_ammonia::AllowedOrigins {
        let entries: Vec<&str> = self
            .report_html_allowed_origins
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        reporter_adapter_ammonia::AllowedOrigins::parse(&entries).unwrap_or_else(|e| {
            c.problems.push(problem(
                "REPORT_HTML_ALLOWED_ORIGINS",
                e.to_string(),
                "comma-separated origins such as https://cdn.example.com (scheme, host, port)",
            ));
            reporter_adapter_ammonia::AllowedOrigins::default()
        })
    }

    /// `OBJECT_STORAGE_MEMORY_MAX_BYTES`: `None` when 0, else at least 1 MiB.
    fn memory_max_bytes(&self, c: &mut Checker) -> Option<u64> {
        let raw = self.object_storage_memory_max_bytes.trim();
        let max = c.int::<u64>("OBJECT_STORAGE_MEMORY_MAX_BYTES", raw);
        if max == 0 {
            return None;
        }
        if max < 1 << 20 {
            c.problems.push(problem(
                "OBJECT_STORAGE_MEMORY_MAX_BYTES",
                format!("{max} is below 1 MiB"),
                "0 (no bound), or bytes from 1048576",
            ));
        }
        Some(max)
    }

    /// `OBJECT_STORAGE_MEMORY_TENANT_MAX_BYTES`: `auto` is a quarter of `total` in
    /// multi-tenant mode (`None` otherwise), `0` is `None`, else at least 1 MiB.
    fn memory_tenant_max_bytes(
        &self,
        c: &mut Checker,
        total: Option<u64>,
        multi_tenant: bool,
    ) -> Option<u64> {
        const VAR: &str = "OBJECT_STORAGE_MEMORY_TENANT_MAX_BYTES";
        let raw = self.object_storage_memory_tenant_max_bytes.trim();
        if raw.eq_ignore_ascii_case("auto") {
            return total.filter(|_| multi_tenant).map(|t| t / 4);
        }
        let share = c.int_or::<u64>(VAR, raw, 0);
        if share == 0 {
            return None;
        }
        if share < 1 << 20 {
            c.problems.push(problem(
                VAR,
                format!("{share} is below 1 MiB"),
                "auto, 0 (no share), or bytes from 1048576",
            ));
        }
        Some(share)
    }
}

/// `DEPLOYMENT_MODE` (the original's values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeploymentMode {
    /// A developer's machine or a plain installation (default).
    Local,
    /// Bring your own cloud.
    Byoc,
    /// Operated as a service: every connection must use TLS.
    Saas,
}

impl DeploymentMode {
    /// Parses `local`, `byoc` or `saas` (any case).
    pub fn parse(raw: &str) -> Option<Self> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "local" => Some(Self::Local),
            "byoc" => Some(Self::Byoc),
            "saas" => Some(Self::Saas),
            _ => None,
        }
    }
    /// The value as /readyz reports it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::Byoc => "byoc",
            Self::Saas => "saas",
        }
    }
}

impl StreamingSettings {
    /// One line for `reporter config check` and the start-up banner: where events go and
    /// which setting said so.
    pub fn describe(&self) -> String {
        if !self.enabled {
            return "event publication: off (STREAMING_ENABLED=false)".to_owned();
        }
        match (&self.broker, &self.broker_origin) {
            (EventBroker::Memory, _) => format!(
                "event publication: in-memory broker (STREAMING_BROKERS=memory://), exchange '{}'",
                self.exchange
            ),
            (EventBroker::Amqp(uris), BrokerOrigin::StreamingBrokers) => format!(
                "event publication: RabbitMQ {} from STREAMING_BROKERS, exchange '{}'",
                uris.iter()
                    .map(|u| redact(u.expose()))
                    .collect::<Vec<_>>()
                    .join(", "),
                self.exchange
            ),
            (EventBroker::Amqp(uris), BrokerOrigin::RabbitmqUri { brokers }) => format!(
                "event publication: RabbitMQ {} from RABBITMQ_URI (STREAMING_BROKERS '{}' names no AMQP URI), exchange '{}'",
                uris.iter()
                    .map(|u| redact(u.expose()))
                    .collect::<Vec<_>>()
                    .join(", "),
                redact(brokers.expose()),
                self.exchange
            ),
        }
    }
}

/// Hides the password of a URI for messages: `scheme://user:pass@host` becomes
/// `scheme://user:***@host`. Also for a comma-separated list (each entry on its own) and for
/// `user:pass@host` without a scheme (a broker list such as STREAMING_BROKERS).
pub fn redact(uri: &str) -> String {
    uri.split(',').map(redact_one).collect::<Vec<_>>().join(",")
}

fn redact_one(uri: &str) -> String {
    let start = uri.find("://").map_or(0, |scheme| scheme + 3);
    match uri[start..].rfind('@').map(|at| start + at) {
        Some(at) => {
            let creds = &uri[start..at];
            match creds.find(':') {
                Some(colon) => format!("{}{}:***{}", &uri[..start], &creds[..colon], &uri[at..]),
                None => uri.to_owned(),
            }
        }
        None => uri.to_owned(),
    }
}

#[cfg(test)]
mod protection_tests;
#[cfg(test)]
mod secret_tests;
#[cfg(test)]
mod tests;
