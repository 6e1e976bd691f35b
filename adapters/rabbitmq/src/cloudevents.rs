//! CloudEvents over AMQP 0-9-1 (RabbitMQ): a binding for `cloudevents-sdk` 0.9, which ships none.
//!
//! # Dialect
//! Reporter **writes** binary-mode CloudEvents with the `ce-` header prefix (the dialect of
//! lib-streaming and of the consumers Reporter stays compatible with). This is a project
//! convention, not the AMQP 1.0 binding's `cloudEvents_` prefix:
//!
//! * every context attribute and extension except `datacontenttype` becomes a `ce-<name>`
//!   header whose value is an AMQP `LongString` (booleans and integers of SDK-built events
//!   become AMQP `Boolean` / `LongLongInt`);
//! * `time` is written as RFC 3339 UTC with **millisecond** precision and a `Z` suffix (never
//!   an AMQP timestamp, which would drop sub-second precision);
//! * `datacontenttype` goes into the AMQP `content_type` property, never into a header;
//! * the body is the event data, verbatim.
//!
//! Structured mode writes the JSON event format with content type
//! `application/cloudevents+json`.
//!
//! **Reading** accepts the `ce-`, `cloudEvents_` and `cloudEvents:` prefixes, takes
//! `datacontenttype` from the `content_type` property before any header, and picks structured
//! mode from an `application/cloudevents` content type.
use ::cloudevents::event::SpecVersion;
use ::cloudevents::message::{
    BinaryDeserializer, BinarySerializer, Encoding, Error as MessageError, MessageAttributeValue,
    MessageDeserializer, Result as MessageResult, StructuredDeserializer, StructuredSerializer,
};
use ::cloudevents::{Event, EventBuilder, EventBuilderV10};
use chrono::{DateTime, SecondsFormat, Utc};
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use reporter_ports::events::{
    CE_SOURCE, CE_SPECVERSION, EventEnvelope, SCHEMA_VERSION, sequence_text,
};

/// The prefix Reporter writes on every CloudEvents header.
pub const HEADER_PREFIX: &str = "ce-";
/// Header prefixes accepted on read, in lookup order.
pub const ACCEPTED_PREFIXES: [&str; 3] = ["ce-", "cloudEvents_", "cloudEvents:"];
/// Content type of a structured-mode (JSON event format) message.
pub const STRUCTURED_CONTENT_TYPE: &str = "application/cloudevents+json";
/// Content type of every Reporter payload (the AMQP `content_type` property).
pub const JSON_CONTENT_TYPE: &str = "application/json";

/// One CloudEvent as the parts of an AMQP 0-9-1 message: the header table, the `content_type`
/// property and the body. Publishers copy `headers` and `content_type` into
/// [`lapin::BasicProperties`]; consumers build it with [`AmqpMessage::from_parts`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AmqpMessage {
    /// The `ce-*` headers (or, when read, whatever headers the message had).
    pub headers: FieldTable,
    /// The AMQP `content_type` property (`datacontenttype` in binary mode).
    pub content_type: Option<String>,
    /// The message body.
    pub body: Vec<u8>,
}

impl AmqpMessage {
    /// A message read off the wire.
    pub fn from_parts(
        headers: Option<FieldTable>,
        content_type: Option<String>,
        body: Vec<u8>,
    ) -> Self {
        Self {
            headers: headers.unwrap_or_default(),
            content_type,
            body,
        }
    }

    /// Encodes `event` in binary mode (`ce-` headers).
    pub fn from_event(event: Event) -> MessageResult<Self> {
        BinaryDeserializer::deserialize_binary(event, Self::default())
    }

    /// Encodes `event` in structured mode (`application/cloudevents+json`, no headers).
    pub fn from_event_structured(event: Event) -> MessageResult<Self> {
        StructuredDeserializer::deserialize_structured(event, Self::default())
    }

    /// Reads a header, accepting every prefix of [`ACCEPTED_PREFIXES`]; `name` has no prefix.
    pub fn ce_header(&self, name: &str) -> Option<&AMQPValue> {
        ACCEPTED_PREFIXES.iter().find_map(|p| {
            let key = format!("{p}{name}");
            self.headers.inner().get(key.as_str())
        })
    }

