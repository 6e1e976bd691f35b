//! What every operation may read from its request (`Data<&T>`): the application, the
//! readiness probes, the streaming view and the metrics registry. One layer puts the four in
//! each request, each behind an `Arc`: nothing is deep-copied per request (poem's `.data()`
//! clones its value into every request, one layer per value).
use super::{Readiness, streaming::StreamingView};
use crate::app::App;
use poem::{Endpoint, Middleware, Request};
use std::sync::Arc;

/// The values (see the module docs).
#[derive(Clone)]
pub struct Shared {
    /// The application (`Data<&Arc<App>>`).
    pub app: Arc<App>,
    /// `/readyz`'s probes (`Data<&Arc<Readiness>>`).
    pub readiness: Arc<Readiness>,
    /// The streaming operations' view (`Data<&Arc<StreamingView>>`).
    pub streaming: Arc<StreamingView>,
    /// The registry `/metrics` renders (`Data<&Arc<prometheus::Registry>>`).
    pub registry: Arc<prometheus::Registry>,
}

impl<E: Endpoint> Middleware<E> for Shared {
    type Output = SharedEndpoint<E>;
    fn transform(&self, inner: E) -> Self::Output {
        SharedEndpoint {
            inner,
            shared: self.clone(),
        }
    }
}

/// Endpoint of [`Shared`].
pub struct SharedEndpoint<E> {
    inner: E,
    shared: Shared,
}

impl<E: Endpoint> Endpoint for SharedEndpoint<E> {
    type Output = E::Output;
    async fn call(&self, mut req: Request) -> poem::Result<Self::Output> {
        let s = &self.shared;
        let data = req.extensions_mut();
        data.insert(s.app.clone());
        data.insert(s.readiness.clone());
        data.insert(s.streaming.clone());
        data.insert(s.registry.clone());
        self.inner.call(req).await
    }
}
