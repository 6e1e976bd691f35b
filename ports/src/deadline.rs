//! Filing deadlines: what is due when, how it recurs, and whether it was delivered.
//!
//! Status is never stored; it is derived from the stored fields and "now" by [`Deadline::view`],
//! the one function every adapter and the API use, so a status filter and the displayed status
//! can never disagree (reference bug H.12).
//!
//! Recurrence: a delivered recurring deadline whose due date has passed rolls to its next
//! occurrence (one step at a time, so a missed occurrence shows as overdue). Delivering acts on
//! that effective occurrence and persists it. An undelivered overdue deadline does not roll: the
//! filing is still owed. Monthly recurrence keeps the original day of month (`anchor_day`), so
//! 31 Jan → 28 Feb → 31 Mar, with no drift.
use crate::ids::{DeadlineId, TemplateId};
use crate::tenant::TenantId;
use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Kind of deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeadlineType {
    /// Imposed by a regulator.
    Regulatory,
    /// Defined by the user.
    Custom,
}

impl DeadlineType {
    /// Every type.
    pub const ALL: [DeadlineType; 2] = [Self::Regulatory, Self::Custom];
    /// Parses `regulatory` / `custom` (case-insensitive).
    pub fn parse(raw: &str) -> Option<Self> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "regulatory" => Some(Self::Regulatory),
            "custom" => Some(Self::Custom),
            _ => None,
        }
    }
    /// Lower-case name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Regulatory => "regulatory",
            Self::Custom => "custom",
        }
    }
}

/// How often a deadline recurs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Frequency {
    /// Does not recur.
    Once,
    /// Every day.
    Daily,
    /// Every 7 days.
    Weekly,
    /// Every month on the anchor day (clamped to the month's length).
    Monthly,
    /// Twice a year, in the two `monthsOfYear`.
    Semiannual,
    /// Once a year, in the one `monthsOfYear`.
    Annual,
}

impl Frequency {
    /// Every frequency.
    pub const ALL: [Frequency; 6] = [
        Self::Once,
        Self::Daily,
        Self::Weekly,
        Self::Monthly,
        Self::Semiannual,
        Self::Annual,
    ];
    /// Parses a frequency name (case-insensitive).
    pub fn parse(raw: &str) -> Option<Self> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "once" => Some(Self::Once),
            "daily" => Some(Self::Daily),
            "weekly" => Some(Self::Weekly),
            "monthly" => Some(Self::Monthly),
            "semiannual" => Some(Self::Semiannual),
            "annual" => Some(Self::Annual),
            _ => None,
        }
    }
    /// Lower-case name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Once => "once",
            Self::Daily => "daily",
            Self::Weekly => "weekly",
            Self::Monthly => "monthly",
            Self::Semiannual => "semiannual",
            Self::Annual => "annual",
        }
    }
    /// How many `monthsOfYear` values the frequency requires (`None`: the list is forbidden).
    pub fn required_months(&self) -> Option<usize> {
        match self {
            Self::Semiannual => Some(2),
            Self::Annual => Some(1),
            _ => None,
        }
    }
}

/// Derived status of a deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeadlineStatus {
    /// Not delivered, due date not passed.
    Pending,
    /// Not delivered, due date passed.
    Overdue,
    /// Delivered for the current occurrence.
    Delivered,
}

impl DeadlineStatus {
    /// Every status.
    pub const ALL: [DeadlineStatus; 3] = [Self::Pending, Self::Overdue, Self::Delivered];
    /// Parses a status name (case-insensitive).
    pub fn parse(raw: &str) -> Option<Self> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "pending" => Some(Self::Pending),
            "overdue" => Some(Self::Overdue),
            "delivered" => Some(Self::Delivered),
            _ => None,
        }
    }
    /// Lower-case name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Overdue => "overdue",
            Self::Delivered => "delivered",
        }
    }
}

/// The colour rule as an ECMA-262 pattern (for the OpenAPI document).
pub const COLOR_PATTERN: &str = "^#[0-9A-Fa-f]{6}$";

