//! JSON Schemas of the payloads, generated from the payload types (one source of truth).
use super::catalog::EventKey;

impl EventKey {
    /// JSON Schema (draft 2020-12) of this event's payload. Unknown properties are refused.
    pub fn payload_schema(&self) -> serde_json::Value {
        // Subschemas are inlined so each schema is self-contained (no `$defs` to resolve when
        // it is embedded in the manifest or the AsyncAPI document).
        let generator = schemars::generate::SchemaSettings::draft2020_12()
            .with(|s| s.inline_subschemas = true)
            .into_generator();
        let schema = self.payload_root_schema(generator);
        let mut v = schema.to_value();
        if let Some(obj) = v.as_object_mut() {
            obj.insert(
                "title".into(),
                serde_json::Value::String(format!("{} payload", self.key())),
            );
            obj.insert(
                "description".into(),
                serde_json::Value::String(self.description().to_owned()),
            );
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_finished_schema_requires_exactly_the_seed_fields() {
        let s = EventKey::ReportFinished.payload_schema();
        let mut required: Vec<&str> = s["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        required.sort_unstable();
        assert_eq!(
            required,
            [
                "artifact_content_type",
                "artifact_object_key",
                "completed_at",
                "duration_ms",
                "output_format",
                "report_id",
                "section_count",
                "status",
                "template_id"
            ]
        );
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(s["properties"]["completed_at"]["format"], "date-time");
    }

    fn required(k: EventKey) -> std::collections::BTreeSet<String> {
        k.payload_schema()["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    }

    /// The seed: `report.errored` "replaces the artifact fields with `error_code` and
    /// `error_summary`" — every other field of `report.finished` stays.
    #[test]
    fn report_errored_is_report_finished_with_the_artifact_fields_replaced() {
        let mut expected = required(EventKey::ReportFinished);
        assert!(expected.remove("artifact_object_key"));
        assert!(expected.remove("artifact_content_type"));
        expected.insert("error_code".into());
        expected.insert("error_summary".into());
        assert_eq!(required(EventKey::ReportErrored), expected);
        let errored = EventKey::ReportErrored.payload_schema();
        assert_eq!(errored["additionalProperties"], false);
        let finished = EventKey::ReportFinished.payload_schema();
        for field in [
            "report_id",
            "template_id",
            "output_format",
            "status",
            "completed_at",
            "duration_ms",
            "section_count",
        ] {
            assert_eq!(
                errored["properties"][field]["type"], finished["properties"][field]["type"],
                "{field} has the same type in both"
            );
        }
    }

    #[test]
    fn schemas_are_self_contained() {
        for k in EventKey::ALL {
            let text = k.payload_schema().to_string();
            assert!(
                !text.contains("$ref") && !text.contains("$defs"),
                "{}: {text}",
                k.key()
            );
        }
    }
}
