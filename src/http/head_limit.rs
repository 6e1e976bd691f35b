//! Bounds on the request head, answered with the documented error body: a URI over
//! [`MAX_URI_BYTES`] is 414 `TPL-0414`, a header section over [`MAX_HEADER_BYTES`] is 431
//! `TPL-0431`.
//!
//! The HTTP library (hyper) has bounds of its own, far above these (a 64 KiB URI, about
//! 400 KiB of head, 100 headers); a request past those is refused by hyper itself, with the
//! same status and an empty body, before Reporter sees it.
use super::error::error_response;
use crate::app::{AppError, Code};
use poem::{Request, Response};

/// Longest request target (path and query) Reporter reads.
pub const MAX_URI_BYTES: usize = 8 * 1024;
/// Largest header section (names, values and separators) Reporter reads.
pub const MAX_HEADER_BYTES: usize = 32 * 1024;

/// Bytes of the header section as sent (`name: value\r\n` per header).
fn header_bytes(req: &Request) -> usize {
    req.headers()
        .iter()
        .map(|(n, v)| n.as_str().len() + v.len() + 4)
        .sum()
}

/// The refusal of a request head over the bounds (see the module docs), if it is.
pub fn refusal(req: &Request) -> Option<Response> {
    let uri = req.uri().path_and_query().map_or(0, |pq| pq.as_str().len());
    if uri > MAX_URI_BYTES {
        return Some(error_response(&AppError::new(
            Code::UriTooLong,
            format!("the request URI is longer than {MAX_URI_BYTES} bytes"),
        )));
    }
    if header_bytes(req) > MAX_HEADER_BYTES {
        return Some(error_response(&AppError::new(
            Code::HeadersTooLarge,
            format!("the request headers are larger than {MAX_HEADER_BYTES} bytes"),
        )));
    }
    None
}
