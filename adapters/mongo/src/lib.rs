//! MongoDB adapters (placeholder docs, expanded below).
mod datasource;
mod docs;
mod error;
mod gridfs;
mod idempotency;
mod outbox;
mod store;
mod tenant;
mod time;

pub use datasource::{MongoDataSource, MongoDataSourceConfig};
pub use gridfs::{
    GRIDFS_DEFAULT_BUCKET, GRIDFS_DEFAULT_CONTENT_TYPE, GridFsStorage, is_valid_object_key,
};
pub use idempotency::{IDEMPOTENCY_COLLECTION, IDEMPOTENCY_TTL_INDEX, MongoIdempotencyStore};
pub use store::{
    DEADLINE_UNIQUE_INDEX, DEADLINE_UNIQUENESS_RULE, MongoStore, MongoStoreConfig,
    OUTBOX_TTL_INDEX, check_transaction_support,
};
pub use tenant::{MAX_DATABASE_NAME_LEN, tenant_database_name};