/// A colour `#RRGGBB`, stored upper-case.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Color(String);

impl Color {
    /// Parses `#` followed by exactly six hex digits.
    pub fn parse(raw: &str) -> Option<Self> {
        let ok = raw.len() == 7
            && raw.starts_with('#')
            && raw[1..].chars().all(|c| c.is_ascii_hexdigit());
        ok.then(|| Self(raw.to_ascii_uppercase()))
    }
    /// The colour as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Color {
    type Error = String;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value).ok_or(value)
    }
}
impl From<Color> for String {
    fn from(c: Color) -> Self {
        c.0
    }
}
impl fmt::Display for Color {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Bounds of `notifyDaysBefore`.
pub const MAX_NOTIFY_DAYS_BEFORE: i64 = 366;
/// Upper bound on a deadline name.
pub const MAX_NAME_LEN: usize = 200;
/// Upper bound on a deadline description.
pub const MAX_DESCRIPTION_LEN: usize = 2000;

/// A rule a deadline violates. Each maps to one stable API error code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeadlineRuleError {
    /// `name` empty or too long.
    #[error("name must be 1-{MAX_NAME_LEN} characters")]
    InvalidName,
    /// `description` too long.
    #[error("description must be at most {MAX_DESCRIPTION_LEN} characters")]
    InvalidDescription,
    /// Unknown type.
    #[error("type must be one of: regulatory, custom")]
    InvalidType,
    /// Unknown frequency.
    #[error("frequency must be one of: once, daily, weekly, monthly, semiannual, annual")]
    InvalidFrequency,
    /// Colour not `#RRGGBB`.
    #[error("color must match ^#[0-9A-Fa-f]{{6}}$")]
    InvalidColor,
    /// monthsOfYear given for a frequency that takes none.
    #[error(
        "monthsOfYear is only allowed for semiannual (2 months) and annual (1 month) deadlines"
    )]
    MonthsNotApplicable,
    /// monthsOfYear missing for semiannual/annual.
    #[error("monthsOfYear is required for semiannual and annual deadlines")]
    MonthsRequired,
    /// A month outside 1..=12.
    #[error("monthsOfYear values must be between 1 and 12")]
    MonthOutOfRange,
    /// Wrong number of months, or a repeated month.
    #[error("{frequency} deadlines need exactly {expected} distinct month(s) in monthsOfYear")]
    MonthsCount {
        /// The frequency.
        frequency: &'static str,
        /// Required count.
        expected: usize,
    },
    /// notifyDaysBefore outside 0..=366.
    #[error("notifyDaysBefore must be between 0 and {MAX_NOTIFY_DAYS_BEFORE}")]
    InvalidNotifyDays,
    /// The due date is before today (UTC).
    #[error("dueDate must not be in the past")]
    DueDateInPast,
}

/// Validates `monthsOfYear` against a frequency and returns the sorted list.
pub fn validate_months(
    frequency: Frequency,
    months: &[u32],
) -> Result<Vec<u32>, DeadlineRuleError> {
    match frequency.required_months() {
        None if !months.is_empty() => Err(DeadlineRuleError::MonthsNotApplicable),
        None => Ok(Vec::new()),
        Some(_) if months.is_empty() => Err(DeadlineRuleError::MonthsRequired),
        Some(n) => {
            if months.iter().any(|m| !(1..=12).contains(m)) {
                return Err(DeadlineRuleError::MonthOutOfRange);
            }
            let mut sorted = months.to_vec();
            sorted.sort_unstable();
            sorted.dedup();
            if sorted.len() != n || months.len() != n {
                return Err(DeadlineRuleError::MonthsCount {
                    frequency: frequency.as_str(),
                    expected: n,
                });
            }
            Ok(sorted)
        }
    }
}

