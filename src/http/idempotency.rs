//! `X-Idempotency`: a replay of a completed request answers the stored response; a duplicate
//! of a request still running answers 409 `TPL-0039`; a failed request frees its key.
//!
//! The reservation is a lease held by this request ([`IdempotencyOwner`]), renewed every third
//! of `IDEMPOTENCY_IN_FLIGHT_SECONDS` while the request runs, so the key of a process that died
//! is free again one lease after its last renewal. The operations that create something read
//! the reservation ([`IdempotencyReservation`]) and commit their answer in the same unit of
//! work as the creation (`app::Idempotent`); this layer then stores the answer again (the
//! same bytes) for any operation that did not.
use super::auth::AuthOutcome;
use super::error::error_response;
use super::headers::{IdempotencyHeader, idempotency_key};
use super::query::{PathMatch, QueryContract};
use crate::app::{AppError, Code, Idempotent};
use chrono::{DateTime, Utc};
use poem::http::{HeaderValue, StatusCode};
use poem::{Request, Response};
use reporter_ports::Clock;
use reporter_ports::ports::{
    IdempotencyBegin, IdempotencyOwner, IdempotencyScope, IdempotencyStore, StoredResponse,
};
use std::sync::Arc;

/// The key a request holds, in its extensions while it runs.
#[derive(Debug, Clone)]
pub struct IdempotencyReservation {
    /// The key.
    pub scope: IdempotencyScope,
    /// This request's hold on it.
    pub owner: IdempotencyOwner,
    /// Until when its answer is replayed.
    pub expires_at: DateTime<Utc>,
}

impl IdempotencyReservation {
    /// The request's reservation, if it holds one.
    pub fn of(req: &Request) -> Option<&Self> {
        req.extensions().get::<Self>()
    }

    /// The use case's view: commit the answer `render` gives for the result.
    pub fn for_use_case<T>(
        &self,
        render: impl Fn(&T) -> StoredResponse + Send + Sync + 'static,
    ) -> Idempotent<T> {
        Idempotent {
            scope: self.scope.clone(),
            owner: self.owner,
            expires_at: self.expires_at,
            render: Arc::new(render),
        }
    }
}

/// The stored answer of a JSON body, exactly as `poem_openapi::payload::Json` writes it.
pub fn json_answer<T: poem_openapi::types::ToJSON>(status: StatusCode, body: &T) -> StoredResponse {
    StoredResponse {
        status: status.as_u16(),
        content_type: "application/json; charset=utf-8".into(),
        body: body.to_json_string().into_bytes(),
    }
}

/// The layer's settings (see the module docs): [`Idempotency::scope_of`] tells whether a
/// request holds a key, [`Idempotency::reserved`] runs one that does.
pub struct Idempotency {
    /// Store of records.
    pub store: Arc<dyn IdempotencyStore>,
    /// Time.
    pub clock: Arc<dyn Clock>,
    /// The operations, read from the spec: the layer applies to those that declare the
    /// `X-Idempotency` header ([`QueryContract::idempotent`]).
    pub contract: Arc<QueryContract>,
    /// Replay window.
    pub ttl: chrono::Duration,
    /// Lease of a reservation.
    pub lease: chrono::Duration,
}

/// Renews a reservation while it lives; stops when dropped.
struct Heartbeat(tokio::task::JoinHandle<()>);

impl Heartbeat {
    fn start(config: Arc<Idempotency>, scope: IdempotencyScope, owner: IdempotencyOwner) -> Self {
        let every = (config.lease / 3)
            .to_std()
            .unwrap_or(std::time::Duration::from_secs(1));
        Self(tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.tick().await;
            loop {
                tick.tick().await;
                let until = config.clock.now() + config.lease;
                match config.store.renew(&scope, owner, until).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!("an idempotency reservation was lost while its request ran");
                        return;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "could not renew an idempotency reservation")
                    }
                }
            }
        }))
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn replay(stored: StoredResponse) -> Response {
    let mut resp = Response::builder()
        .status(StatusCode::from_u16(stored.status).unwrap_or(StatusCode::OK))
        .content_type(stored.content_type)
        .body(stored.body);
    resp.headers_mut()
        .insert("x-idempotency-replayed", HeaderValue::from_static("true"));
    resp
}

