//! The Console at `/console`: its page and assets embedded and served with the strict
//! Content-Security-Policy and the right content types; `CONSOLE_ENABLED=false` answers 404;
//! the development token is not offered when a key is configured (204, no body). The browser journey is tests/processes/console.rs.
use crate::common;

use common::*;
use reporter::config::RawConfig;
use reporter::http::console::{ASSETS, CSP};

#[tokio::test]
async fn the_console_page_and_every_asset_are_served_with_the_policy_and_their_type() {
    let t = start().await;
    for path in ["/console", "/console/", "/console/index.html"] {
        let resp = t.client.get(path).send().await;
        resp.assert_status_is_ok();
        resp.assert_header("content-security-policy", CSP);
        resp.assert_header("content-type", "text/html; charset=utf-8");
        resp.assert_header("x-content-type-options", "nosniff");
        let html = resp.0.into_body().into_string().await.unwrap();
        assert!(html.contains("/console/app.js"), "{html}");
        assert!(!html.contains("<script>"), "no inline script: {html}");
        assert!(
            !html.contains("https://"),
            "nothing loaded from elsewhere: {html}"
        );
    }
    for a in ASSETS {
        let resp = t.client.get(format!("/console/{}", a.path)).send().await;
        resp.assert_status_is_ok();
        resp.assert_header("content-type", a.content_type);
        resp.assert_header("content-security-policy", CSP);
        let body = resp.0.into_body().into_bytes().await.unwrap();
        assert_eq!(&body[..], a.bytes, "{}", a.path);
    }
    let js = ASSETS.iter().find(|a| a.path == "app.js").unwrap();
    assert_eq!(js.content_type, "text/javascript; charset=utf-8");
    let css = ASSETS.iter().find(|a| a.path == "style.css").unwrap();
    assert_eq!(css.content_type, "text/css; charset=utf-8");
    expect_error(
        t.client.get("/console/nope.js").send().await,
        404,
        "TPL-0404",
    )
    .await;
    expect_error(
        t.client.get("/console/../Cargo.toml").send().await,
        404,
        "TPL-0404",
    )
    .await;
}

#[tokio::test]
async fn no_asset_builds_markup_from_strings() {
    // Every value shown is put in the page as text (dom.js builds elements with textContent);
    // no module writes HTML from a string.
    for a in ASSETS.iter().filter(|a| a.path.ends_with(".js")) {
        let text = std::str::from_utf8(a.bytes).unwrap();
        for sink in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
            "new Function",
        ] {
            assert!(!text.contains(sink), "{} uses {sink}", a.path);
        }
    }
}

#[tokio::test]
async fn console_disabled_answers_404() {
    let mut raw = RawConfig::defaults();
    raw.log_level = "warn".into();
    raw.console.console_enabled = "false".into();
    let t = start_raw(raw, vec![]).await;
    for path in [
        "/console",
        "/console/",
        "/console/app.js",
        "/console/dev-token",
    ] {
        expect_error(t.client.get(path).send().await, 404, "TPL-0404").await;
    }
    // The API is still there.
    let resp = t.client.get("/health").send().await;
    resp.assert_status_is_ok();
}

#[tokio::test]
async fn a_bad_console_enabled_is_a_configuration_problem() {
    let mut raw = RawConfig::defaults();
    raw.console.console_enabled = "maybe".into();
    let problems = raw.validate(&[]).expect_err("refused").0;
    assert!(
        problems.iter().any(|p| p.variable == "CONSOLE_ENABLED"),
        "{problems:?}"
    );
}

#[tokio::test]
async fn the_development_token_is_not_offered_with_a_configured_key() {
    // start() configures AUTH_JWT_SECRET: no development token exists.
    let t = start().await;
    let resp = t.client.get("/console/dev-token").send().await;
    resp.assert_status(poem::http::StatusCode::NO_CONTENT);
    resp.assert_header("cache-control", "no-store");
    assert!(resp.0.into_body().into_bytes().await.unwrap().is_empty());
}

/// Every string of the Console exists in both languages (a missing one would show its key).
#[tokio::test]
async fn english_and_portuguese_have_the_same_strings() {
    let keys = |path: &str| -> std::collections::BTreeSet<String> {
        let a = ASSETS.iter().find(|a| a.path == path).unwrap();
        std::str::from_utf8(a.bytes)
            .unwrap()
            .lines()
            .filter_map(|l| l.trim().strip_prefix('\''))
            .filter_map(|l| l.split_once("':").map(|(k, _)| k.to_owned()))
            .collect()
    };
    let (en, pt) = (keys("i18n/en.js"), keys("i18n/pt.js"));
    assert!(en.len() > 150, "{}", en.len());
    assert!(en.contains("events.parked") && en.contains("builder.markerBad"));
    assert_eq!(
        en.symmetric_difference(&pt).collect::<Vec<_>>(),
        Vec::<&String>::new()
    );
}