    /// Every CloudEvents header (any accepted prefix) as text, keyed by its name on the wire.
    pub fn ce_headers_as_text(&self) -> std::collections::BTreeMap<String, String> {
        self.headers
            .inner()
            .iter()
            .filter(|(k, _)| strip_prefix(k.as_str()).is_some())
            .map(|(k, v)| (k.as_str().to_owned(), value_as_text(v)))
            .collect()
    }

    fn put(&mut self, name: &str, value: AMQPValue) -> MessageResult<()> {
        let key = ShortString::try_new(format!("{HEADER_PREFIX}{name}")).map_err(other)?;
        self.headers.insert(key, value);
        Ok(())
    }

    fn put_attribute(&mut self, name: &str, value: MessageAttributeValue) -> MessageResult<()> {
        match (name, value) {
            ("datacontenttype", v) => {
                self.content_type = Some(v.to_string());
                Ok(())
            }
            (_, MessageAttributeValue::Boolean(b)) => self.put(name, AMQPValue::Boolean(b)),
            (_, MessageAttributeValue::Integer(i)) => self.put(name, AMQPValue::LongLongInt(i)),
            (_, MessageAttributeValue::DateTime(t)) => self.put(name, long_string(format_time(&t))),
            (_, v) => self.put(name, long_string(v.to_string())),
        }
    }
}

