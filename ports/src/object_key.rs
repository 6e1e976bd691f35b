//! Object keys: the one rule every object-storage adapter applies.
use crate::StoreError;
use std::fmt;

/// A valid object key: not empty, relative, `/`-separated segments that are neither empty
/// nor `.` / `..`, and no backslash, NUL or other control character. Every
/// [`ObjectStorage`](crate::ports::ObjectStorage) adapter MUST refuse any other key (an
/// adapter may add rules of its own layout, such as the file system's reserved names).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey(String);

/// Why a string is not an [`ObjectKey`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ObjectKeyError {
    /// The empty string.
    #[error("empty")]
    Empty,
    /// Starts with `/`.
    #[error("absolute")]
    Absolute,
    /// Contains `\`.
    #[error("backslash")]
    Backslash,
    /// Contains NUL.
    #[error("NUL character")]
    Nul,
    /// Contains another control character.
    #[error("control character")]
    ControlCharacter,
    /// Two `/` in a row, or a trailing `/`.
    #[error("empty segment")]
    EmptySegment,
    /// A `.` or `..` segment.
    #[error("'.' or '..' segment")]
    DotSegment,
}

impl ObjectKey {
    /// Checks `raw` against the rules above.
    pub fn parse(raw: &str) -> Result<Self, ObjectKeyError> {
        if raw.is_empty() {
            return Err(ObjectKeyError::Empty);
        }
        if raw.starts_with('/') {
            return Err(ObjectKeyError::Absolute);
        }
        if raw.contains('\\') {
            return Err(ObjectKeyError::Backslash);
        }
        if raw.contains('\0') {
            return Err(ObjectKeyError::Nul);
        }
        if raw.chars().any(char::is_control) {
            return Err(ObjectKeyError::ControlCharacter);
        }
        for segment in raw.split('/') {
            match segment {
                "" => return Err(ObjectKeyError::EmptySegment),
                "." | ".." => return Err(ObjectKeyError::DotSegment),
                _ => {}
            }
        }
        Ok(Self(raw.to_owned()))
    }

    /// [`ObjectKey::parse`], with the refusal as the store error adapters answer:
    /// `Unavailable("invalid object key \"…\": <why>")`.
    pub fn checked(raw: &str) -> Result<Self, StoreError> {
        Self::parse(raw)
            .map_err(|why| StoreError::Unavailable(format!("invalid object key {raw:?}: {why}")))
    }

    /// True when `raw` is a valid key.
    pub fn is_valid(raw: &str) -> bool {
        Self::parse(raw).is_ok()
    }

    /// The key.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Its `/`-separated segments (none empty).
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('/')
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for ObjectKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rules() {
        for ok in [
            "a",
            "reports/t/r.pdf",
            "acme/templates/x.tpl",
            "a.b/c..d",
            ".hidden",
        ] {
            assert!(ObjectKey::is_valid(ok), "{ok}");
        }
        for (bad, why) in [
            ("", ObjectKeyError::Empty),
            ("/a", ObjectKeyError::Absolute),
            ("a\\b", ObjectKeyError::Backslash),
            ("a\0b", ObjectKeyError::Nul),
            ("a\nb", ObjectKeyError::ControlCharacter),
            ("a\u{7f}b", ObjectKeyError::ControlCharacter),
            ("a//b", ObjectKeyError::EmptySegment),
            ("a/", ObjectKeyError::EmptySegment),
            ("a/./b", ObjectKeyError::DotSegment),
            ("../a", ObjectKeyError::DotSegment),
        ] {
            assert_eq!(ObjectKey::parse(bad), Err(why), "{bad:?}");
        }
    }

    #[test]
    fn the_store_error_names_the_key_and_the_reason() {
        let e = ObjectKey::checked("a//b").unwrap_err();
        assert_eq!(
            e,
            StoreError::Unavailable("invalid object key \"a//b\": empty segment".into())
        );
        assert_eq!(ObjectKey::checked("x/y").unwrap().segments().count(), 2);
    }
}
