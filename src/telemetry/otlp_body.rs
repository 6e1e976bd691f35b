//! The OTLP protobuf body of a batch of spans (`ExportTraceServiceRequest`), written straight
//! from the SDK's [`SpanData`] into one buffer with prost's wire primitives. The stock OTLP
//! exporter first copies every span into the generated message types (a `Vec` per id, a
//! `String` per name, attribute key and string value) and frees them after encoding: per span,
//! that was most of the export's CPU (issue 32: telemetry's cost per request). The bytes are
//! the same message: `tests` decodes them with the generated types and compares them with the
//! stock conversion. Over OTLP/HTTP the service writes each span on the thread that ends it
//! ([`encode_span`], [`put_encoded_span`]) and the request around the pending spans' bytes
//! later ([`export_request_encoded`], see `encoding_processor`); [`export_request`] writes the
//! same bytes from whole spans (the reference the processor's tests compare with).
//!
//! Layout (field numbers of opentelemetry-proto's `trace.proto`, `common.proto`,
//! `resource.proto`): one `ResourceSpans` (the process's resource) holding one `ScopeSpans` per
//! instrumentation scope, in order of first appearance. As prost does, a proto3 field holding
//! its default value is left out, except a `oneof` member and a present sub-message.
use opentelemetry::trace::{Event, Link, SpanContext, SpanId, SpanKind, Status, TraceState};
use opentelemetry::{Array, InstrumentationScope, KeyValue, StringValue, Value};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SpanData;
use prost::encoding::{WireType, encoded_len_varint, key_len};
use std::borrow::Cow;
use std::time::{SystemTime, UNIX_EPOCH};

/// The encoded `Resource` message of the process, written once (see [`resource`]).
#[derive(Debug, Default, Clone)]
pub struct EncodedResource {
    message: Vec<u8>,
    schema_url: String,
}

/// `resource` as the `ResourceSpans.resource` message, encoded once for every export.
pub fn resource(resource: &Resource) -> EncodedResource {
    let mut message = Vec::new();
    for (k, v) in resource.iter() {
        put_key_value(1, k.as_str(), v, &mut message);
    }
    EncodedResource {
        message,
        schema_url: resource.schema_url().unwrap_or_default().to_owned(),
    }
}

/// The `ExportTraceServiceRequest` of `spans`, grouped by instrumentation scope in order of
/// first appearance. Empty spans give an empty request.
pub fn export_request(spans: &[SpanData], resource: &EncodedResource) -> Vec<u8> {
    let mut message = Vec::new();
    let fields: Vec<(&InstrumentationScope, Vec<u8>)> = scopes(spans)
        .into_iter()
        .map(|scope| {
            let mut fields = Vec::new();
            for span in spans.iter().filter(|s| s.instrumentation_scope == *scope) {
                encode_span(&SpanView::of_data(span), &mut message);
                put_encoded_span(&message, &mut fields);
            }
            (scope, fields)
        })
        .collect();
    let parts: Vec<(&InstrumentationScope, &[u8])> = fields
        .iter()
        .map(|(scope, f)| (*scope, f.as_slice()))
        .collect();
    export_request_encoded(&parts, resource)
}

/// One ended span as the encoder reads it, borrowed from the SDK's [`SpanData`]
/// ([`SpanView::of_data`]) or from the service's own record of it
/// ([`SpanRecord::view`](super::span_record::SpanRecord::view)), so that a span the service
/// recorded is written without first being moved into a `SpanData`.
#[derive(Debug, Clone, Copy)]
pub struct SpanView<'a> {
    /// Its ids, trace flags and trace state.
    pub context: &'a SpanContext,
    /// Its parent's span id (`SpanId::INVALID` for a root).
    pub parent: SpanId,
    /// The parent came from another process.
    pub parent_is_remote: bool,
    /// Server, client, producer, consumer or internal.
    pub kind: &'a SpanKind,
    /// The span's name.
    pub name: &'a str,
    /// When it started and ended.
    pub start: SystemTime,
    pub end: SystemTime,
    /// The first attributes kept, already encoded as `Span.attributes` fields
    /// ([`put_span_attribute`]), in order: a route's fixed attributes (see
    /// [`FixedAttributes`](super::fixed_attributes::FixedAttributes)), then the span's own
    /// recorded encoded (see [`EncodedAttributes`](super::encoded_attributes::EncodedAttributes)).
    pub encoded_attributes: [&'a [u8]; 2],
    /// The other attributes kept, and how many were dropped past the limit.
    pub attributes: &'a [KeyValue],
    pub dropped_attributes: u32,
    /// Its events, and how many were dropped.
    pub events: &'a [Event],
    pub dropped_events: u32,
    /// Its links, and how many were dropped.
    pub links: &'a [Link],
    pub dropped_links: u32,
    /// Unset, Ok or Error.
    pub status: &'a Status,
}

