//! Report filters on the CRM's encrypted fields: matched through the search hashes the CRM
//! writes beside them, or refused.
use super::cipher::CrmKeys;
use super::fields::{ENCRYPTED_FIELDS, top_level};
use reporter_ports::ports::{DataSourceError, DecryptionError, FilterSupport};
use reporter_ports::report::FilterCondition;
use serde_json::Value;

/// Filter field → the search hash the original rewrites it to.
const SEARCH_KEYS: &[(&str, &str)] = &[
    ("document", "search.document"),
    ("name", "search.name"),
    ("banking_details.account", "search.banking_details_account"),
    ("banking_details.iban", "search.banking_details_iban"),
    ("contact.primary_email", "search.contact_primary_email"),
    ("contact.secondary_email", "search.contact_secondary_email"),
    ("contact.mobile_phone", "search.contact_mobile_phone"),
    ("contact.other_phone", "search.contact_other_phone"),
    (
        "regulatory_fields.participant_document",
        "search.regulatory_fields_participant_document",
    ),
    ("related_parties.document", "search.related_party_documents"),
];

/// The filter fields whose search hash the CRM actually writes, by table: holders only
/// `search.document`, aliases five `search.*` keys. Any other encrypted field matches nothing
/// through a hash, so a filter on it is refused.
fn written_hashes(table: &str) -> &'static [&'static str] {
    match table {
        "holders" => &["document"],
        "aliases" => &[
            "document",
            "banking_details.account",
            "banking_details.iban",
            "regulatory_fields.participant_document",
            "related_parties.document",
        ],
        _ => &[],
    }
}

/// True when `field` is an encrypted field, part of one (`contact.primary_email`) or an
/// object holding some (`contact`).
fn is_encrypted(field: &str) -> bool {
    ENCRYPTED_FIELDS.iter().any(|p| {
        let p = p.replace("[*]", "");
        p == field || p.starts_with(&format!("{field}.")) || top_level(&p) == field
    })
}

/// The first operator of `cond` that cannot compare search hashes (anything but `eq`, `in`,
/// `nin`).
fn first_unhashable_operator(cond: &FilterCondition) -> Option<&'static str> {
    cond.operators()
        .into_iter()
        .find(|(op, v)| !v.is_empty() && !matches!(*op, "eq" | "in" | "nin"))
        .map(|(op, _)| op)
}

/// What the CRM source answers about a filter on `table`.`field` (see
/// [`reporter_ports::ports::DataSource::filter_support`]).
///
/// MUST refuse, naming why: an encrypted field the CRM keeps no search hash for on this table
/// (`name`, `contact.*`, …), a range operator on a hashed field, and any hashed field when the
/// hash key is not configured. A hashed field with `eq` / `in` / `nin` is accepted; anything
/// else is the schema's to answer.
pub(crate) fn support(
    keys: &CrmKeys,
    table: &str,
    field: &str,
    cond: &FilterCondition,
) -> FilterSupport {
    if !is_encrypted(field) {
        return FilterSupport::Schema;
    }
    if !written_hashes(table).contains(&field) {
        return FilterSupport::Refused(format!(
            "'{field}' is encrypted and the CRM keeps no search hash for it on '{table}', \
             so no filter can match it"
        ));
    }
    if let Some(op) = first_unhashable_operator(cond) {
        return FilterSupport::Refused(format!(
            "'{field}' is matched through its search hash, which only eq, in and nin can \
             compare ({op} cannot)"
        ));
    }
    if !keys.can_hash() {
        return FilterSupport::Refused(format!(
            "'{field}' is matched through its search hash, and the hash key \
             (CRYPTO_HASH_SECRET_KEY_CRM) is not configured"
        ));
    }
    FilterSupport::Accepted
}