impl Idempotency {
    /// The key of `req` when the layer applies: `Ok(None)` when it does not, `Err` (400)
    /// for a header that breaks the rule. `m` is the match of the request's path
    /// (`QueryContract::path_match`).
    pub fn scope_of(
        &self,
        req: &Request,
        m: PathMatch,
    ) -> Result<Option<IdempotencyScope>, Response> {
        let path = req.uri().path().trim_end_matches('/');
        let applies = self.contract.idempotent_in(m, req.method(), path);
        let tenant = match req.extensions().get::<AuthOutcome>() {
            Some(AuthOutcome(Ok(p))) if applies => p.tenant.clone(),
            _ => return Ok(None),
        };
        match idempotency_key(req) {
            IdempotencyHeader::Absent => Ok(None),
            IdempotencyHeader::Key(key) => Ok(Some(IdempotencyScope {
                tenant,
                operation: format!("{} {path}", req.method()),
                key,
            })),
            IdempotencyHeader::Invalid => Err(error_response(
                &AppError::new(
                    Code::BadRequest,
                    "X-Idempotency must be 1-255 visible ASCII characters (no spaces)",
                )
                .field("X-Idempotency", "1-255 visible ASCII characters"),
            )),
        }
    }

    /// Stores a 2xx answer (again, when the operation committed it already) and answers it;
    /// frees the key of any other outcome.
    async fn settle(&self, r: &IdempotencyReservation, resp: Response) -> Response {
        let store = &self.store;
        if !resp.status().is_success() {
            if let Err(e) = store.release(&r.scope, r.owner).await {
                tracing::warn!(error = %e, "could not release an idempotency key; its lease ends by itself");
            }
            return resp;
        }
        let status = resp.status();
        let headers = resp.headers().clone();
        let content_type = resp.content_type().unwrap_or("application/json").to_owned();
        let body = resp.into_body().into_vec().await.unwrap_or_default();
        let stored = StoredResponse {
            status: status.as_u16(),
            content_type,
            body: body.clone(),
        };
        if let Err(e) = store.complete(&r.scope, stored, r.expires_at).await {
            tracing::error!(error = %e, "could not record an idempotent response");
        }
        let mut rebuilt = Response::builder().status(status).body(body);
        *rebuilt.headers_mut() = headers;
        rebuilt
    }

    /// Runs `req`, which holds the key `scope`, through `run` (the operation): a replay
    /// answers the stored response, a duplicate in flight 409, and the answer of a first
    /// request is stored when it is a 2xx (its key freed otherwise). Errors of `run` are
    /// answered as the error body. Its future is large: callers box it, so that requests
    /// without a key do not carry its size.
    pub async fn reserved<F, Fut>(
        self: &Arc<Self>,
        mut req: Request,
        scope: IdempotencyScope,
        run: F,
    ) -> Response
    where
        F: FnOnce(Request) -> Fut,
        Fut: std::future::Future<Output = poem::Result<Response>>,
    {
        let (owner, now) = (IdempotencyOwner::new(), self.clock.now());
        let begin = self.store.begin(&scope, owner, now, now + self.lease).await;
        match begin {
            Ok(IdempotencyBegin::Completed(stored)) => return replay(stored),
            Ok(IdempotencyBegin::InFlight) => {
                return error_response(&AppError::new(
                    Code::IdempotencyInFlight,
                    "a request with this X-Idempotency key is still being processed; retry later",
                ));
            }
            Ok(IdempotencyBegin::Started) => {}
            Err(e) => {
                tracing::error!(error = %e, "idempotency store unavailable");
                return error_response(&AppError::new(
                    Code::ServiceUnavailable,
                    "the idempotency store is unavailable; retry later",
                ));
            }
        }
        let reservation = IdempotencyReservation {
            scope: scope.clone(),
            owner,
            expires_at: now + self.ttl,
        };
        req.extensions_mut().insert(reservation.clone());
        let heartbeat = Heartbeat::start(self.clone(), scope, owner);
        let resp = match run(req).await {
            Ok(r) => r,
            Err(e) => super::error::normalize_error(e).await,
        };
        // The crash test's place: the operation committed, its answer is neither stored by
        // this layer nor sent.
        fail::fail_point!("idempotency-after-commit", |_| std::process::abort());
        drop(heartbeat);
        self.settle(&reservation, resp).await
    }
}
