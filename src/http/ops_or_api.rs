//! The outermost router: the published spec, Swagger UI and `/metrics` on one side, the API
//! operations on the other, told apart by the path. A `Route` with the API nested at `/` did
//! the same, but rebuilt every request's URI and crossed two more boxed endpoints on the way
//! to an operation.
use poem::{Endpoint, IntoResponse, Request, Response, Route};

/// Routes `/openapi.json`, `/openapi.yaml`, `/metrics`, `/swagger…` and `/console…` to `ops`, every other
/// path to `api` (which answers 404 for the paths it does not know).
pub(super) struct OpsOrApi<A> {
    pub(super) api: A,
    pub(super) ops: Route,
}

/// Whether `path` belongs to [`OpsOrApi::ops`].
fn is_ops(path: &str) -> bool {
    matches!(path, "/openapi.json" | "/openapi.yaml" | "/metrics")
        || is_swagger(path)
        || super::console::is_console(path)
}

/// Whether `path` is Swagger UI's.
pub(crate) fn is_swagger(path: &str) -> bool {
    path == "/swagger" || path.starts_with("/swagger/")
}

impl<A: Endpoint> Endpoint for OpsOrApi<A> {
    type Output = Response;

    async fn call(&self, req: Request) -> poem::Result<Response> {
        if is_ops(req.uri().path()) {
            // Boxed: the router's future is large and these paths are rare, so the future of
            // every API request (copied whole wherever an outer endpoint boxes it) stays small.
            Box::pin(self.ops.call(req)).await
        } else {
            self.api.call(req).await.map(IntoResponse::into_response)
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ops_paths_are_told_from_api_paths() {
        for p in [
            "/openapi.json",
            "/openapi.yaml",
            "/metrics",
            "/swagger",
            "/swagger/",
            "/swagger/x",
        ] {
            assert!(super::is_ops(p), "{p}");
        }
        for p in [
            "/",
            "/v1/templates",
            "/health",
            "/metrics/",
            "/openapi.json/x",
            "/swaggerx",
        ] {
            assert!(!super::is_ops(p), "{p}");
        }
    }
}
