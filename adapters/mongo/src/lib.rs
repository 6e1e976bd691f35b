//! MongoDB adapters (placeholder docs, expanded below).
mod docs;
mod error;
mod outbox;
mod store;
mod time;

pub use store::{
    DEADLINE_UNIQUE_INDEX, DEADLINE_UNIQUENESS_RULE, MongoStore, MongoStoreConfig,
    OUTBOX_TTL_INDEX, check_transaction_support,
};
