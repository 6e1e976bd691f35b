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

/// The paging of a list operation: `page`, `limit`, the sort order under either of its names,
/// and the original's `cursor` (validated, not used for paging).
///
/// MUST answer `InvalidQueryParameter` for a bad page, limit, sort order or cursor.
pub fn list_paging(
    page: Option<i64>,
    limit: Option<i64>,
    sort: (Option<String>, Option<String>),
    cursor: Option<&str>,
    max: u32,
) -> Result<PageRequest, AppError> {
    let sort = either(sort.0, sort.1, "sort_order", "sortOrder")?;
    let req = page_request(page, limit, sort.map(|(v, _)| v), max)?;
    check_cursor(cursor)?;
    Ok(req)
}

/// One parameter given under its snake_case name (the original's) and/or its camelCase alias:
/// the value with the name the caller used (for error messages).
///
/// MUST answer `InvalidQueryParameter` when both are given with different values (which one
/// would the caller mean?); the same value twice is fine.
pub fn either<'a>(
    snake: Option<String>,
    camel: Option<String>,
    snake_name: &'a str,
    camel_name: &'a str,
) -> Result<Option<(String, &'a str)>, AppError> {
    match (snake, camel) {
        (Some(a), Some(b)) if a != b => Err(AppError::new(
            Code::InvalidQueryParameter,
            format!(
                "{snake_name} '{a}' and its alias {camel_name} '{b}' disagree; send one of them"
            ),
        )
        .field(snake_name, format!("differs from {camel_name}"))
        .field(camel_name, format!("differs from {snake_name}"))),
        (Some(a), _) => Ok(Some((a, snake_name))),
        (None, Some(b)) => Ok(Some((b, camel_name))),
        (None, None) => Ok(None),
    }
}

/// A window bound given as `named` (`start_date`/`startDate`, or the end's) and/or under its
/// earlier name `earlier` (`createdFrom`, `createdTo`): the value with the name used.
///
/// MUST answer `InvalidQueryParameter` when both are given with different values.
pub fn same_bound<'a>(
    named: Option<(String, &'a str)>,
    earlier_value: Option<String>,
    earlier: &'a str,
) -> Result<Option<(String, &'a str)>, AppError> {
    match (named, earlier_value) {
        (Some((a, n)), Some(b)) if a != b => Err(AppError::new(
            Code::InvalidQueryParameter,
            format!("{n} '{a}' and {earlier} '{b}' name the same bound differently"),
        )
        .field(n, format!("differs from {earlier}"))),
        (Some(a), _) => Ok(Some(a)),
        (None, b) => Ok(b.map(|b| (b, earlier))),
    }
}

/// `output_format` / its alias `outputFormat` of a list operation: `None` when absent,
/// `InvalidOutputFormat` naming the parameter the caller used for anything but html, pdf,
/// csv, xml or txt (any case).
pub fn output_format_filter(
    snake: Option<String>,
    camel: Option<String>,
) -> Result<Option<reporter_ports::template::OutputFormat>, AppError> {
    let Some((f, name)) = either(snake, camel, "output_format", "outputFormat")? else {
        return Ok(None);
    };
    reporter_ports::template::OutputFormat::parse(&f)
        .map(Some)
        .ok_or_else(|| {
            AppError::new(
                Code::InvalidOutputFormat,
                format!("{name} '{f}' is not one of html, pdf, csv, xml, txt"),
            )
            .field(name, "html|pdf|csv|xml|txt")
        })
}

/// The original's pagination cursor: base64 (standard alphabet, padded) of a JSON object
/// `{"id": "<string>", "points_next": <bool>}`. Like the original, a cursor is validated and
/// then not used for paging (`page` is).
#[derive(Debug, serde::Deserialize)]
struct Cursor {
    #[serde(default)]
    #[allow(dead_code)]
    id: String,
    #[serde(default)]
    #[allow(dead_code)]
    points_next: bool,
}

/// Validates a `cursor` query parameter.
///
/// MUST answer `InvalidQueryParameter` (field `cursor`) when it is not base64 of a JSON
/// object whose `id` is a string and `points_next` a boolean (both optional).
pub fn check_cursor(raw: Option<&str>) -> Result<(), AppError> {
    use base64::Engine;
    let Some(raw) = raw else {
        return Ok(());
    };
    let invalid = || {
        AppError::new(
            Code::InvalidQueryParameter,
            "cursor is not a valid pagination cursor (base64 of {\"id\": string, \"points_next\": bool})",
        )
        .field("cursor", "base64 of {\"id\": string, \"points_next\": bool}")
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(raw.trim())
        .map_err(|_| invalid())?;
    serde_json::from_slice::<Cursor>(&bytes).map_err(|_| invalid())?;
    Ok(())
}

/// A warning returned with an accepted template.
#[derive(Debug, Clone, PartialEq, Eq, Object, serde::Serialize)]
#[oai(rename = "Warning")]
#[serde(rename_all = "camelCase")]
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
