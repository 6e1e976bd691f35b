use clap::Parser;
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    reporter::cli::run(reporter::cli::Cli::parse()).await
}
