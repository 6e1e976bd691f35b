//! Reporter: report templates, report generation, filing deadlines, and every state change
//! published as a CloudEvent.
//!
//! - [`app`]: use cases over the ports of `reporter-ports`.
//! - [`http`]: the REST surface (poem + poem-openapi) and its middleware.
//! - [`config`]: environment configuration.
//! - [`wiring`]: builds adapters from configuration.
//! - [`cli`]: the `reporter` command.
pub mod app;
#[cfg(test)]
mod architecture_check;
#[cfg(test)]
mod build_info;
pub mod cli;
pub mod config;
#[cfg(test)]
mod docs_check;
pub mod heap;
pub mod http;
mod sandbox_warm_up;
pub mod streaming;
pub mod telemetry;
pub mod wiring;
pub mod worker;
