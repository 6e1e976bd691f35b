//! 405 with `Allow`: a request whose path names an operation but not its method answers
//! `TPL-0405` and lists the methods the path takes (RFC 9110 §15.5.6 requires `Allow`). The
//! methods come from the generated OpenAPI document (`QueryContract`), like the query check.
use super::error::error_response;
use super::query::QueryContract;
use crate::app::{AppError, Code};
use poem::http::{HeaderValue, Method};
use poem::{Endpoint, IntoResponse, Middleware, Request, Response};
use std::sync::Arc;

/// Answers 405 with `Allow` before routing (see the module docs).
pub struct MethodCheck(pub Arc<QueryContract>);

impl<E: Endpoint> Middleware<E> for MethodCheck {
    type Output = MethodCheckEndpoint<E>;
    fn transform(&self, ep: E) -> Self::Output {
        MethodCheckEndpoint {
            inner: ep,
            contract: self.0.clone(),
        }
    }
}

/// Endpoint of [`MethodCheck`].
pub struct MethodCheckEndpoint<E> {
    inner: E,
    contract: Arc<QueryContract>,
}

/// The `Allow` value of `methods` (HEAD wherever GET is).
pub fn allow_header(methods: &[Method]) -> String {
    let mut names: Vec<&str> = methods.iter().map(Method::as_str).collect();
    if methods.contains(&Method::GET) {
        names.push("HEAD");
    }
    names.sort_unstable();
    names.dedup();
    names.join(", ")
}

impl<E: Endpoint> Endpoint for MethodCheckEndpoint<E> {
    type Output = Response;
    async fn call(&self, req: Request) -> poem::Result<Response> {
        if self.contract.allows(req.method(), req.uri().path()) {
            return self.inner.call(req).await.map(IntoResponse::into_response);
        }
        let methods = self.contract.methods(req.uri().path());
        let allow = allow_header(&methods);
        let mut resp = error_response(&AppError::new(
            Code::MethodNotAllowed,
            format!("{} is not allowed here; allowed: {allow}", req.method()),
        ));
        if let Ok(v) = HeaderValue::from_str(&allow) {
            resp.headers_mut().insert("allow", v);
        }
        Ok(resp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_lists_head_beside_get() {
        assert_eq!(
            allow_header(&[Method::GET, Method::PATCH, Method::DELETE]),
            "DELETE, GET, HEAD, PATCH"
        );
        assert_eq!(allow_header(&[Method::POST]), "POST");
    }
}
