//! The OpenAPI document, generated from the code and committed under `openapi/`.
//!
//! Output is deterministic: keys are sorted at every level, so the committed files only change
//! when the API does. `reporter openapi` prints it; `just openapi` rewrites the committed files;
//! a test fails when they drift.
use serde_json::{Map, Value};

/// Top-level description of the API.
pub const DESCRIPTION: &str = "Reporter manages report templates, generates regulatory and financial reports from data \
sources, tracks filing deadlines, and publishes every state change as a CloudEvent. Every `/v1` operation needs \
`Authorization: Bearer <JWT>` with the scope named in its description. Errors share one body \
(`code`, `title`, `message`, `entityType`, `fields`) with stable `TPL-` codes. Lists take `page` (from 1), \
`limit` (1 to MAX_PAGINATION_LIMIT) and `sort_order` (asc|desc) and answer `{items, page, limit, total}`.";

/// Sorts object keys at every level (deterministic output).
pub fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(String, Value)> = m.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            let mut out = Map::new();
            for (k, v) in entries {
                out.insert(k, sorted(v));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}

fn value() -> Value {
    let raw = super::api_service().spec();
    sorted(serde_json::from_str(&raw).unwrap_or(Value::Null))
}

/// The spec as pretty JSON with sorted keys and a trailing newline.
pub fn json() -> String {
    let mut s = serde_json::to_string_pretty(&value()).unwrap_or_default();
    s.push('\n');
    s
}

/// The spec as YAML with sorted keys.
pub fn yaml() -> String {
    serde_yaml::to_string(&value()).unwrap_or_default()
}
