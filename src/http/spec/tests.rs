use super::*;

fn doc() -> Value {
    value(DEFAULT_LIMITS)
}

fn walk(v: &Value, f: &mut impl FnMut(&Value)) {
    f(v);
    match v {
        Value::Object(m) => m.values().for_each(|x| walk(x, f)),
        Value::Array(a) => a.iter().for_each(|x| walk(x, f)),
        _ => {}
    }
}

#[test]
fn every_operation_has_its_error_statuses() {
    let d = doc();
    for (path, item) in d["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let id = op["operationId"].as_str().unwrap();
            let statuses: Vec<&String> = op["responses"].as_object().unwrap().keys().collect();
            assert!(statuses.iter().any(|s| s.starts_with('2')), "{id}");
            if path.starts_with("/v1/") {
                // Declared in the operation's `ApiResult<T, { AUTH | … }>`; the rest is what
                // every `Refusal` adds.
                for status in ["401", "403", "400", "414", "431", "429", "500", "503"] {
                    assert!(
                        statuses.contains(&&status.to_owned()),
                        "{method} {path} ({id}) does not list {status}"
                    );
                }
            }
        }
    }
}

#[test]
fn reads_never_advertise_conflicts_or_bodies_too_large() {
    let d = doc();
    for (path, item) in d["paths"].as_object().unwrap() {
        if let Some(get) = item.get("get") {
            let r = get["responses"].as_object().unwrap();
            assert!(
                !r.contains_key("409") && !r.contains_key("413"),
                "GET {path}"
            );
        }
    }
}

#[test]
fn no_single_ref_is_wrapped_in_all_of() {
    walk(&doc(), &mut |v| {
        if let Some(all) = v.get("allOf").and_then(Value::as_array) {
            assert!(all.len() > 1, "allOf around one schema: {v}");
        }
    });
}

#[test]
fn schema_names_are_clean_and_every_rule_names_a_schema() {
    let d = doc();
    let schemas = d["components"]["schemas"].as_object().unwrap();
    for name in schemas.keys() {
        assert!(!name.ends_with("Dto"), "{name}");
    }
    for (name, _) in schemas::rules() {
        assert!(schemas.contains_key(name), "rule for unknown schema {name}");
    }
}

#[test]
fn optional_output_fields_are_nullable_and_required_inputs_declared() {
    let d = doc();
    let s = &d["components"]["schemas"];
    assert_eq!(s["Report"]["properties"]["completedAt"]["nullable"], true);
    assert_eq!(s["Deadline"]["properties"]["deliveredAt"]["nullable"], true);
    assert_eq!(
        s["Deadline"]["properties"]["templateName"]["nullable"],
        true
    );
    let required = s["CreateDeadlineInput"]["required"].as_array().unwrap();
    for f in ["name", "type", "dueDate", "frequency", "color"] {
        assert!(required.contains(&Value::from(f)), "{f}");
    }
    assert_eq!(s["CreateDeadlineInput"]["additionalProperties"], false);
    let template_required = s["Template"]["required"].as_array().unwrap();
    assert!(!template_required.contains(&Value::from("warnings")));
    assert!(template_required.contains(&Value::from("id")));
    assert_eq!(
        s["CreateDeadlineInput"]["properties"]["frequency"]["$ref"],
        "#/components/schemas/Frequency"
    );
    assert_eq!(
        s["Frequency"]["enum"],
        serde_json::json!(["once", "daily", "weekly", "monthly", "semiannual", "annual"])
    );
}

#[test]
fn servers_are_relative_and_limits_follow_the_configuration() {
    assert_eq!(doc()["servers"][0]["url"], "/");
    let served = value(ParamLimits {
        max_page_limit: 500,
    });
    let limit = served["paths"]["/v1/templates"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "limit")
        .unwrap()
        .clone();
    assert_eq!(limit["schema"]["maximum"], 500);
}

#[test]
fn downloads_list_every_media_type() {
    let d = doc();
    let content = d["paths"]["/v1/reports/{id}/download"]["get"]["responses"]["200"]["content"]
        .as_object()
        .unwrap();
    for f in reporter_ports::template::OutputFormat::ALL {
        assert!(content.contains_key(f.content_type()), "{f}");
    }
}

#[test]
fn creates_link_to_the_operations_on_what_they_created() {
    let d = doc();
    let links = &d["paths"]["/v1/deadlines"]["post"]["responses"]["201"]["links"];
    assert_eq!(
        links["getDeadline"]["parameters"]["id"],
        "$response.body#/id"
    );
    let ids: Vec<&str> = d["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|i| i.as_object().unwrap().values())
        .filter_map(|op| op["operationId"].as_str())
        .collect();
    walk(&d["paths"], &mut |v| {
        if let Some(target) = v.get("operationId").and_then(Value::as_str) {
            assert!(ids.contains(&target), "link to unknown operation {target}");
        }
    });
}

#[test]
fn swagger_ui_embeds_the_refined_document() {
    let html = swagger_html(DEFAULT_LIMITS);
    assert!(html.contains("\"url\": \"/\""), "servers not swapped in");
    assert!(!html.contains("127.0.0.1:4005"));
}
