//! The API operations' router: the routes poem-openapi builds in `OpenApiService`'s
//! `into_endpoint`, with two boxed layers fewer on the way to an operation.
//!
//! poem-openapi puts its router in a box (with a `MapToResponse` and the query extraction
//! around it) and each path's methods in a `RouteMethod`, which boxes each operation's
//! endpoint once more. Every boxed endpoint allocates its request's future and copies the
//! request into it (profile of `GET /v1/templates/{id}`: a tenth of the service's CPU in
//! `memmove` and allocations along that chain). Here the paths' router calls one endpoint per
//! path that extracts the query and picks the operation by method, as `RouteMethod` does.
use poem::endpoint::BoxEndpoint;
use poem::error::MethodNotAllowedError;
use poem::http::Method;
use poem::{Endpoint, Request, Response, Route};
use poem_openapi::__private::UrlQuery;
use poem_openapi::OpenApi;
use std::collections::HashMap;

/// The router of `api`'s operations: each path poem-openapi routes, with its operations
/// (unlike `into_endpoint` it does not check the operation ids: a test of this module does,
/// for the service's [`Apis`](super::Apis)). It MUST answer what `OpenApiService::into_endpoint` answers: 404 (`NotFoundError`) for a path
/// no operation has, 405 (`MethodNotAllowedError`) for a method the path does not have, a
/// `HEAD` the path does not declare as its `GET` without the body, and every operation's
/// `Query` parameters read from the request's query string.
pub(super) fn routes(api: impl OpenApi) -> Route {
    let mut table = HashMap::new();
    api.add_routes(&mut table);
    table
        .into_iter()
        .fold(Route::new(), |route, (path, operations)| {
            route.at(
                path,
                PathOperations {
                    operations: operations.into_iter().collect(),
                },
            )
        })
}

/// The operations of one path, by method.
struct PathOperations {
    operations: Vec<(Method, BoxEndpoint<'static>)>,
}

impl PathOperations {
    /// The operation of `method`.
    fn of(&self, method: &Method) -> Option<&BoxEndpoint<'static>> {
        self.operations
            .iter()
            .find(|(m, _)| m == method)
            .map(|(_, ep)| ep)
    }
}

impl Endpoint for PathOperations {
    type Output = Response;

    async fn call(&self, mut req: Request) -> poem::Result<Response> {
        // poem-openapi's `Query` parameters read the pairs from here (its `extract_query`).
        let query: Vec<(String, String)> = req.params().unwrap_or_default();
        req.extensions_mut().insert(UrlQuery(query));
        if let Some(ep) = self.of(req.method()) {
            return ep.call(req).await;
        }
        match self.of(&Method::GET) {
            Some(get) if req.method() == Method::HEAD => {
                req.set_method(Method::GET);
                let mut resp = get.call(req).await?;
                resp.set_body(());
                Ok(resp)
            }
            _ => Err(MethodNotAllowedError.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::routes;
    use poem::http::{Method, StatusCode};
    use poem::{Endpoint, IntoEndpoint, Request};

    /// Status and body of `ep`'s answer to `method` `path` (without the request data the
    /// operations read: a routed request fails the same way in both routers).
    async fn answer(ep: &impl Endpoint, method: Method, path: &str) -> (StatusCode, Vec<u8>) {
        let req = Request::builder().method(method).uri_str(path).finish();
        let resp = ep.get_response(req).await;
        let status = resp.status();
        let body = resp.into_body().into_vec().await.unwrap_or_default();
        (status, body)
    }

    /// What `into_endpoint` checks at start-up (and panics on): no operation id twice.
    #[test]
    fn operation_ids_are_unique() {
        use poem_openapi::OpenApi as _;
        let mut ids = std::collections::BTreeSet::new();
        let operations = crate::http::Apis::meta()
            .into_iter()
            .flat_map(|api| api.paths)
            .flat_map(|path| path.operations);
        for id in operations.filter_map(|op| op.operation_id) {
            assert!(ids.insert(id), "duplicate operation id: {id}");
        }
        assert!(ids.len() > 10, "{ids:?}");
    }

    #[tokio::test]
    async fn routes_answer_as_the_openapi_service() {
        let ours = routes(crate::http::Apis::default());
        let theirs = crate::http::api_service().into_endpoint();
        let id = "019826f4-6a9c-7b31-9d40-2f1e8c5a4b77";
        let paths = [
            "/v1/templates".to_owned(),
            format!("/v1/templates/{id}"),
            format!("/v1/templates/{id}/"),
            "/v1/templates/not-a-uuid".to_owned(),
            format!("/v1/reports/{id}/download"),
            "/v1/deadlines/notifications".to_owned(),
            "/v1/nothing".to_owned(),
            "/health".to_owned(),
            "/version?x=1".to_owned(),
            "/".to_owned(),
        ];
        let methods = [
            Method::GET,
            Method::HEAD,
            Method::POST,
            Method::PUT,
            Method::DELETE,
            Method::OPTIONS,
            Method::from_bytes(b"FOOBAR").expect("a method token"),
        ];
        let mut seen = std::collections::BTreeSet::new();
        for path in &paths {
            for method in &methods {
                let answer_of_ours = answer(&ours, method.clone(), path).await;
                assert_eq!(
                    answer_of_ours,
                    answer(&theirs, method.clone(), path).await,
                    "{method} {path}"
                );
                seen.insert(answer_of_ours.0);
            }
        }
        // Routed, unknown path, unknown method: the comparison covers each.
        for status in [StatusCode::NOT_FOUND, StatusCode::METHOD_NOT_ALLOWED] {
            assert!(seen.contains(&status), "{seen:?}");
        }
        assert!(seen.len() > 2, "{seen:?}");
    }
}
