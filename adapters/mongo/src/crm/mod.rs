//! The Midaz CRM plug-in's data: a MongoDB source whose id is `plugin_crm` or `crm`.
//!
//! - **Decryption** ([`fields`], [`cipher`]): every row read is decrypted at extraction, the
//!   fields the original decrypts, arrays included. A value that does not decrypt fails the
//!   query with [`DataSourceError::Decryption`](reporter_ports::ports::DataSourceError),
//!   naming the field, never the value.
//! - **Filters** ([`filters`]): an encrypted field is matched through the search hash the CRM
//!   writes beside it, or refused.
//! - **Organizations**: the CRM keeps `<collection>_<organization id>` collections. With an
//!   organization configured the source reads exactly `<table>_<organization>`; without, a
//!   table reads every `<table>_*` collection in name order and tags each row with
//!   `organization_id`.
mod cipher;
mod fields;
mod filters;

pub(crate) use cipher::CrmKeys;
pub use cipher::KeyLengthError;
pub(crate) use fields::{decrypt_document, first_encrypted};
pub(crate) use filters::{rewrite, support};

use mongodb::bson::Document;
use reporter_ports::ports::DataSourceError;
use reporter_ports::report::FilterCondition;
use serde_json::Value;

/// The field that names a row's organization when the source reads every organization.
pub const ORGANIZATION_FIELD: &str = "organization_id";

/// The field the CRM keeps its search hashes under; hidden from the schema listing.
pub(crate) const SEARCH_FIELD: &str = "search";

/// True for the ids the original gives its CRM source: `plugin_crm` and `crm`.
pub fn is_crm_source(id: &str) -> bool {
    matches!(id, "plugin_crm" | "crm")
}

/// How a MongoDB source reads the CRM's data. Its `Debug` never shows a key.
#[derive(Debug, Clone, Default)]
pub struct CrmSettings {
    pub(crate) keys: CrmKeys,
    pub(crate) organization_id: Option<String>,
}

impl CrmSettings {
    /// The AES key's bytes (16, 24 or 32: the hex-decoded `CRYPTO_ENCRYPT_SECRET_KEY_CRM`), the
    /// HMAC key's bytes (the text of `CRYPTO_HASH_SECRET_KEY_CRM`, not decoded) and the one
    /// organization to read (`DATASOURCE_<NAME>_MIDAZ_ORGANIZATION_ID`; lower-cased, as the
    /// CRM names its collections). Without keys the source still serves the fields that are
    /// not encrypted.
    pub fn new(
        encrypt_key: Option<&[u8]>,
        hash_key: Option<&[u8]>,
        organization_id: Option<&str>,
    ) -> Result<Self, KeyLengthError> {
        Ok(Self {
            keys: CrmKeys::new(encrypt_key, hash_key)?,
            organization_id: organization_id
                .map(|o| o.trim().to_ascii_lowercase())
                .filter(|o| !o.is_empty()),
        })
    }

    /// The table a collection serves and its organization: `holders_<org>` → (`holders`,
    /// `<org>`). With an organization configured only its collections serve a table.
    pub(crate) fn table_of<'a>(&self, collection: &'a str) -> Option<(&'a str, &'a str)> {
        let (table, org) = collection.rsplit_once('_')?;
        if table.is_empty() || org.is_empty() || collection.starts_with("system.") {
            return None;
        }
        match &self.organization_id {
            Some(only) if only != org => None,
            _ => Some((table, org)),
        }
    }

    /// Decrypts, in place, every encrypted field of one read document: the row transform a
    /// CRM source applies to each row it extracts (values that are not non-empty strings stay
    /// as they are). Fails on the first value that does not decrypt, naming its field (never
    /// the value). Public for `reporter-bench`'s `crm-decrypt` figure.
    pub fn decrypt_row(&self, doc: &mut Document) -> Result<(), DataSourceError> {
        decrypt_document(&self.keys, doc)
    }

    /// True when rows carry [`ORGANIZATION_FIELD`] (no organization configured).
    pub(crate) fn tags_organizations(&self) -> bool {
        self.organization_id.is_none()
    }
}

/// True when the organization `org` passes a filter on [`ORGANIZATION_FIELD`]: `eq` / `in`
/// name the organizations to read, `nin` the ones to leave out; any other operator is
/// `InvalidFilter`.
pub(crate) fn organization_matches(
    org: &str,
    cond: &FilterCondition,
) -> Result<bool, DataSourceError> {
    if let Some((op, _)) = cond
        .operators()
        .into_iter()
        .find(|(op, v)| !v.is_empty() && !matches!(*op, "eq" | "in" | "nin"))
    {
        return Err(DataSourceError::InvalidFilter(format!(
            "{ORGANIZATION_FIELD}: {op} is not supported (eq, in or nin select organizations)"
        )));
    }
    let is = |v: &Value| v.as_str() == Some(org);
    let mut ok = true;
    if !cond.eq.is_empty() {
        ok &= cond.eq.iter().any(is);
    }
    if !cond.in_.is_empty() {
        ok &= cond.in_.iter().any(is);
    }
    ok &= !cond.nin.iter().any(is);
    Ok(ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn collections_and_organizations() {
        let all = CrmSettings::new(None, None, None).expect("settings");
        assert_eq!(all.table_of("holders_abc-1"), Some(("holders", "abc-1")));
        assert_eq!(all.table_of("holders"), None);
        assert_eq!(all.table_of("_x"), None);
        let one = CrmSettings::new(None, None, Some(" ABC-1 ")).expect("settings");
        assert_eq!(one.table_of("holders_abc-1"), Some(("holders", "abc-1")));
        assert_eq!(one.table_of("holders_abc-2"), None);
        assert!(all.tags_organizations() && !one.tags_organizations());
        let c = |v| serde_json::from_value::<FilterCondition>(v).expect("cond");
        assert_eq!(
            organization_matches("a", &c(json!({"eq": ["a"]}))),
            Ok(true)
        );
        assert_eq!(
            organization_matches("b", &c(json!({"in": ["a"]}))),
            Ok(false)
        );
        assert_eq!(
            organization_matches("a", &c(json!({"nin": ["a"]}))),
            Ok(false)
        );
        assert!(organization_matches("a", &c(json!({"gt": ["a"]}))).is_err());
        assert!(is_crm_source("crm") && is_crm_source("plugin_crm") && !is_crm_source("crm_x"));
    }
}