impl<'a> SpanView<'a> {
    /// The SDK's ended span as the encoder reads it.
    pub fn of_data(span: &'a SpanData) -> Self {
        Self {
            context: &span.span_context,
            parent: span.parent_span_id,
            parent_is_remote: span.parent_span_is_remote,
            kind: &span.span_kind,
            name: &span.name,
            start: span.start_time,
            end: span.end_time,
            encoded_attributes: [&[], &[]],
            attributes: &span.attributes,
            dropped_attributes: span.dropped_attributes_count,
            events: &span.events.events,
            dropped_events: span.events.dropped_count,
            links: &span.links.links,
            dropped_links: span.links.dropped_count,
            status: &span.status,
        }
    }
}

/// Writes `span` as one `Span` message (no key, no length) into `scratch`, cleared first: the
/// encoding [`crate::telemetry::encoding_processor`] does on the thread that ended the span.
/// The trace state's header is spelled once (it is the only part that may allocate).
pub fn encode_span(span: &SpanView<'_>, scratch: &mut Vec<u8>) {
    scratch.clear();
    put_span(span, scratch);
}

/// Appends one encoded `Span` message (from [`encode_span`]) to `out` as a `ScopeSpans.spans`
/// field: key, length, message.
pub fn put_encoded_span(message: &[u8], out: &mut Vec<u8>) {
    put_len(2, message.len(), out);
    out.extend_from_slice(message);
}

/// How many whole `ScopeSpans.spans` fields (written by [`put_encoded_span`]) open `fields`,
/// at most `max`, and the bytes they take. Bytes that are not such fields end the count.
pub fn leading_spans(fields: &[u8], max: usize) -> (usize, usize) {
    leading_fields(fields, 2, max)
}

/// How many whole `Span.attributes` fields (written by [`put_span_attribute`],
/// [`put_text_attribute`] or [`put_scalar_attribute`]) open `fields`, at most `max`, and the
/// bytes they take. Bytes that are not such fields end the count.
pub fn leading_attributes(fields: &[u8], max: usize) -> (usize, usize) {
    leading_fields(fields, 9, max)
}

/// How many whole length-delimited fields numbered `tag` open `fields`, at most `max`, and
/// the bytes they take. Bytes that are not such fields end the count.
fn leading_fields(fields: &[u8], tag: u32, max: usize) -> (usize, usize) {
    let (mut count, mut at) = (0, 0);
    while count < max && at < fields.len() {
        let mut rest = &fields[at..];
        let before = rest.len();
        match prost::encoding::decode_key(&mut rest) {
            Ok((t, WireType::LengthDelimited)) if t == tag => {}
            _ => break,
        }
        let Ok(len) = prost::encoding::decode_varint(&mut rest) else {
            break;
        };
        let header = before - rest.len();
        let Some(end) = usize::try_from(len)
            .ok()
            .and_then(|len| at.checked_add(header)?.checked_add(len))
            .filter(|end| *end <= fields.len())
        else {
            break;
        };
        at = end;
        count += 1;
    }
    (count, at)
}

/// The `ExportTraceServiceRequest` of spans already encoded as `ScopeSpans.spans` fields
/// ([`put_encoded_span`]), given per instrumentation scope in order: the same bytes as
/// [`export_request`] of the same spans grouped the same way. A scope without bytes is left
/// out; no bytes at all give an empty request.
pub fn export_request_encoded(
    scopes: &[(&InstrumentationScope, &[u8])],
    resource: &EncodedResource,
) -> Vec<u8> {
    let mut buf = Vec::new();
    export_request_encoded_into(scopes, resource, &mut buf);
    buf
}