/// A stored deadline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deadline {
    /// Server-generated id.
    pub id: DeadlineId,
    /// Owning tenant.
    pub tenant: TenantId,
    /// Display name.
    pub name: String,
    /// Optional description.
    pub description: Option<String>,
    /// Kind.
    pub kind: DeadlineType,
    /// The template whose report fulfils this deadline, if any.
    pub template_id: Option<TemplateId>,
    /// The template's description when the link was made (display only).
    pub template_name: Option<String>,
    /// Due instant of the stored occurrence.
    pub due_date: DateTime<Utc>,
    /// Day of month recurrence is anchored to (the day of the due date the user set).
    pub anchor_day: u32,
    /// Recurrence.
    pub frequency: Frequency,
    /// Months for semiannual / annual recurrence, sorted.
    pub months_of_year: Vec<u32>,
    /// Inactive deadlines are kept but not notified.
    pub active: bool,
    /// How many days before the due date notifications start.
    pub notify_days_before: u32,
    /// Display colour.
    pub color: Color,
    /// When the stored occurrence was delivered.
    pub delivered_at: Option<DateTime<Utc>>,
    /// Optimistic-concurrency version.
    pub version: u64,
    /// Creation instant.
    pub created_at: DateTime<Utc>,
    /// Last change instant.
    pub updated_at: DateTime<Utc>,
    /// Soft-delete instant.
    pub deleted_at: Option<DateTime<Utc>>,
}

/// The deadline as the user sees it at a given instant (after recurrence roll-over).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadlineView {
    /// Due instant of the current occurrence.
    pub due_date: DateTime<Utc>,
    /// Delivery instant of the current occurrence.
    pub delivered_at: Option<DateTime<Utc>>,
    /// Derived status.
    pub status: DeadlineStatus,
}

fn days_in_month(year: i32, month: u32) -> u32 {
    let (ny, nm) = if month == 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    };
    NaiveDate::from_ymd_opt(ny, nm, 1)
        .and_then(|d| d.pred_opt())
        .map(|d| d.day())
        .unwrap_or(28)
}

fn at_month(reference: DateTime<Utc>, year: i32, month: u32, anchor_day: u32) -> DateTime<Utc> {
    let day = anchor_day.clamp(1, days_in_month(year, month));
    NaiveDate::from_ymd_opt(year, month, day)
        .and_then(|d| {
            d.and_time(reference.time())
                .and_local_timezone(Utc)
                .single()
        })
        .unwrap_or(reference)
}

impl Deadline {
    /// The occurrence after `due`, or `None` for a one-off deadline.
    pub fn occurrence_after(&self, due: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self.frequency {
            Frequency::Once => None,
            Frequency::Daily => Some(due + Duration::days(1)),
            Frequency::Weekly => Some(due + Duration::days(7)),
            Frequency::Monthly => {
                let (y, m) = if due.month() == 12 {
                    (due.year() + 1, 1)
                } else {
                    (due.year(), due.month() + 1)
                };
                Some(at_month(due, y, m, self.anchor_day))
            }
            Frequency::Semiannual | Frequency::Annual => {
                let months = if self.months_of_year.is_empty() {
                    vec![due.month()]
                } else {
                    self.months_of_year.clone()
                };
                let next_in_year = months.iter().copied().find(|m| *m > due.month());
                let (y, m) = match next_in_year {
                    Some(m) => (due.year(), m),
                    None => (due.year() + 1, months[0]),
                };
                Some(at_month(due, y, m, self.anchor_day))
            }
        }
    }

    /// The stored occurrence's successor, persisted by adapters that need to query on it.
    pub fn next_due_date(&self) -> Option<DateTime<Utc>> {
        self.occurrence_after(self.due_date)
    }

