//! The REST surface: poem + poem-openapi. Business operations live under `/v1`, need a bearer
//! token and answer JSON in camelCase; errors use one body shape with stable codes.

// Operations return poem-openapi response enums by value (that is how the derive documents
// them); boxing them would hide the error shapes from the spec.
#![allow(clippy::result_large_err)]
mod api_routes;
pub mod auth;
pub mod body_limit;
pub mod client_ip;
pub mod console;
mod dashboard;
mod datasources;
mod deadlines;
mod deep_json;
pub mod dto;
pub mod error;
pub mod head_limit;
pub mod headers;
pub mod idempotency;
pub mod json_body;
pub mod methods;
pub mod middleware;
pub mod ops;
mod ops_or_api;
mod pipeline;
mod preview;
pub mod query;
pub mod rate_limit;
mod reports;
pub mod request_checks;
mod request_data;
pub mod server;
pub mod spec;
pub mod streaming;
pub mod string_field;
mod tags;
mod template_builder;
mod template_json;
mod template_source;
mod templates;
pub mod token_cache;

pub use ops::{Probe, Readiness};

use crate::app::App;
use crate::telemetry::{HttpMetrics, render};
use auth::Authenticator;
use idempotency::Idempotency;
use middleware::Edge;
use poem::endpoint::{EitherEndpoint, make_sync};
use poem::middleware::{CatchPanic, Cors};
use poem::web::Data;
use poem::{EndpointExt, IntoResponse, Response, Route, handler};
use poem_openapi::OpenApiService;
use std::sync::Arc;

/// Every operation group, in the order the spec lists them.
pub type Apis = (
    templates::TemplatesApi,
    template_source::TemplateSourceApi,
    preview::PreviewApi,
    template_builder::TemplateBuilderApi,
    reports::ReportsApi,
    deadlines::DeadlinesApi,
    datasources::DataSourcesApi,
    dashboard::DashboardApi,
    streaming::StreamingApi,
    ops::OpsApi,
);

/// The OpenAPI service (routes + spec): the groups of [`Apis`], each built by its `Default`.
pub fn api_service() -> OpenApiService<Apis, ()> {
    OpenApiService::new(Apis::default(), "Reporter API", env!("CARGO_PKG_VERSION"))
        .description(spec::DESCRIPTION)
}

/// What the HTTP layer needs besides the application.
pub struct HttpSetup {
    /// Token verification.
    pub authenticator: Arc<Authenticator>,
    /// Dependency probes of `/readyz`.
    pub readiness: Readiness,
    /// Prometheus registry served at `/metrics`.
    pub registry: prometheus::Registry,
    /// Request body limit.
    pub max_body_bytes: usize,
    /// Longest wait for a request's whole body.
    pub body_read_timeout: std::time::Duration,
    /// Idempotency replay window.
    pub idempotency_ttl: chrono::Duration,
    /// Idempotency in-flight reservation.
    pub idempotency_in_flight: chrono::Duration,
    /// CORS origins (empty: none).
    pub cors_origins: Vec<String>,
    /// CORS methods and headers a preflight may ask for (`CORS_ALLOWED_METHODS` /
    /// `_HEADERS`), and whether Swagger UI is served (`SWAGGER_ENABLED`).
    pub original: crate::config::OriginalExtras,
    /// Streaming operations' view.
    pub streaming: streaming::StreamingView,
    /// The Console at `/console`.
    pub console: console::ConsoleSetup,

    /// Rate limiting: the counters and the policy; `None` when off.
    pub rate_limit: Option<(
        Arc<dyn reporter_ports::ports::RateLimiter>,
        rate_limit::RateLimitPolicy,
    )>,
}

#[handler]
fn prometheus_metrics(ops: Data<&Arc<request_data::OpsData>>) -> Response {
    Response::builder()
        .content_type("text/plain; version=0.0.4")
        .body(render(&ops.registry))
}

/// The published spec (`/openapi.json`, `/openapi.yaml`) showing the deployment's parameter
/// limits, Swagger UI (`/swagger/`, unless turned off), the Prometheus metrics (`/metrics`)
/// and the Console (`/console`, unless turned off).
fn ops_routes(
    limits: spec::ParamLimits,
    swagger: bool,
    console_setup: &console::ConsoleSetup,
) -> Route {
    let swagger_html = spec::swagger_html(limits);
    let json = spec::json_with(limits);
    let yaml = spec::yaml_with(limits);
    let routes = console::routes(Route::new(), console_setup)
        .at("/metrics", prometheus_metrics)
        .at(
            "/openapi.json",
            make_sync(move |_| {
                Response::builder()
                    .content_type("application/json")
                    .body(json.clone())
            }),
        )
        .at(
            "/openapi.yaml",
            make_sync(move |_| {
                Response::builder()
                    .content_type("application/yaml")
                    .body(yaml.clone())
            }),
        );
    if !swagger {
        return routes;
    }
    routes.nest(
        "/swagger",
        Route::new().at(
            "/",
            make_sync(move |_| poem::web::Html(swagger_html.clone())),
        ),
    )
}

