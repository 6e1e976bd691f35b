//! Everything between the edge (`middleware::Edge`, CORS, rate limiting) and the operation,
//! in one endpoint: the checks (`gate`), `X-Idempotency` (`idempotency`), the shared values
//! (`shared`), the choice of ops routes or API (`front`), and the error body of whatever
//! fails on the way (`error::normalize_error`), in that order.
//!
//! One endpoint instead of a middleware per step: each layer's future held its own copy of the
//! request and of every future below it, and each was copied again wherever an outer endpoint
//! boxed it (profile of `GET /v1/templates/{id}`: about a tenth of the service's CPU in
//! `memmove` and in allocations above glibc's per-thread cache). What is rare and large (a
//! body read, a request holding an idempotency key, the ops router) is boxed where it runs,
//! so every other request's future stays small.
use super::error::normalize_error;
use super::front::Front;
use super::gate::Gate;
use super::idempotency::Idempotency;
use super::shared::Shared;
use poem::{Endpoint, Request, Response};
use std::sync::Arc;

/// The endpoint (see the module docs); `api` is the operations' endpoint.
pub(super) struct Pipeline<A> {
    pub(super) gate: Gate,
    pub(super) idempotency: Arc<Idempotency>,
    pub(super) shared: Shared,
    pub(super) front: Front<A>,
}

impl<A: Endpoint> Pipeline<A> {
    /// The operation (or ops route) with the shared values in its request.
    async fn operate(&self, mut req: Request) -> poem::Result<Response> {
        self.shared.put(&mut req);
        self.front.call(req).await
    }

    /// The answer of `req`, or the error an operation or poem raised.
    async fn answer(&self, mut req: Request) -> poem::Result<Response> {
        if let Some(refusal) = self.gate.refusal(&mut req).await {
            return Ok(refusal);
        }
        match self.idempotency.scope_of(&req) {
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
