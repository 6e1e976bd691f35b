//! Go's `time.Time` as templates of the original see it: its `String()` form
//! (`2025-06-01 10:00:00 +0000 UTC`), Go layouts (`2006-01-02 15:04:05`) and the parsers the
//! original's `date` filter and tags use (RFC 3339, `2006-01-02`).
use chrono::{
    DateTime, Datelike, FixedOffset, NaiveDate, NaiveDateTime, Offset, TimeZone, Timelike, Utc,
};
use std::borrow::Cow;

/// An instant with the zone it is shown in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoTime {
    pub(crate) dt: DateTime<FixedOffset>,
    /// The zone abbreviation (`UTC`, borrowed: no allocation for the common zone); `None`
    /// for a fabricated zone, shown as its offset.
    pub(crate) zone: Option<Cow<'static, str>>,
}

const UTC: &str = "UTC";

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

impl GoTime {
    /// A UTC instant (zone `UTC`).
    pub fn utc(dt: DateTime<Utc>) -> Self {
        Self {
            dt: dt.fixed_offset(),
            zone: Some(Cow::Borrowed(UTC)),
        }
    }

    /// Go's `Time.String()`: `2006-01-02 15:04:05.999999999 -0700 MST`.
    pub fn go_string(&self) -> String {
        self.format("2006-01-02 15:04:05.999999999 -0700 MST")
    }

    /// Seconds since the epoch.
    pub fn unix(&self) -> i64 {
        self.dt.timestamp()
    }

    /// Nanoseconds since the epoch (saturating), for ordering.
    pub fn sort_key(&self) -> (i64, u32) {
        (self.dt.timestamp(), self.dt.timestamp_subsec_nanos())
    }

    fn zone_name(&self) -> Cow<'_, str> {
        match &self.zone {
            Some(z) => Cow::Borrowed(z),
            None => {
                let off = self.dt.offset().fix().local_minus_utc();
                let (sign, off) = if off < 0 { ('-', -off) } else { ('+', off) };
                Cow::Owned(format!("{sign}{:02}{:02}", off / 3600, off / 60 % 60))
            }
        }
    }

    /// Formats with a Go layout (reference time `Mon Jan 2 15:04:05 MST 2006`).
    pub fn format(&self, layout: &str) -> String {
        let mut out = String::with_capacity(layout.len() + 16);
        // The wall-clock fields in the shown zone, computed once for every token.
        let local = self.dt.naive_local();
        let b = layout.as_bytes();
        let mut i = 0;
        let mut lit_start = 0;
        while i < b.len() {
            let Some((tok, len)) = std_chunk(b, i) else {
                i += 1;
                continue;
            };
            out.push_str(layout.get(lit_start..i).unwrap_or_default());
            self.push_token(&mut out, &local, tok);
            i += len;
            lit_start = i;
        }
        out.push_str(layout.get(lit_start..).unwrap_or_default());
        out
    }

    fn push_token(&self, out: &mut String, d: &NaiveDateTime, tok: Std) {
        let off = self.dt.offset().fix().local_minus_utc();
        match tok {
            Std::LongMonth => out.push_str(MONTHS.get(d.month0() as usize).copied().unwrap_or("")),
            Std::Month => out.push_str(
                MONTHS
                    .get(d.month0() as usize)
                    .and_then(|m| m.get(..3))
                    .unwrap_or(""),
            ),
            Std::NumMonth => push_num(out, d.month().into(), 0, Fill::Zero),
            Std::ZeroMonth => push_num(out, d.month().into(), 2, Fill::Zero),
            Std::LongWeekDay => out.push_str(
                DAYS.get(d.weekday().num_days_from_sunday() as usize)
                    .copied()
                    .unwrap_or(""),
            ),
            Std::WeekDay => out.push_str(
                DAYS.get(d.weekday().num_days_from_sunday() as usize)
                    .and_then(|m| m.get(..3))
                    .unwrap_or(""),
            ),
            Std::Day => push_num(out, d.day().into(), 0, Fill::Zero),
            Std::UnderDay => push_num(out, d.day().into(), 2, Fill::Space),
            Std::ZeroDay => push_num(out, d.day().into(), 2, Fill::Zero),
            Std::UnderYearDay => push_num(out, d.ordinal().into(), 3, Fill::Space),
            Std::ZeroYearDay => push_num(out, d.ordinal().into(), 3, Fill::Zero),
            Std::Hour => push_num(out, d.hour().into(), 2, Fill::Zero),
            Std::Hour12 => push_num(out, hour12(d.hour()).into(), 0, Fill::Zero),
            Std::ZeroHour12 => push_num(out, hour12(d.hour()).into(), 2, Fill::Zero),
            Std::Minute => push_num(out, d.minute().into(), 0, Fill::Zero),
            Std::ZeroMinute => push_num(out, d.minute().into(), 2, Fill::Zero),
            Std::Second => push_num(out, d.second().into(), 0, Fill::Zero),
            Std::ZeroSecond => push_num(out, d.second().into(), 2, Fill::Zero),
            Std::LongYear => push_num(out, d.year().into(), 4, Fill::Zero),
            Std::Year => push_num(out, d.year().rem_euclid(100).into(), 2, Fill::Zero),
            Std::PM => out.push_str(if d.hour() >= 12 { "PM" } else { "AM" }),
            Std::Pm => out.push_str(if d.hour() >= 12 { "pm" } else { "am" }),
            Std::Tz => out.push_str(&self.zone_name()),
            Std::Iso(kind) => push_offset(out, off, kind, true),
            Std::Num(kind) => push_offset(out, off, kind, false),
            Std::Frac { digits, trim, sep } => {
                let mut all = String::with_capacity(9);
                push_num(
                    &mut all,
                    (d.nanosecond() % 1_000_000_000).into(),
                    9,
                    Fill::Zero,
                );
                let mut s = all.get(..digits.min(9)).unwrap_or("");
                if trim {
                    s = s.trim_end_matches('0');
                    if s.is_empty() {
                        return;
                    }
                }
                out.push(sep);
                out.push_str(s);
            }
        }
    }
}

