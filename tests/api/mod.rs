//! End-to-end suites over HTTP, one module per resource or concern (in memory; on MongoDB with `REPORTER_E2E_BACKEND=mongo`).

mod builder;
mod compat;
mod console;
mod crm;
mod deadlines;
mod platform;
mod preview;
mod props_builder;
mod props_deadlines;
mod props_upload;
mod rabbit;
mod reports;
mod sandbox;
mod sources;
mod streaming;
mod template_source;
mod templates;
mod xss;