/// [`export_request_encoded`] written into `buf` (emptied first): a buffer of an earlier
/// request is written again without a new allocation when its capacity suffices.
pub fn export_request_encoded_into(
    scopes: &[(&InstrumentationScope, &[u8])],
    resource: &EncodedResource,
    buf: &mut Vec<u8>,
) {
    buf.clear();
    let scope_spans_len = |scope: &InstrumentationScope, fields: &[u8]| {
        len_delimited(1, scope_len(scope))
            + fields.len()
            + str_len(3, scope.schema_url().unwrap_or_default())
    };
    let present = || scopes.iter().filter(|(_, fields)| !fields.is_empty());
    if present().next().is_none() {
        return;
    }
    let resource_spans_len = len_delimited(1, resource.message.len())
        + present()
            .map(|(scope, fields)| len_delimited(2, scope_spans_len(scope, fields)))
            .sum::<usize>()
        + str_len(3, &resource.schema_url);
    buf.reserve(len_delimited(1, resource_spans_len));
    put_len(1, resource_spans_len, buf);
    put_len(1, resource.message.len(), buf);
    buf.extend_from_slice(&resource.message);
    for (scope, fields) in present() {
        put_len(2, scope_spans_len(scope, fields), buf);
        put_scope(scope, buf);
        buf.extend_from_slice(fields);
        put_str(3, scope.schema_url().unwrap_or_default(), buf);
    }
    put_str(3, &resource.schema_url, buf);
}

/// The distinct scopes of `spans`, in order of first appearance (one in practice).
fn scopes(spans: &[SpanData]) -> Vec<&InstrumentationScope> {
    let mut scopes: Vec<&InstrumentationScope> = Vec::with_capacity(1);
    for span in spans {
        if !scopes.iter().any(|s| **s == span.instrumentation_scope) {
            scopes.push(&span.instrumentation_scope);
        }
    }
    scopes
}

/// `InstrumentationScope`: 1 name, 2 version, 3 attributes.
fn scope_len(scope: &InstrumentationScope) -> usize {
    str_len(1, scope.name())
        + str_len(2, scope.version().unwrap_or_default())
        + scope
            .attributes()
            .map(|kv| len_delimited(3, key_value_len(kv.key.as_str(), &kv.value)))
            .sum::<usize>()
}

/// The `ScopeSpans.scope` field with its message.
fn put_scope(scope: &InstrumentationScope, buf: &mut Vec<u8>) {
    put_len(1, scope_len(scope), buf);
    put_str(1, scope.name(), buf);
    put_str(2, scope.version().unwrap_or_default(), buf);
    for kv in scope.attributes() {
        put_key_value(3, kv.key.as_str(), &kv.value, buf);
    }
}

/// The flags the OTLP spec asks for: the W3C trace flags, and whether the parent is remote.
fn span_flags(parent_is_remote: bool, trace_flags: u8) -> u32 {
    const HAS_IS_REMOTE: u32 = 0x100;
    const IS_REMOTE: u32 = 0x200;
    u32::from(trace_flags) | HAS_IS_REMOTE | if parent_is_remote { IS_REMOTE } else { 0 }
}

fn kind(kind: &SpanKind) -> u64 {
    match kind {
        SpanKind::Internal => 1,
        SpanKind::Server => 2,
        SpanKind::Client => 3,
        SpanKind::Producer => 4,
        SpanKind::Consumer => 5,
    }
}

fn nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// `Status`: 2 message, 3 code (0 unset, 1 ok, 2 error).
fn status(status: &Status) -> (&str, u64) {
    match status {
        Status::Unset => ("", 0),
        Status::Ok => ("", 1),
        Status::Error { description } => (description.as_ref(), 2),
    }
}

fn status_len(s: &Status) -> usize {
    let (message, code) = status(s);
    str_len(2, message) + varint_len(3, code)
}

fn attributes_len(tag: u32, attributes: &[KeyValue]) -> usize {
    attributes
        .iter()
        .map(|kv| len_delimited(tag, key_value_len(kv.key.as_str(), &kv.value)))
        .sum()
}

/// Appends `attribute` as one `Span.attributes` field (key, length, `KeyValue`): what
/// [`SpanView::encoded_attributes`] holds.
pub fn put_span_attribute(attribute: &KeyValue, buf: &mut Vec<u8>) {
    put_key_value(9, attribute.key.as_str(), &attribute.value, buf);
}

