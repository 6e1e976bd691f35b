//! Renders the P5 benchmark's CSV template over an N-row context given as JSON text, as the
//! render child does: `cargo run --release --example rows_bench -- [rows] [repeats]`.
//! With `ROWS_BENCH_STREAM` set, the rows come as a stream (chunks of 500 rows, about 35 KB;
//! the worker sends about 256 KiB at a time) and the context holds the table empty.
mod render_bench;

use reporter_ports::ports::TemplateEngine;
use std::fmt::Write;

const TEMPLATE: &str = "id,amount,label,booked_on\n{% for r in bench.ledger %}{{ r.id }},{{ r.amount }},{{ r.label }},{{ r.booked_on|date:\"2006-01-02\" }}\n{% endfor %}";

fn context(rows: usize) -> String {
    let mut s = String::from("{\"bench\":{\"ledger\":[");
    for g in 1..=rows {
        if g > 1 {
            s.push(',');
        }
        let amount = ((g * 7919) % 10_000_000) as f64 / 100.0;
        let day = g % 28 + 1;
        let _ = write!(
            s,
            "{{\"id\":{g},\"amount\":\"{amount:.2}\",\"label\":\"entry {g} {:032x}\",\"booked_on\":\"2020-01-{day:02} 00:00:00 +0000 UTC\"}}",
            g * 2654435761
        );
    }
    s.push_str("]}}");
    s
}

/// The rows of `context(rows)` as JSON arrays of 500 rows each.
fn chunks(rows: usize) -> Vec<Vec<u8>> {
    let whole = context(rows);
    let list: serde_json::Value = serde_json::from_str(&whole).unwrap_or_default();
    let rows = list["bench"]["ledger"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::new();
    let mut chunk = Vec::new();
    for row in rows {
        chunk.push(row);
        if chunk.len() == 500 {
            out.push(serde_json::to_vec(&chunk).unwrap_or_default());
            chunk.clear();
        }
    }
    if !chunk.is_empty() {
        out.push(serde_json::to_vec(&chunk).unwrap_or_default());
    }
    out
}

fn main() {
    let (rows, repeats) = render_bench::rows_and_repeats();
    let stream = std::env::var_os("ROWS_BENCH_STREAM").is_some();
    let ctx = if stream {
        "{\"bench\":{\"ledger\":[]}}".to_owned()
    } else {
        context(rows)
    };
    let parts = if stream { chunks(rows) } else { Vec::new() };
    let engine = reporter_adapter_pongo2::Pongo2Engine::new();
    let limits = render_bench::limits();
    let run = || {
        render_bench::timed(rows, repeats, || {
            // Without `stream`, `parts` is empty and the feed unused.
            let mut feed = render_bench::Feed::new(parts.clone(), None);
            let out = if stream {
                engine.render_json_streamed(TEMPLATE, ctx.as_bytes(), &mut feed, &limits)
            } else {
                engine.render_json(TEMPLATE, ctx.as_bytes(), &limits)
            };
            Ok(out?.len() + feed.written)
        })
    };
    if std::env::var_os("ROWS_BENCH_THREAD").is_some() {
        render_bench::on_render_stack(None, run);
    } else {
        run();
    }
}
