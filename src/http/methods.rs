//! 405 with `Allow`: a request whose path names an operation but not its method answers
//! `TPL-0405` and lists the methods the path takes (RFC 9110 §15.5.6 requires `Allow`). The
//! methods come from the generated OpenAPI document (`QueryContract`), like the query check.
use super::error::error_response;
use super::query::{PathMatch, QueryContract};
use crate::app::{AppError, Code};
use poem::http::{HeaderValue, Method, header};
use poem::{Request, Response};

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

/// The 405 with `Allow` of a request whose path does not take its method (see the module
/// docs), if it is; `m` is the match of the request's path (`QueryContract::path_match`).
pub fn refusal(contract: &QueryContract, m: PathMatch, req: &Request) -> Option<Response> {
    if contract.allows_in(m, req.method(), req.uri().path()) {
        return None;
    }
    let methods = contract.methods(req.uri().path());
    let allow = allow_header(&methods);
    let mut resp = error_response(&AppError::new(
        Code::MethodNotAllowed,
        format!("{} is not allowed here; allowed: {allow}", req.method()),
    ));
    if let Ok(v) = HeaderValue::from_str(&allow) {
        resp.headers_mut().insert(header::ALLOW, v);
    }
    Some(resp)
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
