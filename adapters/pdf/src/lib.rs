//! HTML → PDF adapters implementing [`PdfRenderer`](reporter_ports::ports::PdfRenderer):
//!
//! - [`NativePdfRenderer`]: pure Rust (sghtmltopdf) with bundled DejaVu Sans fonts; needs
//!   nothing installed. Each conversion runs in a child process under OS limits (memory, CPU
//!   time, wall clock): the program of [`PdfChildCommand`], which runs [`child::run`].
//! - [`ChromiumPdfRenderer`]: headless Chromium driven over the DevTools protocol
//!   (`Page.printToPDF`), for full browser fidelity where Chromium is installed.
//!
//! Both default to US Letter with 0.5 in margins ([`PageSetup`]), bound every conversion by
//! a timeout and a concurrency limit, and reject output under 1,000 bytes or without the
//! `%PDF-` magic (the reference's rule).
mod cdp;
pub mod child;
mod child_args;
mod chromium;
mod engine;
mod fonts;
mod native;
mod page;
mod process;

pub use child_args::{ArgsError, ChildArgs};
pub use chromium::{ChromiumOptions, ChromiumPdfRenderer};
pub use native::{NativePdfOptions, NativePdfRenderer};
pub use page::{MIN_PDF_BYTES, Margins, PageSetup, PaperSize};
pub use process::PdfChildCommand;
pub use reporter_child_confine::{Confinement, Enforcement};
