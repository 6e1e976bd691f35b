//! Tenant identity.
use serde::{Deserialize, Serialize};
use std::fmt;

/// A tenant identifier: 1 to 64 characters of `[A-Za-z0-9_-]`, starting with a letter or digit.
///
/// The restricted alphabet makes the value safe to embed in object keys, database names
/// (after the adapter's own mapping) and AMQP headers without escaping.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TenantId(String);

/// Why a tenant id was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tenant id must be 1-64 characters of [A-Za-z0-9_-] starting with a letter or digit")]
pub struct InvalidTenantId;

impl TenantId {
    /// Parses and validates a tenant id.
    pub fn parse(raw: &str) -> Result<Self, InvalidTenantId> {
        let ok_len = !raw.is_empty() && raw.len() <= 64;
        let ok_first = raw
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric());
        let ok_chars = raw
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if ok_len && ok_first && ok_chars {
            Ok(Self(raw.to_owned()))
        } else {
            Err(InvalidTenantId)
        }
    }

    /// The tenant `default`, stamped in single-tenant mode unless configured otherwise.
    pub fn default_tenant() -> Self {
        Self("default".to_owned())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for TenantId {
    type Error = InvalidTenantId;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<TenantId> for String {
    fn from(value: TenantId) -> Self {
        value.0
    }
}

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_and_rejects() {
        assert!(TenantId::parse("default").is_ok());
        assert!(TenantId::parse("org-01_ABC").is_ok());
        assert!(TenantId::parse("").is_err());
        assert!(TenantId::parse("-x").is_err());
        assert!(TenantId::parse("a/b").is_err());
        assert!(TenantId::parse(&"a".repeat(65)).is_err());
    }
}
