//! The application's error vocabulary. Every failure a client can see has one stable code;
//! the REST edge maps [`ErrorKind`] to an HTTP status once (`http::error`).
use std::collections::BTreeMap;
use std::fmt;

/// The class of an error, which decides its HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// 400.
    Validation,
    /// 401.
    Unauthorized,
    /// 403.
    Forbidden,
    /// 404.
    NotFound,
    /// 405.
    MethodNotAllowed,
    /// 409.
    Conflict,
    /// 408.
    RequestTimeout,
    /// 413.
    PayloadTooLarge,
    /// 414.
    UriTooLong,
    /// 431.
    HeadersTooLarge,
    /// 429.
    TooManyRequests,
    /// 422.
    Unprocessable,
    /// 503.
    Unavailable,
    /// 500: a bug. Never caused by input.
    Internal,
}

macro_rules! codes {
    ($($variant:ident = $code:literal, $kind:ident, $title:literal;)*) => {
        /// Stable error codes (the reference's `TPL-` family where one exists).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Code { $(#[doc = $title] $variant,)* }

        impl Code {
            /// Every code, for documentation and tests.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];
            /// The wire code, e.g. `TPL-0011`.
            pub fn as_str(&self) -> &'static str { match self { $(Code::$variant => $code,)* } }
            /// The error class.
            pub fn kind(&self) -> ErrorKind { match self { $(Code::$variant => ErrorKind::$kind,)* } }
            /// Short human title.
            pub fn title(&self) -> &'static str { match self { $(Code::$variant => $title,)* } }
        }
    };
}

codes! {
    MissingFields = "TPL-0001", Validation, "Missing required fields";
    InvalidFileFormat = "TPL-0002", Validation, "Invalid file format";
    InvalidOutputFormat = "TPL-0003", Validation, "Invalid output format";
    InvalidUpload = "TPL-0005", Validation, "Invalid uploaded file";
    EmptyFile = "TPL-0006", Validation, "Empty file";
    InvalidContent = "TPL-0007", Validation, "File content invalid for the output format";
    TemplateSyntax = "TPL-0008", Validation, "Invalid template syntax";
    InvalidPathParameter = "TPL-0009", Validation, "Invalid path parameter";
    FormatChangeWithoutFile = "TPL-0010", Validation, "Output format change requires a new file";
    NotFound = "TPL-0011", NotFound, "Entity not found";
    InvalidTemplateId = "TPL-0012", Validation, "Invalid template id";
    UnknownField = "TPL-0014", Validation, "Unknown data source field";
    UnexpectedFields = "TPL-0015", Validation, "Unexpected fields in the request";
    BadRequest = "TPL-0017", Validation, "Bad request";
    Internal = "TPL-0018", Internal, "Internal server error";
    InvalidQueryParameter = "TPL-0019", Validation, "Invalid query parameter";
    ReportNotFinished = "TPL-0029", Unprocessable, "Report not finished";
    InvalidDate = "TPL-0020", Validation, "Invalid date format";
    InvalidDateRange = "TPL-0023", Validation, "Invalid date range";
    PaginationLimit = "TPL-0024", Validation, "Pagination limit out of range";
    InvalidSortOrder = "TPL-0025", Validation, "Invalid sort order";
    UnknownTable = "TPL-0030", Validation, "Unknown data source table";
    UnknownDataSource = "TPL-0031", Validation, "Unknown data source";
    ScriptDetected = "TPL-0032", Validation, "Script or event handler detected";
    StorageUnavailable = "TPL-0034", Unavailable, "Object storage unavailable";
    ArtifactGone = "TPL-0035", NotFound, "Report artifact no longer stored";
    IdempotencyInFlight = "TPL-0039", Conflict, "A request with this idempotency key is in progress";
    DuplicateDeadline = "TPL-0045", Conflict, "Duplicate deadline";
    InvalidDeadlineType = "TPL-0046", Validation, "Invalid deadline type";
    InvalidFrequency = "TPL-0047", Validation, "Invalid deadline frequency";
    InvalidColor = "TPL-0048", Validation, "Invalid deadline color";
    MonthsNotApplicable = "TPL-0050", Validation, "monthsOfYear not applicable to the frequency";
    MonthsRequired = "TPL-0052", Validation, "monthsOfYear required";
    MonthOutOfRange = "TPL-0054", Validation, "monthsOfYear value out of range";
    DueDateInPast = "TPL-0055", Unprocessable, "Due date in the past";
    MonthsCount = "TPL-0056", Validation, "monthsOfYear count mismatch";
    DataSourceNotFound = "TPL-0057", NotFound, "Data source not found";
    DataSourceUnavailable = "TPL-0058", Unavailable, "Data source unavailable";
    TemplateTooLarge = "TPL-0063", PayloadTooLarge, "Template file too large";
    InvalidFieldValue = "TPL-0064", Validation, "Invalid field value";
    AlreadyDelivered = "TPL-0065", Unprocessable, "Deadline already delivered";
    NotDelivered = "TPL-0066", Unprocessable, "Deadline not delivered";
    ConcurrentModification = "TPL-0067", Conflict, "The record changed concurrently; retry";
    InvalidFilter = "TPL-0068", Validation, "Invalid report filter";
    TemplateTooComplex = "TPL-0080", Validation, "Template too complex";
    TemplateParseTimeout = "TPL-0081", Validation, "Template too slow to parse";
    TemplateParseMemory = "TPL-0082", Validation, "Template parse exceeded its memory limit";
    SandboxUnavailable = "TPL-0083", Unavailable, "Template sandbox unavailable";
    InvalidBlocks = "TPL-0090", Validation, "Invalid template blocks";
    NestingTooDeep = "TPL-0091", Validation, "Blocks or request body nested too deeply";
    TooManyBlocks = "TPL-0092", Validation, "Too many template blocks";
    Unauthorized = "TPL-0401", Unauthorized, "Unauthorized";
    Forbidden = "TPL-0403", Forbidden, "Forbidden";
    RouteNotFound = "TPL-0404", NotFound, "Route not found";
    MethodNotAllowed = "TPL-0405", MethodNotAllowed, "Method not allowed";
    PayloadTooLarge = "TPL-0413", PayloadTooLarge, "Request body too large";
    RequestTimeout = "TPL-0408", RequestTimeout, "Request body too slow";
    UriTooLong = "TPL-0414", UriTooLong, "Request URI too long";
    HeadersTooLarge = "TPL-0431", HeadersTooLarge, "Request headers too large";
    RateLimited = "TPL-0429", TooManyRequests, "Too Many Requests";
    UnsupportedMediaType = "TPL-0415", Validation, "Unsupported content type";
    ServiceUnavailable = "TPL-0503", Unavailable, "Service unavailable";
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error a client sees: a stable code, a message meant for people, and optionally the
/// entity type and per-field messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct AppError {
    /// Stable code.
    pub code: Code,
    /// Human message. Never contains internal error text.
    pub message: String,
    /// Entity the error is about (`Template`, `Deadline`, ...).
    pub entity: Option<&'static str>,
    /// Field → message.
    pub fields: Option<BTreeMap<String, String>>,
}

