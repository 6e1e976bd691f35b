//! The rules for the request headers Reporter reads, checked once, where the request enters.
use poem::Request;

/// `X-Idempotency`: 1–255 visible ASCII characters (no space, no control character).
pub const IDEMPOTENCY_KEY_MAX: usize = 255;
/// [`idempotency_key`]'s rule as an ECMA-262 pattern, for the OpenAPI document.
pub const IDEMPOTENCY_KEY_PATTERN: &str = "^[!-~]{1,255}$";
/// `X-Request-Id`: 1–128 visible ASCII characters; anything else is replaced by a fresh id.
pub const REQUEST_ID_MAX: usize = 128;

fn visible_ascii(v: &[u8], max: usize) -> bool {
    !v.is_empty() && v.len() <= max && v.iter().all(u8::is_ascii_graphic)
}

/// What the request's `X-Idempotency` header holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdempotencyHeader {
    /// No header.
    Absent,
    /// A valid key.
    Key(String),
    /// A header that breaks the rule (MUST be answered 400).
    Invalid,
}

/// Reads `X-Idempotency` (several values are invalid).
pub fn idempotency_key(req: &Request) -> IdempotencyHeader {
    let mut values = req.headers().get_all("x-idempotency").iter();
    match (values.next(), values.next()) {
        (None, _) => IdempotencyHeader::Absent,
        (Some(v), None) if visible_ascii(v.as_bytes(), IDEMPOTENCY_KEY_MAX) => {
            IdempotencyHeader::Key(String::from_utf8_lossy(v.as_bytes()).into_owned())
        }
        _ => IdempotencyHeader::Invalid,
    }
}

/// The client's `X-Request-Id` when it follows the rule.
pub fn client_request_id(req: &Request) -> Option<&str> {
    req.headers()
        .get("x-request-id")
        .filter(|v| visible_ascii(v.as_bytes(), REQUEST_ID_MAX))
        .and_then(|v| v.to_str().ok())
}

/// A fresh request id: a UUIDv7 of the current millisecond with random bits from the thread's
/// generator. Unlike `Uuid::now_v7` it takes no process-wide lock and makes no `getrandom`
/// call (this runs on every request without a client id); ids of one millisecond are not
/// ordered among themselves, which request ids do not need.
pub fn fresh_request_id() -> String {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let random: [u8; 10] = rand::random();
    uuid::Builder::from_unix_timestamp_millis(millis, &random)
        .into_uuid()
        .hyphenated()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(name: &str, values: &[&[u8]]) -> Request {
        let mut b = Request::builder();
        for v in values {
            b = b.header(
                name,
                poem::http::HeaderValue::from_bytes(v).expect("header value"),
            );
        }
        b.finish()
    }

    #[test]
    fn idempotency_keys_are_visible_ascii() {
        assert_eq!(
            idempotency_key(&Request::default()),
            IdempotencyHeader::Absent
        );
        assert_eq!(
            idempotency_key(&with("x-idempotency", &[b"order-42"])),
            IdempotencyHeader::Key("order-42".into())
        );
        for bad in [
            &b"two words"[..],
            b" lead",
            b"tab\there",
            b"",
            &[b'a'; 256],
            b"caf\xc3\xa9",
        ] {
            assert_eq!(
                idempotency_key(&with("x-idempotency", &[bad])),
                IdempotencyHeader::Invalid,
                "{bad:?}"
            );
        }
        assert_eq!(
            idempotency_key(&with("x-idempotency", &[b"a", b"b"])),
            IdempotencyHeader::Invalid
        );
        // The pattern is the rule: `[!-~]` is exactly the visible ASCII range.
        assert_eq!(
            IDEMPOTENCY_KEY_PATTERN,
            format!("^[!-~]{{1,{IDEMPOTENCY_KEY_MAX}}}$")
        );
        assert!((0u8..=127).all(|b| b.is_ascii_graphic() == (b'!'..=b'~').contains(&b)));
    }

    #[test]
    fn request_ids_are_bounded() {
        assert_eq!(
            client_request_id(&with("x-request-id", &[b"abc-1"])),
            Some("abc-1")
        );
        assert_eq!(
            client_request_id(&with("x-request-id", &[&[b'a'; 129]])),
            None
        );
        assert_eq!(client_request_id(&with("x-request-id", &[b"a b"])), None);
    }

    #[test]
    fn fresh_request_ids_are_distinct_uuidv7_of_now() {
        let before = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis();
        let ids: std::collections::BTreeSet<String> =
            (0..1000).map(|_| fresh_request_id()).collect();
        assert_eq!(ids.len(), 1000, "every id is new");
        for id in &ids {
            let u = uuid::Uuid::parse_str(id).expect("a UUID");
            assert_eq!(u.get_version_num(), 7, "{id}");
            assert_eq!(u.get_variant(), uuid::Variant::RFC4122, "{id}");
            let (secs, nanos) = u.get_timestamp().expect("v7 has a timestamp").to_unix();
            let millis = u128::from(secs) * 1000 + u128::from(nanos / 1_000_000);
            assert!(millis >= before && millis <= before + 60_000, "{id}");
            assert_eq!(id, &u.hyphenated().to_string(), "hyphenated, lower case");
        }
    }
}
