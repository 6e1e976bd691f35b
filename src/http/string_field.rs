//! [`Text`]: a string field of a JSON request body that only a JSON string fills.
//!
//! poem-openapi's `String` also takes a number or a boolean (`"name": 123` becomes `"123"`),
//! which the spec does not allow and a client never means; `Text` answers 400 to them instead
//! (`TPL-0017`, "expected type string").
use poem_openapi::registry::MetaSchemaRef;
use poem_openapi::types::{ParseError, ParseFromJSON, ParseResult, ToJSON, Type};
use serde_json::Value;
use std::borrow::Cow;

/// A JSON string, and nothing else.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Text(pub String);

impl Text {
    /// The string.
    pub fn into_inner(self) -> String {
        self.0
    }
}

impl Type for Text {
    const IS_REQUIRED: bool = true;
    type RawValueType = String;
    type RawElementValueType = String;

    fn name() -> Cow<'static, str> {
        String::name()
    }

    fn schema_ref() -> MetaSchemaRef {
        String::schema_ref()
    }

    fn as_raw_value(&self) -> Option<&Self::RawValueType> {
        Some(&self.0)
    }

    fn raw_element_iter<'a>(
        &'a self,
    ) -> Box<dyn Iterator<Item = &'a Self::RawElementValueType> + 'a> {
        Box::new(self.as_raw_value().into_iter())
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl ParseFromJSON for Text {
    fn parse_from_json(value: Option<Value>) -> ParseResult<Self> {
        match value.unwrap_or_default() {
            Value::String(s) => Ok(Self(s)),
            other => Err(ParseError::expected_type(other)),
        }
    }
}

impl ToJSON for Text {
    fn to_json(&self) -> Option<Value> {
        Some(Value::String(self.0.clone()))
    }
}

impl std::ops::Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl From<String> for Text {
    fn from(s: String) -> Self {
        Self(s)
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Self {
        Self(s.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_json_string_is_text() {
        assert_eq!(
            Text::parse_from_json(Some(Value::from("a"))).ok(),
            Some(Text("a".into()))
        );
        for v in [Value::from(123), Value::from(true), serde_json::json!([])] {
            assert!(Text::parse_from_json(Some(v)).is_err());
        }
    }
}
