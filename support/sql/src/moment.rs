//! [`parse_moment`]: the date and date-time strings a filter may compare with.
use chrono::{DateTime, NaiveDate, NaiveDateTime};

/// A date or date-time filter string, read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moment {
    Date(NaiveDate),
    /// In UTC (an offset is applied).
    DateTime(NaiveDateTime),
}

/// Reads `YYYY-MM-DD`, `YYYY-MM-DD[T ]HH:MM[:SS[.f]]` (taken as UTC), RFC 3339 with an offset
/// (converted to UTC), or the printed form `YYYY-MM-DD HH:MM:SS[.f] +0000 UTC`; `None` for
/// anything else, impossible dates included.
pub fn parse_moment(s: &str) -> Option<Moment> {
    let s = s.trim();
    if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return Some(Moment::Date(d));
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(Moment::DateTime(t.naive_utc()));
    }
    let printed = s.strip_suffix(" UTC").unwrap_or(s);
    if let Ok(t) = DateTime::parse_from_str(printed, "%Y-%m-%d %H:%M:%S%.f %z") {
        return Some(Moment::DateTime(t.naive_utc()));
    }
    [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M",
    ]
    .iter()
    .find_map(|f| NaiveDateTime::parse_from_str(s, f).ok())
    .map(Moment::DateTime)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::is_decimal_text;

    /// Moved from the MySQL adapter (its filter strings are now read here).
    #[test]
    fn moments_and_decimals() {
        let dt = |s: &str| match parse_moment(s) {
            Some(Moment::DateTime(t)) => t.format("%Y-%m-%d %H:%M:%S%.f").to_string(),
            other => panic!("{s}: {other:?}"),
        };
        assert_eq!(dt("2025-06-01 10:00:00 +0000 UTC"), "2025-06-01 10:00:00");
        assert_eq!(dt("2025-06-01T12:00:00+02:00"), "2025-06-01 10:00:00");
        assert_eq!(dt("2025-06-01 10:00:00.5"), "2025-06-01 10:00:00.500");
        assert_eq!(dt("2025-06-01T10:00"), "2025-06-01 10:00:00");
        assert!(matches!(parse_moment("2025-06-01"), Some(Moment::Date(_))));
        assert_eq!(parse_moment("2025-02-30"), None);
        for ok in ["1", "-1.50", "+.5", "3.", "1e5", "2.5E-3"] {
            assert!(is_decimal_text(ok), "{ok}");
        }
        for bad in ["", ".", "1.2.3", "1e", "0x10", "1,5", "ten", "1e99999"] {
            assert!(!is_decimal_text(bad), "{bad}");
        }
    }
}
