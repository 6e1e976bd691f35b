//! Mapping tenants to database names (one database per tenant).
use reporter_ports::TenantId;
use sha2::{Digest, Sha256};

/// Longest database name this crate produces (MongoDB allows fewer than 64 bytes).
pub const MAX_DATABASE_NAME_LEN: usize = 63;
const MAX_PREFIX_LEN: usize = 20;
const HASH_HEX_LEN: usize = 10;

/// The database of `tenant`: `<prefix>_t_<readable>_<hash>`.
///
/// - `prefix` is lower-cased, every character outside `[a-z0-9_]` becomes `_`, it is cut to
///   20 bytes, and an empty result becomes `reporter`.
/// - `readable` is the tenant id lower-cased with `-` replaced by `_` (a tenant id is
///   `[A-Za-z0-9_-]`, so the result is `[a-z0-9_]`), cut so that the whole name fits in
///   [`MAX_DATABASE_NAME_LEN`] (63) bytes.
/// - `hash` is the first 10 hex digits of SHA-256 of the tenant id *as given*. Lower-casing,
///   the `-`/`_` folding and the cut can make two tenant ids share `readable` (`Acme` and
///   `acme`, `a-b` and `a_b`, two long ids with a common start); the hash keeps their names
///   distinct. It also keeps names that differ only in case apart from MongoDB's
///   case-insensitive database-name clash.
///
/// The result only contains `[a-z0-9_]`, so it never needs escaping. It is stable: the same
/// prefix and tenant always give the same name.
pub fn tenant_database_name(prefix: &str, tenant: &TenantId) -> String {
    let mut prefix: String = prefix
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_PREFIX_LEN)
        .collect();
    if prefix.is_empty() {
        prefix = "reporter".to_owned();
    }
    let hash = hex::encode(Sha256::digest(tenant.as_str().as_bytes()));
    let hash = &hash[..HASH_HEX_LEN];
    let room = MAX_DATABASE_NAME_LEN - prefix.len() - "_t_".len() - 1 - HASH_HEX_LEN;
    let readable: String = tenant
        .as_str()
        .chars()
        .map(|c| {
            if c == '-' {
                '_'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .take(room)
        .collect();
    format!("{prefix}_t_{readable}_{hash}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    fn t(raw: &str) -> TenantId {
        TenantId::parse(raw).expect("tenant")
    }

    #[test]
    fn readable_and_stable() {
        let n = tenant_database_name("reporter", &t("Acme-Corp_1"));
        assert!(n.starts_with("reporter_t_acme_corp_1_"), "{n}");
        assert_eq!(n, tenant_database_name("reporter", &t("Acme-Corp_1")));
        assert_eq!(n.len(), "reporter_t_acme_corp_1_".len() + 10);
        assert!(tenant_database_name("", &t("x")).starts_with("reporter_t_x_"));
        assert!(tenant_database_name("My App/Prod", &t("x")).starts_with("my_app_prod_t_x_"));
    }

    #[test]
    fn folded_ids_stay_distinct() {
        let ids = ["acme", "ACME", "Acme", "a-b", "a_b", "A-b"];
        let names: HashSet<String> = ids
            .iter()
            .map(|i| tenant_database_name("r", &t(i)))
            .collect();
        assert_eq!(names.len(), ids.len());
        let long_a = format!("{}a", "x".repeat(63));
        let long_b = format!("{}b", "x".repeat(63));
        assert_ne!(
            tenant_database_name("r", &t(&long_a)),
            tenant_database_name("r", &t(&long_b))
        );
    }

    proptest! {
        #[test]
        fn always_a_safe_short_name(
            prefix in ".{0,40}",
            id in "[A-Za-z0-9][A-Za-z0-9_-]{0,63}",
        ) {
            let n = tenant_database_name(&prefix, &t(&id));
            prop_assert!(n.len() <= MAX_DATABASE_NAME_LEN, "{} too long", n);
            prop_assert!(n.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'), "{}", n);
        }
    }
}