/// The filter the database answers for a CRM filter on `field`: unchanged for a field that is
/// not encrypted; the search-hash key with every non-empty string value replaced by its hash
/// for a hashed one. MUST refuse what [`support`] refuses (the worker checks again: the keys
/// or the table may differ from the API's).
pub(crate) fn rewrite(
    keys: &CrmKeys,
    table: &str,
    field: &str,
    cond: &FilterCondition,
) -> Result<(String, FilterCondition), DataSourceError> {
    match support(keys, table, field, cond) {
        FilterSupport::Schema => return Ok((field.to_owned(), cond.clone())),
        // Only the missing key is refused as such: the filter would be answerable with it.
        FilterSupport::Refused(_)
            if !keys.can_hash()
                && written_hashes(table).contains(&field)
                && first_unhashable_operator(cond).is_none() =>
        {
            return Err(DataSourceError::Decryption {
                field: field.to_owned(),
                error: DecryptionError::KeyMissing,
            });
        }
        FilterSupport::Refused(why) => return Err(DataSourceError::InvalidFilter(why)),
        FilterSupport::Accepted => {}
    }
    let Some((_, key)) = SEARCH_KEYS.iter().find(|(f, _)| *f == field) else {
        return Err(DataSourceError::InvalidFilter(format!(
            "'{field}' has no search hash"
        )));
    };
    let hash_all = |values: &[Value]| -> Result<Vec<Value>, DataSourceError> {
        values
            .iter()
            .map(|v| match v {
                Value::String(s) if !s.is_empty() => keys
                    .search_hash(s)
                    .map(Value::String)
                    .map_err(|error| DataSourceError::Decryption {
                        field: field.to_owned(),
                        error,
                    }),
                other => Ok(other.clone()),
            })
            .collect()
    };
    let mut out = cond.clone();
    out.eq = hash_all(&cond.eq)?;
    out.in_ = hash_all(&cond.in_)?;
    out.nin = hash_all(&cond.nin)?;
    Ok(((*key).to_owned(), out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cond(v: Value) -> FilterCondition {
        serde_json::from_value(v).expect("condition")
    }

    fn keys(hash: bool) -> CrmKeys {
        CrmKeys::new(None, hash.then_some(b"k".as_slice())).expect("keys")
    }

    #[test]
    fn hashed_fields_per_table() {
        let k = keys(true);
        let eq = cond(json!({"eq": ["1"]}));
        assert_eq!(
            support(&k, "holders", "document", &eq),
            FilterSupport::Accepted
        );
        assert_eq!(
            support(&k, "aliases", "banking_details.account", &eq),
            FilterSupport::Accepted
        );
        assert_eq!(
            support(&k, "aliases", "related_parties.document", &eq),
            FilterSupport::Accepted
        );
        for (table, field) in [
            ("holders", "name"),
            ("holders", "contact.primary_email"),
            ("holders", "contact"),
            ("holders", "banking_details.account"),
            ("aliases", "name"),
            ("other", "document"),
        ] {
            assert!(
                matches!(support(&k, table, field, &eq), FilterSupport::Refused(w) if w.contains(field)),
                "{table}.{field}"
            );
        }
        assert_eq!(support(&k, "holders", "type", &eq), FilterSupport::Schema);
        assert!(matches!(
            support(&k, "holders", "document", &cond(json!({"gt": ["1"]}))),
            FilterSupport::Refused(w) if w.contains("gt")
        ));
        assert!(matches!(
            support(&keys(false), "holders", "document", &eq),
            FilterSupport::Refused(w) if w.contains("CRYPTO_HASH_SECRET_KEY_CRM")
        ));
    }

    #[test]
    fn values_become_hashes() {
        let k = keys(true);
        let (key, c) = rewrite(
            &k,
            "aliases",
            "banking_details.account",
            &cond(json!({"in": ["a", "", null], "nin": ["b"]})),
        )
        .expect("rewritten");
        assert_eq!(key, "search.banking_details_account");
        let ha = k.search_hash("a").expect("hash");
        assert_eq!(c.in_, vec![json!(ha), json!(""), Value::Null]);
        assert_eq!(c.nin, vec![json!(k.search_hash("b").expect("hash"))]);
        assert_eq!(
            rewrite(
                &keys(false),
                "holders",
                "document",
                &cond(json!({"eq": ["1"]}))
            ),
            Err(DataSourceError::Decryption {
                field: "document".into(),
                error: DecryptionError::KeyMissing
            })
        );
        for keys in [k, keys(false)] {
            assert!(matches!(
                rewrite(&keys, "holders", "name", &cond(json!({"eq": ["1"]}))),
                Err(DataSourceError::InvalidFilter(_))
            ));
            assert!(matches!(
                rewrite(&keys, "holders", "document", &cond(json!({"lt": ["1"]}))),
                Err(DataSourceError::InvalidFilter(_))
            ));
        }
    }
}