/// How [`push_num`] pads.
#[derive(Clone, Copy)]
enum Fill {
    /// `{:0w}`: zeros between the sign and the digits.
    Zero,
    /// `{:>w}`: spaces before the sign.
    Space,
}

/// Writes `n` in decimal (`itoa`), padded to `width` characters as `format!("{n:0width$}")`
/// or `format!("{n:>width$}")` would, without formatting machinery or an allocation (a large
/// report prints a date per row).
fn push_num(out: &mut String, n: i64, width: usize, fill: Fill) {
    let mut buf = itoa::Buffer::new();
    let digits = buf.format(n.unsigned_abs());
    let pad = width.saturating_sub(digits.len() + usize::from(n < 0));
    if matches!(fill, Fill::Space) {
        out.extend(std::iter::repeat_n(' ', pad));
    }
    if n < 0 {
        out.push('-');
    }
    if matches!(fill, Fill::Zero) {
        out.extend(std::iter::repeat_n('0', pad));
    }
    out.push_str(digits);
}

fn hour12(h: u32) -> u32 {
    match h % 12 {
        0 => 12,
        x => x,
    }
}

/// Offset layout kinds: `-07`, `-0700`, `-07:00`, `-070000`, `-07:00:00`.
#[derive(Debug, Clone, Copy)]
enum OffKind {
    H,
    Hm,
    HColonM,
    Hms,
    HColonMColonS,
}

fn push_offset(out: &mut String, off: i32, kind: OffKind, iso: bool) {
    if iso && off == 0 {
        out.push('Z');
        return;
    }
    let (sign, a) = if off < 0 { ('-', -off) } else { ('+', off) };
    let (h, m, s) = (a / 3600, a / 60 % 60, a % 60);
    out.push(sign);
    out.push_str(&format!("{h:02}"));
    match kind {
        OffKind::H => {}
        OffKind::Hm => out.push_str(&format!("{m:02}")),
        OffKind::HColonM => out.push_str(&format!(":{m:02}")),
        OffKind::Hms => out.push_str(&format!("{m:02}{s:02}")),
        OffKind::HColonMColonS => out.push_str(&format!(":{m:02}:{s:02}")),
    }
}