/// Appends the `Span.attributes` field of key `key` and the string value `write` appends to
/// `buf`: the bytes [`put_span_attribute`] writes for the same key and text, without the text
/// first becoming a `String`. The field's header is written first with one-byte lengths and
/// patched once the text is there; for a field of 128 bytes or more (a length of two bytes)
/// the header is written again after the text and moved before it.
pub fn put_text_attribute(key: &str, write: impl FnOnce(&mut Vec<u8>), buf: &mut Vec<u8>) {
    let start = buf.len();
    let key_field = str_len(1, key);
    put_len(9, 0, buf);
    put_str(1, key, buf);
    put_len(2, 0, buf);
    put_len(1, 0, buf);
    let header = buf.len() - start;
    write(buf);
    let text = buf.len() - start - header;
    let any = len_delimited(1, text);
    let kv = key_field + len_delimited(2, any);
    if let Ok(kv) = u8::try_from(kv)
        && kv < 0x80
    {
        // kv > any > text: each length is one byte.
        buf[start + 1] = kv;
        buf[start + 2 + key_field + 1] = any as u8;
        buf[start + header - 1] = text as u8;
        return;
    }
    buf.drain(start..start + header);
    put_key_value_header(9, key, any, buf);
    put_len(1, text, buf);
    let header = buf.len() - start - text;
    buf[start..].rotate_right(header);
}

/// Appends the `Span.attributes` field of key `key` and the scalar `value`: the bytes
/// [`put_span_attribute`] writes for the same key and value.
pub fn put_scalar_attribute(key: &str, value: &Scalar<'_>, buf: &mut Vec<u8>) {
    put_key_value_header(9, key, scalar_len(value), buf);
    put_scalar(value, buf);
}

fn put_attributes(tag: u32, attributes: &[KeyValue], buf: &mut Vec<u8>) {
    for kv in attributes {
        put_key_value(tag, kv.key.as_str(), &kv.value, buf);
    }
}

fn link_len(l: &Link) -> usize {
    let sc = &l.span_context;
    len_delimited(1, 16)
        + len_delimited(2, 8)
        + str_len(3, &state_header(sc))
        + attributes_len(4, &l.attributes)
        + varint_len(5, u64::from(l.dropped_attributes_count))
        + fixed32_len(6, span_flags(sc.is_remote(), sc.trace_flags().to_u8()))
}

/// The W3C `tracestate` header of `sc`: empty without spelling it when there is none (the
/// usual case: spelling even an empty one costs a span about 150 instructions).
fn state_header(sc: &SpanContext) -> Cow<'static, str> {
    if *sc.trace_state() == TraceState::NONE {
        Cow::Borrowed("")
    } else {
        Cow::Owned(sc.trace_state().header())
    }
}

/// `Span` (fields 1–16 of `trace.proto`).
fn put_span(span: &SpanView<'_>, buf: &mut Vec<u8>) {
    let sc = span.context;
    put_bytes(1, &sc.trace_id().to_bytes(), buf);
    put_bytes(2, &sc.span_id().to_bytes(), buf);
    put_str(3, &state_header(sc), buf);
    if span.parent != SpanId::INVALID {
        put_bytes(4, &span.parent.to_bytes(), buf);
    }
    put_fixed32(
        16,
        span_flags(span.parent_is_remote, sc.trace_flags().to_u8()),
        buf,
    );
    put_str(5, span.name, buf);
    put_varint(6, kind(span.kind), buf);
    put_fixed64(7, nanos(span.start), buf);
    put_fixed64(8, nanos(span.end), buf);
    for encoded in span.encoded_attributes {
        buf.extend_from_slice(encoded);
    }
    put_attributes(9, span.attributes, buf);
    put_varint(10, u64::from(span.dropped_attributes), buf);
    for e in span.events {
        let len = fixed64_len(1, nanos(e.timestamp))
            + str_len(2, &e.name)
            + attributes_len(3, &e.attributes)
            + varint_len(4, u64::from(e.dropped_attributes_count));
        put_len(11, len, buf);
        put_fixed64(1, nanos(e.timestamp), buf);
        put_str(2, &e.name, buf);
        put_attributes(3, &e.attributes, buf);
        put_varint(4, u64::from(e.dropped_attributes_count), buf);
    }
    put_varint(12, u64::from(span.dropped_events), buf);
    for l in span.links {
        let sc = &l.span_context;
        put_len(13, link_len(l), buf);
        put_bytes(1, &sc.trace_id().to_bytes(), buf);
        put_bytes(2, &sc.span_id().to_bytes(), buf);
        put_str(3, &state_header(sc), buf);
        put_attributes(4, &l.attributes, buf);
        put_varint(5, u64::from(l.dropped_attributes_count), buf);
        put_fixed32(6, span_flags(sc.is_remote(), sc.trace_flags().to_u8()), buf);
    }
    put_varint(14, u64::from(span.dropped_links), buf);
    put_len(15, status_len(span.status), buf);
    let (message, code) = status(span.status);
    put_str(2, message, buf);
    put_varint(3, code, buf);
}

