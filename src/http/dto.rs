//! Request/response shapes shared by several operations.
use crate::app::{AppError, Code};
use poem_openapi::Object;
use reporter_ports::page::{PageRequest, SortOrder};

/// Validates the paging query parameters.
///
/// MUST answer `PaginationLimit` for a limit outside `1..=max`, `InvalidQueryParameter` for a
/// page below 1 and `InvalidSortOrder` for anything but asc/desc.
pub fn page_request(
    page: Option<i64>,
    limit: Option<i64>,
    sort_order: Option<String>,
    max: u32,
) -> Result<PageRequest, AppError> {
    let page = page.unwrap_or(1);
    let limit = limit.unwrap_or(i64::from(PageRequest::DEFAULT_LIMIT));
    if page < 1 || page > i64::from(u32::MAX) {
        return Err(
            AppError::new(Code::InvalidQueryParameter, "page must be an integer >= 1")
                .field("page", ">= 1"),
        );
    }
    if limit < 1 || limit > i64::from(max) {
        return Err(AppError::new(
            Code::PaginationLimit,
            format!("limit must be between 1 and {max}"),
        )
        .field("limit", format!("1..={max}")));
    }
    let sort = match sort_order.as_deref() {
        None => SortOrder::Desc,
        Some(s) => SortOrder::parse(s).ok_or_else(|| {
            AppError::new(
                Code::InvalidSortOrder,
                format!("sort_order '{s}' is not asc or desc"),
            )
            .field("sort_order", "asc|desc")
        })?,
    };
    #[allow(clippy::cast_possible_truncation)]
    PageRequest::new(page as u32, limit as u32, sort, max)
        .map_err(|e| AppError::new(Code::InvalidQueryParameter, e.to_string()))
}

/// A warning returned with an accepted template.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
pub struct WarningDto {
    /// Stable warning code, e.g. `DATA_SOURCE_UNAVAILABLE`.
    pub code: String,
    /// What it is about.
    pub field: String,
    /// Human message.
    pub message: String,
}

impl From<&crate::app::Warning> for WarningDto {
    fn from(w: &crate::app::Warning) -> Self {
        Self {
            code: w.code.to_owned(),
            field: w.field.clone(),
            message: w.message.clone(),
        }
    }
}

/// Parses a UUID path parameter.
pub fn path_uuid<T: std::str::FromStr>(raw: &str, name: &str) -> Result<T, AppError> {
    raw.parse::<T>().map_err(|_| {
        AppError::new(
            Code::InvalidPathParameter,
            format!("{name} '{raw}' is not a UUID"),
        )
        .field(name, "must be a UUID")
    })
}

/// Parses a `YYYY-MM-DD` day into its `[start, end)` UTC window.
pub fn day_window(
    raw: &str,
    name: &str,
) -> Result<(chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>), AppError> {
    let day = chrono::NaiveDate::parse_from_str(raw.trim(), "%Y-%m-%d").map_err(|_| {
        AppError::new(
            Code::InvalidDate,
            format!("{name} '{raw}' is not a YYYY-MM-DD date"),
        )
        .field(name, "YYYY-MM-DD")
    })?;
    let start = day.and_hms_opt(0, 0, 0).map(|d| d.and_utc());
    let end = day
        .succ_opt()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|d| d.and_utc());
    match (start, end) {
        (Some(s), Some(e)) => Ok((s, e)),
        _ => Err(
            AppError::new(Code::InvalidDate, format!("{name} '{raw}' is out of range"))
                .field(name, "YYYY-MM-DD"),
        ),
    }
}

/// Parses an RFC 3339 instant or a `YYYY-MM-DD` day (start of day, or end of day with `end`).
pub fn instant_or_day(
    raw: &str,
    name: &str,
    end: bool,
) -> Result<chrono::DateTime<chrono::Utc>, AppError> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(raw.trim()) {
        return Ok(t.with_timezone(&chrono::Utc));
    }
    let (s, e) = day_window(raw, name).map_err(|_| {
        AppError::new(
            Code::InvalidDate,
            format!("{name} '{raw}' is not an RFC 3339 date-time or YYYY-MM-DD date"),
        )
        .field(name, "RFC 3339 or YYYY-MM-DD")
    })?;
    Ok(if end {
        e - chrono::Duration::milliseconds(1)
    } else {
        s
    })
}
