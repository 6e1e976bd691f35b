//! A JSON response body written straight from the DTO's serde form.
//!
//! poem-openapi's `Json<T>` answers through `ToJSON`: it builds a `serde_json::Value` tree of
//! the DTO (a map and a string per field), then writes the tree. [`JsonBody`] documents the
//! same schema (its [`JsonForm::Schema`]) but writes the value in one pass. A DTO answered this
//! way MUST serialize exactly as its `ToJSON` form: [`same_json`] checks that, and every such
//! DTO has a test calling it. A value written by hand ([`JsonForm::write_json`] other than
//! [`serde_form`]) MUST write exactly the bytes its schema's DTO's serde form writes; its
//! module tests that.
use poem::http::{HeaderMap, HeaderValue};
use poem::{IntoResponse, Response};
use poem_openapi::ApiResponse;
use poem_openapi::payload::Payload;
use poem_openapi::registry::{MetaMediaType, MetaResponse, MetaResponses, MetaSchemaRef, Registry};
use poem_openapi::types::Type;
use serde::Serialize;

/// A `200` JSON body of `T`, in `T::Schema`'s schema (see the module docs).
#[derive(Debug, Clone)]
pub struct JsonBody<T>(pub T);

/// A value [`JsonBody`] answers: the schema it documents and how it is written.
pub trait JsonForm: Send {
    /// The schema the answer documents (a DTO's `Object`).
    type Schema: Type;

    /// Appends the value's JSON text to `out`: the bytes `Schema`'s serde form writes.
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()>;
}

/// [`JsonForm::write_json`] of a DTO that is its own schema: its serde form.
pub fn serde_form<T: Serialize>(value: &T, out: &mut Vec<u8>) -> serde_json::Result<()> {
    serde_json::to_writer(out, value)
}

const CONTENT_TYPE: &str = "application/json; charset=utf-8";

/// Room a body starts with: one DTO (a template, a report) fits, where `serde_json::to_vec`'s
/// 128 bytes were grown and copied twice or three times per answer.
const BODY_START: usize = 1024;

/// Headers of a JSON answer on its way out: its content type, and the edge's security headers
/// and `X-Request-Id` (`middleware::harden`), with room for CORS's.
const RESPONSE_HEADERS: usize = 12;

impl<T: JsonForm> Payload for JsonBody<T> {
    const CONTENT_TYPE: &'static str = CONTENT_TYPE;

    fn schema_ref() -> MetaSchemaRef {
        T::Schema::schema_ref()
    }

    fn register(registry: &mut Registry) {
        T::Schema::register(registry);
    }
}

impl<T: JsonForm> IntoResponse for JsonBody<T> {
    fn into_response(self) -> Response {
        let mut bytes = Vec::with_capacity(BODY_START);
        match self.0.write_json(&mut bytes) {
            Ok(()) => {
                let mut resp = Response::from(bytes);
                // Room for every header the edge adds (`middleware::harden`): the map is
                // allocated once instead of grown on the way out.
                *resp.headers_mut() = HeaderMap::with_capacity(RESPONSE_HEADERS);
                resp.headers_mut().insert(
                    poem::http::header::CONTENT_TYPE,
                    HeaderValue::from_static(CONTENT_TYPE),
                );
                resp
            }
            // The DTOs are plain data (strings, numbers, maps with string keys): serde_json
            // cannot fail on them. Answer as poem's own Json does if it ever did.
            Err(e) => {
                poem::Error::new(e, poem::http::StatusCode::INTERNAL_SERVER_ERROR).into_response()
            }
        }
    }
}

impl<T: JsonForm> ApiResponse for JsonBody<T> {
    fn meta() -> MetaResponses {
        MetaResponses {
            responses: vec![MetaResponse {
                description: "",
                status: Some(200),
                status_range: None,
                content: vec![MetaMediaType {
                    content_type: CONTENT_TYPE,
                    schema: T::Schema::schema_ref(),
                }],
                headers: vec![],
            }],
        }
    }

    fn register(registry: &mut Registry) {
        T::Schema::register(registry);
    }
}

/// `serde_json::to_value(dto)` equals `dto.to_json()`: what [`JsonBody`] writes is what
/// poem-openapi's `Json` would have written. Panics with both forms when they differ (tests).
#[cfg(test)]
pub fn same_json<T: Serialize + poem_openapi::types::ToJSON>(dto: &T) {
    let serde = serde_json::to_value(dto).expect("the DTO serializes");
    let openapi = dto.to_json().unwrap_or_default();
    assert_eq!(serde, openapi, "serde form vs ToJSON form");
}