/// `KeyValue`: 1 key, 2 value (an `AnyValue`, always present).
fn key_value_len(key: &str, value: &Value) -> usize {
    str_len(1, key) + len_delimited(2, any_value_len(value))
}

fn put_key_value(tag: u32, key: &str, value: &Value, buf: &mut Vec<u8>) {
    put_key_value_header(tag, key, any_value_len(value), buf);
    put_any_value(value, buf);
}

/// A `KeyValue` field's key and length, its key, and its value's key and length: what comes
/// before an `AnyValue` of `any` bytes.
fn put_key_value_header(tag: u32, key: &str, any: usize, buf: &mut Vec<u8>) {
    put_len(tag, str_len(1, key) + len_delimited(2, any), buf);
    put_str(1, key, buf);
    put_len(2, any, buf);
}

/// One scalar or array member of a [`Value`], borrowed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar<'a> {
    Str(&'a str),
    Bool(bool),
    I64(i64),
    F64(f64),
}

/// `AnyValue`'s `oneof`: 1 string, 2 bool, 3 int, 4 double, 5 array (an `ArrayValue` whose
/// field 1 repeats `AnyValue`). A member is written even when it holds its default value.
fn scalar_len(s: &Scalar<'_>) -> usize {
    match s {
        Scalar::Str(v) => len_delimited(1, v.len()),
        Scalar::Bool(_) => key_len(2) + 1,
        Scalar::I64(v) => key_len(3) + encoded_len_varint(*v as u64),
        Scalar::F64(_) => key_len(4) + 8,
    }
}

fn put_scalar(s: &Scalar<'_>, buf: &mut Vec<u8>) {
    match s {
        Scalar::Str(v) => {
            put_len(1, v.len(), buf);
            buf.extend_from_slice(v.as_bytes());
        }
        Scalar::Bool(v) => {
            put_key(2, WireType::Varint, buf);
            put_raw_varint(u64::from(*v), buf);
        }
        Scalar::I64(v) => {
            put_key(3, WireType::Varint, buf);
            put_raw_varint(*v as u64, buf);
        }
        Scalar::F64(v) => {
            put_key(4, WireType::SixtyFourBit, buf);
            buf.extend_from_slice(&v.to_le_bytes());
        }
    }
}

/// The array's members as scalars (no allocation: an iterator over the borrowed values).
fn members(array: &Array) -> Box<dyn Iterator<Item = Scalar<'_>> + '_> {
    match array {
        Array::Bool(v) => Box::new(v.iter().map(|b| Scalar::Bool(*b))),
        Array::I64(v) => Box::new(v.iter().map(|i| Scalar::I64(*i))),
        Array::F64(v) => Box::new(v.iter().map(|f| Scalar::F64(*f))),
        Array::String(v) => Box::new(v.iter().map(|s: &StringValue| Scalar::Str(s.as_str()))),
        _ => Box::new(std::iter::empty()),
    }
}

fn array_len(array: &Array) -> usize {
    members(array)
        .map(|m| len_delimited(1, scalar_len(&m)))
        .sum()
}

fn any_value_len(value: &Value) -> usize {
    match value {
        Value::Bool(b) => scalar_len(&Scalar::Bool(*b)),
        Value::I64(i) => scalar_len(&Scalar::I64(*i)),
        Value::F64(f) => scalar_len(&Scalar::F64(*f)),
        Value::String(s) => scalar_len(&Scalar::Str(s.as_str())),
        Value::Array(a) => len_delimited(5, array_len(a)),
        other => scalar_len(&Scalar::Str(&other.as_str())),
    }
}

fn put_any_value(value: &Value, buf: &mut Vec<u8>) {
    match value {
        Value::Bool(b) => put_scalar(&Scalar::Bool(*b), buf),
        Value::I64(i) => put_scalar(&Scalar::I64(*i), buf),
        Value::F64(f) => put_scalar(&Scalar::F64(*f), buf),
        Value::String(s) => put_scalar(&Scalar::Str(s.as_str()), buf),
        Value::Array(a) => {
            put_len(5, array_len(a), buf);
            for m in members(a) {
                put_len(1, scalar_len(&m), buf);
                put_scalar(&m, buf);
            }
        }
        other => put_scalar(&Scalar::Str(&other.as_str()), buf),
    }
}