#[derive(Debug, Clone, Copy)]
enum Std {
    LongMonth,
    Month,
    NumMonth,
    ZeroMonth,
    LongWeekDay,
    WeekDay,
    Day,
    UnderDay,
    ZeroDay,
    UnderYearDay,
    ZeroYearDay,
    Hour,
    Hour12,
    ZeroHour12,
    Minute,
    ZeroMinute,
    Second,
    ZeroSecond,
    LongYear,
    Year,
    PM,
    Pm,
    Tz,
    Iso(OffKind),
    Num(OffKind),
    Frac {
        digits: usize,
        trim: bool,
        sep: char,
    },
}

fn starts(b: &[u8], i: usize, p: &str) -> bool {
    b.get(i..).is_some_and(|r| r.starts_with(p.as_bytes()))
}

fn lower_at(b: &[u8], i: usize) -> bool {
    b.get(i).is_some_and(u8::is_ascii_lowercase)
}

/// The Go layout element starting at `i`, with its length (Go's `nextStdChunk`).
/// Long by design: it follows Go's `nextStdChunk` case by case, so the two can be compared
/// line by line.
fn std_chunk(b: &[u8], i: usize) -> Option<(Std, usize)> {
    let c = *b.get(i)?;
    match c {
        b'J' if starts(b, i, "Jan") => {
            if starts(b, i, "January") {
                Some((Std::LongMonth, 7))
            } else if !lower_at(b, i + 3) {
                Some((Std::Month, 3))
            } else {
                None
            }
        }
        b'M' if starts(b, i, "Mon") => {
            if starts(b, i, "Monday") {
                Some((Std::LongWeekDay, 6))
            } else if !lower_at(b, i + 3) {
                Some((Std::WeekDay, 3))
            } else {
                None
            }
        }
        b'M' if starts(b, i, "MST") => Some((Std::Tz, 3)),
        b'0' => match b.get(i + 1) {
            Some(b'1') => Some((Std::ZeroMonth, 2)),
            Some(b'2') => Some((Std::ZeroDay, 2)),
            Some(b'3') => Some((Std::ZeroHour12, 2)),
            Some(b'4') => Some((Std::ZeroMinute, 2)),
            Some(b'5') => Some((Std::ZeroSecond, 2)),
            Some(b'6') => Some((Std::Year, 2)),
            Some(b'0') if b.get(i + 2) == Some(&b'2') => Some((Std::ZeroYearDay, 3)),
            _ => None,
        },
        b'1' => {
            if b.get(i + 1) == Some(&b'5') {
                Some((Std::Hour, 2))
            } else {
                Some((Std::NumMonth, 1))
            }
        }
        b'2' => {
            if starts(b, i, "2006") {
                Some((Std::LongYear, 4))
            } else {
                Some((Std::Day, 1))
            }
        }
        b'_' => {
            if b.get(i + 1) == Some(&b'2') {
                if starts(b, i + 1, "2006") {
                    // "_2006" is a literal underscore followed by the year.
                    None
                } else {
                    Some((Std::UnderDay, 2))
                }
            } else if starts(b, i, "__2") {
                Some((Std::UnderYearDay, 3))
            } else {
                None
            }
        }
        b'3' => Some((Std::Hour12, 1)),
        b'4' => Some((Std::Minute, 1)),
        b'5' => Some((Std::Second, 1)),
        b'P' if b.get(i + 1) == Some(&b'M') => Some((Std::PM, 2)),
        b'p' if b.get(i + 1) == Some(&b'm') => Some((Std::Pm, 2)),
        b'-' => offset_chunk(b, i, "-").map(|(k, n)| (Std::Num(k), n)),
        b'Z' => offset_chunk(b, i, "Z").map(|(k, n)| (Std::Iso(k), n)),
        b'.' | b',' => {
            let d = *b.get(i + 1)?;
            if d != b'0' && d != b'9' {
                return None;
            }
            let mut j = i + 1;
            while b.get(j) == Some(&d) {
                j += 1;
            }
            if b.get(j).is_some_and(u8::is_ascii_digit) {
                return None;
            }
            Some((
                Std::Frac {
                    digits: j - i - 1,
                    trim: d == b'9',
                    sep: c as char,
                },
                j - i,
            ))
        }
        _ => None,
    }
}

/// The offset element at `i`, which starts with `lead` (`-` or `Z`, already matched there).
fn offset_chunk(b: &[u8], i: usize, lead: &str) -> Option<(OffKind, usize)> {
    if !starts(b, i, lead) {
        return None;
    }
    for (suffix, kind) in [
        ("070000", OffKind::Hms),
        ("07:00:00", OffKind::HColonMColonS),
        ("0700", OffKind::Hm),
        ("07:00", OffKind::HColonM),
        ("07", OffKind::H),
    ] {
        if starts(b, i + lead.len(), suffix) {
            return Some((kind, lead.len() + suffix.len()));
        }
    }
    None
}

