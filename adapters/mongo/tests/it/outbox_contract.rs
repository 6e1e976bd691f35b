//! The outbox contract suite against MongoDB: one test per check.
use crate::common::with_mongo;

reporter_contract::outbox_contract!(mod outbox, |check| with_mongo(|dbs| async move {
    check(dbs.store().await).await;
}));
