//! The integration tests of `mongo`: one test binary (each module was a binary of
//! its own; one link instead of several on every edit).
mod common;
mod crm;
mod datasource_contract;
mod deadline_filters;
mod gridfs_contract;
mod idempotency_contract;
mod outbox_behaviour;
mod outbox_contract;
mod router;
mod store_contract;
mod transactions;
