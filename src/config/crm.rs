//! The Midaz CRM source's keys and organization: `CRYPTO_ENCRYPT_SECRET_KEY_CRM`,
//! `CRYPTO_HASH_SECRET_KEY_CRM` (or the original's older `…_PLUGIN_CRM` names) and
//! `DATASOURCE_<NAME>_MIDAZ_ORGANIZATION_ID`.
use super::{ConfigProblem, problem};

/// The two spellings of the AES key's variable (JUN / app 3.x, then FEB).
pub const ENCRYPT_KEY_VARS: [&str; 2] = [
    "CRYPTO_ENCRYPT_SECRET_KEY_CRM",
    "CRYPTO_ENCRYPT_SECRET_KEY_PLUGIN_CRM",
];
/// The two spellings of the HMAC key's variable.
pub const HASH_KEY_VARS: [&str; 2] = [
    "CRYPTO_HASH_SECRET_KEY_CRM",
    "CRYPTO_HASH_SECRET_KEY_PLUGIN_CRM",
];

/// How the CRM source (a MongoDB source whose id is `plugin_crm` or `crm`) reads its data.
/// Its `Debug` never shows a key.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct CrmSpec {
    /// The AES key (hex-decoded: 16, 24 or 32 bytes).
    pub encrypt_key: Option<Vec<u8>>,
    /// The HMAC key: the raw bytes of the variable's text.
    pub hash_key: Option<Vec<u8>>,
    /// The one organization to read (`_MIDAZ_ORGANIZATION_ID`); `None`: every organization.
    pub organization_id: Option<String>,
}

impl std::fmt::Debug for CrmSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = |k: &Option<Vec<u8>>| k.as_ref().map(|_| "[redacted]");
        f.debug_struct("CrmSpec")
            .field("encrypt_key", &shown(&self.encrypt_key))
            .field("hash_key", &shown(&self.hash_key))
            .field("organization_id", &self.organization_id)
            .finish()
    }
}

/// The value of one of `names` in `env` (non-empty); both set to different values is a
/// problem naming both.
fn either<'a>(
    env: &'a [(String, String)],
    names: [&str; 2],
    problems: &mut Vec<ConfigProblem>,
) -> Option<(&'a str, &'a str)> {
    let get = |n: &str| {
        env.iter()
            .find(|(k, v)| k == n && !v.trim().is_empty())
            .map(|(k, v)| (k.as_str(), v.as_str()))
    };
    match (get(names[0]), get(names[1])) {
        (Some(a), Some(b)) if a.1 != b.1 => {
            problems.push(problem(
                names[1],
                format!("differs from {}", names[0]),
                "set one of the two names (the other is the original's older spelling), or both to the same key",
            ));
            Some(a)
        }
        (Some(a), _) => Some(a),
        (None, b) => b,
    }
}

/// The CRM's keys from `env`, each under either of its names, with the organization
/// `organization_id`. MUST refuse an AES key that is not hex of 16, 24 or 32 bytes, without
/// repeating it.
pub(super) fn crm_spec(
    env: &[(String, String)],
    organization_id: Option<String>,
    problems: &mut Vec<ConfigProblem>,
) -> CrmSpec {
    let encrypt_key = either(env, ENCRYPT_KEY_VARS, problems).and_then(|(var, hex_key)| {
        match hex::decode(hex_key.trim()) {
            Ok(k) if matches!(k.len(), 16 | 24 | 32) => Some(k),
            Ok(k) => {
                problems.push(problem(
                    var,
                    format!("the key is {} bytes", k.len()),
                    "hex of a 16, 24 or 32-byte AES key (32, 48 or 64 hex digits)",
                ));
                None
            }
            Err(_) => {
                problems.push(problem(
                    var,
                    "not hex",
                    "hex of a 16, 24 or 32-byte AES key (32, 48 or 64 hex digits)",
                ));
                None
            }
        }
    });
    let hash_key = either(env, HASH_KEY_VARS, problems).map(|(_, text)| text.as_bytes().to_vec());
    CrmSpec {
        encrypt_key,
        hash_key,
        organization_id,
    }
}