/// Parses Go's `Time.String()` form, the form data rows carry times in:
/// `2025-06-01 10:00:00[.fraction] +0000 UTC`. Anything else is `None`.
pub fn parse_go_string(s: &str) -> Option<GoTime> {
    let b = s.as_bytes();
    // Cheap shape check first: "YYYY-MM-DD HH:MM:SS".
    if b.len() < 25
        || b.get(4) != Some(&b'-')
        || b.get(10) != Some(&b' ')
        || b.get(13) != Some(&b':')
    {
        return None;
    }
    let (datetime, rest) = s.split_at_checked(19)?;
    let naive = plain_datetime(datetime)?;
    let mut rest = rest;
    let mut nanos: u32 = 0;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits: &str = &frac[..frac.bytes().take_while(u8::is_ascii_digit).count()];
        if digits.is_empty() || digits.len() > 9 {
            return None;
        }
        let padded = format!("{digits:0<9}");
        nanos = padded.parse().ok()?;
        rest = frac.get(digits.len()..)?;
    }
    let rest = rest.strip_prefix(' ')?;
    let (off, zone) = rest.split_once(' ')?;
    let ob = off.as_bytes();
    if ob.len() != 5 || !(ob.first() == Some(&b'+') || ob.first() == Some(&b'-')) {
        return None;
    }
    let hh: i32 = off.get(1..3)?.parse().ok()?;
    let mm: i32 = off.get(3..5)?.parse().ok()?;
    let mut secs = hh * 3600 + mm * 60;
    if ob.first() == Some(&b'-') {
        secs = -secs;
    }
    if zone.is_empty()
        || zone.len() > 6
        || !zone
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'+' || c == b'-')
    {
        return None;
    }
    let tz = FixedOffset::east_opt(secs)?;
    let dt = tz
        .from_local_datetime(&naive.with_nanosecond(nanos)?)
        .single()?;
    let numeric = zone.starts_with('+') || zone.starts_with('-');
    Some(GoTime {
        dt,
        zone: match zone {
            _ if numeric => None,
            UTC => Some(Cow::Borrowed(UTC)),
            other => Some(Cow::Owned(other.to_owned())),
        },
    })
}

