//! The Reporter Console: a web UI served by the binary at `/console`, its assets (plain ES
//! modules and CSS under `console/` in the repository, no build step) embedded with
//! `include_bytes!`, so it works offline and with nothing else installed.
//!
//! Every console response carries a strict Content-Security-Policy (scripts only from this
//! origin: no inline script, no `eval`), `X-Content-Type-Options: nosniff` and
//! `Referrer-Policy: no-referrer`. `/console/dev-token` offers the run's development token to
//! loopback clients only (see [`dev_token`]).
use poem::endpoint::make_sync;
use poem::{Request, Response, Route, handler};
use reporter_ports::Secret;
use std::sync::Arc;

/// What the console needs from the wiring.
#[derive(Clone, Default)]
pub struct ConsoleSetup {
    /// `CONSOLE_ENABLED`: when false no console path is served (404).
    pub enabled: bool,
    /// The development token of this run (generated key, never in production), offered to
    /// loopback clients by `/console/dev-token`; `None` otherwise.
    pub dev_token: Option<Arc<Secret>>,
}

/// The Content-Security-Policy of every console response. Scripts MUST come from this origin
/// only (no inline script, no `unsafe-eval`); inline styles are allowed because the preview
/// shows report HTML (whose own `<style>` the frame inherits this policy for), and frames,
/// objects and images may be `blob:` URLs (the PDF preview and downloads).
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; frame-src 'self' blob:; \
object-src blob:; child-src blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// One embedded asset: its path under `/console/`, content type and bytes.
pub struct Asset {
    /// Path under `/console/` (`app.js`, `screens/overview.js`).
    pub path: &'static str,
    /// Content type answered.
    pub content_type: &'static str,
    /// The file.
    pub bytes: &'static [u8],
}

macro_rules! assets {
    ($($path:literal => $ct:literal),* $(,)?) => {
        /// Every asset of the console (a test checks the list against the `console/` folder).
        pub const ASSETS: &[Asset] = &[
            $(Asset {
                path: $path,
                content_type: $ct,
                bytes: include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/console/", $path)),
            }),*
        ];
    };
}

assets! {
    "index.html" => "text/html; charset=utf-8",
    "style.css" => "text/css; charset=utf-8",
    "favicon.svg" => "image/svg+xml",
    "app.js" => "text/javascript; charset=utf-8",
    "api.js" => "text/javascript; charset=utf-8",
    "dom.js" => "text/javascript; charset=utf-8",
    "highlight.js" => "text/javascript; charset=utf-8",
    "builder_marker.js" => "text/javascript; charset=utf-8",
    "i18n.js" => "text/javascript; charset=utf-8",
    "i18n/en.js" => "text/javascript; charset=utf-8",
    "i18n/pt.js" => "text/javascript; charset=utf-8",
    "screens/signin.js" => "text/javascript; charset=utf-8",
    "screens/overview.js" => "text/javascript; charset=utf-8",
    "screens/templates.js" => "text/javascript; charset=utf-8",
    "screens/editor.js" => "text/javascript; charset=utf-8",
    "screens/builder.js" => "text/javascript; charset=utf-8",
    "screens/reports.js" => "text/javascript; charset=utf-8",
    "screens/deadlines.js" => "text/javascript; charset=utf-8",
    "screens/datasources.js" => "text/javascript; charset=utf-8",
    "screens/events.js" => "text/javascript; charset=utf-8",
}

/// Whether `path` is the console's.
pub(super) fn is_console(path: &str) -> bool {
    path == "/console" || path.starts_with("/console/")
}

/// The asset answering `path` (relative to `/console/`; empty is the page).
pub fn asset(path: &str) -> Option<&'static Asset> {
    let path = if path.is_empty() { "index.html" } else { path };
    ASSETS.iter().find(|a| a.path == path)
}

/// `resp` with the console's security headers.
fn secured(builder: poem::ResponseBuilder) -> poem::ResponseBuilder {
    builder
        .header("Content-Security-Policy", CSP)
        .header("X-Content-Type-Options", "nosniff")
        .header("Referrer-Policy", "no-referrer")
        .header("X-Frame-Options", "DENY")
}

#[handler]
fn serve_asset(req: &Request) -> Response {
    let rest = req
        .uri()
        .path()
        .strip_prefix("/console")
        .unwrap_or_default()
        .trim_start_matches('/');
    match asset(rest) {
        Some(a) => secured(Response::builder())
            .content_type(a.content_type)
            .header("Cache-Control", "no-cache")
            .body(a.bytes),
        None => super::error::error_response(&crate::app::AppError::new(
            crate::app::Code::RouteNotFound,
            "no such console asset",
        )),
    }
}

/// `GET /console/dev-token`: `{"token": …}` when this run generated a development token and
/// the peer is a loopback address; MUST answer 204 with no body otherwise (a configured key,
/// or a remote peer), so the token never leaves the machine through the console. (A 204, not
/// a 404: the sign-in page asks on every visit, and a browser logs every 4xx as an error.)
fn dev_token(token: Option<&Secret>, req: &Request) -> Response {
    let loopback = req
        .remote_addr()
        .as_socket_addr()
        .is_some_and(|a| a.ip().is_loopback());
    let answer = secured(Response::builder()).header("Cache-Control", "no-store");
    match token {
        Some(t) if loopback => answer
            .content_type("application/json")
            .body(serde_json::json!({ "token": t.expose() }).to_string()),
        _ => answer.status(poem::http::StatusCode::NO_CONTENT).finish(),
    }
}

/// The console's routes under `/console` (none when disabled).
pub(super) fn routes(route: Route, setup: &ConsoleSetup) -> Route {
    if !setup.enabled {
        return route;
    }
    let token = setup.dev_token.clone();
    route
        .at(
            "/console/dev-token",
            make_sync(move |req| dev_token(token.as_deref(), &req)),
        )
        .at("/console", serve_asset)
        .at("/console/*rest", serve_asset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_of_the_console_folder_is_embedded_and_nothing_else() {
        fn walk(dir: &std::path::Path, base: &std::path::Path, out: &mut Vec<String>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    walk(&p, base, out);
                } else {
                    out.push(
                        p.strip_prefix(base)
                            .unwrap()
                            .to_string_lossy()
                            .replace('\\', "/"),
                    );
                }
            }
        }
        let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("console");
        let mut files = Vec::new();
        walk(&base, &base, &mut files);
        files.sort();
        let mut listed: Vec<String> = ASSETS.iter().map(|a| a.path.to_owned()).collect();
        listed.sort();
        assert_eq!(files, listed);
    }

    #[test]
    fn the_policy_forbids_inline_script_and_eval() {
        let script = CSP
            .split(';')
            .find(|d| d.trim().starts_with("script-src"))
            .unwrap();
        assert_eq!(script.trim(), "script-src 'self'");
        assert!(!CSP.contains("unsafe-eval"));
    }

    #[test]
    fn console_paths_are_told_apart() {
        assert!(is_console("/console"));
        assert!(is_console("/console/app.js"));
        assert!(!is_console("/consoles"));
        assert!(!is_console("/v1/console"));
        assert!(asset("").is_some());
        assert!(asset("nope.js").is_none());
    }
}