    /// The deadline as seen at `now`. MUST be the only place status is derived.
    pub fn view(&self, now: DateTime<Utc>) -> DeadlineView {
        match (self.delivered_at, self.next_due_date()) {
            // A delivered recurring occurrence that has passed rolls to the next one.
            (Some(_), Some(next)) if now > self.due_date => DeadlineView {
                due_date: next,
                delivered_at: None,
                status: if now > next {
                    DeadlineStatus::Overdue
                } else {
                    DeadlineStatus::Pending
                },
            },
            (Some(at), _) => DeadlineView {
                due_date: self.due_date,
                delivered_at: Some(at),
                status: DeadlineStatus::Delivered,
            },
            (None, _) => DeadlineView {
                due_date: self.due_date,
                delivered_at: None,
                status: if now > self.due_date {
                    DeadlineStatus::Overdue
                } else {
                    DeadlineStatus::Pending
                },
            },
        }
    }

    /// Whole calendar days (UTC) from `now` to the effective due date; negative when overdue.
    pub fn days_until_due(&self, now: DateTime<Utc>) -> i64 {
        (self.view(now).due_date.date_naive() - now.date_naive()).num_days()
    }

    /// True when the deadline is soft-deleted.
    pub fn is_deleted(&self) -> bool {
        self.deleted_at.is_some()
    }
}

/// The uniqueness key of reference B.3: (type, template, due date, frequency) among live
/// deadlines that have a template.
pub fn uniqueness_key(
    d: &Deadline,
) -> Option<(DeadlineType, TemplateId, DateTime<Utc>, Frequency)> {
    if d.is_deleted() {
        return None;
    }
    d.template_id.map(|t| (d.kind, t, d.due_date, d.frequency))
}

