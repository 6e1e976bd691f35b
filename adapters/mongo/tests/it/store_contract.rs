//! The store contract suite against MongoDB: one test per check.
use crate::common::with_mongo;

reporter_contract::store_contract!(mod store, |check| with_mongo(|dbs| async move {
    check(dbs.store().await).await;
}));
