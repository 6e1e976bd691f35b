//! What the service enforces on request bodies, stated in their schemas.
//!
//! The input types stay permissive in Rust (`Option<String>` and friends) so that each rule
//! answers its own stable code (`TPL-0001` for a missing field, `TPL-0046` for a bad type, …)
//! instead of one generic parse error. The rules themselves are written here once more as
//! schema constraints, built from the same domain constants, so SDK generators see required
//! fields, enums, formats and bounds; schemathesis (CI) checks that the service accepts what
//! these schemas allow and refuses what they forbid.
use reporter_ports::deadline::{
    COLOR_PATTERN, MAX_DESCRIPTION_LEN, MAX_NAME_LEN, MAX_NOTIFY_DAYS_BEFORE,
};
use reporter_ports::human_text::{ALLOWED_PATTERN, NON_BLANK_PATTERN};
use serde_json::{Value, json};

/// (schema name, patch merged into it).
pub fn rules() -> Vec<(&'static str, Value)> {
    vec![
        ("CreateDeadlineInput", create_deadline()),
        ("UpdateDeadlineInput", update_deadline()),
        ("DeliverDeadlineInput", deliver_deadline()),
        ("CreateReportInput", create_report()),
        ("FilterCondition", filter_condition()),
        ("GenerateCodeInput", generate_code_input()),
        ("ValidateBlocksInput", builder_input()),
        ("TemplateBlock", closed()),
        ("FilterChain", closed()),
        ("ElifBranch", closed()),
    ]
}

/// Output fields poem-openapi lists as required although they are left out when empty
/// (`skip_serializing_if_is_empty`): (schema, property).
pub const OMITTED_WHEN_EMPTY: &[(&str, &str)] = &[
    ("Template", "warnings"),
    ("GenerateCodeResponse", "warnings"),
    ("ValidateBlocksResponse", "warnings"),
    ("BlockProperty", "values"),
];

/// Unknown fields are refused (`TPL-0015`).
fn closed() -> Value {
    json!({ "additionalProperties": false })
}

fn with(mut base: Value, patch: Value) -> Value {
    super::refine::merge(&mut base, patch);
    base
}

/// The properties a deadline's create and update share.
fn deadline_properties() -> Value {
    json!({
        "name": { "minLength": 1, "maxLength": MAX_NAME_LEN, "pattern": NON_BLANK_PATTERN },
        "description": { "maxLength": MAX_DESCRIPTION_LEN, "pattern": ALLOWED_PATTERN },
        "type": { "$ref": "#/components/schemas/DeadlineType" },
        "templateId": { "format": "uuid" },
        "dueDate": { "format": "date-time" },
        "frequency": { "$ref": "#/components/schemas/Frequency" },
        "monthsOfYear": {
            "maxItems": 2,
            "uniqueItems": true,
            "items": { "minimum": 1, "maximum": 12 }
        },
        "notifyDaysBefore": { "minimum": 0, "maximum": MAX_NOTIFY_DAYS_BEFORE },
        "color": { "pattern": COLOR_PATTERN }
    })
}

fn create_deadline() -> Value {
    with(
        closed(),
        json!({
            "required": ["name", "type", "dueDate", "frequency", "color"],
            "properties": deadline_properties()
        }),
    )
}

fn update_deadline() -> Value {
    with(
        closed(),
        json!({ "minProperties": 1, "properties": deadline_properties() }),
    )
}

fn deliver_deadline() -> Value {
    with(closed(), json!({ "required": ["delivered"] }))
}

fn create_report() -> Value {
    with(
        closed(),
        json!({
            "required": ["templateId", "filters"],
            "properties": { "templateId": { "format": "uuid" } }
        }),
    )
}

/// Every operator takes scalars (or null); a non-empty `between` takes exactly two, a
/// comparison exactly one (an empty list counts as absent, as in the original).
fn filter_condition() -> Value {
    let scalar = json!({ "nullable": true, "oneOf": [
        { "type": "string" }, { "type": "number" }, { "type": "boolean" }
    ]});
    let list = |max: Option<u32>| match max {
        Some(max) => json!({ "maxItems": max, "items": scalar.clone() }),
        None => json!({ "items": scalar.clone() }),
    };
    with(
        closed(),
        json!({
            "minProperties": 1,
            "properties": {
                "eq": list(None), "in": list(None), "nin": list(None),
                "gt": list(Some(1)), "gte": list(Some(1)),
                "lt": list(Some(1)), "lte": list(Some(1)),
                "between": list(Some(2))
            }
        }),
    )
}

/// `blocks` is required. Block contents are left open on purpose: validate answers 200 with
/// the problems it finds in them, and generate-code lists them all in one 400.
fn builder_input() -> Value {
    with(closed(), json!({ "required": ["blocks"] }))
}

/// generate-code also refuses an empty block list (validate reports it as a finding, 200).
fn generate_code_input() -> Value {
    with(
        builder_input(),
        json!({ "properties": { "blocks": { "minItems": 1 } } }),
    )
}

/// (operation id, patch merged into its `multipart/form-data` body schema).
pub fn multipart_rules() -> Vec<(&'static str, Value)> {
    let form = |required: Value| {
        with(
            closed(),
            json!({
                "required": required,
                "properties": {
                    // Any case is taken (the original documents upper case); an enum of both
                    // spellings would give SDKs two members per format.
                    "outputFormat": { "$ref": "#/components/schemas/OutputFormat" },
                    "description": {
                        "maxLength": crate::app::TEMPLATE_DESCRIPTION_MAX,
                        "pattern": ALLOWED_PATTERN
                    }
                }
            }),
        )
    };
    vec![
        ("createTemplate", form(json!(["template", "outputFormat"]))),
        (
            "updateTemplate",
            with(form(json!([])), json!({ "minProperties": 1 })),
        ),
    ]
}

/// The `encoding` of the template forms: the file part is text, and its name ends in `.tpl`
/// (`TPL-0002` otherwise), shown as the part's `Content-Disposition`.
pub fn template_form_encoding() -> Value {
    json!({
        "template": {
            "contentType": "text/plain",
            "headers": {
                "Content-Disposition": {
                    "description": "The file name must end in `.tpl`.",
                    "schema": { "type": "string" },
                    "example": "form-data; name=\"template\"; filename=\"statement.tpl\""
                }
            }
        }
    })
}
