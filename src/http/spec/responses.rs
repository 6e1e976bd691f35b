//! Per operation: the media types of its downloads, and the links that chain a create to the
//! operations on what it created. (The error statuses an operation can answer are declared
//! in its signature: `http::error::Refusal`.)
use reporter_ports::template::OutputFormat;
use serde_json::{Value, json};

/// `downloadReport` answers the artifact with its format's media type.
pub fn download_media_types(paths: &mut Value) {
    let Some(ok) = paths.pointer_mut("/~1v1~1reports~1{id}~1download/get/responses/200") else {
        return;
    };
    let binary = json!({ "schema": { "type": "string", "format": "binary" } });
    let content: serde_json::Map<String, Value> = OutputFormat::ALL
        .iter()
        .map(|f| (f.content_type().to_owned(), binary.clone()))
        .collect();
    ok["content"] = Value::Object(content);
}

/// OpenAPI links from each create to the operations on the created resource (schemathesis'
/// stateful phase follows them; so can a client).
pub fn links(paths: &mut Value) {
    let chains: [(&str, &str, &str, &[&str]); 3] = [
        (
            "/v1/templates",
            "post",
            "201",
            &[
                "getTemplate",
                "getTemplateSource",
                "updateTemplate",
                "deleteTemplate",
            ],
        ),
        (
            "/v1/reports",
            "post",
            "201",
            &["getReport", "downloadReport"],
        ),
        (
            "/v1/deadlines",
            "post",
            "201",
            &[
                "getDeadline",
                "updateDeadline",
                "deliverDeadline",
                "deleteDeadline",
            ],
        ),
    ];
    for (path, method, status, targets) in chains {
        let Some(response) = paths
            .get_mut(path)
            .and_then(|p| p.get_mut(method))
            .and_then(|m| m.get_mut("responses").and_then(|r| r.get_mut(status)))
        else {
            continue;
        };
        let links: serde_json::Map<String, Value> = targets
            .iter()
            .map(|target| {
                (
                    (*target).to_owned(),
                    json!({
                        "operationId": target,
                        "parameters": { "id": "$response.body#/id" },
                        "description": format!("`id` of the created resource, for {target}")
                    }),
                )
            })
            .collect();
        response["links"] = Value::Object(links);
    }
    // A template's id also starts a report.
    if let Some(response) = paths.pointer_mut("/~1v1~1templates/post/responses/201") {
        response["links"]["createReport"] = json!({
            "operationId": "createReport",
            "requestBody": { "templateId": "$response.body#/id", "filters": {} },
            "description": "request a report from the created template"
        });
    }
}

/// Adds the builder's documented error answers as `examples` of their 400 responses
/// (poem-openapi has one example per schema, and `ErrorBody` is shared by every operation).
pub fn builder_error_examples(paths: &mut Value) {
    use poem_openapi::types::ToJSON;
    for (path, name, summary, body) in super::super::template_builder::error_examples() {
        let media = paths
            .pointer_mut(&format!(
                "/{}/post/responses/400/content",
                path.replace('/', "~1")
            ))
            .and_then(|c| c.get_mut("application/json; charset=utf-8"))
            .and_then(Value::as_object_mut);
        let Some(media) = media else {
            continue;
        };
        let examples = media
            .entry("examples")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if let Some(examples) = examples.as_object_mut() {
            examples.insert(
                name.to_owned(),
                json!({ "summary": summary, "value": body.to_json().unwrap_or(Value::Null) }),
            );
        }
    }
}