/// A length-delimited field of `len` bytes, with its key and length.
fn len_delimited(tag: u32, len: usize) -> usize {
    key_len(tag) + encoded_len_varint(len as u64) + len
}

/// A varint, written inline: prost's `encode_varint` is an out-of-line call per number (a
/// third of a span's encoding went to it), and a `Vec`'s pushes need no `BufMut` checks.
#[inline]
fn put_raw_varint(mut v: u64, buf: &mut Vec<u8>) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// A field's key: its number and wire type as one varint (`tag` is a field number of the
/// `.proto` files here, far below the protocol's maximum).
#[inline]
fn put_key(tag: u32, wire: WireType, buf: &mut Vec<u8>) {
    put_raw_varint(u64::from(tag << 3 | wire as u32), buf);
}

#[inline]
fn put_len(tag: u32, len: usize, buf: &mut Vec<u8>) {
    put_key(tag, WireType::LengthDelimited, buf);
    put_raw_varint(len as u64, buf);
}

fn str_len(tag: u32, s: &str) -> usize {
    if s.is_empty() {
        0
    } else {
        len_delimited(tag, s.len())
    }
}

fn put_str(tag: u32, s: &str, buf: &mut Vec<u8>) {
    put_bytes(tag, s.as_bytes(), buf);
}

fn put_bytes(tag: u32, b: &[u8], buf: &mut Vec<u8>) {
    if !b.is_empty() {
        put_len(tag, b.len(), buf);
        buf.extend_from_slice(b);
    }
}

fn varint_len(tag: u32, v: u64) -> usize {
    if v == 0 {
        0
    } else {
        key_len(tag) + encoded_len_varint(v)
    }
}

fn put_varint(tag: u32, v: u64, buf: &mut Vec<u8>) {
    if v != 0 {
        put_key(tag, WireType::Varint, buf);
        put_raw_varint(v, buf);
    }
}

fn fixed64_len(tag: u32, v: u64) -> usize {
    if v == 0 { 0 } else { key_len(tag) + 8 }
}

fn put_fixed64(tag: u32, v: u64, buf: &mut Vec<u8>) {
    if v != 0 {
        put_key(tag, WireType::SixtyFourBit, buf);
        buf.extend_from_slice(&v.to_le_bytes());
    }
}

fn fixed32_len(tag: u32, v: u32) -> usize {
    if v == 0 { 0 } else { key_len(tag) + 4 }
}

