//! Everything between the edge (`middleware::Edge`, CORS, rate limiting) and the operation,
//! in one endpoint: the checks (`request_checks`), `X-Idempotency` (`idempotency`), the
//! values every operation reads (`request_data`), the choice of ops routes or API
//! (`ops_or_api`), and the error body of whatever
//! fails on the way (`error::normalize_error`), in that order.
//!
//! One endpoint instead of a middleware per step: each layer's future held its own copy of the
//! request and of every future below it, and each was copied again wherever an outer endpoint
//! boxed it (profile of `GET /v1/templates/{id}`: about a tenth of the service's CPU in
//! `memmove` and in allocations above glibc's per-thread cache). What is rare and large (a
//! body read, a request holding an idempotency key, the ops router) is boxed where it runs,
//! so every other request's future stays small.
use super::error::normalize_error;
use super::idempotency::Idempotency;
use super::ops_or_api::OpsOrApi;
use super::request_checks::RequestChecks;
use super::request_data::RequestData;
use poem::{Endpoint, Request, Response};
use std::sync::Arc;

/// The endpoint (see the module docs); `api` is the operations' endpoint.
pub(super) struct Pipeline<A> {
    pub(super) checks: RequestChecks,
    pub(super) idempotency: Arc<Idempotency>,
    pub(super) request_data: RequestData,
    pub(super) ops_or_api: OpsOrApi<A>,
}

impl<A: Endpoint> Pipeline<A> {
    /// The operation (or ops route) with the request data (`request_data`) in its request.
    async fn operate(&self, mut req: Request) -> poem::Result<Response> {
        self.request_data.put(&mut req);
        self.ops_or_api.call(req).await
    }

    /// The answer of `req`, or the error an operation or poem raised.
    async fn answer(&self, mut req: Request) -> poem::Result<Response> {
        // The path is matched against the API once for every check (it does not change:
        // the query check rewrites only the query).
        let m = self.checks.contract.path_match(req.uri().path());
        if let Some(refusal) = self.checks.refusal(&mut req, m).await {
            return Ok(refusal);
        }
        match self.idempotency.scope_of(&req, m) {
            Ok(None) => self.operate(req).await,
            Ok(Some(scope)) => Ok(Box::pin(
                self.idempotency
                    .reserved(req, scope, |req| self.operate(req)),
            )
            .await),
            Err(refusal) => Ok(refusal),
        }
    }
}

impl<A: Endpoint> Endpoint for Pipeline<A> {
    type Output = Response;
    async fn call(&self, req: Request) -> poem::Result<Response> {
        Ok(match self.answer(req).await {
            Ok(resp) => resp,
            Err(e) => normalize_error(e).await,
        })
    }
}