/// Start of the UTC day containing `now`: a due date before it is "in the past".
pub fn start_of_today(now: DateTime<Utc>) -> DateTime<Utc> {
    Utc.from_utc_datetime(&now.date_naive().and_hms_opt(0, 0, 0).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn dl(due: DateTime<Utc>, frequency: Frequency, months: Vec<u32>) -> Deadline {
        Deadline {
            id: DeadlineId::new(),
            tenant: TenantId::parse("t").unwrap(),
            name: "n".into(),
            description: None,
            kind: DeadlineType::Custom,
            template_id: None,
            template_name: None,
            due_date: due,
            anchor_day: due.day(),
            frequency,
            months_of_year: months,
            active: true,
            notify_days_before: 3,
            color: Color::parse("#aabbcc").unwrap(),
            delivered_at: None,
            version: 1,
            created_at: due,
            updated_at: due,
            deleted_at: None,
        }
    }

    fn ymd(y: i32, m: u32, d: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, m, d, 12, 0, 0).unwrap()
    }

    #[test]
    fn monthly_keeps_anchor_day() {
        let d = dl(ymd(2027, 1, 31), Frequency::Monthly, vec![]);
        let feb = d.occurrence_after(d.due_date).unwrap();
        assert_eq!(feb, ymd(2027, 2, 28));
        assert_eq!(d.occurrence_after(feb).unwrap(), ymd(2027, 3, 31));
    }

    #[test]
    fn semiannual_and_annual() {
        let d = dl(ymd(2027, 3, 15), Frequency::Semiannual, vec![3, 9]);
        assert_eq!(d.next_due_date(), Some(ymd(2027, 9, 15)));
        assert_eq!(d.occurrence_after(ymd(2027, 9, 15)), Some(ymd(2028, 3, 15)));
        let a = dl(ymd(2027, 6, 30), Frequency::Annual, vec![6]);
        assert_eq!(a.next_due_date(), Some(ymd(2028, 6, 30)));
    }

    #[test]
    fn status_and_rollover() {
        let mut d = dl(ymd(2027, 1, 10), Frequency::Monthly, vec![]);
        assert_eq!(d.view(ymd(2027, 1, 9)).status, DeadlineStatus::Pending);
        assert_eq!(d.view(ymd(2027, 1, 11)).status, DeadlineStatus::Overdue);
        d.delivered_at = Some(ymd(2027, 1, 9));
        assert_eq!(d.view(ymd(2027, 1, 9)).status, DeadlineStatus::Delivered);
        let v = d.view(ymd(2027, 1, 20));
        assert_eq!(
            (v.status, v.due_date),
            (DeadlineStatus::Pending, ymd(2027, 2, 10))
        );
        assert_eq!(d.view(ymd(2027, 3, 1)).status, DeadlineStatus::Overdue);
        let mut once = dl(ymd(2027, 1, 10), Frequency::Once, vec![]);
        once.delivered_at = Some(ymd(2027, 1, 1));
        assert_eq!(once.view(ymd(2030, 1, 1)).status, DeadlineStatus::Delivered);
    }

    #[test]
    fn colors() {
        assert_eq!(Color::parse("#a1B2c3").unwrap().as_str(), "#A1B2C3");
        for bad in ["a1b2c3", "#a1b2c", "#a1b2c3d", "#g1b2c3", ""] {
            assert!(Color::parse(bad).is_none(), "{bad}");
        }
    }

    fn freq() -> impl Strategy<Value = Frequency> {
        prop_oneof![
            Just(Frequency::Once),
            Just(Frequency::Daily),
            Just(Frequency::Weekly),
            Just(Frequency::Monthly),
            Just(Frequency::Semiannual),
            Just(Frequency::Annual)
        ]
    }

    proptest! {
        #[test]
        fn months_rules(f in freq(), months in proptest::collection::vec(0u32..15, 0..4)) {
            let r = validate_months(f, &months);
            match f.required_months() {
                None => prop_assert_eq!(r.is_ok(), months.is_empty()),
                Some(n) => {
                    let mut s = months.clone(); s.sort_unstable(); s.dedup();
                    let ok = months.len() == n && s.len() == n && months.iter().all(|m| (1..=12).contains(m));
                    prop_assert_eq!(r.is_ok(), ok);
                    if let Ok(v) = r { prop_assert!(v.windows(2).all(|w| w[0] < w[1])); }
                }
            }
        }

        #[test]
        fn occurrences_strictly_increase_and_keep_anchor(
            f in freq(), y in 2026i32..2040, m in 1u32..=12, day in 1u32..=31, steps in 1usize..30,
            months in proptest::sample::subsequence((1u32..=12).collect::<Vec<_>>(), 2),
        ) {
            let day = day.min(days_in_month(y, m));
            let due = Utc.with_ymd_and_hms(y, m, day, 9, 30, 0).unwrap();
            let ms = match f { Frequency::Semiannual => months.clone(), Frequency::Annual => vec![months[0]], _ => vec![] };
            let d = dl(due, f, ms.clone());
            let mut cur = due;
            for _ in 0..steps {
                match d.occurrence_after(cur) {
                    None => { prop_assert_eq!(f, Frequency::Once); break; }
                    Some(next) => {
                        prop_assert!(next > cur);
                        prop_assert_eq!(next.time(), due.time());
                        if matches!(f, Frequency::Monthly | Frequency::Semiannual | Frequency::Annual) {
                            prop_assert_eq!(next.day(), day.min(days_in_month(next.year(), next.month())));
                        }
                        if !ms.is_empty() { prop_assert!(ms.contains(&next.month())); }
                        cur = next;
                    }
                }
            }
        }

        #[test]
        fn status_is_consistent(f in freq(), offset_h in -2000i64..2000, delivered in any::<bool>()) {
            let due = ymd(2030, 5, 31);
            let mut d = dl(due, f, match f { Frequency::Semiannual => vec![5, 11], Frequency::Annual => vec![5], _ => vec![] });
            if delivered { d.delivered_at = Some(due - Duration::hours(1)); }
            let now = due + Duration::hours(offset_h);
            let v = d.view(now);
            match v.status {
                DeadlineStatus::Delivered => prop_assert!(v.delivered_at.is_some()),
                DeadlineStatus::Overdue => prop_assert!(now > v.due_date && v.delivered_at.is_none()),
                DeadlineStatus::Pending => prop_assert!(now <= v.due_date && v.delivered_at.is_none()),
            }
        }
    }
}
