//! Instants as BSON `DateTime` (milliseconds since the epoch, UTC).
//!
//! Every instant is stored with millisecond precision: the sub-millisecond part is dropped
//! (truncated towards the past). Queries that compare a stored instant with a caller's
//! instant round the caller's instant so that the database answers exactly what comparing the
//! *stored* (truncated) value with the full-precision instant in Rust would answer:
//!
//! | Rust predicate on a stored `s` | BSON predicate |
//! |---|---|
//! | `s < t`, `s >= t`  | `s < ceil_ms(t)`, `s >= ceil_ms(t)` |
//! | `s <= t`, `s > t`  | `s <= floor_ms(t)`, `s > floor_ms(t)` |
use chrono::{DateTime, TimeZone, Utc};
use mongodb::bson::DateTime as BsonDateTime;

/// The instant truncated to whole milliseconds, as BSON.
pub(crate) fn floor_ms(t: DateTime<Utc>) -> BsonDateTime {
    BsonDateTime::from_millis(t.timestamp_millis())
}

/// The instant rounded up to whole milliseconds, as BSON (equal to [`floor_ms`] when the
/// instant has no sub-millisecond part).
pub(crate) fn ceil_ms(t: DateTime<Utc>) -> BsonDateTime {
    let ms = t.timestamp_millis();
    let exact = t.timestamp_subsec_nanos().is_multiple_of(1_000_000);
    BsonDateTime::from_millis(if exact { ms } else { ms.saturating_add(1) })
}

/// A stored BSON instant back as chrono. Out-of-range values (not written by this crate)
/// saturate to chrono's bounds.
pub(crate) fn from_bson(t: BsonDateTime) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(t.timestamp_millis())
        .single()
        .unwrap_or(if t.timestamp_millis() < 0 {
            DateTime::<Utc>::MIN_UTC
        } else {
            DateTime::<Utc>::MAX_UTC
        })
}

/// The instant as stored (truncated to milliseconds), back as chrono.
pub(crate) fn truncate(t: DateTime<Utc>) -> DateTime<Utc> {
    from_bson(floor_ms(t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    #[test]
    fn rounding() {
        let base = Utc.with_ymd_and_hms(2030, 1, 1, 0, 0, 0).unwrap();
        assert_eq!(floor_ms(base), ceil_ms(base));
        let t = base + Duration::microseconds(1500);
        assert_eq!(floor_ms(t).timestamp_millis(), base.timestamp_millis() + 1);
        assert_eq!(ceil_ms(t).timestamp_millis(), base.timestamp_millis() + 2);
        assert_eq!(truncate(t), base + Duration::milliseconds(1));
        let before = base - Duration::microseconds(1500);
        assert_eq!(
            floor_ms(before).timestamp_millis(),
            base.timestamp_millis() - 2
        );
        assert_eq!(
            ceil_ms(before).timestamp_millis(),
            base.timestamp_millis() - 1
        );
    }
}
