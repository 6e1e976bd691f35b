//! The one place application errors become HTTP responses.
use crate::app::{AppError, Code, ErrorKind};
use poem::Response;
use poem::http::StatusCode;
use poem_openapi::payload::Json;
use poem_openapi::registry::{MetaResponses, Registry};
use poem_openapi::{ApiResponse, Object};
use std::collections::BTreeMap;

/// Error body of every failed request.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(example)]
pub struct ErrorBody {
    /// Stable error code, e.g. `TPL-0011`.
    pub code: String,
    /// Short title of the code.
    pub title: String,
    /// What went wrong, for people.
    pub message: String,
    /// Entity the error is about.
    #[oai(rename = "entityType", skip_serializing_if_is_none)]
    pub entity_type: Option<String>,
    /// Field → problem.
    #[oai(skip_serializing_if_is_none)]
    pub fields: Option<BTreeMap<String, String>>,
}

impl poem_openapi::types::Example for ErrorBody {
    fn example() -> Self {
        ErrorBody {
            code: "TPL-0047".into(),
            title: "Invalid deadline frequency".into(),
            message: "frequency must be one of: once, daily, weekly, monthly, semiannual, annual"
                .into(),
            entity_type: None,
            fields: Some(BTreeMap::from([(
                "frequency".to_owned(),
                "frequency must be one of: once, daily, weekly, monthly, semiannual, annual"
                    .to_owned(),
            )])),
        }
    }
}

impl From<&AppError> for ErrorBody {
    fn from(e: &AppError) -> Self {
        Self {
            code: e.code.as_str().to_owned(),
            title: e.code.title().to_owned(),
            message: e.message.clone(),
            entity_type: e.entity.map(str::to_owned),
            fields: e.fields.clone(),
        }
    }
}

