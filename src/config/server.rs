//! The server section: logs, browser origins, deployment mode.
use super::{Checker, DeploymentMode, HttpLimits, RawConfig, problem};
use std::time::Duration;

impl RawConfig {
    /// `LOG_FORMAT` (answers whether logs are JSON) and `LOG_LEVEL`.
    pub(super) fn logging(&self, c: &mut Checker) -> bool {
        let log_json = match self.log_format.trim().to_ascii_lowercase().as_str() {
            "text" => false,
            "json" => true,
            other => {
                c.problems.push(problem(
                    "LOG_FORMAT",
                    format!("'{other}' is not a log format"),
                    "text|json",
                ));
                false
            }
        };
        if tracing_subscriber::EnvFilter::try_new(&self.log_level).is_err() {
            c.problems.push(problem(
                "LOG_LEVEL",
                format!("'{}' is not a valid filter", self.log_level),
                "a tracing filter such as info or reporter=debug,info",
            ));
        }
        log_json
    }

    /// `CORS_ALLOWED_ORIGINS`: http(s) origins or `*`; https only in production.
    pub(super) fn cors_origins(&self, c: &mut Checker, production: bool) -> Vec<String> {
        let cors_origins: Vec<String> = self
            .cors_allowed_origins
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        for o in &cors_origins {
            if o != "*" && !(o.starts_with("http://") || o.starts_with("https://")) {
                c.problems.push(problem(
                    "CORS_ALLOWED_ORIGINS",
                    format!("'{o}' is not an origin"),
                    "comma-separated http(s)://host[:port] origins, or *",
                ));
            }
            if production && (o == "*" || o.starts_with("http://")) {
                c.problems.push(problem(
                    "CORS_ALLOWED_ORIGINS",
                    format!("'{o}' is not allowed in production"),
                    "https:// origins only when ENV_NAME=production",
                ));
            }
        }
        cors_origins
    }

    /// `HTTP_HEADER_READ_TIMEOUT_SECONDS`, `HTTP_BODY_READ_TIMEOUT_SECONDS`,
    /// `HTTP_MAX_CONNECTIONS`.
    pub(super) fn http_limits(&self, c: &mut Checker) -> HttpLimits {
        let header = c.int::<u64>(
            "HTTP_HEADER_READ_TIMEOUT_SECONDS",
            &self.http_header_read_timeout_seconds,
        );
        let body = c.int::<u64>(
            "HTTP_BODY_READ_TIMEOUT_SECONDS",
            &self.http_body_read_timeout_seconds,
        );
        let max_connections = c.int::<usize>("HTTP_MAX_CONNECTIONS", &self.http_max_connections);
        HttpLimits {
            header_read_timeout: Duration::from_secs(header),
            body_read_timeout: Duration::from_secs(body),
            max_connections,
        }
    }

    /// `DEPLOYMENT_MODE`.
    pub(super) fn deployment_mode(&self, c: &mut Checker) -> DeploymentMode {
        DeploymentMode::parse(&self.deployment_mode).unwrap_or_else(|| {
            c.problems.push(problem(
                "DEPLOYMENT_MODE",
                format!("'{}' is not a deployment mode", self.deployment_mode),
                "local|byoc|saas",
            ));
            DeploymentMode::Local
        })
    }
}
