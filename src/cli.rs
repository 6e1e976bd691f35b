//! The `reporter` command.
use crate::config::{Config, RawConfig};
use crate::{http, telemetry, wiring};
use clap::{Parser, Subcommand, ValueEnum};
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
    /// Run only the report worker (needs a shared job queue; see the README).
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
    /// Configuration commands.
    Config {
        /// What to do.
        #[command(subcommand)]
        action: ConfigAction,
    },
}

/// `reporter config …`.
#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// Validate the environment; print every problem and exit non-zero if there is any.
    Check,
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
pub async fn run(cli: Cli) -> ExitCode {
    match cli.command.unwrap_or(Command::Serve) {
        Command::Openapi { format, write } => match write {
            Some(dir) => {
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
            None => {
                match format {
                    SpecFormat::Json => print!("{}", http::spec::json()),
                    SpecFormat::Yaml => print!("{}", http::spec::yaml()),
                }
                ExitCode::SUCCESS
            }
        },
        Command::Asyncapi => {
            print!("{}", crate::streaming::manifest::asyncapi_yaml());
            ExitCode::SUCCESS
        }
        Command::Config {
            action: ConfigAction::Check,
        } => match cli.config.validate(&environment()) {
            Ok(c) => {
                println!(
                    "configuration OK: listening on {}, {} data source(s){}",
                    c.server_address,
                    c.data_sources.sources.len() + usize::from(c.data_sources.example),
                    if c.auth.enabled { "" } else { ", auth OFF" }
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(2)
            }
        },
        Command::Worker => {
            let Ok(config) = load(&cli.config) else {
                return ExitCode::from(2);
            };
            telemetry::init_tracing(&config.log_level, config.log_json);
            eprintln!(
                "reporter worker: no shared job queue is configured. Report generation runs inside `reporter serve`; \
                 a standalone worker needs RABBITMQ_URI (see the README)."
            );
            ExitCode::from(2)
        }
        Command::Serve | Command::Api => {
            let Ok(config) = load(&cli.config) else {
                return ExitCode::from(2);
            };
            telemetry::init_tracing(&config.log_level, config.log_json);
            serve(config).await
        }
    }
}

async fn serve(config: Config) -> ExitCode {
    if !config.auth.enabled {
        tracing::warn!(
            "AUTH_ENABLED=false: every /v1 operation is open to anyone who can reach {}",
            config.server_address
        );
    }
    let built = match wiring::build(&config) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("start-up failed: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let listener = match tokio::net::TcpListener::bind(config.server_address).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("cannot bind SERVER_ADDRESS={}: {e}", config.server_address);
            return ExitCode::FAILURE;
        }
    };
    let addr = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| config.server_address.to_string());
    drop(listener);
    print_banner(&addr, &built);
    let endpoint = match http::endpoint(built.app.clone(), built.http) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("metrics registry: {e}");
            return ExitCode::FAILURE;
        }
    };
    let server = poem::Server::new(poem::listener::TcpListener::bind(addr.clone()));
    let result = server
        .run_with_graceful_shutdown(
            endpoint,
            async {
                let _ = tokio::signal::ctrl_c().await;
            },
            Some(std::time::Duration::from_secs(10)),
        )
        .await;
    drop(built.example_dir);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("server error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn print_banner(addr: &str, built: &wiring::Built) {
    let base = format!("http://{addr}");
    println!("Reporter {} listening on {base}", env!("CARGO_PKG_VERSION"));
    for line in &built.summary {
        println!("  - {line}");
    }
    println!("  Swagger UI: {base}/swagger    spec: {base}/openapi.json    health: {base}/readyz");
    if let Some(token) = &built.dev_token {
        println!();
        println!("Development token (all scopes, valid 12 h, this run only):");
        println!("  export TOKEN={token}");
        println!("Try it:");
        println!("  curl -s -H \"Authorization: Bearer $TOKEN\" {base}/v1/data-sources/bank");
    }
}
