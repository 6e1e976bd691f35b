//! Every benchmark figure. Adding one: a module here implementing
//! [`crate::harness::Figure`], and one line in [`all`].
mod catch_up;
mod commit_latency;
mod publish_cost;
pub(crate) mod util;

use crate::harness::Figure;

/// The figures `just bench` measures, in order.
pub fn all() -> Vec<Box<dyn Figure>> {
    vec![
        Box::new(catch_up::CatchUp::default()),
        Box::new(publish_cost::PublishCost),
        Box::new(commit_latency::CommitLatency::default()),
    ]
}
