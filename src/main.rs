use clap::Parser;
use reporter::cli::{Cli, Command};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // A template sandbox child runs no async runtime: it confines itself, answers, exits.
    if let Some(Command::TemplateSandbox { args }) = &cli.command {
        reporter::heap::configure_sandbox_child();
        return reporter::wiring::template_sandbox_child(args);
    }
    // Likewise a PDF child: one conversion under its limits, then exit.
    if let Some(Command::PdfRender { args }) = &cli.command {
        reporter::heap::configure_sandbox_child();
        return reporter::wiring::pdf_render_child(args);
    }
    // Before any thread: large buffers stay out of the allocator's arenas (see `heap`).
    reporter::heap::configure();
    // Two rustls crypto providers are compiled in (tiberius brings aws-lc-rs): name ring as
    // the process default for every client that asks rustls for it (mysql_async, mongodb,
    // lapin), which would otherwise panic.
    let _ = rustls::crypto::ring::default_provider().install_default();
    // Failpoints for the crash tests (`FAILPOINTS=idempotency-after-commit=return`,
    // docs/src/contributing/testing.md); without the variable nothing is configured and every failpoint is inert.
    let _failpoints = std::env::var_os("FAILPOINTS").map(|_| fail::FailScenario::setup());
    match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime.block_on(reporter::cli::run(cli)),
        Err(e) => {
            eprintln!("cannot start the async runtime: {e}");
            ExitCode::FAILURE
        }
    }
}
