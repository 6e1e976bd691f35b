//! A JSON request body with a nesting bound of its own, [`MAX_JSON_DEPTH`], checked before any
//! recursive parse (serde_json's default limit is 128 levels). The template builder's bodies nest two JSON levels per
//! block level, so the default would refuse a body of ~63 block levels as malformed before the
//! builder could report blocks nested past their own bound (50) as a validation finding.
//!
//! The depth is measured first, in one linear pass over the bytes without recursion; a body
//! deeper than [`MAX_JSON_DEPTH`] is refused as the default limit would be (`recursion limit
//! exceeded`, answered as TPL-0091). Only a body within the bound is parsed, with serde_json's
//! own limit off, so the recursion of parsing stays bounded by [`MAX_JSON_DEPTH`].
use poem::{FromRequest, Request, RequestBody, Result};
use poem_openapi::error::ParseRequestPayloadError;
use poem_openapi::payload::{ParsePayload, Payload};
use poem_openapi::registry::{MetaSchemaRef, Registry};
use poem_openapi::types::{ParseFromJSON, Type};
use serde::Deserialize;
use serde_json::Value;

/// Deepest nesting of arrays and objects a body may have: 131, a body of 64 block levels
/// (a body of `n` levels nests `2n + 3` deep). The typed parse of the blocks recurses once per
/// block level on the request's thread (about 11 KB of stack per level in a debug build, far
/// less in release), so this bound keeps it well inside a 2 MiB thread stack whatever the
/// build; 64 levels leave room for the 50-level finding of `validate`.
pub const MAX_JSON_DEPTH: usize = 131;

/// A JSON payload parsed with a nesting bound of [`MAX_JSON_DEPTH`]; otherwise like
/// `poem_openapi::payload::Json` (same content types, schema and errors).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeepJson<T>(pub T);

/// The deepest nesting of `[` / `{` in `data`, outside strings; stops counting once past
/// `limit` (the result is then `limit + 1`).
pub fn nesting_depth(data: &[u8], limit: usize) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &b in data {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
                if max > limit {
                    return max;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

fn refused(reason: String) -> poem::Error {
    ParseRequestPayloadError { reason }.into()
}

/// `data` as JSON when it nests at most [`MAX_JSON_DEPTH`] deep.
fn parse(data: &[u8]) -> Result<Value> {
    if data.is_empty() {
        return Ok(Value::Null);
    }
    if nesting_depth(data, MAX_JSON_DEPTH) > MAX_JSON_DEPTH {
        return Err(refused(format!(
            "recursion limit exceeded: the body nests deeper than {MAX_JSON_DEPTH} levels"
        )));
    }
    let mut de = serde_json::Deserializer::from_slice(data);
    de.disable_recursion_limit();
    let value = Value::deserialize(&mut de).map_err(|e| refused(e.to_string()))?;
    de.end().map_err(|e| refused(e.to_string()))?;
    Ok(value)
}

impl<T: Type> Payload for DeepJson<T> {
    const CONTENT_TYPE: &'static str = "application/json; charset=utf-8";

    fn check_content_type(content_type: &str) -> bool {
        <poem_openapi::payload::Json<T> as Payload>::check_content_type(content_type)
    }

    fn schema_ref() -> MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }
}

impl<T: ParseFromJSON> ParsePayload for DeepJson<T> {
    const IS_REQUIRED: bool = T::IS_REQUIRED;

    async fn from_request(request: &Request, body: &mut RequestBody) -> Result<Self> {
        let data = Vec::<u8>::from_request(request, body).await?;
        let value = parse(&data)?;
        let value = T::parse_from_json(Some(value)).map_err(|e| refused(e.into_message()))?;
        Ok(Self(value))
    }
}

poem_openapi::impl_apirequest_for_payload!(DeepJson<T>, T: ParseFromJSON);

#[cfg(test)]
mod tests {
    use super::nesting_depth;

    #[test]
    fn depth_ignores_brackets_in_strings() {
        assert_eq!(nesting_depth(br#"{"a": [1, {"b": "[[[{"}]}"#, 100), 3);
        assert_eq!(nesting_depth(br#"["\"[", ["x"]]"#, 100), 2);
        assert_eq!(nesting_depth(b"1", 100), 0);
    }

    #[test]
    fn depth_stops_past_the_limit() {
        let deep = "[".repeat(10_000);
        assert_eq!(nesting_depth(deep.as_bytes(), 256), 257);
    }
}
