//! Which fields the CRM encrypts, and their decryption in a read document.
use super::cipher::CrmKeys;
use mongodb::bson::{Bson, Document};
use reporter_ports::ports::{DataSourceError, DecryptionError};

/// Every encrypted field of every CRM collection (holders and aliases share the list), as the
/// original decrypts them; `[*]` is every element of an array.
pub(crate) const ENCRYPTED_FIELDS: &[&str] = &[
    "document",
    "name",
    "contact.primary_email",
    "contact.secondary_email",
    "contact.mobile_phone",
    "contact.other_phone",
    "banking_details.account",
    "banking_details.iban",
    "legal_person.representative.name",
    "legal_person.representative.document",
    "legal_person.representative.email",
    "natural_person.mother_name",
    "natural_person.father_name",
    "regulatory_fields.participant_document",
    "related_parties[*].document",
];

/// The top-level field of an encrypted path (`contact` for `contact.primary_email`).
pub(crate) fn top_level(path: &str) -> &str {
    let first = path.split('.').next().unwrap_or(path);
    first.strip_suffix("[*]").unwrap_or(first)
}

/// The path as filters and logs name it (`related_parties.document`).
fn plain_path(path: &str) -> String {
    path.replace("[*]", "")
}

/// The first field of `fields` (top-level names) that holds encrypted values, if any.
pub(crate) fn first_encrypted<'a>(fields: impl IntoIterator<Item = &'a String>) -> Option<&'a str> {
    fields
        .into_iter()
        .find(|f| ENCRYPTED_FIELDS.iter().any(|p| top_level(p) == f.as_str()))
        .map(String::as_str)
}

/// Decrypts, in place, every encrypted field `doc` holds. Values that are not strings, empty
/// strings and nulls stay as they are. MUST fail on the first value that does not decrypt,
/// naming its field (never the value).
pub(crate) fn decrypt_document(keys: &CrmKeys, doc: &mut Document) -> Result<(), DataSourceError> {
    for path in ENCRYPTED_FIELDS {
        let segments: Vec<&str> = path.split('.').collect();
        decrypt_at(keys, doc, &segments).map_err(|error| DataSourceError::Decryption {
            field: plain_path(path),
            error,
        })?;
    }
    Ok(())
}

fn decrypt_at(keys: &CrmKeys, doc: &mut Document, path: &[&str]) -> Result<(), DecryptionError> {
    let Some((head, rest)) = path.split_first() else {
        return Ok(());
    };
    let (name, every) = match head.strip_suffix("[*]") {
        Some(n) => (n, true),
        None => (*head, false),
    };
    let Some(value) = doc.get_mut(name) else {
        return Ok(());
    };
    match (value, every, rest.is_empty()) {
        (Bson::String(s), false, true) if !s.is_empty() => {
            *s = keys.decrypt(s)?;
        }
        (Bson::Document(inner), false, false) => decrypt_at(keys, inner, rest)?,
        (Bson::Array(items), true, false) => {
            for item in items {
                if let Bson::Document(inner) = item {
                    decrypt_at(keys, inner, rest)?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::doc;

    #[test]
    fn names() {
        assert_eq!(top_level("related_parties[*].document"), "related_parties");
        assert_eq!(top_level("contact.primary_email"), "contact");
        assert_eq!(
            plain_path("related_parties[*].document"),
            "related_parties.document"
        );
        let fields = ["_id".to_owned(), "contact".to_owned()];
        assert_eq!(first_encrypted(&fields), Some("contact"));
        assert_eq!(first_encrypted(&fields[..1]), None);
    }

    #[test]
    fn leaves_what_is_not_a_non_empty_string() {
        let keys = CrmKeys::new(None, None).expect("keys");
        let mut d = doc! {
            "document": 12, "name": "", "contact": null,
            "related_parties": [ { "document": null }, { "document": "" }, "x" ],
            "banking_details": "flat",
        };
        let before = d.clone();
        assert_eq!(decrypt_document(&keys, &mut d), Ok(()));
        assert_eq!(d, before);
        let mut tink = doc! { "related_parties": [ { "document": "tink:v1:AAAA" } ] };
        assert_eq!(
            decrypt_document(&keys, &mut tink),
            Err(DataSourceError::Decryption {
                field: "related_parties.document".into(),
                error: DecryptionError::UnsupportedFormat
            })
        );
    }
}
