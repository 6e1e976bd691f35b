//! The CRM's field encryption (lib-commons' "legacy" format) and search hashes.
use aes_gcm::aead::consts::U12;
use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::aes::Aes192;
use aes_gcm::{Aes128Gcm, Aes256Gcm, AesGcm, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use reporter_ports::ports::DecryptionError;
use sha2::Sha256;

/// Bytes of the nonce that opens every value.
const NONCE_BYTES: usize = 12;
/// Bytes of the GCM tag that closes every value.
const TAG_BYTES: usize = 16;
/// The prefix of the CRM's newer per-organization envelope, which this version does not read.
const TINK_PREFIX: &str = "tink:";

/// An AES-GCM key of one of the three sizes.
#[derive(Clone)]
enum Cipher {
    Aes128(Box<Aes128Gcm>),
    Aes192(Box<AesGcm<Aes192, U12>>),
    Aes256(Box<Aes256Gcm>),
}

/// A configured key has the wrong size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("an AES key is 16, 24 or 32 bytes (32, 48 or 64 hex digits), not {0} bytes")]
pub struct KeyLengthError(pub usize);

/// The CRM's keys. Its `Debug` never shows them.
#[derive(Clone, Default)]
pub(crate) struct CrmKeys {
    cipher: Option<Cipher>,
    hash_key: Option<Vec<u8>>,
}

impl std::fmt::Debug for CrmKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrmKeys")
            .field("encrypt_key", &self.cipher.as_ref().map(|_| "[redacted]"))
            .field("hash_key", &self.hash_key.as_ref().map(|_| "[redacted]"))
            .finish()
    }
}

impl CrmKeys {
    /// The keys: the AES key's bytes (16, 24 or 32) and the HMAC key's bytes.
    pub(crate) fn new(
        encrypt_key: Option<&[u8]>,
        hash_key: Option<&[u8]>,
    ) -> Result<Self, KeyLengthError> {
        let cipher = match encrypt_key {
            None => None,
            Some(k) => Some(match k.len() {
                16 => Cipher::Aes128(Box::new(
                    Aes128Gcm::new_from_slice(k).map_err(|_| KeyLengthError(k.len()))?,
                )),
                24 => Cipher::Aes192(Box::new(
                    AesGcm::<Aes192, U12>::new_from_slice(k)
                        .map_err(|_| KeyLengthError(k.len()))?,
                )),
                32 => Cipher::Aes256(Box::new(
                    Aes256Gcm::new_from_slice(k).map_err(|_| KeyLengthError(k.len()))?,
                )),
                other => return Err(KeyLengthError(other)),
            }),
        };
        Ok(Self {
            cipher,
            hash_key: hash_key.map(<[u8]>::to_vec),
        })
    }

    /// True when the encryption key is configured.
    pub(crate) fn can_decrypt(&self) -> bool {
        self.cipher.is_some()
    }

    /// True when the hash key is configured.
    pub(crate) fn can_hash(&self) -> bool {
        self.hash_key.is_some()
    }

    /// The plaintext of one stored value: standard base64 (with padding) of
    /// `nonce (12) ‖ ciphertext ‖ tag (16)`, AES-GCM without associated data.
    ///
    /// MUST answer `UnsupportedFormat` for a `tink:` envelope, `KeyMissing` without the
    /// key, `Malformed` for text that is not that base64, shorter than a nonce and a tag, or
    /// whose plaintext is not UTF-8, and `Failed` when the tag does not verify (a wrong key or
    /// an altered value). The errors never carry the value.
    pub(crate) fn decrypt(&self, stored: &str) -> Result<String, DecryptionError> {
        if stored.starts_with(TINK_PREFIX) {
            return Err(DecryptionError::UnsupportedFormat);
        }
        let cipher = self.cipher.as_ref().ok_or(DecryptionError::KeyMissing)?;
        let raw = STANDARD
            .decode(stored)
            .map_err(|_| DecryptionError::Malformed)?;
        if raw.len() < NONCE_BYTES + TAG_BYTES {
            return Err(DecryptionError::Malformed);
        }
        let (nonce, sealed) = raw.split_at(NONCE_BYTES);
        let nonce = Nonce::<U12>::from_slice(nonce);
        let plain = match cipher {
            Cipher::Aes128(c) => c.decrypt(nonce, sealed),
            Cipher::Aes192(c) => c.decrypt(nonce, sealed),
            Cipher::Aes256(c) => c.decrypt(nonce, sealed),
        }
        .map_err(|_| DecryptionError::Failed)?;
        String::from_utf8(plain).map_err(|_| DecryptionError::Malformed)
    }

