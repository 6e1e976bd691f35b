//! What every operation may read from its request (`Data<&T>`): the application, the
//! readiness probes, the streaming view and the metrics registry. One layer puts the four in
//! each request, each behind an `Arc`: nothing is deep-copied per request (poem's `.data()`
//! clones its value into every request, one layer per value). `pipeline` puts them.
use super::{Readiness, streaming::StreamingView};
use crate::app::App;
use poem::Request;
use std::sync::Arc;

/// The values (see the module docs).
#[derive(Clone)]
pub struct RequestData {
    /// The application (`Data<&Arc<App>>`).
    pub app: Arc<App>,
    /// `/readyz`'s probes (`Data<&Arc<Readiness>>`).
    pub readiness: Arc<Readiness>,
    /// The streaming operations' view (`Data<&Arc<StreamingView>>`).
    pub streaming: Arc<StreamingView>,
    /// The registry `/metrics` renders (`Data<&Arc<prometheus::Registry>>`).
    pub registry: Arc<prometheus::Registry>,
}

impl RequestData {
    /// Puts the four values in `req`'s data.
    pub fn put(&self, req: &mut Request) {
        let data = req.extensions_mut();
        data.insert(self.app.clone());
        data.insert(self.readiness.clone());
        data.insert(self.streaming.clone());
        data.insert(self.registry.clone());
    }
}
