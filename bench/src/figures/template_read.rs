//! P3 (issue 13) The read path's per-request cost: `GET /v1/templates/{id}` against the release
//! `reporter serve` (state in memory, auth on, one template uploaded first) under
//! `wrk -t2 -c32` with a bearer token, against the `bare-poem` binary of this crate answering
//! the same JSON bytes (fetched once from Reporter) with the same HS256 check, and without any
//! check; req/s and p99.
use super::serve::{Server, free_addr, token, wrk};
use crate::harness::{Ctx, Figure, Sample, Target};
use anyhow::Context;
use async_trait::async_trait;
use std::process::Command;

#[derive(Default)]
pub struct TemplateRead;

/// A small csv template over the bundled `bank` example data.
const TEMPLATE: &str = "account_id,holder_name\n{% for a in bank.accounts %}{{ a.account_id }},{{ a.holder_name }}\n{% endfor %}";

/// `multipart/form-data` upload of `template` (file `name`) in `format`: content type, body.
pub fn upload_form(name: &str, template: &str, format: &str) -> (String, Vec<u8>) {
    let b = format!("bench-{}", uuid::Uuid::now_v7().simple());
    let body = format!(
        "--{b}\r\nContent-Disposition: form-data; name=\"template\"; filename=\"{name}\"\r\nContent-Type: text/plain\r\n\r\n{template}\r\n--{b}\r\nContent-Disposition: form-data; name=\"outputFormat\"\r\n\r\n{format}\r\n--{b}\r\nContent-Disposition: form-data; name=\"description\"\r\n\r\nbench {name}\r\n--{b}--\r\n"
    );
    (
        format!("multipart/form-data; boundary={b}"),
        body.into_bytes(),
    )
}

/// Uploads a template to `serve`: its id.
pub fn upload(serve: &Server, name: &str, template: &str, format: &str) -> anyhow::Result<String> {
    let (ct, body) = upload_form(name, template, format);
    let (status, answer) = serve.call("POST", "/v1/templates", Some(&ct), &body)?;
    let answer = String::from_utf8_lossy(&answer);
    anyhow::ensure!(
        (200..300).contains(&status),
        "template upload: {status} {answer}"
    );
    let v: serde_json::Value = serde_json::from_str(&answer)?;
    Ok(v["id"]
        .as_str()
        .context("no id in the upload answer")?
        .to_owned())
}

/// The bare poem baseline on a free port, answering `body`; with the JWT check when `jwt`.
fn bare(ctx: &Ctx, body: &std::path::Path, jwt: bool) -> anyhow::Result<Server> {
    let addr = free_addr();
    let mut c = Command::new(&ctx.bare_poem_bin);
    c.env("BARE_POEM_ADDR", &addr).env("BARE_POEM_BODY", body);
    if jwt {
        c.env("BARE_POEM_JWT_SECRET", super::serve::SECRET);
    }
    Server::spawn(c, addr)
}

/// One round: (Reporter, bare + JWT, bare, Reporter verifying every request) runs. The last
/// Reporter runs with `AUTH_TOKEN_CACHE_SIZE=0`, the same work per request as the baseline
/// with the JWT check (which verifies every request).
fn measure(
    ctx: &Ctx,
    reporter_first: bool,
    secs: u64,
) -> anyhow::Result<[super::serve::WrkRun; 4]> {
    let serve = Server::reporter(ctx, &[])?;
    let uncached = Server::reporter(ctx, &[("AUTH_TOKEN_CACHE_SIZE", "0".into())])?;
    let id = upload(&serve, "accounts.csv.tpl", TEMPLATE, "csv")?;
    let uncached_id = upload(&uncached, "accounts.csv.tpl", TEMPLATE, "csv")?;
    let path = format!("/v1/templates/{id}");
    let (status, body) = serve.call("GET", &path, None, b"")?;
    anyhow::ensure!(status == 200, "GET {path}: {status}");
    let body_file = std::env::temp_dir().join(format!(
        "reporter-bench-template-{}.json",
        std::process::id()
    ));
    std::fs::write(&body_file, &body)?;
    let with_jwt = bare(ctx, &body_file, true);
    let without = bare(ctx, &body_file, false);
    let _ = std::fs::remove_file(&body_file);
    let (with_jwt, without) = (with_jwt?, without?);
    let script = format!(
        "wrk.method = \"GET\"\nwrk.headers[\"Authorization\"] = \"Bearer {}\"\n",
        token()?
    );
    let run = |s: &Server| wrk(ctx, &script, &format!("http://{}{path}", s.addr), secs);
    let uncached_path = format!("http://{}/v1/templates/{uncached_id}", uncached.addr);
    let run_uncached = || wrk(ctx, &script, &uncached_path, secs);
    let (r, j, b, u) = if reporter_first {
        let r = run(&serve)?;
        let u = run_uncached()?;
        (r, run(&with_jwt)?, run(&without)?, u)
    } else {
        let b = run(&without)?;
        let j = run(&with_jwt)?;
        let u = run_uncached()?;
        (run(&serve)?, j, b, u)
    };
    Ok([r, j, b, u])
}

#[async_trait]
impl Figure for TemplateRead {
    fn name(&self) -> &'static str {
        "template-read"
    }

    async fn round(&mut self, ctx: &Ctx, reporter_first: bool) -> anyhow::Result<Vec<Sample>> {
        let secs = if ctx.quick { 3 } else { 10 };
        // Server processes and load runs of several seconds: block this worker thread.
        let [r, j, b, u] = tokio::task::block_in_place(|| measure(ctx, reporter_first, secs))?;
        Ok(vec![
            Sample {
                row: "P3 GET /v1/templates/{id} throughput vs bare poem + JWT".into(),
                unit: "req/s",
                reporter: r.rps,
                baseline: j.rps,
                baseline_name: "bare poem + HS256",
                target: Some(Target::RatioAtLeast(0.8)),
            },
            Sample {
                row: "P3 GET /v1/templates/{id} throughput vs bare poem".into(),
                unit: "req/s",
                reporter: r.rps,
                baseline: b.rps,
                baseline_name: "bare poem",
                target: None,
            },
            Sample {
                row: "P3 GET /v1/templates/{id} throughput vs bare poem + JWT, token cache off (AUTH_TOKEN_CACHE_SIZE=0)".into(),
                unit: "req/s",
                reporter: u.rps,
                baseline: j.rps,
                baseline_name: "bare poem + HS256",
                target: None,
            },
            Sample {
                row: "P3 GET /v1/templates/{id} p99 vs bare poem + JWT".into(),
                unit: "ms",
                reporter: r.p99_ms,
                baseline: j.p99_ms,
                baseline_name: "bare poem + HS256",
                target: None,
            },
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_upload_form_has_the_three_parts() {
        let (ct, body) = upload_form("a.csv.tpl", "x", "csv");
        let b = ct.strip_prefix("multipart/form-data; boundary=").unwrap();
        let body = String::from_utf8(body).unwrap();
        assert_eq!(body.matches(&format!("--{b}\r\n")).count(), 3, "{body}");
        assert!(body.ends_with(&format!("--{b}--\r\n")));
        assert!(body.contains("name=\"outputFormat\"\r\n\r\ncsv\r\n"));
    }
}
