//! The `reporter` command.
use crate::config::{Config, RawConfig, RunMode, original_settings};
use crate::{http, telemetry, wiring};
use clap::{Parser, Subcommand, ValueEnum};
use poem::endpoint::EitherEndpoint;
use std::path::PathBuf;
use std::process::ExitCode;

const ENV_HELP: &str = "Data sources are configured per source with DATASOURCE_<NAME>_TYPE (file), \
DATASOURCE_<NAME>_PATH (a directory of <table>.json / <table>.csv files) and optional \
DATASOURCE_<NAME>_CONFIG_NAME (the id templates use; default <name> lower-cased).\n\
With no configuration at all, `reporter serve` runs fully in memory with the bundled example data set \
as data source `bank`, and prints a development token.";

/// Reporter: report templates, report generation, filing deadlines and CloudEvents.
#[derive(Debug, Parser)]
#[command(name = "reporter", version, about, after_help = ENV_HELP)]
pub struct Cli {
    /// What to run (default: serve).
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Settings (each also read from its environment variable).
    #[command(flatten)]
    pub config: RawConfig,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the API and an embedded worker in one process (the default).
    Serve,
    /// Run only the HTTP API.
    Api,
    /// Run only the report worker (needs a shared job queue; see docs/src/operations/deployment.md).
    Worker,
    /// Print the AsyncAPI 3.0 document of the events channel.
    Asyncapi,
    /// Print the OpenAPI document, or write the committed files (OpenAPI JSON and YAML,
    /// AsyncAPI YAML) with --write.
    Openapi {
        /// Output format.
        #[arg(long, value_enum, default_value_t = SpecFormat::Json)]
        format: SpecFormat,
        /// Write `reporter.json` and `reporter.yaml` into this directory instead of printing.
        #[arg(long)]
        write: Option<PathBuf>,
    },
    /// Outbox operations.
    Outbox {
        /// What to do.
        #[command(subcommand)]
        action: OutboxAction,
    },
    /// Event stream tools.
    Events {
        /// What to do.
        #[command(subcommand)]
        action: EventsAction,
    },
    /// Configuration commands.
    Config {
        /// What to do.
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Internal: one template sandbox child, started by the service itself.
    #[command(hide = true, name = "template-sandbox")]
    TemplateSandbox {
        /// The child's limits (`--name=value`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Internal: one PDF conversion in a bounded child, started by the service itself.
    #[command(hide = true, name = "pdf-render")]
    PdfRender {
        /// The child's limits, page and fonts (`--name=value`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

/// `reporter config …`.
#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// Validate the environment; print every problem and exit non-zero if there is any.
    Check,
    /// Print what Reporter does with each setting of the original's Helm chart (markdown).
    OriginalSettings,
    /// Print the configuration reference: every variable with its default, allowed values and
    /// meaning (markdown; docs/src/operations/configuration.md).
    Reference,
}

/// `reporter outbox …`.
#[derive(Debug, Subcommand)]
pub enum OutboxAction {
    /// Return parked events (too many failed publishes) to pending so the dispatcher retries
    /// them with their original ce-id.
    Redrive {
        /// Only this tenant's rows (default: every tenant).
        #[arg(long)]
        tenant: Option<String>,
    },
}

/// `reporter events …`.
#[derive(Debug, Subcommand)]
pub enum EventsAction {
    /// Bind an exclusive queue to the events exchange and print every event: headers, payload,
    /// schema validation, and duplicates by (ce-source, ce-id).
    Tail {
        /// Binding pattern (topic syntax): `#` for everything, `report.*`, `deadline.delivered`.
        #[arg(long, default_value = "#")]
        pattern: String,
        /// Exchange (default: RABBITMQ_REPORT_EVENTS_EXCHANGE).
        #[arg(long)]
        exchange: Option<String>,
    },
}

/// Spec formats.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SpecFormat {
    /// JSON.
    Json,
    /// YAML.
    Yaml,
}

fn environment() -> Vec<(String, String)> {
    std::env::vars().collect()
}

fn load(raw: &RawConfig) -> Result<Config, ExitCode> {
    raw.validate(&environment()).map_err(|e| {
        eprintln!("{e}");
        ExitCode::from(2)
    })
}

/// Runs the command line.
/// `reporter openapi`: the spec on stdout, or the three documents written to `write`.
fn openapi(format: SpecFormat, write: Option<PathBuf>) -> ExitCode {
    let Some(dir) = write else {
        match format {
            SpecFormat::Json => print!("{}", http::spec::json()),
            SpecFormat::Yaml => print!("{}", http::spec::yaml()),
        }
        return ExitCode::SUCCESS;
    };
    let result = std::fs::create_dir_all(&dir)
        .and_then(|_| std::fs::write(dir.join("reporter.json"), http::spec::json()))
        .and_then(|_| std::fs::write(dir.join("reporter.yaml"), http::spec::yaml()))
        .and_then(|_| {
            std::fs::write(
                dir.join("asyncapi.yaml"),
                crate::streaming::manifest::asyncapi_yaml(),
            )
        });
    match result {
        Ok(()) => {
            println!(
                "wrote {0}/reporter.json, {0}/reporter.yaml and {0}/asyncapi.yaml",
                dir.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("writing the spec: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The original's settings present in `env` that have no effect here, one line naming them
/// (`None` when there are none).
fn without_effect_line(env: &[(String, String)]) -> Option<String> {
    let names = original_settings::without_effect(env);
    (!names.is_empty()).then(|| {
        format!(
            "the original's settings with no effect here (docs/original-settings.md): {}",
            names.join(", ")
        )
    })
}

/// The command to run: the subcommand, else the original's `RUN_MODE`, else `serve`. A
/// `RUN_MODE` naming another role than the subcommand MUST stop start-up (neither wins
/// silently); an invalid `RUN_MODE` is left to the configuration check.
fn resolve_command(command: Option<Command>, run_mode: Option<&str>) -> Result<Command, String> {
    let mode = run_mode
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .and_then(RunMode::parse);
    let from_mode = |m: RunMode| match m {
        RunMode::Api => Command::Api,
        RunMode::Worker => Command::Worker,
        RunMode::All => Command::Serve,
    };
    match (command, mode) {
        (None, Some(m)) => Ok(from_mode(m)),
        (None, None) => Ok(Command::Serve),
        (Some(c @ (Command::Serve | Command::Api | Command::Worker)), Some(m)) => {
            let named = match c {
                Command::Api => "api",
                Command::Worker => "worker",
                _ => "serve",
            };
            if named == m.command() {
                Ok(c)
            } else {
                Err(format!(
                    "RUN_MODE={} asks for `reporter {}` but the command is `reporter {named}`: \
                     unset RUN_MODE or run the command it names",
                    run_mode.unwrap_or_default().trim(),
                    m.command()
                ))
            }
        }
        (Some(c), _) => Ok(c),
    }
}

/// `reporter config check`: exit 0 with a summary, or 2 with every problem.
fn config_check(raw: &RawConfig) -> ExitCode {
    if let Some(line) = without_effect_line(&environment()) {
        println!("{line}");
    }
    match raw.validate(&environment()) {
        Ok(c) => {
            println!(
                "configuration OK: listening on {}, {} data source(s){}",
                c.server_address,
                c.data_sources.sources.len() + usize::from(c.data_sources.example),
                if c.auth.enabled { "" } else { ", auth OFF" }
            );
            println!("{}", c.streaming.describe());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(2)
        }
    }
}

pub async fn run(cli: Cli) -> ExitCode {
    let command = match resolve_command(cli.command, cli.config.original.run_mode.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let role = match &command {
        Command::Api => wiring::Role::Api,
        Command::Worker => wiring::Role::Worker,
        _ => wiring::Role::Serve,
    };
    match command {
        Command::Openapi { format, write } => openapi(format, write),
        Command::TemplateSandbox { args } => wiring::template_sandbox_child(&args),
        Command::PdfRender { args } => wiring::pdf_render_child(&args),
        Command::Asyncapi => {
            print!("{}", crate::streaming::manifest::asyncapi_yaml());
            ExitCode::SUCCESS
        }
        Command::Config {
            action: ConfigAction::Check,
        } => config_check(&cli.config),
        Command::Config {
            action: ConfigAction::OriginalSettings,
        } => {
            print!("{}", original_settings::markdown());
            ExitCode::SUCCESS
        }
        Command::Config {
            action: ConfigAction::Reference,
        } => {
            print!("{}", crate::config::reference::markdown());
            ExitCode::SUCCESS
        }
        Command::Serve | Command::Api | Command::Worker => {
            let Ok(config) = load(&cli.config) else {
                return ExitCode::from(2);
            };
            // Held to the end: dropping it flushes the last spans and metrics.
            let _telemetry = telemetry::init_observability(
                &config.log_level,
                config.log_json,
                &config.telemetry,
            );
            if let Some(line) = without_effect_line(&environment()) {
                tracing::warn!("{line}");
            }
            run_role(config, role).await
        }
        Command::Outbox {
            action: OutboxAction::Redrive { tenant },
        } => {
            let Ok(config) = load(&cli.config) else {
                return ExitCode::from(2);
            };
            let _telemetry = telemetry::init_observability(
                &config.log_level,
                config.log_json,
                &config.telemetry,
            );
            redrive(config, tenant).await
        }
        Command::Events {
            action: EventsAction::Tail { pattern, exchange },
        } => {
            let Ok(config) = load(&cli.config) else {
                return ExitCode::from(2);
            };
            tail(config, exchange, pattern).await
        }
    }
}

/// The listener of this role (`HEALTH_ADDRESS` for the worker, else `SERVER_ADDRESS`) and its
/// address (port 0 resolved); `None` after printing why it cannot be bound.
///
/// Bound once, before the banner, and kept until the server takes it: a client that connects
/// as soon as the port accepts waits in the backlog until the first request is served. (A
/// probe bound and closed before the real bind reset the connections that reached it in
/// between, and refused those after it.)
async fn listener(
    config: &Config,
    role: wiring::Role,
) -> Option<(tokio::net::TcpListener, String)> {
    let (bind, var) = if role == wiring::Role::Worker {
        (config.health_address, "HEALTH_ADDRESS")
    } else {
        (config.server_address, "SERVER_ADDRESS")
    };
    match tokio::net::TcpListener::bind(bind).await {
        Ok(l) => {
            let addr = l
                .local_addr()
                .map(|a| a.to_string())
                .unwrap_or_else(|_| bind.to_string());
            Some((l, addr))
        }
        Err(e) => {
            eprintln!("cannot bind {var}={bind}: {e}");
            None
        }
    }
}

/// Resolves after a shutdown signal and the drain period: readiness answers 503 `draining`
/// from the signal on, and requests are still served for `drain_for`
/// (SHUTDOWN_DRAIN_SECONDS) so load balancers stop sending traffic first.
async fn drained(drain: crate::http::ops::Drain, drain_for: std::time::Duration) {
    shutdown_signal().await;
    drain.start();
    tracing::info!(
        drain_seconds = drain_for.as_secs(),
        "shutdown signal: draining (readiness answers 503)"
    );
    tokio::time::sleep(drain_for).await;
}

async fn run_role(config: Config, role: wiring::Role) -> ExitCode {
    if !config.auth.enabled {
        tracing::warn!(
            "AUTH_ENABLED=false: every /v1 operation is open to anyone who can reach {}",
            config.server_address
        );
    }
    let built = match wiring::build(&config, role).await {
        Ok(b) => b,
        Err(e) => {
            eprintln!("start-up failed: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let Some((listener, addr)) = listener(&config, role).await else {
        return ExitCode::FAILURE;
    };
    print_banner(&addr, &built, role);
    // Pre-start the sandbox children of the pools this role uses (the first to say hello
    // logs what confines them, and warns of a mechanism the kernel lacks).
    for pool in wiring::sandbox_pools(&built.sandbox, role) {
        pool.warm_up();
    }
    let drain = built.http.readiness.drain();
    let endpoint = match http::endpoint(built.app.clone(), built.http) {
        // The worker serves only its ops endpoints.
        Ok(e) if role == wiring::Role::Worker => EitherEndpoint::A(http::ops_only(e)),
        Ok(e) => EitherEndpoint::B(e),
        Err(e) => {
            eprintln!("metrics registry: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Background work: the outbox dispatcher (publication on) and the worker (serve, worker).
    let drain_for = config.shutdown_drain;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let dispatcher = built
        .dispatcher
        .map(|d| tokio::spawn(d.run(stop_rx.clone())));
    let worker = built.worker.map(|w| tokio::spawn(w.run(stop_rx.clone())));
    crate::http::server::serve(
        listener,
        endpoint,
        config.http,
        drained(drain, drain_for),
        std::time::Duration::from_secs(10),
    )
    .await;
    // Stop taking work, let in-flight jobs drain (then cancel), stop the dispatcher last so
    // the terminal events of drained jobs are still published.
    let _ = stop_tx.send(true);
    if let Some(w) = worker {
        let _ = w.await;
    }
    if let Some(d) = dispatcher {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(10), d).await;
    }
    drop(built.example_dir);
    ExitCode::SUCCESS
}

/// Waits for SIGINT (Ctrl-C) or, on Unix, SIGTERM (what Kubernetes and systemd send).
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM; only Ctrl-C stops the service gracefully");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn print_banner(addr: &str, built: &wiring::Built, role: wiring::Role) {
    let base = format!("http://{addr}");
    if role == wiring::Role::Worker {
        // The worker's port serves only its ops endpoints (http::ops_only).
        println!(
            "Reporter {} worker; health on {base}",
            env!("CARGO_PKG_VERSION")
        );
    } else {
        println!("Reporter {} listening on {base}", env!("CARGO_PKG_VERSION"));
    }
    for line in &built.summary {
        println!("  - {line}");
    }
    if role == wiring::Role::Worker {
        println!("  health: {base}/health    readiness: {base}/readyz    metrics: {base}/metrics");
        return;
    }
    println!("  Swagger UI: {base}/swagger    spec: {base}/openapi.json    health: {base}/readyz");
    if built.http.console.enabled {
        println!("  Console: {base}/console/");
    }
    if let Some(token) = &built.dev_token {
        println!();
        println!("Development token (all scopes, valid 12 h, this run only):");
        println!("  export TOKEN={}", token.expose());
        println!("Try it:");
        println!("  curl -s -H \"Authorization: Bearer $TOKEN\" {base}/v1/data-sources/bank");
    }
}

async fn redrive(config: Config, tenant: Option<String>) -> ExitCode {
    let tenant = match tenant
        .as_deref()
        .map(reporter_ports::TenantId::parse)
        .transpose()
    {
        Ok(t) => t,
        Err(e) => {
            eprintln!("reporter outbox redrive: --tenant: {e}");
            return ExitCode::from(2);
        }
    };
    let outbox = match wiring::durable_outbox(&config).await {
        Ok(Some(o)) => o,
        Ok(None) => {
            eprintln!(
                "reporter outbox redrive: this deployment keeps its outbox in memory (no MONGO_URI), so only the running \
                 service can redrive it: POST /v1/streaming/outbox/redrive with a streaming:admin token."
            );
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("reporter outbox redrive: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let now = reporter_ports::Clock::now(&reporter_ports::clock::SystemClock);
    match crate::app::redrive_parked(&*outbox, tenant, now).await {
        Ok(n) => {
            println!(
                "redrove {n} parked event(s); the dispatcher publishes them with their original ce-id"
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("reporter outbox redrive: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn tail(config: Config, exchange: Option<String>, pattern: String) -> ExitCode {
    use futures_util::StreamExt;
    let uri = match &config.streaming.broker {
        crate::config::EventBroker::Amqp(uris) => uris.first().cloned(),
        crate::config::EventBroker::Memory => None,
    }
    .or_else(|| match &config.worker.queue {
        crate::config::JobQueueChoice::Rabbit { uri, .. } => Some(uri.clone()),
        crate::config::JobQueueChoice::Memory => None,
    });
    let Some(uri) = uri else {
        eprintln!(
            "reporter events tail: set STREAMING_BROKERS (amqp://…) or RABBITMQ_URI to the broker the events go to"
        );
        return ExitCode::from(2);
    };
    let exchange = exchange.unwrap_or_else(|| {
        if config.streaming.exchange.is_empty() {
            "reporter.events".to_owned()
        } else {
            config.streaming.exchange.clone()
        }
    });
    let mut stream =
        match reporter_adapter_rabbitmq::tail::tail(uri.expose(), &exchange, &pattern).await {
            Ok(s) => s,
            Err(e) => {
                eprintln!("reporter events tail: {e}");
                return ExitCode::FAILURE;
            }
        };
    eprintln!("tailing exchange '{exchange}' with binding '{pattern}' (Ctrl-C to stop)");
    let mut seen = std::collections::HashSet::new();
    loop {
        let next = tokio::select! {
            n = stream.next() => n,
            _ = tokio::signal::ctrl_c() => break,
        };
        let Some(item) = next else { break };
        match item {
            Ok(ev) => println!("{}", describe(&ev, &mut seen)),
            Err(e) => {
                eprintln!("reporter events tail: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

/// One tailed event as text: routing key, headers, payload, schema check, duplicate flag.
pub fn describe(
    ev: &reporter_adapter_rabbitmq::tail::TailedEvent,
    seen: &mut std::collections::HashSet<(String, String)>,
) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let source = ev.headers.get("ce-source").cloned().unwrap_or_default();
    let id = ev.headers.get("ce-id").cloned().unwrap_or_default();
    let duplicate = !seen.insert((source, id.clone()));
    let _ = writeln!(
        out,
        "── {} {}{}",
        ev.routing_key,
        id,
        if duplicate {
            "  [DUPLICATE of an earlier (ce-source, ce-id)]"
        } else {
            ""
        }
    );
    for (k, v) in &ev.headers {
        let _ = writeln!(out, "   {k}: {v}");
    }
    let _ = writeln!(
        out,
        "   content-type: {}  delivery-mode: {}",
        ev.content_type.as_deref().unwrap_or("-"),
        ev.delivery_mode.map_or("-".to_owned(), |m| m.to_string())
    );
    match serde_json::from_slice::<serde_json::Value>(&ev.payload) {
        Ok(payload) => {
            let _ = writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&payload).unwrap_or_default()
            );
            let verdict = match reporter_ports::events::EventKey::parse(&ev.routing_key) {
                None => "unknown event key: not in the manifest".to_owned(),
                Some(k) => match jsonschema::validator_for(&k.payload_schema()) {
                    Ok(v) => {
                        let errors: Vec<String> =
                            v.iter_errors(&payload).map(|e| e.to_string()).collect();
                        if errors.is_empty() {
                            "payload valid against its schema".to_owned()
                        } else {
                            format!("SCHEMA VIOLATION: {}", errors.join("; "))
                        }
                    }
                    Err(e) => format!("schema unusable: {e}"),
                },
            };
            let _ = writeln!(out, "   {verdict}");
        }
        Err(e) => {
            let _ = writeln!(out, "   payload is not JSON: {e}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::describe;
    use reporter_adapter_rabbitmq::tail::TailedEvent;
    use std::collections::{BTreeMap, HashSet};

    fn event(id: &str, payload: &str) -> TailedEvent {
        TailedEvent {
            routing_key: "deadline.deleted".into(),
            headers: BTreeMap::from([
                ("ce-id".to_owned(), id.to_owned()),
                ("ce-source".to_owned(), "reporter".to_owned()),
            ]),
            content_type: Some("application/json".into()),
            delivery_mode: Some(2),
            payload: payload.as_bytes().to_vec(),
            event: Err("not decoded in this test".into()),
        }
    }

    #[test]
    fn tail_validates_payloads_and_flags_duplicates() {
        let mut seen = HashSet::new();
        let ok = r#"{"deadline_id":"d","template_id":null,"deleted_at":"2027-01-01T00:00:00.000Z","cascaded":false}"#;
        let first = describe(&event("1", ok), &mut seen);
        assert!(
            first.contains("payload valid against its schema"),
            "{first}"
        );
        assert!(!first.contains("DUPLICATE"));
        let again = describe(&event("1", ok), &mut seen);
        assert!(again.contains("DUPLICATE"), "{again}");
        let bad = describe(&event("2", r#"{"deadline_id":"d","extra":1}"#), &mut seen);
        assert!(bad.contains("SCHEMA VIOLATION"), "{bad}");
        let not_json = describe(&event("3", "nope"), &mut seen);
        assert!(not_json.contains("payload is not JSON"), "{not_json}");
    }
}
