//! A JSON response body written straight from the DTO's serde form.
//!
//! poem-openapi's `Json<T>` answers through `ToJSON`: it builds a `serde_json::Value` tree of
//! the DTO (a map and a string per field), then writes the tree. [`JsonBody`] documents the
//! same schema (`T`'s) but writes the DTO with serde in one pass. A DTO answered this way MUST
//! serialize exactly as its `ToJSON` form: [`same_json`] checks that, and every such DTO has a
//! test calling it.
use poem::http::HeaderValue;
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
        match serde_json::to_vec(&self.0) {
            Ok(bytes) => {
                let mut resp = Response::from(bytes);
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
    use chrono::{DateTime, Utc};
    use serde::Serializer;

    /// An instant as poem-openapi writes it (`to_rfc3339`: `+00:00`, not serde's `Z`).
    pub fn instant<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&t.to_rfc3339())
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
