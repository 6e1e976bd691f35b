//! `bare-poem`: the baseline server of figure P3. A poem server with one route,
//! `GET /v1/templates/{id}`, that parses the id as a UUID and answers fixed JSON bytes (the
//! body Reporter answered for its template, fetched once by the figure). With
//! `BARE_POEM_JWT_SECRET` set it first checks the bearer token as Reporter does: HS256 with
//! that secret, `exp` required and checked (30 s leeway), `nbf` checked, and the
//! `templates:read` scope; without it, no check at all.
//!
//! ```text
//! BARE_POEM_ADDR=127.0.0.1:PORT BARE_POEM_BODY=FILE [BARE_POEM_JWT_SECRET=S] bare-poem
//! ```
use anyhow::Context;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use poem::http::StatusCode;
use poem::listener::TcpListener;
use poem::web::{Data, Path};
use poem::{EndpointExt, Request, Response, Route, Server, get, handler};
use reporter::http::auth::Claims;
use std::sync::Arc;

/// What every request reads.
struct State {
    body: Vec<u8>,
    jwt: Option<(DecodingKey, Validation)>,
}

impl State {
    /// True when the request carries a valid token with the `templates:read` scope.
    fn authorised(&self, req: &Request) -> bool {
        let Some((key, validation)) = &self.jwt else {
            return true;
        };
        let Some(token) = req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
        else {
            return false;
        };
        jsonwebtoken::decode::<Claims>(token.trim(), key, validation).is_ok_and(|d| {
            d.claims
                .scope
                .as_deref()
                .unwrap_or_default()
                .split_whitespace()
                .any(|s| s == "templates:read")
        })
    }
}

#[handler]
fn template(req: &Request, Path(id): Path<String>, state: Data<&Arc<State>>) -> Response {
    if uuid::Uuid::parse_str(&id).is_err() {
        return Response::builder().status(StatusCode::BAD_REQUEST).finish();
    }
    if !state.authorised(req) {
        return Response::builder()
            .status(StatusCode::UNAUTHORIZED)
            .finish();
    }
    Response::builder()
        .content_type("application/json; charset=utf-8")
        .body(state.body.clone())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let addr = std::env::var("BARE_POEM_ADDR").context("BARE_POEM_ADDR")?;
    let body_file = std::env::var("BARE_POEM_BODY").context("BARE_POEM_BODY")?;
    let body = std::fs::read(&body_file).with_context(|| format!("reading {body_file}"))?;
    let jwt = std::env::var("BARE_POEM_JWT_SECRET").ok().map(|secret| {
        let mut v = Validation::new(Algorithm::HS256);
        v.set_required_spec_claims(&["exp"]);
        v.leeway = 30;
        v.validate_exp = true;
        v.validate_nbf = true;
        v.validate_aud = false;
        (DecodingKey::from_secret(secret.as_bytes()), v)
    });
    let app = Route::new()
        .at("/v1/templates/:id", get(template))
        .data(Arc::new(State { body, jwt }));
    Server::new(TcpListener::bind(addr)).run(app).await?;
    Ok(())
}
