//! Issue 31: the template preview's time to answer. `POST /v1/templates/preview` of the
//! example template (`examples/templates/statement.html.tpl`, html, `limit` 50) against the
//! release `reporter serve` (state in memory, auth on, the bundled example data), vs uploading
//! the same template (`POST /v1/templates`, which parses it in a sandbox child and stores it);
//! sequential requests on one server, the median of each. The preview parses, maps and renders
//! in one sandbox child (two exchanges with it: the mapped fields, then the context and the
//! output), the upload parses in one (one exchange). Target: the preview answers faster than
//! an upload (ratio at most 1).
use super::serve::Server;
use super::template_read::upload;
use crate::harness::{Ctx, Figure, Sample, Target};
use async_trait::async_trait;
use std::time::Instant;

/// What `BENCHMARKS.md` says of this figure.
pub const DESCRIPTION: &str = "- **Template preview** (issue 31): `POST /v1/templates/preview` of the example template (`examples/templates/statement.html.tpl`, html, `limit` 50: every row of the bundled `bank` data, rendered and sanitized in the sandbox) against the release `reporter serve` (state in memory, auth on), vs uploading the same template (`POST /v1/templates`: checked, parsed in a sandbox child and stored); 20 requests of each per round (5 with `--quick`), alternating, one at a time; the median time to the answer. The preview's parse, field mapping and render run in one sandbox child (two exchanges with it: the mapped fields, then the context and the sanitized output), the upload's parse in one (one exchange). Target: the preview answers faster than the upload. Informational: a preview of the uploaded template by `templateId` (its mapped fields are stored: the child only renders) vs the upload.\n";

/// The example template.
const TEMPLATE: &str = include_str!("../../../examples/templates/statement.html.tpl");

#[derive(Default)]
pub struct PreviewTime;

/// The median of `v` (not empty).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Milliseconds of one preview of [`TEMPLATE`].
fn preview_once(serve: &Server, body: &[u8]) -> anyhow::Result<f64> {
    let started = Instant::now();
    let (status, answer) = serve.call(
        "POST",
        "/v1/templates/preview",
        Some("application/json"),
        body,
    )?;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    let v: serde_json::Value = serde_json::from_slice(&answer)?;
    anyhow::ensure!(
        status == 200 && v["status"] == "Finished",
        "preview: {status} {v}"
    );
    Ok(ms)
}

/// Milliseconds of one upload of [`TEMPLATE`].
fn upload_once(serve: &Server) -> anyhow::Result<f64> {
    let started = Instant::now();
    upload(serve, "statement.html.tpl", TEMPLATE, "html")?;
    Ok(started.elapsed().as_secs_f64() * 1000.0)
}

/// One round: `n` previews and `n` uploads, alternating (the first of each pair as asked), and
/// `n` previews of the uploaded template by its id; the medians (preview, upload, by id).
fn measure(ctx: &Ctx, reporter_first: bool, n: usize) -> anyhow::Result<(f64, f64, f64)> {
    let serve = Server::reporter(ctx, &[])?;
    let body = serde_json::to_vec(&serde_json::json!({
        "template": TEMPLATE,
        "outputFormat": "html",
        "filters": {},
        "limit": 50,
    }))?;
    // Warm-up: the sandbox's first children, the data source's first read.
    preview_once(&serve, &body)?;
    upload_once(&serve)?;
    let id = upload(&serve, "statement.html.tpl", TEMPLATE, "html")?;
    let by_id = serde_json::to_vec(&serde_json::json!({"templateId": id, "limit": 50}))?;
    let (mut previews, mut uploads, mut stored) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..n {
        if reporter_first {
            previews.push(preview_once(&serve, &body)?);
            uploads.push(upload_once(&serve)?);
        } else {
            uploads.push(upload_once(&serve)?);
            previews.push(preview_once(&serve, &body)?);
        }
        stored.push(preview_once(&serve, &by_id)?);
    }
    Ok((median(previews), median(uploads), median(stored)))
}

#[async_trait]
impl Figure for PreviewTime {
    fn name(&self) -> &'static str {
        "preview-time"
    }

    async fn round(&mut self, ctx: &Ctx, reporter_first: bool) -> anyhow::Result<Vec<Sample>> {
        let n = if ctx.quick { 5 } else { 20 };
        let (preview, upload, stored) =
            tokio::task::block_in_place(|| measure(ctx, reporter_first, n))?;
        let by_id = Sample {
            row: "Issue 31 template preview by templateId (no parse) vs an upload".into(),
            unit: "ms",
            reporter: stored,
            baseline: upload,
            baseline_name: "upload of the same template",
            target: None,
        };
        Ok(vec![
            Sample {
                row: "Issue 31 template preview (example template, limit 50) vs its upload".into(),
                unit: "ms",
                reporter: preview,
                baseline: upload,
                baseline_name: "upload of the same template",
                target: Some(Target::RatioAtMost(1.0)),
            },
            by_id,
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_is_the_middle_value() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![5.0]), 5.0);
    }
}
