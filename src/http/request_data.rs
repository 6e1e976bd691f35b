//! What every operation may read from its request (`Data<&T>`): the application, and the
//! values of the few operations that read more ([`OpsData`]: the readiness probes, the
//! streaming view, the metrics registry). One layer puts the two in each request, each behind
//! an `Arc`: nothing is deep-copied per request (poem's `.data()` clones its value into every
//! request, one layer per value). `pipeline` puts them.
//!
//! Two values, not one per field: each value in a request's extensions is a boxed allocation,
//! and past seven values the extensions' table is reallocated a second time (profile of
//! `GET /v1/templates/{id}`: the extensions' inserts were the largest share of the request's
//! allocations).
use super::{Readiness, streaming::StreamingView};
use crate::app::App;
use poem::Request;
use std::sync::Arc;

/// The values only a few operations read (`Data<&Arc<OpsData>>`).
pub struct OpsData {
    /// `/readyz`'s probes.
    pub readiness: Readiness,
    /// The streaming operations' view.
    pub streaming: StreamingView,
    /// The registry `/metrics` renders.
    pub registry: prometheus::Registry,
}

/// The values (see the module docs).
#[derive(Clone)]
pub struct RequestData {
    /// The application (`Data<&Arc<App>>`).
    pub app: Arc<App>,
    /// The rest (`Data<&Arc<OpsData>>`).
    pub ops: Arc<OpsData>,
}

impl RequestData {
    /// Puts the two values in `req`'s data.
    pub fn put(&self, req: &mut Request) {
        let data = req.extensions_mut();
        data.insert(self.app.clone());
        data.insert(self.ops.clone());
    }
}