/// CORS for `origins`: none when empty, any origin for `*`, else exactly those; preflights
/// limited to `methods` and `headers` when they are not empty.
fn cors(origins: &[String], methods: &[String], headers: &[String]) -> Option<Cors> {
    if origins.is_empty() {
        return None;
    }
    let cors = if origins.iter().any(|o| o == "*") {
        Cors::new()
    } else {
        Cors::new().allow_origins(origins.iter().map(String::as_str))
    };
    Some(
        cors.allow_methods(methods.iter().map(String::as_str))
            .allow_headers(headers.iter().map(String::as_str)),
    )
}

/// Builds the complete HTTP endpoint. Not boxed: the server calls it directly, so no request
/// pays for an allocation and a copy of its whole future at the top.
pub fn endpoint(
    app: Arc<App>,
    setup: HttpSetup,
) -> Result<impl poem::Endpoint<Output = Response> + 'static, prometheus::Error> {
    let service = api_service();
    let query_contract = Arc::new(query::QueryContract::from_spec(
        &serde_json::from_str(&service.spec()).unwrap_or_default(),
    ));
    let http_metrics = Arc::new(HttpMetrics::register(
        &setup.registry,
        middleware::metrics_slots(&query_contract),
    )?);
    let rate_limit = match setup.rate_limit {
        Some((limiter, policy)) => Some(rate_limit::RateLimit {
            limiter,
            policy: Arc::new(policy),
            metrics: rate_limit::RateLimitMetrics::register(&setup.registry)?,
        }),
        None => None,
    };
    let limits = spec::ParamLimits {
        max_page_limit: app.settings().max_page_limit,
    };
    let ops_or_api = ops_or_api::OpsOrApi {
        api: api_routes::routes(Apis::default()),
        ops: ops_routes(limits, setup.original.swagger_enabled, &setup.console),
    };
    let request_data = request_data::RequestData {
        app: app.clone(),
        ops: Arc::new(request_data::OpsData {
            readiness: setup.readiness,
            streaming: setup.streaming,
            registry: setup.registry,
        }),
    };
    let idempotency = Arc::new(Idempotency {
        store: app.ports().idempotency.clone(),
        clock: app.ports().clock.clone(),
        contract: query_contract.clone(),
        ttl: setup.idempotency_ttl,
        lease: setup.idempotency_in_flight,
    });
    let checks = request_checks::RequestChecks {
        contract: query_contract.clone(),
        authenticator: setup.authenticator,
        max_body_bytes: setup.max_body_bytes,
        body_read_timeout: setup.body_read_timeout,
    };
    let core = pipeline::Pipeline {
        checks,
        idempotency,
        request_data,
        ops_or_api,
    };
    // Before authentication (as the original), inside CORS so a refusal carries its headers.
    // Either, not a boxed endpoint: a box costs every request an allocation and a copy of
    // the whole future below it.
    let core = match rate_limit {
        Some(limit) => EitherEndpoint::A(core.with(limit)),
        None => EitherEndpoint::B(core),
    };
    let cors = cors(
        &setup.cors_origins,
        &setup.original.cors_methods,
        &setup.original.cors_headers,
    );
    Ok(core
        .with_if(cors.is_some(), cors.unwrap_or_default())
        .with(Edge {
            metrics: http_metrics,
            contract: query_contract,
        })
        .with(CatchPanic::new().with_handler(|_| {
            error::error_response(&crate::app::AppError::new(
                crate::app::Code::Internal,
                "internal server error",
            ))
            .into_response()
        })))
}

/// Restricts an endpoint to the public ops paths (`/health`, `/readyz`, `/version`,
/// `/metrics`); everything else answers 404 `TPL-0404`. Used by `reporter worker`.
pub fn ops_only(
    ep: impl poem::Endpoint<Output = Response> + 'static,
) -> poem::endpoint::BoxEndpoint<'static, Response> {
    ep.around(|ep, req| async move {
        if matches!(
            req.uri().path(),
            "/health" | "/readyz" | "/version" | "/metrics"
        ) {
            ep.call(req).await
        } else {
            Ok(error::error_response(&crate::app::AppError::new(
                crate::app::Code::RouteNotFound,
                "the worker serves only /health, /readyz, /version and /metrics",
            )))
        }
    })
    .boxed()
}