/// `YYYY-MM-DD HH:MM:SS`, every field of ASCII digits (the prefix of Go's `Time.String()`),
/// read by position: this runs for every string a template reads from a data row. A second
/// of 60 reads as 59, as chrono's `%S` reads it once the fraction replaces its leap part.
fn plain_datetime(s: &str) -> Option<NaiveDateTime> {
    let b = s.as_bytes();
    let sep = |i: usize, c: u8| b.get(i) == Some(&c);
    if b.len() != 19
        || !(sep(4, b'-') && sep(7, b'-') && sep(10, b' ') && sep(13, b':') && sep(16, b':'))
    {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<u32> {
        b.get(from..to)?.iter().try_fold(0u32, |n, c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    };
    let year = i32::try_from(num(0, 4)?).ok()?;
    let date = NaiveDate::from_ymd_opt(year, num(5, 7)?, num(8, 10)?)?;
    let second = match num(17, 19)? {
        60 => 59,
        s => s,
    };
    date.and_hms_opt(num(11, 13)?, num(14, 16)?, second)
}

/// Go's `time.Parse(time.RFC3339, s)` (fractional seconds accepted), then the date-only
/// layout `2006-01-02`: the parsers of the original's `date` filter and grouping tags.
pub fn parse_loose(s: &str) -> Option<GoTime> {
    if let Some(t) = parse_rfc3339(s) {
        return Some(t);
    }
    let d = NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()?;
    if s.len() != 10 {
        return None;
    }
    Some(GoTime::utc(d.and_hms_opt(0, 0, 0)?.and_utc()))
}

fn parse_rfc3339(s: &str) -> Option<GoTime> {
    // Go requires "T" and a zone; chrono's parser is close but accepts lower-case and
    // spaces, so check the shape first.
    let b = s.as_bytes();
    if b.len() < 20 || b.get(10) != Some(&b'T') {
        return None;
    }
    let dt = DateTime::parse_from_rfc3339(s).ok()?;
    let utc_zone = s.ends_with('Z') || dt.offset().local_minus_utc() == 0;
    Some(GoTime {
        dt,
        zone: utc_zone.then_some(Cow::Borrowed(UTC)),
    })
}

#[cfg(test)]
mod tests {

    #[test]
    fn numbers_are_padded_as_format_pads_them() {
        for n in [
            0i64, 1, 7, 9, 10, 42, 99, 100, 365, 999, 1000, 2026, 9999, 10_000, 123_456,
        ]
        .into_iter()
        .flat_map(|n| [n, -n])
        .chain([i64::MIN, i64::MAX])
        {
            for width in [0usize, 2, 3, 4] {
                let mut zero = String::new();
                super::push_num(&mut zero, n, width, super::Fill::Zero);
                assert_eq!(zero, format!("{n:0width$}"), "{n} zero {width}");
                let mut space = String::new();
                super::push_num(&mut space, n, width, super::Fill::Space);
                assert_eq!(space, format!("{n:>width$}"), "{n} space {width}");
            }
        }
    }

    use super::*;

    #[test]
    fn plain_datetimes_read_as_chrono_reads_them() {
        let chrono_read = |s: &str| {
            NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S")
                .ok()
                .and_then(|t| t.with_nanosecond(0))
        };
        for s in [
            "2025-06-01 10:00:00",
            "0000-01-01 00:00:00",
            "9999-12-31 23:59:59",
            "2024-02-29 12:30:45",
            "2023-02-29 12:30:45",
            "2025-13-01 10:00:00",
            "2025-06-31 10:00:00",
            "2025-06-01 24:00:00",
            "2025-06-01 10:60:00",
            "2016-12-31 23:59:60",
            "2025-06-01 10:00:61",
            "2025-06-01T10:00:00",
            "2025-06-01 10:00:0x",
            "2025/06/01 10:00:00",
            "2025-06-01 10:00:00 ",
            "",
        ] {
            assert_eq!(plain_datetime(s), chrono_read(s), "{s:?}");
        }
    }

    #[test]
    fn go_string_round_trip() {
        let t = parse_go_string("2025-06-01 10:00:00 +0000 UTC").unwrap();
        assert_eq!(t.go_string(), "2025-06-01 10:00:00 +0000 UTC");
        let t = parse_go_string("2025-06-01 10:00:00.1234 -0300 -0300").unwrap();
        assert_eq!(t.go_string(), "2025-06-01 10:00:00.1234 -0300 -0300");
        assert!(parse_go_string("2025-06-01").is_none());
        assert!(parse_go_string("2025-06-01 10:00:00 +0000").is_none());
    }

    #[test]
    fn layouts() {
        let t = parse_go_string("2024-03-05 14:07:09.5 +0000 UTC").unwrap();
        assert_eq!(t.format("2006-01-02"), "2024-03-05");
        assert_eq!(t.format("02/01/2006 15:04:05"), "05/03/2024 14:07:09");
        assert_eq!(
            t.format("Jan 2, 2006 at 3:04pm (MST)"),
            "Mar 5, 2024 at 2:07pm (UTC)"
        );
        assert_eq!(
            t.format("Monday January _2 .000 .999"),
            "Tuesday March  5 .500 .5"
        );
        assert_eq!(t.format("20060102"), "20240305");
        assert_eq!(t.format("DD/01/2006"), "DD/03/2024");
        assert_eq!(
            t.format("2006-01-02T15:04:05Z07:00"),
            "2024-03-05T14:07:09Z"
        );
    }

    #[test]
    fn loose_parsers() {
        assert_eq!(
            parse_loose("2024-01-15T10:30:00Z").unwrap().go_string(),
            "2024-01-15 10:30:00 +0000 UTC"
        );
        assert_eq!(
            parse_loose("2024-01-15").unwrap().go_string(),
            "2024-01-15 00:00:00 +0000 UTC"
        );
        assert_eq!(
            parse_loose("2024-01-15T10:30:00.25-03:00")
                .unwrap()
                .go_string(),
            "2024-01-15 10:30:00.25 -0300 -0300"
        );
        assert!(parse_loose("15/01/2024").is_none());
    }
}