fn put_fixed32(tag: u32, v: u32, buf: &mut Vec<u8>) {
    if v != 0 {
        put_key(tag, WireType::ThirtyTwoBit, buf);
        buf.extend_from_slice(&v.to_le_bytes());
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use opentelemetry::trace::{Event, Link, SpanContext, TraceFlags, TraceId, TraceState};
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
    use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
    use prost::Message as _;
    use std::time::Duration;

    fn context(trace: u128, span: u64, state: TraceState, remote: bool) -> SpanContext {
        SpanContext::new(
            TraceId::from(trace),
            SpanId::from(span),
            TraceFlags::SAMPLED,
            remote,
            state,
        )
    }

    /// Spans of two scopes with every kind of field: attributes of each value type (arrays,
    /// empty strings, negative and zero numbers), events, links, trace state, statuses, a
    /// remote parent and a root.
    pub(crate) fn spans() -> Vec<SpanData> {
        let scope = InstrumentationScope::builder("reporter")
            .with_version("1.2.3")
            .build();
        let other = InstrumentationScope::builder("other")
            .with_schema_url("https://opentelemetry.io/schemas/1.30.0")
            .with_attributes([KeyValue::new("scope.attr", 7_i64)])
            .build();
        let at = UNIX_EPOCH + Duration::from_nanos(1_733_400_000_123_456_789);
        let server = SpanData {
            span_context: context(
                0x4bf9_2f35_77b3_4da6_a3ce_929d_0e0e_4736,
                0x00f0_67aa_0ba9_02b7,
                TraceState::default(),
                false,
            ),
            parent_span_id: SpanId::from(0x1111_2222_3333_4444),
            parent_span_is_remote: true,
            span_kind: SpanKind::Server,
            name: "GET /v1/templates/{id}".into(),
            start_time: at,
            end_time: at + Duration::from_micros(41),
            attributes: vec![
                KeyValue::new("http.request.method", "GET"),
                KeyValue::new("http.route", "/v1/templates/{id}"),
                KeyValue::new("http.response.status_code", 200_i64),
                KeyValue::new("negative", -5_i64),
                KeyValue::new("zero", 0_i64),
                KeyValue::new("empty", ""),
                KeyValue::new("flag", false),
                KeyValue::new("ratio", 0.25_f64),
                KeyValue::new(
                    "strings",
                    Value::Array(Array::String(vec!["a".into(), "".into()])),
                ),
                KeyValue::new("ints", Value::Array(Array::I64(vec![1, -2, 0]))),
                KeyValue::new("bools", Value::Array(Array::Bool(vec![true, false]))),
                KeyValue::new("floats", Value::Array(Array::F64(vec![1.5, 0.0]))),
            ],
            dropped_attributes_count: 2,
            events: Default::default(),
            links: Default::default(),
            status: Status::error("boom"),
            instrumentation_scope: scope.clone(),
        };
        let mut child = server.clone();
        child.span_context = context(
            0x4bf9_2f35_77b3_4da6_a3ce_929d_0e0e_4736,
            0x0000_0000_0000_0002,
            TraceState::from_key_value([("vendor", "value")]).expect("trace state"),
            false,
        );
        child.parent_span_id = server.span_context.span_id();
        child.parent_span_is_remote = false;
        child.span_kind = SpanKind::Internal;
        child.name = "get_template".into();
        child.attributes = vec![KeyValue::new("tenant", "default")];
        child.dropped_attributes_count = 0;
        child.status = Status::Ok;
        child.events.events.push(Event::new(
            "retry",
            at,
            vec![KeyValue::new("attempt", 2_i64)],
            1,
        ));
        child.events.dropped_count = 3;
        child.links.links.push(Link::new(
            context(7, 8, TraceState::default(), true),
            vec![KeyValue::new("link.attr", "x")],
            0,
        ));
        child.links.dropped_count = 1;
        let mut root = server.clone();
        root.span_context = context(9, 10, TraceState::default(), false);
        root.parent_span_id = SpanId::INVALID;
        root.parent_span_is_remote = false;
        root.span_kind = SpanKind::Consumer;
        root.attributes.clear();
        root.dropped_attributes_count = 0;
        root.status = Status::Unset;
        root.instrumentation_scope = other;
        let mut producer = child.clone();
        producer.span_kind = SpanKind::Producer;
        producer.events = Default::default();
        producer.links = Default::default();
        let mut client = root.clone();
        client.span_kind = SpanKind::Client;
        client.instrumentation_scope = scope;
        vec![server, root, child, producer, client]
    }

    pub(crate) fn resource() -> Resource {
        Resource::builder()
            .with_service_name("reporter-test")
            .with_attributes([
                KeyValue::new("service.version", "1.0.0"),
                KeyValue::new("deployment.environment.name", "test"),
            ])
            .build()
    }

    /// The request the stock OTLP exporter builds of `spans` (the generated message types).
    pub(crate) fn stock_request(
        spans: Vec<SpanData>,
        resource: &Resource,
    ) -> ExportTraceServiceRequest {
        ExportTraceServiceRequest {
            resource_spans: group_spans_by_resource_and_scope(
                spans,
                &ResourceAttributesWithSchema::from(resource),
            ),
        }
    }

    #[test]
    fn the_body_is_the_stock_export_request() {
        let (spans, resource) = (spans(), resource());
        let ours = export_request(&spans, &super::resource(&resource));
        let decoded = ExportTraceServiceRequest::decode(ours.as_slice()).expect("decodes");
        let stock = stock_request(spans, &resource);
        assert_eq!(decoded, stock);
        assert_eq!(decoded.resource_spans[0].scope_spans.len(), 2, "two scopes");
        assert_eq!(ours.len(), stock.encoded_len(), "no byte more or less");
    }

    #[test]
    fn no_spans_is_an_empty_request() {
        let body = export_request(&[], &super::resource(&resource()));
        assert!(body.is_empty());
        let decoded = ExportTraceServiceRequest::decode(body.as_slice()).expect("decodes");
        assert!(decoded.resource_spans.is_empty());
    }
}
