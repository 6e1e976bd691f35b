//! Renders the client-seen report figure's templates (`report-client`: five columns, CSV or
//! HTML) over N rows streamed in chunks of about 256 KiB, as the render child does:
//! `cargo run --release --example wide_bench -- [rows] [repeats]` (`WIDE_BENCH_HTML` set: the
//! HTML template). The rows are written as the PostgreSQL source writes them (fields sorted by
//! name, the amount as text, the date as Go prints a time).
mod render_bench;

use reporter_ports::ports::TemplateEngine;
use std::fmt::Write;

const CSV: &str = "id,label,amount,booked_on,memo\n{% for r in bench.wide %}{{ r.id }},{{ r.label }},{{ r.amount }},{{ r.booked_on|date:\"2006-01-02\" }},{{ r.memo }}\n{% endfor %}";
const HTML: &str = "<html><body><table><tr><th>id</th><th>label</th><th>amount</th><th>booked on</th><th>memo</th></tr>\n{% for r in bench.wide %}<tr><td>{{ r.id }}</td><td>{{ r.label }}</td><td>{{ r.amount }}</td><td>{{ r.booked_on|date:\"2006-01-02\" }}</td><td>{{ r.memo }}</td></tr>\n{% endfor %}</table></body></html>";

/// Bytes of rows per chunk (the worker's `CHUNK_BYTES`).
const CHUNK_BYTES: usize = 256 * 1024;

/// The rows as JSON arrays of about [`CHUNK_BYTES`] each.
fn chunks(rows: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut chunk = String::from("[");
    for g in 1..=rows {
        if chunk.len() > 1 {
            chunk.push(',');
        }
        let amount = ((g * 7919) % 10_000_000) as f64 / 100.0;
        let day = g % 28 + 1;
        let memo = format!("{:032x}{:032x}", g * 2654435761, (g + 1) * 2654435761);
        let _ = write!(
            chunk,
            "{{\"amount\":\"{amount:.2}\",\"booked_on\":\"2020-01-{day:02} 00:00:00 +0000 UTC\",\"id\":{g},\"label\":\"entry {g}\",\"memo\":\"{}\"}}",
            &memo[..50]
        );
        if chunk.len() >= CHUNK_BYTES {
            chunk.push(']');
            out.push(std::mem::replace(&mut chunk, String::from("[")).into_bytes());
        }
    }
    if chunk.len() > 1 {
        chunk.push(']');
        out.push(chunk.into_bytes());
    }
    out
}

fn main() {
    let (rows, repeats) = render_bench::rows_and_repeats();
    let template = if std::env::var_os("WIDE_BENCH_HTML").is_some() {
        HTML
    } else {
        CSV
    };
    let ctx = "{\"bench\":{\"wide\":[]}}";
    let parts = chunks(rows);
    let engine = reporter_adapter_pongo2::Pongo2Engine::new();
    let limits = render_bench::limits();
    render_bench::on_render_stack(Some("template"), || {
        render_bench::timed(rows, repeats, || {
            // The render child's output pieces (256 KiB).
            let mut feed = render_bench::Feed::new(parts.clone(), Some(256 * 1024));
            let out = engine.render_json_streamed(template, ctx.as_bytes(), &mut feed, &limits)?;
            Ok(out.len() + feed.written)
        })
    });
}