/// `ce-time` text: RFC 3339, UTC, milliseconds, `Z` (e.g. `2030-01-01T00:00:00.000Z`).
pub fn format_time(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn long_string(s: String) -> AMQPValue {
    AMQPValue::LongString(LongString::from(s))
}

fn other<E: std::error::Error + Send + Sync + 'static>(e: E) -> MessageError {
    MessageError::Other {
        source: Box::new(e),
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct BindingError(String);

/// The attribute name of a CloudEvents header, or `None` when `key` is not one.
fn strip_prefix(key: &str) -> Option<&str> {
    ACCEPTED_PREFIXES
        .iter()
        .find_map(|p| key.strip_prefix(p))
        .filter(|n| !n.is_empty())
}

/// A header value as text (strings verbatim, numbers and booleans in decimal, byte arrays lossy).
pub fn value_as_text(v: &AMQPValue) -> String {
    match v {
        AMQPValue::LongString(s) => String::from_utf8_lossy(s.as_bytes()).into_owned(),
        AMQPValue::ShortString(s) => s.as_str().to_owned(),
        AMQPValue::Boolean(b) => b.to_string(),
        AMQPValue::ShortShortInt(i) => i.to_string(),
        AMQPValue::ShortShortUInt(i) => i.to_string(),
        AMQPValue::ShortInt(i) => i.to_string(),
        AMQPValue::ShortUInt(i) => i.to_string(),
        AMQPValue::LongInt(i) => i.to_string(),
        AMQPValue::LongUInt(i) => i.to_string(),
        AMQPValue::LongLongInt(i) => i.to_string(),
        AMQPValue::Timestamp(t) => t.to_string(),
        AMQPValue::ByteArray(b) => String::from_utf8_lossy(b.as_slice()).into_owned(),
        other => format!("{other:?}"),
    }
}

/// Converts a header value into a CloudEvents attribute value.
fn attribute_value(v: &AMQPValue) -> MessageResult<MessageAttributeValue> {
    Ok(match v {
        AMQPValue::LongString(s) => {
            MessageAttributeValue::String(String::from_utf8(s.as_bytes().to_vec()).map_err(other)?)
        }
        AMQPValue::ShortString(s) => MessageAttributeValue::String(s.as_str().to_owned()),
        AMQPValue::Boolean(b) => MessageAttributeValue::Boolean(*b),
        AMQPValue::ShortShortInt(i) => MessageAttributeValue::Integer((*i).into()),
        AMQPValue::ShortShortUInt(i) => MessageAttributeValue::Integer((*i).into()),
        AMQPValue::ShortInt(i) => MessageAttributeValue::Integer((*i).into()),
        AMQPValue::ShortUInt(i) => MessageAttributeValue::Integer((*i).into()),
        AMQPValue::LongInt(i) => MessageAttributeValue::Integer((*i).into()),
        AMQPValue::LongUInt(i) => MessageAttributeValue::Integer((*i).into()),
        AMQPValue::LongLongInt(i) => MessageAttributeValue::Integer(*i),
        AMQPValue::Timestamp(t) => {
            let secs = i64::try_from(*t).map_err(other)?;
            let t = DateTime::<Utc>::from_timestamp(secs, 0)
                .ok_or_else(|| other(BindingError(format!("timestamp out of range: {secs}"))))?;
            MessageAttributeValue::DateTime(t)
        }
        AMQPValue::ByteArray(b) => MessageAttributeValue::Binary(b.as_slice().to_vec()),
        other_value => {
            return Err(other(BindingError(format!(
                "unsupported CloudEvents header value: {other_value:?}"
            ))));
        }
    })
}

impl BinarySerializer<AmqpMessage> for AmqpMessage {
    fn set_spec_version(mut self, spec_version: SpecVersion) -> MessageResult<Self> {
        self.put("specversion", long_string(spec_version.to_string()))?;
        Ok(self)
    }

    fn set_attribute(mut self, name: &str, value: MessageAttributeValue) -> MessageResult<Self> {
        self.put_attribute(name, value)?;
        Ok(self)
    }

    fn set_extension(mut self, name: &str, value: MessageAttributeValue) -> MessageResult<Self> {
        self.put_attribute(name, value)?;
        Ok(self)
    }

    fn end_with_data(mut self, bytes: Vec<u8>) -> MessageResult<AmqpMessage> {
        self.body = bytes;
        Ok(self)
    }

    fn end(self) -> MessageResult<AmqpMessage> {
        Ok(self)
    }
}

impl StructuredSerializer<AmqpMessage> for AmqpMessage {
    fn set_structured_event(mut self, bytes: Vec<u8>) -> MessageResult<AmqpMessage> {
        self.content_type = Some(STRUCTURED_CONTENT_TYPE.to_owned());
        self.body = bytes;
        Ok(self)
    }
}

impl BinaryDeserializer for AmqpMessage {
    fn deserialize_binary<R: Sized, V: BinarySerializer<R>>(
        self,
        serializer: V,
    ) -> MessageResult<R> {
        if self.encoding() != Encoding::BINARY {
            return Err(MessageError::WrongEncoding {});
        }
        let spec_version = match self.ce_header("specversion") {
            Some(v) => SpecVersion::try_from(value_as_text(v).as_str())?,
            None => return Err(MessageError::WrongEncoding {}),
        };
        let attributes = spec_version.attribute_names();
        let mut visitor = serializer.set_spec_version(spec_version)?;
        let has_content_type = self.content_type.is_some();
        if let Some(ct) = self.content_type {
            visitor =
                visitor.set_attribute("datacontenttype", MessageAttributeValue::String(ct))?;
        }
        for (key, value) in self.headers.inner() {
            let Some(name) = strip_prefix(key.as_str()) else {
                continue;
            };
            if name == "specversion" || (name == "datacontenttype" && has_content_type) {
                continue;
            }
            let value = attribute_value(value)?;
            visitor = if attributes.contains(&name) {
                visitor.set_attribute(name, value)?
            } else {
                visitor.set_extension(name, value)?
            };
        }
        if self.body.is_empty() {
            visitor.end()
        } else {
            visitor.end_with_data(self.body)
        }
    }
}

impl StructuredDeserializer for AmqpMessage {
    fn deserialize_structured<R: Sized, V: StructuredSerializer<R>>(
        self,
        serializer: V,
    ) -> MessageResult<R> {
        if self.encoding() != Encoding::STRUCTURED {
            return Err(MessageError::WrongEncoding {});
        }
        serializer.set_structured_event(self.body)
    }
}

impl MessageDeserializer for AmqpMessage {
    /// Structured for an `application/cloudevents+json` content type; binary when a
    /// `specversion` header exists under an accepted prefix; unknown otherwise (batches too).
    fn encoding(&self) -> Encoding {
        match self.content_type.as_deref() {
            Some(ct) if ct.starts_with(STRUCTURED_CONTENT_TYPE) => Encoding::STRUCTURED,
            Some(ct) if ct.starts_with("application/cloudevents") => Encoding::UNKNOWN,
            _ if self.ce_header("specversion").is_some() => Encoding::BINARY,
            _ => Encoding::UNKNOWN,
        }
    }
}

/// The CloudEvent of an envelope: `id` = envelope id, `source` = `reporter`, `type` =
/// `key.ce_type()`, `time`, `subject`, extensions `resourcetype`, `eventtype`,
/// `schemaversion` = `1.0.0` and `tenantid` (always), `sequence` (when the envelope has one),
/// data = the JSON payload (`application/json`).
pub fn envelope_to_event(
    e: &EventEnvelope,
) -> Result<Event, ::cloudevents::event::EventBuilderError> {
    let builder = match e.sequence {
        Some(s) => EventBuilderV10::new().extension("sequence", sequence_text(s)),
        None => EventBuilderV10::new(),
    };
    builder
        .id(e.id.clone())
        .source(CE_SOURCE)
        .ty(e.key.ce_type())
        .time(e.time)
        .subject(e.subject.clone())
        .extension("resourcetype", e.key.resource_type())
        .extension("eventtype", e.key.event_type())
        .extension("schemaversion", SCHEMA_VERSION)
        .extension("tenantid", e.tenant.as_str())
        .data(JSON_CONTENT_TYPE, e.payload.value())
        .build()
}

/// The AMQP message of an envelope, in Reporter's dialect. Exactly the seed's ten headers, all
/// `LongString`: `ce-specversion` (`1.0`), `ce-id`, `ce-source` (`reporter`), `ce-type`,
/// `ce-time` (RFC 3339, millis, `Z`), `ce-subject`, `ce-resourcetype`, `ce-eventtype`,
/// `ce-schemaversion` (`1.0.0`), `ce-tenantid`, plus `ce-sequence` (the resource's version,
/// 20 zero-padded digits) when the envelope has one; `content_type` = `application/json`;
/// body = the payload's JSON bytes. Equivalent to encoding [`envelope_to_event`] with
/// [`AmqpMessage::from_event`], without the fallible builder.
pub fn envelope_to_message(e: &EventEnvelope) -> AmqpMessage {
    AmqpMessage {
        headers: envelope_headers(e),
        content_type: Some(JSON_CONTENT_TYPE.to_owned()),
        body: e.payload.as_bytes().to_vec(),
    }
}

/// The `ce-*` header table of [`envelope_to_message`] (a publisher sends the payload's bytes
/// as the body without copying them into a message first).
pub fn envelope_headers(e: &EventEnvelope) -> FieldTable {
    let mut headers = FieldTable::default();
    let mut put = |name: &'static str, value: String| {
        headers.insert(ShortString::from(name), long_string(value));
    };
    put("ce-specversion", CE_SPECVERSION.to_owned());
    put("ce-id", e.id.clone());
    put("ce-source", CE_SOURCE.to_owned());
    put("ce-type", e.key.ce_type());
    put("ce-time", format_time(&e.time));
    put("ce-subject", e.subject.clone());
    put("ce-resourcetype", e.key.resource_type().to_owned());
    put("ce-eventtype", e.key.event_type().to_owned());
    put("ce-schemaversion", SCHEMA_VERSION.to_owned());
    put("ce-tenantid", e.tenant.as_str().to_owned());
    if let Some(s) = e.sequence {
        put("ce-sequence", sequence_text(s));
    }
    // Trace context is not a CloudEvents attribute: lib-streaming sends it as plain transport
    // headers, lower-case, after the `ce-*` ones.
    if let Some(t) = &e.trace {
        put("traceparent", t.traceparent().to_owned());
        if let Some(ts) = t.tracestate() {
            put("tracestate", ts.to_owned());
        }
    }
    headers
}
