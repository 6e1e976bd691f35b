//! The answer of `GET /v1/templates/{id}`: the stored record written as its [`TemplateDto`]
//! JSON straight from the store's shared copy, without building the DTO (a copy of every
//! string and of the mapped fields' maps per request) nor serde's per-field calls.
//!
//! It MUST write exactly the bytes `serde_json` writes for `TemplateDto::from(template)` (the
//! field order and names of the DTO, no `warnings`: a stored template has none); the tests
//! compare the two on arbitrary templates.
use super::json_body::{JsonForm, as_openapi::write_instant};
use super::templates::TemplateDto;
use reporter_ports::json_text::write_json_str as write_str;
use reporter_ports::template::{MappedFields, Template};
use std::sync::Arc;

/// A stored template answered in the [`TemplateDto`] schema.
#[derive(Debug, Clone)]
pub struct TemplateJson(pub Arc<Template>);

impl JsonForm for TemplateJson {
    type Schema = TemplateDto;

    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        let t = &*self.0;
        let mut id = uuid::Uuid::encode_buffer();
        out.extend_from_slice(b"{\"id\":\"");
        out.extend_from_slice(t.id.uuid().hyphenated().encode_lower(&mut id).as_bytes());
        out.extend_from_slice(b"\",\"outputFormat\":\"");
        out.extend_from_slice(t.output_format.as_str().as_bytes());
        out.extend_from_slice(b"\",\"description\":");
        write_str(&t.description, out)?;
        out.extend_from_slice(b",\"fileName\":");
        write_str(&t.file_name, out)?;
        out.extend_from_slice(b",\"mappedFields\":");
        write_mapped_fields(&t.mapped_fields, out)?;
        out.extend_from_slice(b",\"sizeBytes\":");
        serde_json::to_writer(&mut *out, &t.size_bytes)?;
        out.extend_from_slice(b",\"sha256\":");
        write_str(&t.content_sha256, out)?;
        out.extend_from_slice(b",\"createdAt\":");
        write_instant(&t.created_at, out);
        out.extend_from_slice(b",\"updatedAt\":");
        write_instant(&t.updated_at, out);
        out.push(b'}');
        Ok(())
    }
}

/// Data source → table → fields, as serde writes the DTO's maps and lists.
fn write_mapped_fields(mapped: &MappedFields, out: &mut Vec<u8>) -> serde_json::Result<()> {
    out.push(b'{');
    for (i, (source, tables)) in mapped.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(source, out)?;
        out.extend_from_slice(b":{");
        for (j, (table, fields)) in tables.iter().enumerate() {
            if j > 0 {
                out.push(b',');
            }
            write_str(table, out)?;
            out.extend_from_slice(b":[");
            for (k, field) in fields.iter().enumerate() {
                if k > 0 {
                    out.push(b',');
                }
                write_str(field, out)?;
            }
            out.push(b']');
        }
        out.push(b'}');
    }
    out.push(b'}');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Utc};
    use proptest::prelude::*;
    use reporter_ports::template::OutputFormat;
    use reporter_ports::{TemplateId, TenantId};

    /// The bytes both ways: ours, and serde's of the DTO.
    fn both(t: Template) -> (Vec<u8>, Vec<u8>) {
        let serde = serde_json::to_vec(&TemplateDto::from(t.clone())).unwrap();
        let mut ours = Vec::new();
        TemplateJson(Arc::new(t)).write_json(&mut ours).unwrap();
        (ours, serde)
    }

    fn template(
        format: OutputFormat,
        text: [String; 3],
        mapped: MappedFields,
        size_bytes: u64,
        at: [DateTime<Utc>; 2],
    ) -> Template {
        let [description, file_name, content_sha256] = text;
        Template {
            id: TemplateId::new(),
            tenant: TenantId::parse("tenant-a").unwrap(),
            output_format: format,
            description,
            file_name,
            object_key: "t/templates/x.tpl".into(),
            content_sha256,
            size_bytes,
            mapped_fields: mapped,
            version: 3,
            created_at: at[0],
            updated_at: at[1],
            deleted_at: None,
        }
    }

    #[test]
    fn a_stored_template_is_written_as_its_dto() {
        let mapped = MappedFields::from([(
            "bank".to_owned(),
            [(
                "accounts".to_owned(),
                ["account_id".to_owned(), "holder_name".to_owned()].into(),
            )]
            .into(),
        )]);
        let at = DateTime::from_timestamp_nanos(1_796_379_722_107_654_321);
        let t = template(
            OutputFormat::Csv,
            ["".into(), "x.tpl".into(), "ab".repeat(32)],
            mapped,
            812,
            [at, Utc::now()],
        );
        let (ours, serde) = both(t);
        assert_eq!(
            String::from_utf8(ours).unwrap(),
            String::from_utf8(serde).unwrap()
        );
        for format in [
            OutputFormat::Html,
            OutputFormat::Pdf,
            OutputFormat::Csv,
            OutputFormat::Xml,
            OutputFormat::Txt,
        ] {
            let t = template(
                format,
                ["d \"q\"\n\\".into(), "ünï ✓".into(), String::new()],
                MappedFields::new(),
                0,
                [DateTime::<Utc>::MIN_UTC, DateTime::<Utc>::MAX_UTC],
            );
            let (ours, serde) = both(t);
            assert_eq!(ours, serde, "{format:?}");
        }
    }

    fn any_format() -> impl Strategy<Value = OutputFormat> {
        prop_oneof![
            Just(OutputFormat::Html),
            Just(OutputFormat::Pdf),
            Just(OutputFormat::Csv),
            Just(OutputFormat::Xml),
            Just(OutputFormat::Txt),
        ]
    }

    fn any_instant() -> impl Strategy<Value = DateTime<Utc>> {
        let (min, max) = (
            DateTime::<Utc>::MIN_UTC.timestamp(),
            DateTime::<Utc>::MAX_UTC.timestamp(),
        );
        (min..=max, 0u32..1_000_000_000)
            .prop_filter_map("in chrono's range", |(s, n)| DateTime::from_timestamp(s, n))
    }

    fn any_mapped() -> impl Strategy<Value = MappedFields> {
        let fields = prop::collection::btree_set(any::<String>(), 0..3);
        let tables = prop::collection::btree_map(any::<String>(), fields, 0..3);
        prop::collection::btree_map(any::<String>(), tables, 0..3)
    }

    proptest! {
        #[test]
        fn any_stored_template_is_written_as_its_dto(
            format in any_format(),
            text in any::<[String; 3]>(),
            mapped in any_mapped(),
            size_bytes in any::<u64>(),
            at in [any_instant(), any_instant()],
        ) {
            let (ours, serde) = both(template(format, text, mapped, size_bytes, at));
            prop_assert_eq!(ours, serde);
        }
    }
}
