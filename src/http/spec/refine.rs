//! Generic rewrites of poem-openapi's document into one SDK generators read as intended.
//!
//! poem-openapi wraps every described `$ref` in `allOf: [$ref, {description}]` (generators
//! read that as an anonymous composed type, or refuse it), declares optional fields
//! non-nullable although it serializes `None` as `null`, and lists `Content-Type` among
//! response headers (OpenAPI ignores it there; generators warn). These rewrites fix that for
//! every schema, so no single type needs a special case.
use serde_json::{Map, Value};

/// `{"allOf": [{"$ref": R}], …}` → `{"$ref": R}` everywhere (OpenAPI 3.0 ignores siblings of
/// `$ref`, so the description beside it is dropped; the referenced schema has its own).
pub fn unwrap_single_ref_all_of(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(reference) = single_ref(m) {
                m.clear();
                m.insert("$ref".into(), Value::String(reference));
            }
            m.values_mut().for_each(unwrap_single_ref_all_of);
        }
        Value::Array(a) => a.iter_mut().for_each(unwrap_single_ref_all_of),
        _ => {}
    }
}

/// The `$ref` of an `allOf` holding that one reference, optionally followed by a schema that
/// only carries a description (poem-openapi's shape).
fn single_ref(m: &Map<String, Value>) -> Option<String> {
    let parts = m.get("allOf")?.as_array()?;
    let (first, rest) = parts.split_first()?;
    let only_description = |v: &Value| {
        v.as_object()
            .is_some_and(|o| o.keys().all(|k| k == "description"))
    };
    if rest.len() > 1 || !rest.iter().all(only_description) {
        return None;
    }
    let first = first.as_object()?;
    (first.len() == 1)
        .then(|| first.get("$ref")?.as_str().map(str::to_owned))
        .flatten()
}

/// Marks every optional property of every object schema `nullable`: poem-openapi serializes
/// an absent `Option` as `null` (unless the field skips it, where `nullable` is harmless) and
/// parses `null` as absent. A `$ref` property becomes `{"anyOf": [$ref], "nullable": true}`
/// (OpenAPI 3.0 has no `null` type; generators read this as "the type or null", and unlike
/// `allOf` it does not make them compose an enum).
pub fn optional_properties_nullable(schemas: &mut Map<String, Value>) {
    for schema in schemas.values_mut() {
        let required: Vec<String> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
            continue;
        };
        for (name, prop) in props.iter_mut() {
            if !required.contains(name) {
                make_nullable(prop);
            }
        }
    }
}

fn make_nullable(prop: &mut Value) {
    let Some(m) = prop.as_object_mut() else {
        return;
    };
    if let Some(reference) = m.remove("$ref") {
        m.insert(
            "anyOf".into(),
            Value::Array(vec![serde_json::json!({ "$ref": reference })]),
        );
    }
    m.insert("nullable".into(), Value::Bool(true));
}

/// Removes `Content-Type` from every response's `headers` (the media types say it).
pub fn drop_content_type_headers(paths: &mut Value) {
    for_each_response(paths, |_, _, response| {
        if let Some(headers) = response.get_mut("headers").and_then(Value::as_object_mut) {
            headers.retain(|name, _| !name.eq_ignore_ascii_case("content-type"));
            if headers.is_empty() {
                response.as_object_mut().map(|r| r.remove("headers"));
            }
        }
    });
}

/// Calls `f(operation_id, status, response)` for every response of every operation.
pub fn for_each_response(paths: &mut Value, mut f: impl FnMut(&str, &str, &mut Value)) {
    for_each_operation(paths, |op| {
        let id = operation_id(op);
        if let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) {
            for (status, response) in responses.iter_mut() {
                f(&id, status, response);
            }
        }
    });
}

/// The `operationId` of an operation object ("" when it has none).
pub fn operation_id(op: &Value) -> String {
    op.get("operationId")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// Calls `f(operation)` for every operation object under `paths`.
pub fn for_each_operation(paths: &mut Value, mut f: impl FnMut(&mut Value)) {
    let Some(paths) = paths.as_object_mut() else {
        return;
    };
    for item in paths.values_mut() {
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for (method, op) in item.iter_mut() {
            if is_method(method) {
                f(op);
            }
        }
    }
}

fn is_method(key: &str) -> bool {
    matches!(
        key,
        "get" | "put" | "post" | "delete" | "options" | "head" | "patch" | "trace"
    )
}

/// Merges `patch` into `target`: objects merge key by key (recursively), anything else
/// replaces; so does an object holding a `$ref` (a reference has no siblings in OpenAPI 3.0).
pub fn merge(target: &mut Value, patch: Value) {
    match (target, patch) {
        (t, p) if p.get("$ref").is_some() => *t = p,
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                merge(t.entry(k).or_insert(Value::Null), v);
            }
        }
        (t, p) => *t = p,
    }
}

/// Moves each operation's scope out of its `bearerAuth` requirement (OpenAPI 3.0 lets only
/// OAuth2 and OpenID Connect requirements list scopes) into `x-required-scopes`, where SDK
/// users and linters read it.
pub fn scopes_as_extension(paths: &mut Value) {
    for_each_operation(paths, |o| {
        let mut scopes = Vec::new();
        if let Some(reqs) = o.get_mut("security").and_then(Value::as_array_mut) {
            for list in reqs
                .iter_mut()
                .filter_map(|r| r.get_mut("bearerAuth"))
                .filter_map(Value::as_array_mut)
            {
                scopes.append(list);
            }
        }
        if !scopes.is_empty() {
            o["x-required-scopes"] = Value::Array(scopes);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_described_ref_becomes_the_ref() {
        let mut v = json!({"a": {"allOf": [{"$ref": "#/x"}, {"description": "d"}], "description": "d"},
                           "b": {"allOf": [{"$ref": "#/x"}, {"$ref": "#/y"}]}});
        // Only a single-$ref allOf (plus its description) is unwrapped.
        let two = v["b"].clone();
        unwrap_single_ref_all_of(&mut v);
        assert_eq!(v["a"], json!({"$ref": "#/x"}));
        assert_eq!(v["b"], two);
    }

    #[test]
    fn optional_properties_become_nullable() {
        let mut s = json!({"T": {"type": "object", "required": ["a"],
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}, "c": {"$ref": "#/E"}}}});
        optional_properties_nullable(s.as_object_mut().unwrap());
        assert_eq!(s["T"]["properties"]["a"], json!({"type": "string"}));
        assert_eq!(
            s["T"]["properties"]["b"],
            json!({"type": "string", "nullable": true})
        );
        assert_eq!(
            s["T"]["properties"]["c"],
            json!({"anyOf": [{"$ref": "#/E"}], "nullable": true})
        );
    }

    #[test]
    fn merge_is_deep() {
        let mut t = json!({"a": {"b": 1, "c": 2}, "d": [1]});
        merge(&mut t, json!({"a": {"c": 3, "e": 4}, "d": [2]}));
        assert_eq!(t, json!({"a": {"b": 1, "c": 3, "e": 4}, "d": [2]}));
        merge(&mut t, json!({"a": {"$ref": "#/x"}}));
        assert_eq!(t["a"], json!({"$ref": "#/x"}));
    }
}
