//! The port traits. Each trait documents its contract; `reporter-contract` tests it against
//! every adapter.
mod datasource;
mod idempotency;
mod jobs;
mod outbox;
mod publisher;
mod rate_limit;
mod render;
mod render_context;
mod render_fault;
mod repositories;
mod sandbox;
mod sanitizer;
mod storage;
mod streamed;
mod unit_of_work;

pub use datasource::*;
pub use idempotency::*;
pub use jobs::*;
pub use outbox::*;
pub use publisher::*;
pub use rate_limit::*;
pub use render::*;
pub use render_context::*;
pub use render_fault::*;
pub use repositories::*;
pub use sandbox::*;
pub use sanitizer::*;
pub use storage::*;
pub use streamed::*;
pub use unit_of_work::*;
