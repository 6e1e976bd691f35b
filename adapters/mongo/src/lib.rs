//! MongoDB adapters for Reporter's ports.
//!
//! - [`MongoStore`]: templates, deadlines, reports, the unit of work and the outbox
//!   ([`TemplateRepository`](reporter_ports::ports::TemplateRepository),
//!   [`DeadlineRepository`](reporter_ports::ports::DeadlineRepository),
//!   [`ReportRepository`](reporter_ports::ports::ReportRepository),
//!   [`UnitOfWorkPort`](reporter_ports::ports::UnitOfWorkPort),
//!   [`Outbox`](reporter_ports::ports::Outbox)) in one database.
//! - [`MongoIdempotencyStore`]: idempotency reservations and stored responses.
//! - [`GridFsStorage`]: object storage over GridFS.
//! - [`MongoDataSource`]: a MongoDB database as a report data source.
//! - [`MongoConnection`]: the client (pool, timeouts, TLS) every store of a process shares.
//! - [`tenant_database_name`]: the database of a tenant when each tenant has its own.
//!
//! # Server requirements
//!
//! A unit of work is one multi-document transaction, so the server must be a replica set
//! member or a `mongos`. [`MongoStore::connect`] reads `hello` and refuses a standalone
//! `mongod` ([`check_transaction_support`]) with the recipe for a single-node replica set
//! (`--replSet rs0`, `rs.initiate()`). The tests run against SecantusDB, a wire-compatible
//! single-node replica set from PyPI: `scripts/mongo-standin.sh start`, then
//! `export MONGODB_URI=mongodb://127.0.0.1:27017`. Every integration test uses its own
//! database and drops it; without `MONGODB_URI` they print `SKIPPED` (and fail under
//! `REPORTER_REQUIRE_SERVICES=1`).
//!
//! # Documents
//!
//! Every record is mapped to an explicit document struct (never the domain struct as is):
//! ids are strings (`_id` is the record id), instants are BSON `DateTime`, every document has
//! a `tenant` field and every read filters on it. Derived fields serve the queries: `deleted`
//! (`deleted_at` is set) on templates and deadlines, and `next_due_date`
//! ([`Deadline::next_due_date`](reporter_ports::deadline::Deadline::next_due_date)) on
//! deadlines. Report filters and event payloads are kept as JSON text (never queried, kept
//! byte-exact); the event time is kept as RFC 3339 text with every digit, so a replay is
//! identical.
//!
//! **Precision**: every other instant is stored in milliseconds; the sub-millisecond part is
//! dropped, and reads answer the millisecond value. Query bounds are rounded so the database
//! answers exactly what comparing the stored value with the full-precision bound would.
//!
//! # Collections and indexes
//!
//! [`MongoStore::ensure_indexes`] (run by every constructor; idempotent) creates:
//!
//! | collection | index | keys | why |
//! |---|---|---|---|
//! | every collection | `_id_` (unique, built in) | `_id` | record ids; a second insert of an id is `VersionConflict` |
//! | `templates` | `templates_list` | `tenant, deleted, created_at, _id` | list + count, `created_at`-then-id order |
//! | `deadlines` | `deadlines_list` | `tenant, deleted, created_at, _id` | list order |
//! | `deadlines` | `deadlines_by_template` | `tenant, template_id, deleted` | `list_by_template` |
//! | `deadlines` | `deadlines_due` | `tenant, deleted, active, due_date` | `list_undelivered_active` |
//! | `deadlines` | [`DEADLINE_UNIQUE_INDEX`] (**unique, partial**: `deleted: false`, `template_id` is a string) | `tenant, kind, template_id, due_date, frequency` | the deadline uniqueness rule → `Duplicate` |
//! | `reports` | `reports_list` | `tenant, created_at, _id` | list order |
//! | `reports` | `reports_by_template` | `tenant, template_id, created_at` | template filter |
//! | `reports` | `reports_by_status` | `tenant, status, created_at` | status filter |
//! | `reports` | `reports_stale` | `status, updated_at` | the reconciliation sweep (`list_stale_processing`) |
//! | `outbox` | `outbox_claim` | `status, available_at, created_at` | claimable rows |
//! | `outbox` | `outbox_claim_order` | `status, created_at, pos, _id` | claim walk order |
//! | `outbox` | `outbox_aggregate_order` | `aggregate, status, agg_seq` | per-aggregate order check |
//! | `outbox` | `outbox_backlog` | `status, created_at` | `stats` (oldest pending) |
//! | `outbox` | `outbox_redrive` | `status, tenant` | `redrive` and `list_parked` by tenant (`list_parked` sorts the parked rows by `parked_at` in a top-`limit` sort) |
//! | `outbox` | [`OUTBOX_TTL_INDEX`] (**TTL**, `expireAfterSeconds` = [`MongoStoreConfig::outbox_retention`]) | `published_at` | published rows deleted after the retention; a changed retention is applied with `collMod` |
//! | `outbox_sequences` | `_id_` | `_id` (aggregate) | per-aggregate commit counter |
//! | `idempotency` | [`IDEMPOTENCY_TTL_INDEX`] (**TTL**, `expireAfterSeconds: 0`) | `expires_at` | expired keys deleted |
//! | `reporter_objects.files` / `.chunks` | GridFS's own (created by the driver) | `filename, uploadDate` / `files_id, n` (unique) | object storage |
//!
//! MongoDB forbids index builds inside transactions; index creation is idempotent instead and
//! safe from several processes at once.
//!
//! # The outbox
//!
//! Rows are inserted by the unit of work in the same transaction as the record changes. Each
//! row gets `agg_seq` from a per-aggregate counter (`outbox_sequences`) bumped in that
//! transaction, so two units adding rows to one aggregate conflict and commit one after the
//! other: `agg_seq` is the aggregate's commit order, and claims never hand out a row ahead of
//! an older pending row of its aggregate. Delivery is **at least once**, never exactly once:
//! a dispatcher that publishes and dies before `mark_published`, or whose lease ends before it
//! settles, causes a second publish of the same event (same `ce-id`); consumers deduplicate on
//! the event id. See [`MongoStore`]'s `Outbox` methods for the claim and settle rules.
//!
//! # Multi-tenancy
//!
//! One [`MongoStore`] per tenant database, built lazily by the application with
//! [`MongoStore::from_client`] on one shared [`mongodb::Client`] and
//! [`tenant_database_name`]. The `tenant` field stays on every document, so a store over a
//! shared database isolates tenants as well.
mod connection;
pub mod crm;
mod datasource;
mod deployment;
mod docs;
mod error;
mod gridfs;
mod gridfs_sweep;
mod gridfs_upload;
mod idempotency;
mod outbox;
mod router;
mod store;
mod tenant;
mod time;

pub use connection::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_SERVER_SELECTION_TIMEOUT, MongoConnection};
pub use crm::{CrmSettings, is_crm_source};
pub use datasource::{MongoDataSource, MongoDataSourceConfig, to_json as bson_to_json};
pub use deployment::{DeploymentDatabase, TransactionCheck, require_transactions};
pub use gridfs::{GRIDFS_DEFAULT_BUCKET, GRIDFS_DEFAULT_CONTENT_TYPE, GridFsStorage};
pub use idempotency::{
    BEGIN_LOCK_WAIT, IDEMPOTENCY_COLLECTION, IDEMPOTENCY_TTL_INDEX, MongoIdempotencyStore,
};
pub use router::MongoTenantRouter;
pub use store::{
    DEADLINE_UNIQUE_INDEX, DEADLINE_UNIQUENESS_RULE, MongoStore, MongoStoreConfig,
    OUTBOX_TTL_INDEX, check_transaction_support,
};
pub use tenant::{MAX_DATABASE_NAME_LEN, tenant_database_name};
