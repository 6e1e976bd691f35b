//! HTML → PDF adapters implementing [`PdfRenderer`](reporter_ports::ports::PdfRenderer):
//!
//! - [`NativePdfRenderer`]: pure Rust (sghtmltopdf) with bundled DejaVu Sans fonts; needs
//!   nothing installed. Each conversion runs in a child process under OS limits (memory, CPU
//!   time, wall clock) and the confinement the template sandbox's children apply too
//!   ([`reporter_child_confine::confine`]: only its pipes, `nobody` without capabilities
//!   under a root service, Landlock with no filesystem access, seccomp): the program of
//!   [`PdfChildCommand`], which runs [`child::run`]. It reports its [`Confinement`]
//!   ([`NativePdfRenderer::confinement`]).
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
