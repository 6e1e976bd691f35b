//! What the service enforces on path, query and header parameters, stated in their schemas
//! (the handlers take them as plain strings and numbers so each rule answers its own code).
use serde_json::{Value, json};

/// Limits that depend on the configuration.
#[derive(Debug, Clone, Copy)]
pub struct ParamLimits {
    /// `MAX_PAGINATION_LIMIT`: the largest `limit` of the paged lists.
    pub max_page_limit: u32,
}

/// The schema patch of parameter `name` of operation `op`, if the service checks more than
/// its type.
pub fn rule(op: &str, name: &str, limits: ParamLimits) -> Option<Value> {
    let rule = match (op, name) {
        (_, "id") => json!({ "format": "uuid" }),
        (_, "dataSourceId") => {
            json!({ "pattern": reporter_ports::datasource::DataSourceId::PATTERN })
        }
        (_, "page") => json!({ "minimum": 1, "maximum": u32::MAX }),
        ("listDeadlineNotifications", "limit") => json!({ "minimum": 1, "maximum": 100 }),
        ("listStreamingDeliveries" | "listParkedEvents", "limit") => {
            json!({ "minimum": 1, "maximum": 1000 })
        }
        (_, "limit") => json!({ "minimum": 1, "maximum": limits.max_page_limit }),
        (_, "sort_order" | "sortOrder") => component(SORT_ORDER),
        ("listReports", "status") => component("ReportStatus"),
        ("listDeadlines", "status") => component("DeadlineStatus"),
        ("listDeadlines", "type") => component("DeadlineType"),
        (_, "output_format" | "outputFormat") => component("OutputFormat"),
        (_, "template_id" | "templateId") => json!({ "format": "uuid" }),
        (_, "created_at" | "createdAt") => json!({ "format": "date" }),
        ("getDashboardMetrics", "errorPeriodDays") => json!({ "minimum": 1, "maximum": 365 }),
        (_, "X-Idempotency") => {
            json!({ "pattern": super::super::headers::IDEMPOTENCY_KEY_PATTERN })
        }
        _ => return None,
    };
    Some(rule)
}

/// The component schema of the lists' sort order (no response uses it, so poem-openapi does not
/// emit it); [`components`] adds it.
const SORT_ORDER: &str = "SortOrder";

/// Component schemas the parameters refer to beyond those poem-openapi emits.
pub fn components() -> Vec<(&'static str, Value)> {
    vec![(
        SORT_ORDER,
        json!({
            "type": "string",
            "enum": ["asc", "desc"],
            "description": "Order by creation time (any case is taken)."
        }),
    )]
}

/// A reference to a component schema (the enums the responses use too).
fn component(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

/// Applies [`rule`] to every parameter of every operation.
pub fn refine(paths: &mut Value, limits: ParamLimits) {
    super::refine::for_each_operation(paths, |op| {
        let id = super::refine::operation_id(op);
        let Some(params) = op.get_mut("parameters").and_then(Value::as_array_mut) else {
            return;
        };
        for p in params {
            let name = p.get("name").and_then(Value::as_str).unwrap_or_default();
            if let Some(patch) = rule(&id, name, limits) {
                super::refine::merge(&mut p["schema"], patch);
            }
            // An empty query value counts as absent (`http::query`), as in the original.
            if p["in"] == "query" {
                p["allowEmptyValue"] = Value::Bool(true);
            }
        }
    });
}
