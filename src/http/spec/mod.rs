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

mod params;
pub mod refine;
pub mod responses;
mod schemas;

pub use params::ParamLimits;

/// The largest `limit` of the paged lists in the committed document (`MAX_PAGINATION_LIMIT`'s
/// default); the running service serves its configured value.
pub const DEFAULT_LIMITS: ParamLimits = ParamLimits {
    max_page_limit: 100,
};

/// poem-openapi's document, as generated from the code.
pub fn raw() -> Value {
    serde_json::from_str(&super::api_service().spec()).unwrap_or(Value::Null)
}

/// The document SDK generators and contract testers read: poem-openapi's, refined with what
/// the code enforces and returns (`refine`, `schemas`, `params`, `responses`), keys sorted.
pub fn value(limits: ParamLimits) -> Value {
    let mut v = raw();
    refine::unwrap_single_ref_all_of(&mut v);
    if let Some(all) = v
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    {
        for (name, patch) in schemas::rules() {
            if let Some(schema) = all.get_mut(name) {
                refine::merge(schema, patch);
            }
        }
        for (name, field) in schemas::OMITTED_WHEN_EMPTY {
            if let Some(required) = all
                .get_mut(*name)
                .and_then(|s| s.get_mut("required"))
                .and_then(Value::as_array_mut)
            {
                required.retain(|r| r != field);
            }
        }
        refine::optional_properties_nullable(all);
        all.extend(
            params::components()
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v)),
        );
    }
    let paths = &mut v["paths"];
    for (op, patch) in schemas::multipart_rules() {
        refine::for_each_operation(paths, |o| {
            if o["operationId"] == op {
                let media = &mut o["requestBody"]["content"]["multipart/form-data"];
                refine::merge(&mut media["schema"], patch.clone());
                media["encoding"] = schemas::template_form_encoding();
            }
        });
    }
    params::refine(paths, limits);
    responses::download_media_types(paths);
    responses::links(paths);
    responses::builder_error_examples(paths);
    refine::drop_content_type_headers(paths);
    refine::scopes_as_extension(paths);
    // Relative: "Try it out" and generated clients call the server that served the document.
    v["servers"] =
        serde_json::json!([{ "url": "/", "description": "the server serving this document" }]);
    sorted(v)
}

/// The spec as pretty JSON with sorted keys and a trailing newline.
pub fn json_with(limits: ParamLimits) -> String {
    let mut s = serde_json::to_string_pretty(&value(limits)).unwrap_or_default();
    s.push('\n');
    s
}

/// The committed spec (default limits) as JSON.
pub fn json() -> String {
    json_with(DEFAULT_LIMITS)
}

/// The spec as YAML with sorted keys.
pub fn yaml_with(limits: ParamLimits) -> String {
    serde_yaml::to_string(&value(limits)).unwrap_or_default()
}

/// The committed spec (default limits) as YAML.
pub fn yaml() -> String {
    yaml_with(DEFAULT_LIMITS)
}

/// Swagger UI showing the served document (poem-openapi's page embeds its raw document; this
/// swaps in the refined one).
pub fn swagger_html(limits: ParamLimits) -> String {
    let service = super::api_service();
    service
        .swagger_ui_html()
        .replacen(&service.spec(), &json_with(limits), 1)
}

#[cfg(test)]
mod tests;
