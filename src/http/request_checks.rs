//! The checks every request passes before its operation, in one endpoint: the bounds of the
//! head (`head_limit`), the method (`methods`), authentication and the operation's scope
//! (`auth`), the body limit (`body_limit`) and the query parameters (`query`), in that order:
//! a caller without the right is refused before its body is read. Each check is
//! its module's function; this only orders them, so a request is moved once through them
//! instead of once per layer (one future instead of five, on every request). `pipeline`
//! runs them.
use super::auth::{self, Authenticator};
use super::error::error_response;
use super::query::{self, PathMatch, QueryContract};
use super::{body_limit, head_limit, methods};
use poem::{Request, Response};
use std::sync::Arc;

/// The checks before the operation (see the module docs).
#[derive(Clone)]
pub struct RequestChecks {
    /// The operations' methods and query parameters, from the spec.
    pub contract: Arc<QueryContract>,
    /// Token verification.
    pub authenticator: Arc<Authenticator>,
    /// Request body limit.
    pub max_body_bytes: usize,
    /// Longest wait for a request's whole body.
    pub body_read_timeout: std::time::Duration,
}

impl RequestChecks {
    /// The refusal of `req`, if a check refuses it; else `req` is authenticated, its body
    /// read (when its method has one) and its query cleaned. `m` is the match of its path
    /// (`QueryContract::path_match`), found once for every check.
    pub async fn refusal(&self, req: &mut Request, m: PathMatch) -> Option<Response> {
        if let Some(r) = head_limit::refusal(req) {
            return Some(r);
        }
        if let Some(r) = methods::refusal(&self.contract, m, req) {
            return Some(r);
        }
        auth::authenticate(&self.authenticator, req);
        if let Some(scope) = self.contract.scope_in(m, req.method(), req.uri().path()) {
            if let Some(e) = auth::scope_refusal(req, scope) {
                return Some(error_response(&e));
            }
            req.extensions_mut().insert(auth::ScopeChecked(scope));
        }
        // Boxed, and only for a method with a body: the read's future (a timer and the body
        // stream) would otherwise make every request's future larger.
        if body_limit::has_body(req.method())
            && let Some(r) = Box::pin(body_limit::buffer(
                req,
                self.max_body_bytes,
                self.body_read_timeout,
            ))
            .await
        {
            return Some(r);
        }
        query::refusal(&self.contract, m, req)
    }
}
