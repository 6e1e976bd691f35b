//! Per operation: the error statuses it can answer, the media types of its downloads, and
//! the links that chain a create to the operations on what it created.
//!
//! Every operation shares one error enum in code (`http::error::ApiError`), so poem-openapi
//! lists all of them everywhere; this table keeps only what each operation can return.
//! Schemathesis (CI, `status_code_conformance`) fails on any other status, and a test fails
//! when an operation of the spec has no row here.
use reporter_ports::template::OutputFormat;
use serde_json::{Value, json};

/// Every operation may answer 400 (an unknown query parameter, `TPL-0019`), 414 and 431 (a
/// request head over its bounds, `http::head_limit`) and 500 (a bug, `TPL-0018`).
const ANY: &[u16] = &[400, 414, 431, 500];
/// Operations under `/v1` also need a token with a scope.
const AUTH: &[u16] = &[401, 403];
/// With rate limiting on, every operation but the public ops ones may answer 429
/// (`TPL-0429`) and, when the limiter's Redis does not answer and it fails closed, 503.
const RATE_LIMITED: &[u16] = &[429, 503];

/// The error statuses of `operation_id` besides [`ANY`] (and [`AUTH`] under `/v1`), or
/// `None` for an operation this table does not know.
pub fn errors_of(operation_id: &str) -> Option<&'static [u16]> {
    Some(match operation_id {
        "health" | "version" => &[],
        "readiness" => &[503],
        // Pure catalogues and the static manifest touch no storage.
        "getTemplateBlocksConfig" | "getTemplateFilters" | "getStreamingEvents" => AUTH,
        // 404 unless the in-memory broker records deliveries.
        "listStreamingDeliveries" => &[401, 403, 404],
        "listDataSources" => AUTH,
        "getDataSource" => &[401, 403, 404, 503],
        "listTemplates"
        | "listReports"
        | "listDeadlines"
        | "listDeadlineNotifications"
        | "getDashboardMetrics" => &[401, 403, 503],
        "getTemplate" | "getReport" | "getDeadline" | "getTemplateSource" => &[401, 403, 404, 503],
        "createTemplate" => &[401, 403, 409, 413, 503],
        "updateTemplate" => &[401, 403, 404, 409, 413, 503],
        "deleteTemplate" => &[401, 403, 404, 409, 503],
        "generateTemplateCode" | "validateTemplateBlocks" => &[401, 403, 413, 503],
        // 404: a templateId of no template of the tenant; 413: a source over 1 MiB (TPL-0063);
        // 503: the sandbox, a data source schema or the object storage unavailable.
        "previewTemplate" => &[401, 403, 404, 413, 503],
        "createReport" => &[401, 403, 404, 409, 413, 503],
        "downloadReport" => &[401, 403, 404, 422, 503],
        "createDeadline" => &[401, 403, 404, 409, 413, 422, 503],
        "updateDeadline" | "deliverDeadline" => &[401, 403, 404, 409, 413, 422, 503],
        "deleteDeadline" => &[401, 403, 404, 409, 503],
        "redriveOutbox" => &[401, 403, 413, 503],
        // 400 (a limit outside 1-1000, TPL-0024) is in ANY.
        "listParkedEvents" => &[401, 403, 503],
        _ => return None,
    })
}

/// Keeps, in every operation, only the success responses and the errors [`errors_of`] lists.
pub fn keep_possible_errors(paths: &mut Value) {
    super::refine::for_each_operation(paths, |op| {
        let id = super::refine::operation_id(op);
        let own = errors_of(&id).unwrap_or_default();
        // An operation that reads a body (413) also bounds the time it takes (408).
        let slow_body: &[u16] = if own.contains(&413) { &[408] } else { &[] };
        let limited: &[u16] = if matches!(id.as_str(), "health" | "version" | "readiness") {
            &[]
        } else {
            RATE_LIMITED
        };
        let allowed: Vec<u16> = ANY
            .iter()
            .chain(own)
            .chain(slow_body)
            .chain(limited)
            .copied()
            .collect();
        if let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) {
            responses.retain(|status, _| {
                let code = status.parse::<u16>().unwrap_or(0);
                code < 400 || allowed.contains(&code)
            });
        }
    });
}

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
    for (path, name, summary, body) in super::super::builder::error_examples() {
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