impl AppError {
    /// An error with a code and message.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            entity: None,
            fields: None,
        }
    }
    /// A not-found error about an entity.
    pub fn not_found(entity: &'static str) -> Self {
        Self {
            code: Code::NotFound,
            message: format!("{entity} not found"),
            entity: Some(entity),
            fields: None,
        }
    }
    /// Adds the entity.
    pub fn entity(mut self, entity: &'static str) -> Self {
        self.entity = Some(entity);
        self
    }
    /// Adds one field message.
    pub fn field(mut self, field: impl Into<String>, message: impl Into<String>) -> Self {
        self.fields
            .get_or_insert_with(BTreeMap::new)
            .insert(field.into(), message.into());
        self
    }
    /// Adds field messages.
    pub fn fields(mut self, fields: BTreeMap<String, String>) -> Self {
        if !fields.is_empty() {
            self.fields.get_or_insert_with(BTreeMap::new).extend(fields);
        }
        self
    }
    /// Maps a storage failure. `Unavailable` details go to the log, not to the client.
    pub fn store(err: reporter_ports::StoreError, entity: &'static str) -> Self {
        use reporter_ports::StoreError;
        match err {
            StoreError::NotFound => Self::not_found(entity),
            StoreError::VersionConflict => Self::new(
                Code::ConcurrentModification,
                format!("the {entity} changed concurrently; retry the request"),
            ),
            StoreError::Duplicate(rule) => {
                tracing::debug!(%rule, "duplicate");
                Self::new(Code::Internal, "unexpected duplicate")
            }
            StoreError::IdempotencyLost => Self::new(
                Code::IdempotencyInFlight,
                "this request's X-Idempotency reservation ran out and another request with the key took it over; retry later",
            ),
            StoreError::Unavailable(detail) => {
                tracing::error!(%detail, entity, "store unavailable");
                Self::new(
                    Code::ServiceUnavailable,
                    "the service's storage is unavailable; retry later",
                )
            }
        }
    }
    /// Maps an object storage failure.
    pub fn object_storage(err: reporter_ports::StoreError) -> Self {
        tracing::error!(error = %err, "object storage failure");
        Self::new(
            Code::StorageUnavailable,
            "object storage is unavailable; retry later",
        )
    }
}

/// Result alias of the use cases.
pub type AppResult<T> = Result<T, AppError>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_are_unique_and_well_formed() {
        let mut seen = HashSet::new();
        for c in Code::ALL {
            assert!(seen.insert(c.as_str()), "duplicate {}", c.as_str());
            assert!(
                c.as_str().starts_with("TPL-") && c.as_str().len() == 8,
                "{}",
                c.as_str()
            );
        }
    }
}
