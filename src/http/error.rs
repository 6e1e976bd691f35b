//! The one place application errors become HTTP responses.
use crate::app::{AppError, Code, ErrorKind};
use poem::Response;
use poem::http::StatusCode;
use poem_openapi::payload::Json;
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

/// Every error response an operation can give, documented in the spec.
#[derive(Debug, ApiResponse)]
pub enum ApiError {
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

impl From<AppError> for ApiError {
    fn from(e: AppError) -> Self {
        let body = Json(ErrorBody::from(&e));
        match e.code.kind() {
            ErrorKind::Validation => Self::BadRequest(body),
            ErrorKind::Unauthorized => Self::Unauthorized(body, "Bearer".into()),
            ErrorKind::Forbidden => Self::Forbidden(body),
            ErrorKind::NotFound | ErrorKind::MethodNotAllowed => Self::NotFound(body),
            ErrorKind::Conflict => Self::Conflict(body),
            ErrorKind::RequestTimeout => Self::RequestTimeout(body),
            ErrorKind::PayloadTooLarge => Self::PayloadTooLarge(body),
            ErrorKind::UriTooLong => Self::UriTooLong(body),
            ErrorKind::HeadersTooLarge => Self::HeadersTooLarge(body),
            ErrorKind::TooManyRequests => Self::TooManyRequests(body, 60),
            ErrorKind::Unprocessable => Self::Unprocessable(body),
            ErrorKind::Unavailable => Self::Unavailable(body),
            ErrorKind::Internal => Self::Internal(body),
        }
    }
}

/// Result alias of operations.
pub type ApiResult<T> = Result<T, ApiError>;

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
