//! A JSON response body written straight from the DTO's serde form.
//!
//! poem-openapi's `Json<T>` answers through `ToJSON`: it builds a `serde_json::Value` tree of
//! the DTO (a map and a string per field), then writes the tree. [`JsonBody`] documents the
//! same schema (`T`'s) but writes the DTO with serde in one pass. A DTO answered this way MUST
//! serialize exactly as its `ToJSON` form: [`same_json`] checks that, and every such DTO has a
//! test calling it.
use poem::http::{HeaderMap, HeaderValue};
use poem::{IntoResponse, Response};
use poem_openapi::ApiResponse;
use poem_openapi::payload::Payload;
use poem_openapi::registry::{MetaMediaType, MetaResponse, MetaResponses, MetaSchemaRef, Registry};
use poem_openapi::types::Type;
use serde::Serialize;

/// A `200` JSON body of `T`, in `T`'s schema (see the module docs).
#[derive(Debug, Clone)]
pub struct JsonBody<T>(pub T);

const CONTENT_TYPE: &str = "application/json; charset=utf-8";

/// Room a body starts with: one DTO (a template, a report) fits, where `serde_json::to_vec`'s
/// 128 bytes were grown and copied twice or three times per answer.
const BODY_START: usize = 1024;

/// Headers of a JSON answer on its way out: its content type, and the edge's security headers
/// and `X-Request-Id` (`middleware::harden`), with room for CORS's.
const RESPONSE_HEADERS: usize = 12;

impl<T: Type> Payload for JsonBody<T> {
    const CONTENT_TYPE: &'static str = CONTENT_TYPE;

    fn schema_ref() -> MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }
}

impl<T: Serialize + Send> IntoResponse for JsonBody<T> {
    fn into_response(self) -> Response {
        let mut bytes = Vec::with_capacity(BODY_START);
        match serde_json::to_writer(&mut bytes, &self.0) {
            Ok(()) => {
                let mut resp = Response::from(bytes);
                // Room for every header the edge adds (`middleware::harden`): the map is
                // allocated once instead of grown on the way out.
                *resp.headers_mut() = HeaderMap::with_capacity(RESPONSE_HEADERS);
                resp.headers_mut().insert(
                    poem::http::header::CONTENT_TYPE,
                    HeaderValue::from_static(CONTENT_TYPE),
                );
                resp
            }
            // The DTOs are plain data (strings, numbers, maps with string keys): serde_json
            // cannot fail on them. Answer as poem's own Json does if it ever did.
            Err(e) => {
                poem::Error::new(e, poem::http::StatusCode::INTERNAL_SERVER_ERROR).into_response()
            }
        }
    }
}

impl<T: Type + Serialize + Send> ApiResponse for JsonBody<T> {
    fn meta() -> MetaResponses {
        MetaResponses {
            responses: vec![MetaResponse {
                description: "",
                status: Some(200),
                status_range: None,
                content: vec![MetaMediaType {
                    content_type: CONTENT_TYPE,
                    schema: T::schema_ref(),
                }],
                headers: vec![],
            }],
        }
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }
}

/// `serde_json::to_value(dto)` equals `dto.to_json()`: what [`JsonBody`] writes is what
/// poem-openapi's `Json` would have written. Panics with both forms when they differ (tests).
#[cfg(test)]
pub fn same_json<T: Serialize + poem_openapi::types::ToJSON>(dto: &T) {
    let serde = serde_json::to_value(dto).expect("the DTO serializes");
    let openapi = dto.to_json().unwrap_or_default();
    assert_eq!(serde, openapi, "serde form vs ToJSON form");
}

/// Serde helpers that write values as poem-openapi's `ToJSON` writes them.
pub mod as_openapi {
    use chrono::format::{Fixed, Item};
    use chrono::{DateTime, Utc};
    use serde::Serializer;

    /// An instant as poem-openapi writes it (`to_rfc3339`: `+00:00`, not serde's `Z`), written
    /// through a buffer on the stack (chrono's RFC 3339 item is `to_rfc3339`'s writer) rather
    /// than a `String` per instant.
    pub fn instant<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        let mut text = StackText::default();
        let item = std::iter::once(Item::Fixed(Fixed::RFC3339));
        match t.format_with_items(item).write_to(&mut text) {
            Ok(()) => s.serialize_str(text.as_str()),
            // Longer than any instant chrono can hold; kept as the plain way all the same.
            Err(_) => s.serialize_str(&t.to_rfc3339()),
        }
    }

    /// Room for the longest RFC 3339 instant (`+262143-12-31T23:59:60.999999999+00:00`).
    const STACK_TEXT: usize = 48;

    /// Text written into a fixed array; a write past its end fails.
    struct StackText {
        bytes: [u8; STACK_TEXT],
        len: usize,
    }

    impl Default for StackText {
        fn default() -> Self {
            Self {
                bytes: [0; STACK_TEXT],
                len: 0,
            }
        }
    }

    impl StackText {
        fn as_str(&self) -> &str {
            // Only whole `&str`s are ever copied in (`write_str`), so this cannot fail.
            std::str::from_utf8(&self.bytes[..self.len]).unwrap_or_default()
        }
    }

    impl std::fmt::Write for StackText {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            let end = self.len + s.len();
            let room = self.bytes.get_mut(self.len..end).ok_or(std::fmt::Error)?;
            room.copy_from_slice(s.as_bytes());
            self.len = end;
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[derive(Serialize)]
    struct At(#[serde(serialize_with = "as_openapi::instant")] chrono::DateTime<chrono::Utc>);

    #[test]
    fn instants_are_written_as_poem_openapi_writes_them() {
        for t in [
            chrono::Utc
                .with_ymd_and_hms(2026, 12, 3, 22, 23, 0)
                .unwrap(),
            chrono::Utc.timestamp_millis_opt(1_796_379_722_107).unwrap(),
            chrono::Utc.timestamp_nanos(1_796_379_722_107_654_321),
            chrono::Utc.timestamp_nanos(1_796_379_722_100_000_000),
            chrono::Utc.timestamp_nanos(1_796_379_722_000_001_000),
            chrono::DateTime::<chrono::Utc>::MIN_UTC,
            chrono::DateTime::<chrono::Utc>::MAX_UTC,
            chrono::Utc.with_ymd_and_hms(1900, 1, 1, 0, 0, 0).unwrap(),
        ] {
            let ours = serde_json::to_value(At(t)).unwrap();
            assert_eq!(ours, serde_json::Value::String(t.to_rfc3339()), "{t:?}");
        }
    }

    #[test]
    fn the_body_is_the_serde_form_with_the_json_content_type() {
        let resp = JsonBody(serde_json::json!({"a": [1, "b"]})).into_response();
        assert_eq!(resp.status(), 200);
        assert_eq!(
            resp.headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok()),
            Some(CONTENT_TYPE)
        );
    }
}
