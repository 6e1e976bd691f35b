//! [`Secret`]: the one type of every password, key, token and credential-bearing URI.
//!
//! Built on the `secrecy` crate (the value lives in a `SecretBox<str>`, wiped with `zeroize`
//! when dropped); this newtype adds what configuration structs need: `Clone`, `PartialEq`,
//! parsing from an environment variable, and a `Debug`/`Display` that never show the value.

use secrecy::{ExposeSecret, SecretString};
use std::fmt;
use zeroize::{Zeroize, ZeroizeOnDrop};

/// What `Debug` and `Display` print instead of a secret.
pub const REDACTED: &str = "[REDACTED]";

/// A secret string (password, key, token, or a URI that may hold a password).
///
/// Contracts:
/// - `Debug` and `Display` print [`REDACTED`], never the value (nor its length);
/// - the value is zeroed in memory when the `Secret` is dropped (and by [`Zeroize::zeroize`]);
///   a `String` it is made from is zeroed too, so no copy is left behind by the conversion;
/// - the value is reached only through [`Secret::expose`], so every use is visible in review.
#[derive(Clone)]
pub struct Secret(SecretString);

impl Secret {
    /// Wraps `value`, zeroing the `String`'s buffer (its whole capacity) once copied.
    pub fn new(mut value: String) -> Self {
        let secret = Self(SecretString::from(value.as_str()));
        value.zeroize();
        secret
    }

    /// The value. Callers MUST NOT log or format it; pass it to the driver that needs it.
    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }

    /// True when the value is empty or only whitespace.
    pub fn is_blank(&self) -> bool {
        self.expose().trim().is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// Compares the values (configuration equality in tests; not constant-time, so not for
/// checking a credential a client sent).
impl PartialEq for Secret {
    fn eq(&self, other: &Self) -> bool {
        self.expose() == other.expose()
    }
}

impl Eq for Secret {}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self::new(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self(SecretString::from(value))
    }
}

/// Parsing never fails (clap reads environment variables into a `Secret` through it).
impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Self::from(s))
    }
}

impl Zeroize for Secret {
    fn zeroize(&mut self) {
        self.0.zeroize();
    }
}

/// The inner `SecretBox` zeroes the value in its `Drop`.
impl ZeroizeOnDrop for Secret {}

#[cfg(test)]
mod tests {
    use super::*;

    const VALUE: &str = "SECRET-unit-4d2f9a";

    #[test]
    fn debug_and_display_never_show_the_value() {
        let s = Secret::from(VALUE);
        for shown in [
            format!("{s:?}"),
            format!("{s:#?}"),
            format!("{s}"),
            format!("{:?}", Some(s.clone())),
            format!("{:?}", vec![s.clone()]),
        ] {
            assert!(!shown.contains(VALUE), "{shown}");
            assert!(shown.contains(REDACTED), "{shown}");
        }
        assert_eq!(s.expose(), VALUE);
    }

    #[test]
    fn equality_clone_and_parsing_keep_the_value() {
        let s: Secret = VALUE
            .parse()
            .unwrap_or_else(|e: std::convert::Infallible| match e {});
        assert_eq!(s, Secret::new(VALUE.to_owned()));
        assert_eq!(s.clone().expose(), VALUE);
        assert_ne!(s, Secret::from("other"));
        assert!(Secret::from("  ").is_blank());
        assert!(!s.is_blank());
    }

    #[test]
    fn zeroize_wipes_the_value_in_place() {
        let mut s = Secret::from(VALUE);
        let before = s.expose().as_ptr();
        s.zeroize();
        // Same buffer, every byte zero: the drop glue runs exactly this.
        assert_eq!(s.expose().as_ptr(), before);
        assert!(s.expose().bytes().all(|b| b == 0), "{:?}", s.expose());
        assert_eq!(s.expose().len(), VALUE.len());
    }

    #[test]
    fn is_zeroized_on_drop() {
        fn zeroize_on_drop<T: ZeroizeOnDrop>() {}
        zeroize_on_drop::<Secret>();
        zeroize_on_drop::<secrecy::SecretString>();
    }
}