    /// The search hash of `plain`: HMAC-SHA256 keyed with the hash secret's raw bytes, in
    /// lower-case hex (64 digits). `KeyMissing` without the hash key.
    pub(crate) fn search_hash(&self, plain: &str) -> Result<String, DecryptionError> {
        let key = self.hash_key.as_ref().ok_or(DecryptionError::KeyMissing)?;
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(key).map_err(|_| DecryptionError::KeyMissing)?;
        mac.update(plain.as_bytes());
        Ok(hex::encode(mac.finalize().into_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Values below were written by Python's `cryptography` (tests/fixtures/crm/make_fixtures.py),
    // not by this module.
    fn fixture() -> serde_json::Value {
        serde_json::from_str(include_str!("../../../../tests/fixtures/crm/crm.json"))
            .expect("fixture")
    }

    fn keys(f: &serde_json::Value, which: &str) -> CrmKeys {
        let k = hex::decode(f[which].as_str().expect("key")).expect("hex");
        let h = f["hash_key"]
            .as_str()
            .expect("hash key")
            .as_bytes()
            .to_vec();
        CrmKeys::new(Some(&k), Some(&h)).expect("keys")
    }

    #[test]
    fn decrypts_what_an_independent_implementation_encrypted() {
        let f = fixture();
        let k = keys(&f, "encrypt_key_hex");
        let org = f["organizations"][0].as_str().expect("org");
        let stored = &f["collections"][format!("holders_{org}")][0];
        let plain = &f["expected"][format!("holders_{org}")][0];
        assert_eq!(
            k.decrypt(stored["document"].as_str().expect("document")),
            Ok(plain["document"].as_str().expect("plain").to_owned())
        );
        assert_eq!(
            k.search_hash("12345678900").expect("hash"),
            f["hashes"]["12345678900"].as_str().expect("hash")
        );
    }

    #[test]
    fn each_failure_has_its_reason() {
        let f = fixture();
        let k = keys(&f, "encrypt_key_hex");
        let bad = &f["bad_values"];
        let at = |n: &str| bad[n].as_str().expect("value").to_owned();
        assert_eq!(k.decrypt(&at("altered")), Err(DecryptionError::Failed));
        assert_eq!(
            k.decrypt(&at("not_base64")),
            Err(DecryptionError::Malformed)
        );
        assert_eq!(k.decrypt(&at("too_short")), Err(DecryptionError::Malformed));
        assert_eq!(
            k.decrypt(&at("tink")),
            Err(DecryptionError::UnsupportedFormat)
        );
        let wrong = keys(&f, "wrong_encrypt_key_hex");
        let org = f["organizations"][0].as_str().expect("org");
        let stored = f["collections"][format!("holders_{org}")][0]["document"]
            .as_str()
            .expect("document")
            .to_owned();
        assert_eq!(wrong.decrypt(&stored), Err(DecryptionError::Failed));
        let none = CrmKeys::new(None, None).expect("no keys");
        assert_eq!(none.decrypt(&stored), Err(DecryptionError::KeyMissing));
        assert_eq!(none.search_hash("x"), Err(DecryptionError::KeyMissing));
    }

    #[test]
    fn key_sizes() {
        for n in [16, 24, 32] {
            assert!(CrmKeys::new(Some(&vec![7u8; n]), None).is_ok(), "{n}");
        }
        for n in [0, 15, 31, 33] {
            assert_eq!(
                CrmKeys::new(Some(&vec![7u8; n]), None).err(),
                Some(KeyLengthError(n))
            );
        }
        let k = CrmKeys::new(Some(&[1u8; 16]), Some(b"secret")).expect("keys");
        let shown = format!("{k:?}");
        assert!(
            !shown.contains("secret") && !shown.contains("1, 1"),
            "{shown}"
        );
    }
}
