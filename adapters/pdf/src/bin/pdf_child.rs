//! A PDF child for this crate's tests: the same entry point the service runs as
//! `reporter pdf-render`. Not used by Reporter itself.
use std::process::ExitCode;

fn main() -> ExitCode {
    reporter_adapter_pdf::child::run(std::env::args().skip(1))
}