/// Serde helpers that write values as poem-openapi's `ToJSON` writes them.
pub mod as_openapi {
    use chrono::format::{Fixed, Item};
    use chrono::{DateTime, Datelike, Timelike, Utc};
    use serde::Serializer;

    /// An instant as poem-openapi writes it (`to_rfc3339`: `+00:00`, not serde's `Z`; a
    /// fraction of 3, 6 or 9 digits, the fewest that hold it; a leap second as `:60`), written
    /// into a buffer on the stack rather than a `String` per instant. Years 0 to 9999 are
    /// written digit by digit ([`rfc3339`]); chrono's formatter (`to_rfc3339`'s writer, about
    /// a third of the answer's JSON time in the P3 profile) writes the others.
    pub fn instant<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        let mut text = StackText::default();
        match rfc3339_text(t, &mut text) {
            Ok(()) => s.serialize_str(text.as_str()),
            Err(long) => s.serialize_str(&long),
        }
    }

    /// Appends the JSON string [`instant`] serializes `t` as to `out` (the same bytes: RFC 3339
    /// text is ASCII without quotes, backslashes or control characters, nothing to escape).
    pub fn write_instant(t: &DateTime<Utc>, out: &mut Vec<u8>) {
        let mut text = StackText::default();
        out.push(b'"');
        match rfc3339_text(t, &mut text) {
            Ok(()) => out.extend_from_slice(text.written()),
            Err(long) => out.extend_from_slice(long.as_bytes()),
        }
        out.push(b'"');
    }

    /// Writes `t` as `to_rfc3339` writes it into `text`; `Err` with chrono's `String` only
    /// past the stack's room (longer than any instant chrono can hold: kept as the plain way
    /// all the same).
    fn rfc3339_text(t: &DateTime<Utc>, text: &mut StackText) -> Result<(), String> {
        if rfc3339(t, text).is_some() {
            return Ok(());
        }
        text.len = 0;
        let item = std::iter::once(Item::Fixed(Fixed::RFC3339));
        t.format_with_items(item)
            .write_to(text)
            .map_err(|_| t.to_rfc3339())
    }

    /// Writes `t` as `to_rfc3339` does into `out`; `None` (and nothing written) for a year
    /// outside 0 to 9999, which chrono spells with a sign.
    fn rfc3339(t: &DateTime<Utc>, out: &mut StackText) -> Option<()> {
        // The UTC date and time once: each of `DateTime`'s own accessors adds the offset again.
        let at = t.naive_utc();
        let (date, time) = (at.date(), at.time());
        let year = u32::try_from(date.year()).ok().filter(|y| *y <= 9999)?;
        // chrono keeps a leap second as a nanosecond count past 1e9 of second 59.
        let (second, nanos) = match time.nanosecond() {
            n if n >= 1_000_000_000 => (time.second() + 1, n - 1_000_000_000),
            n => (time.second(), n),
        };
        out.digits(year, 4);
        out.byte(b'-');
        out.digits(date.month(), 2);
        out.byte(b'-');
        out.digits(date.day(), 2);
        out.byte(b'T');
        out.digits(time.hour(), 2);
        out.byte(b':');
        out.digits(time.minute(), 2);
        out.byte(b':');
        out.digits(second, 2);
        if nanos != 0 {
            out.byte(b'.');
            if nanos % 1_000_000 == 0 {
                out.digits(nanos / 1_000_000, 3);
            } else if nanos % 1_000 == 0 {
                out.digits(nanos / 1_000, 6);
            } else {
                out.digits(nanos, 9);
            }
        }
        out.bytes_of(b"+00:00");
        Some(())
    }

    /// Room for the longest RFC 3339 instant (`+262143-12-31T23:59:60.999999999+00:00`).
    const STACK_TEXT: usize = 48;

    /// Text written into a fixed array; a write past its end fails.
    struct StackText {
        bytes: [u8; STACK_TEXT],
        len: usize,
    }

    impl Default for StackText {
        fn default() -> Self {
            Self {
                bytes: [0; STACK_TEXT],
                len: 0,
            }
        }
    }

    impl StackText {
        fn as_str(&self) -> &str {
            // Only ASCII bytes and whole `&str`s are ever copied in, so this cannot fail.
            std::str::from_utf8(self.written()).unwrap_or_default()
        }

        /// The bytes written so far.
        fn written(&self) -> &[u8] {
            self.bytes.get(..self.len).unwrap_or_default()
        }

        /// Appends ASCII `b`; [`rfc3339`] writes at most 35 bytes, far below the room.
        fn byte(&mut self, b: u8) {
            if let Some(slot) = self.bytes.get_mut(self.len) {
                *slot = b;
                self.len += 1;
            }
        }

        /// Appends ASCII `text`.
        fn bytes_of(&mut self, text: &[u8]) {
            for b in text {
                self.byte(*b);
            }
        }

        /// Appends the last `width` decimal digits of `n`, zero-padded (written from the
        /// last digit back: a division by the constant 10 per digit, no power of ten).
        fn digits(&mut self, mut n: u32, width: usize) {
            let end = self.len + width;
            let Some(room) = self.bytes.get_mut(self.len..end) else {
                return;
            };
            for slot in room.iter_mut().rev() {
                // A decimal digit: below 10, so the cast cannot truncate.
                *slot = b'0' + (n % 10) as u8;
                n /= 10;
            }
            self.len = end;
        }
    }

    impl std::fmt::Write for StackText {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            let end = self.len + s.len();
            let room = self.bytes.get_mut(self.len..end).ok_or(std::fmt::Error)?;
            room.copy_from_slice(s.as_bytes());
            self.len = end;
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use proptest::prelude::*;

    #[derive(Serialize)]
    struct At(#[serde(serialize_with = "as_openapi::instant")] chrono::DateTime<chrono::Utc>);

    #[test]
    fn instants_are_written_as_poem_openapi_writes_them() {
        for t in [
            chrono::Utc
                .with_ymd_and_hms(2026, 12, 3, 22, 23, 0)
                .unwrap(),
            chrono::Utc.timestamp_millis_opt(1_796_379_722_107).unwrap(),
            chrono::Utc.timestamp_nanos(1_796_379_722_107_654_321),
            chrono::Utc.timestamp_nanos(1_796_379_722_100_000_000),
            chrono::Utc.timestamp_nanos(1_796_379_722_000_001_000),
            chrono::DateTime::<chrono::Utc>::MIN_UTC,
            chrono::DateTime::<chrono::Utc>::MAX_UTC,
            chrono::Utc.with_ymd_and_hms(1900, 1, 1, 0, 0, 0).unwrap(),
        ] {
            let ours = serde_json::to_value(At(t)).unwrap();
            assert_eq!(ours, serde_json::Value::String(t.to_rfc3339()), "{t:?}");
            let mut written = Vec::new();
            as_openapi::write_instant(&t, &mut written);
            assert_eq!(written, serde_json::to_vec(&At(t)).unwrap(), "{t:?}");
        }
    }

    proptest! {
        /// Any instant chrono can hold (leap seconds and years outside 0-9999 included) is
        /// written exactly as `to_rfc3339` writes it.
        #[test]
        fn any_instant_is_written_as_chrono_writes_it(
            secs in chrono::DateTime::<chrono::Utc>::MIN_UTC.timestamp()..=chrono::DateTime::<chrono::Utc>::MAX_UTC.timestamp(),
            nanos in prop_oneof![
                Just(0u32),
                (0u32..1000).prop_map(|m| m * 1_000_000),
                (0u32..1_000_000).prop_map(|u| u * 1_000),
                0u32..2_000_000_000,
            ],
            leap in any::<bool>(),
        ) {
            let secs = if leap { secs - secs.rem_euclid(60) + 59 } else { secs };
            let nanos = if leap || nanos < 1_000_000_000 { nanos } else { nanos - 1_000_000_000 };
            if let Some(t) = chrono::DateTime::<chrono::Utc>::from_timestamp(secs, nanos) {
                let ours = serde_json::to_value(At(t)).unwrap();
                prop_assert_eq!(ours, serde_json::Value::String(t.to_rfc3339()));
                let mut written = Vec::new();
                as_openapi::write_instant(&t, &mut written);
                prop_assert_eq!(written, serde_json::to_vec(&At(t)).unwrap());
            }
        }
    }

    /// A value written in its serde form.
    struct Plain(serde_json::Value);

    impl JsonForm for Plain {
        type Schema = serde_json::Value;
        fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
            serde_form(&self.0, out)
        }
    }

    #[tokio::test]
    async fn the_body_is_the_serde_form_with_the_json_content_type() {
        let resp = JsonBody(Plain(serde_json::json!({"a": [1, "b"]}))).into_response();
        assert_eq!(resp.status(), 200);
        assert_eq!(
            resp.headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok()),
            Some(CONTENT_TYPE)
        );
        let body = resp.into_body().into_vec().await.unwrap();
        assert_eq!(body, br#"{"a":[1,"b"]}"#);
    }
}