/// Every error response the API gives, with the description the spec shows for it. Not an
/// operation's error type: an operation answers a [`Refusal`], which lists only what the
/// operation declares.
#[derive(Debug, ApiResponse)]
enum Answer {
    /// The request is malformed or breaks a validation rule.
    #[oai(status = 400)]
    BadRequest(Json<ErrorBody>),
    /// Missing, malformed, expired or unverifiable bearer token.
    #[oai(status = 401)]
    Unauthorized(Json<ErrorBody>, #[oai(header = "WWW-Authenticate")] String),
    /// The token lacks the operation's scope.
    #[oai(status = 403)]
    Forbidden(Json<ErrorBody>),
    /// The entity does not exist (or belongs to another tenant).
    #[oai(status = 404)]
    NotFound(Json<ErrorBody>),
    /// Duplicate, concurrent modification, or an idempotent request still in flight.
    #[oai(status = 409)]
    Conflict(Json<ErrorBody>),
    /// The request body did not arrive within `HTTP_BODY_READ_TIMEOUT_SECONDS`.
    #[oai(status = 408)]
    RequestTimeout(Json<ErrorBody>),
    /// The request body or file is too large.
    #[oai(status = 413)]
    PayloadTooLarge(Json<ErrorBody>),
    /// The request URI is too long.
    #[oai(status = 414)]
    UriTooLong(Json<ErrorBody>),
    /// The request headers are too large.
    #[oai(status = 431)]
    HeadersTooLarge(Json<ErrorBody>),
    /// The client's requests in the current window exceed its tier's limit (`TPL-0429`, only
    /// with rate limiting on); retry after `Retry-After` seconds.
    #[oai(status = 429)]
    TooManyRequests(Json<ErrorBody>, #[oai(header = "Retry-After")] u64),
    /// Well-formed but not applicable to the entity's current state.
    #[oai(status = 422)]
    Unprocessable(Json<ErrorBody>),
    /// A dependency (storage, data source, or the rate limiter's Redis when it fails closed)
    /// is unavailable; retry later.
    #[oai(status = 503)]
    Unavailable(Json<ErrorBody>),
    /// A bug in the service.
    #[oai(status = 500)]
    Internal(Json<ErrorBody>),
}

/// An application error as the response it becomes (status, body, headers). Helpers return
/// it; an operation answers it as its [`Refusal`] (`?` converts).
#[derive(Debug)]
pub struct ApiError(Answer);

impl From<AppError> for ApiError {
    fn from(e: AppError) -> Self {
        let body = Json(ErrorBody::from(&e));
        Self(match e.code.kind() {
            ErrorKind::Validation => Answer::BadRequest(body),
            ErrorKind::Unauthorized => Answer::Unauthorized(body, "Bearer".into()),
            ErrorKind::Forbidden => Answer::Forbidden(body),
            ErrorKind::NotFound | ErrorKind::MethodNotAllowed => Answer::NotFound(body),
            ErrorKind::Conflict => Answer::Conflict(body),
            ErrorKind::RequestTimeout => Answer::RequestTimeout(body),
            ErrorKind::PayloadTooLarge => Answer::PayloadTooLarge(body),
            ErrorKind::UriTooLong => Answer::UriTooLong(body),
            ErrorKind::HeadersTooLarge => Answer::HeadersTooLarge(body),
            ErrorKind::TooManyRequests => Answer::TooManyRequests(body, 60),
            ErrorKind::Unprocessable => Answer::Unprocessable(body),
            ErrorKind::Unavailable => Answer::Unavailable(body),
            ErrorKind::Internal => Answer::Internal(body),
        })
    }
}

impl From<ApiError> for poem::Error {
    fn from(e: ApiError) -> Self {
        e.0.into()
    }
}

// The error statuses an operation declares in its [`ApiResult`], one bit each:
// `ApiResult<T, { AUTH | NOT_FOUND | UNAVAILABLE }>`. The ones every operation may answer are
// added by [`Refusal`] (see [`possible_statuses`]).

/// 401: the operation needs a bearer token.
pub const UNAUTHORIZED: u32 = 1 << 0;
/// 403: the operation needs a scope.
pub const FORBIDDEN: u32 = 1 << 1;
/// 401 and 403: every `/v1` operation (a token with the operation's scope).
pub const AUTH: u32 = UNAUTHORIZED | FORBIDDEN;
/// 404: the entity (or one the request names) may not exist.
pub const NOT_FOUND: u32 = 1 << 2;
/// 409: a duplicate, a concurrent change or an idempotent request in flight.
pub const CONFLICT: u32 = 1 << 3;
/// 413: the operation reads a body (which also makes it answer 408 when the body is slow).
pub const PAYLOAD_TOO_LARGE: u32 = 1 << 4;
/// 422: the request does not apply to the entity's current state.
pub const UNPROCESSABLE: u32 = 1 << 5;
/// 503: a dependency (storage, a data source, the sandbox) may be unavailable.
pub const UNAVAILABLE: u32 = 1 << 6;

/// The status of each declarable bit.
const DECLARABLE: [(u32, u16); 7] = [
    (UNAUTHORIZED, 401),
    (FORBIDDEN, 403),
    (NOT_FOUND, 404),
    (CONFLICT, 409),
    (PAYLOAD_TOO_LARGE, 413),
    (UNPROCESSABLE, 422),
    (UNAVAILABLE, 503),
];

/// Every operation may answer 400 (an unknown query parameter, `TPL-0019`), 414 and 431 (a
/// request head over its bounds, `http::head_limit`) and 500 (a bug, `TPL-0018`).
const ANY: [u16; 4] = [400, 414, 431, 500];
/// With rate limiting on, every operation answering a [`Refusal`] may answer 429
/// (`TPL-0429`) and, when the limiter's Redis does not answer and it fails closed, 503.
const RATE_LIMITED: [u16; 2] = [429, 503];

/// The error statuses an operation declaring `declared` can answer: [`ANY`], the declared
/// ones, 408 with 413 (an operation that reads a body bounds the time it takes), and
/// [`RATE_LIMITED`].
pub fn possible_statuses(declared: u32) -> Vec<u16> {
    let own = DECLARABLE
        .iter()
        .filter(|(bit, _)| declared & bit != 0)
        .map(|(_, status)| *status);
    let slow_body = (declared & PAYLOAD_TOO_LARGE != 0).then_some(408);
    let mut all: Vec<u16> = ANY
        .into_iter()
        .chain(own)
        .chain(slow_body)
        .chain(RATE_LIMITED)
        .collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// The error an operation answers: an [`ApiError`] whose documented statuses are the ones the
/// operation declares (`ERRORS`, bits such as [`AUTH`] | [`NOT_FOUND`]) and the ones every
/// operation may answer ([`possible_statuses`]). Schemathesis (CI,
/// `status_code_conformance`) fails on a status the document does not list.
#[derive(Debug)]
pub struct Refusal<const ERRORS: u32>(ApiError);

impl<const ERRORS: u32> From<ApiError> for Refusal<ERRORS> {
    fn from(e: ApiError) -> Self {
        Self(e)
    }
}

impl<const ERRORS: u32> From<AppError> for Refusal<ERRORS> {
    fn from(e: AppError) -> Self {
        Self(e.into())
    }
}

impl<const ERRORS: u32> From<Refusal<ERRORS>> for poem::Error {
    fn from(r: Refusal<ERRORS>) -> Self {
        r.0.into()
    }
}

impl<const ERRORS: u32> poem::IntoResponse for Refusal<ERRORS> {
    fn into_response(self) -> Response {
        self.0.0.into_response()
    }
}

impl<const ERRORS: u32> ApiResponse for Refusal<ERRORS> {
    fn meta() -> MetaResponses {
        let possible = possible_statuses(ERRORS);
        let mut meta = Answer::meta();
        meta.responses
            .retain(|r| r.status.is_some_and(|s| possible.contains(&s)));
        meta
    }

    fn register(registry: &mut Registry) {
        Answer::register(registry);
    }
}

/// The result of an operation that declares the error statuses `ERRORS` (see [`Refusal`]).
/// There is no default: an operation MUST declare its errors beside it, in its signature.
pub type ApiResult<T, const ERRORS: u32> = Result<T, Refusal<ERRORS>>;

/// The HTTP status of an error kind.
pub fn status_of(kind: ErrorKind) -> StatusCode {
    match kind {
        ErrorKind::Validation => StatusCode::BAD_REQUEST,
        ErrorKind::Unauthorized => StatusCode::UNAUTHORIZED,
        ErrorKind::Forbidden => StatusCode::FORBIDDEN,
        ErrorKind::NotFound => StatusCode::NOT_FOUND,
        ErrorKind::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
        ErrorKind::Conflict => StatusCode::CONFLICT,
        ErrorKind::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
        ErrorKind::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        ErrorKind::UriTooLong => StatusCode::URI_TOO_LONG,
        ErrorKind::HeadersTooLarge => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        ErrorKind::TooManyRequests => StatusCode::TOO_MANY_REQUESTS,
        ErrorKind::Unprocessable => StatusCode::UNPROCESSABLE_ENTITY,
        ErrorKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// A plain poem response for an application error (used by middleware and fallbacks).
pub fn error_response(e: &AppError) -> Response {
    let body = serde_json::json!({
        "code": e.code.as_str(),
        "title": e.code.title(),
        "message": e.message,
        "entityType": e.entity,
        "fields": e.fields,
    });
    let mut value = body;
    if let Some(obj) = value.as_object_mut() {
        obj.retain(|_, v| !v.is_null());
    }
    let mut resp = Response::builder()
        .status(status_of(e.code.kind()))
        .content_type("application/json; charset=utf-8")
        .body(value.to_string());
    if e.code.kind() == ErrorKind::Unauthorized {
        resp.headers_mut().insert(
            "WWW-Authenticate",
            poem::http::HeaderValue::from_static("Bearer"),
        );
    }
    resp
}

/// Turns any error poem or poem-openapi raises before (or instead of) an operation into the
/// error body with a stable code. Responses the operations built themselves pass unchanged.
pub async fn normalize_error(err: poem::Error) -> Response {
    use poem_openapi::error::{
        AuthorizationError, ContentTypeError, ParseMultipartError, ParseParamError,
        ParseRequestPayloadError,
    };
    if err.is_from_response() {
        return err.into_response();
    }
    let status = err.status();
    let text = err.to_string();
    let app = if let Some(e) = err.downcast_ref::<ParseParamError>() {
        AppError::new(
            Code::InvalidQueryParameter,
            format!("parameter '{}' is invalid: {}", e.name, e.reason),
        )
        .field(e.name, e.reason.clone())
    } else if let Some(e) = err.downcast_ref::<ParseRequestPayloadError>() {
        if e.reason.contains("recursion limit exceeded") {
            AppError::new(
                Code::NestingTooDeep,
                "the request body is nested too deeply",
            )
        } else if e.reason.contains("unknown field") {
            AppError::new(
                Code::UnexpectedFields,
                format!("the request has unexpected fields: {}", e.reason),
            )
        } else if e.reason.contains("expects an object")
            || e.reason.contains("EOF while parsing") && e.reason.len() < 80
            || e.reason.starts_with("Expected input type") && e.reason.ends_with("found null.")
        {
            AppError::new(
                Code::MissingFields,
                format!("the request body is empty or not an object: {}", e.reason),
            )
        } else {
            AppError::new(
                Code::BadRequest,
                format!("the request body is invalid: {}", e.reason),
            )
        }
    } else if let Some(e) = err.downcast_ref::<ParseMultipartError>() {
        if e.reason.contains("is required") || e.reason.contains("missing") {
            AppError::new(
                Code::MissingFields,
                format!("a required form field is missing: {}", e.reason),
            )
        } else if e.reason.contains("unknown field") {
            AppError::new(
                Code::UnexpectedFields,
                format!("the form has unexpected fields: {}", e.reason),
            )
        } else {
            AppError::new(
                Code::InvalidUpload,
                format!("the multipart form is invalid: {}", e.reason),
            )
        }
    } else if err.is::<ContentTypeError>() {
        AppError::new(
            Code::UnsupportedMediaType,
            format!("unsupported or missing content type: {text}"),
        )
    } else if err.is::<AuthorizationError>() {
        AppError::new(Code::Unauthorized, "a bearer token is required")
    } else if err.is::<poem::error::NotFoundError>() {
        AppError::new(Code::RouteNotFound, "no such route")
    } else if err.is::<poem::error::MethodNotAllowedError>() {
        AppError::new(Code::MethodNotAllowed, "method not allowed on this route")
    } else if status == StatusCode::PAYLOAD_TOO_LARGE {
        AppError::new(Code::PayloadTooLarge, "the request body is too large")
    } else if status.is_client_error() {
        AppError::new(Code::BadRequest, format!("bad request: {text}"))
    } else {
        tracing::error!(error = %text, %status, "unhandled error");
        AppError::new(Code::Internal, "internal server error")
    };
    error_response(&app)
}
