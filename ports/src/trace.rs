//! The bounded W3C trace carrier a report job and an event take along (`traceparent`,
//! `tracestate`), so work done later or elsewhere (the worker, an outbox replay after an
//! outage) continues the trace of the request that caused it.
use serde::{Deserialize, Serialize};

/// Longest `traceparent` / `tracestate` kept (bytes).
pub const MAX_TRACE_HEADER: usize = 512;

/// A validated trace context: `traceparent` is W3C version `00`
/// (`00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`, ids not all zero); `tracestate`,
/// when present, is printable ASCII. Each is at most [`MAX_TRACE_HEADER`] bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawCarrier", into = "RawCarrier")]
pub struct TraceCarrier {
    traceparent: String,
    tracestate: Option<String>,
}

/// The serialized form (checked again on the way in).
#[derive(Serialize, Deserialize)]
struct RawCarrier {
    traceparent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tracestate: Option<String>,
}

impl TryFrom<RawCarrier> for TraceCarrier {
    type Error = &'static str;
    fn try_from(r: RawCarrier) -> Result<Self, Self::Error> {
        TraceCarrier::new(&r.traceparent, r.tracestate.as_deref()).ok_or("invalid trace carrier")
    }
}

impl From<TraceCarrier> for RawCarrier {
    fn from(c: TraceCarrier) -> Self {
        RawCarrier {
            traceparent: c.traceparent,
            tracestate: c.tracestate,
        }
    }
}

fn hex_of(s: &str, len: usize) -> bool {
    s.len() == len
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        && s.bytes().any(|b| b != b'0')
}

impl TraceCarrier {
    /// The carrier, or `None` when `traceparent` is not a valid version-00 value; an invalid
    /// or oversized `tracestate` is dropped (the trace continues without it).
    pub fn new(traceparent: &str, tracestate: Option<&str>) -> Option<Self> {
        let tp = traceparent.trim();
        let mut parts = tp.split('-');
        let valid = tp.len() <= MAX_TRACE_HEADER
            && parts.next() == Some("00")
            && parts.next().is_some_and(|t| hex_of(t, 32))
            && parts.next().is_some_and(|s| hex_of(s, 16))
            && parts
                .next()
                .is_some_and(|f| f.len() == 2 && f.bytes().all(|b| b.is_ascii_hexdigit()))
            && parts.next().is_none();
        if !valid {
            return None;
        }
        let tracestate = tracestate
            .map(str::trim)
            .filter(|s| {
                !s.is_empty()
                    && s.len() <= MAX_TRACE_HEADER
                    && s.bytes().all(|b| (0x20..0x7f).contains(&b))
            })
            .map(str::to_owned);
        Some(Self {
            traceparent: tp.to_ascii_lowercase(),
            tracestate,
        })
    }

    /// The `traceparent` value.
    pub fn traceparent(&self) -> &str {
        &self.traceparent
    }

    /// The `tracestate` value, when any.
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// The 32-hex trace id.
    pub fn trace_id(&self) -> &str {
        self.traceparent.get(3..35).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn accepts_version_00() {
        let c = TraceCarrier::new(TP, Some("congo=t61rcWkgMzE")).expect("valid");
        assert_eq!(c.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(c.tracestate(), Some("congo=t61rcWkgMzE"));
    }

    #[test]
    fn refuses_what_is_not_a_traceparent() {
        for bad in [
            "",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-zz",
        ] {
            assert!(TraceCarrier::new(bad, None).is_none(), "{bad}");
        }
    }

    #[test]
    fn oversized_tracestate_is_dropped() {
        let c = TraceCarrier::new(TP, Some(&"a".repeat(MAX_TRACE_HEADER + 1))).expect("valid");
        assert_eq!(c.tracestate(), None);
    }

    #[test]
    fn serde_round_trip_validates() {
        let c = TraceCarrier::new(TP, None).expect("valid");
        let json = serde_json::to_string(&c).expect("serializes");
        assert_eq!(
            serde_json::from_str::<TraceCarrier>(&json).expect("back"),
            c
        );
        assert!(serde_json::from_str::<TraceCarrier>(r#"{"traceparent":"x"}"#).is_err());
    }
}
