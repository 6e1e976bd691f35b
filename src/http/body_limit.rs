//! The request body limits: a body above the size bound is refused with 413 `TPL-0413`,
//! whether or not the client sent `Content-Length`; one that has not fully arrived within the
//! time bound (`HTTP_BODY_READ_TIMEOUT_SECONDS`), with 408 `TPL-0408`, so a client sending
//! slowly cannot hold a connection and its buffer.
use super::error::error_response;
use crate::app::{AppError, Code};
use poem::http::{Method, header};
use poem::{Body, Request, Response};
use std::time::Duration;

/// Whether requests of `method` have their body read ([`buffer`]): POST, PUT, PATCH.
pub fn has_body(method: &Method) -> bool {
    matches!(*method, Method::POST | Method::PUT | Method::PATCH)
}

/// Reads the body of a request whose method has one (POST, PUT, PATCH) into memory, up to
/// `limit` bytes, and puts it back; the refusal (413, or 400 for a body that could not be
/// read), if it is. A body sent with another method is never read, so it is not bounded.
pub async fn buffer(req: &mut Request, limit: usize, within: Duration) -> Option<Response> {
    if !has_body(req.method()) {
        return None;
    }
    let too_large = || {
        error_response(&AppError::new(
            Code::PayloadTooLarge,
            "the request body is too large",
        ))
    };
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Some(too_large());
    }
    let body = req.take_body().into_bytes_limit(limit);
    let Ok(read) = tokio::time::timeout(within, body).await else {
        return Some(error_response(&AppError::new(
            Code::RequestTimeout,
            format!(
                "the request body did not arrive within {} s",
                within.as_secs()
            ),
        )));
    };
    match read {
        Ok(bytes) => {
            req.set_body(Body::from_bytes(bytes));
            None
        }
        Err(poem::error::ReadBodyError::PayloadTooLarge) => Some(too_large()),
        Err(_) => Some(error_response(&AppError::new(
            Code::BadRequest,
            "the request body could not be read",
        ))),
    }
}
