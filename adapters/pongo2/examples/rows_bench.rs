//! Renders the P5 benchmark's CSV template over an N-row context given as JSON text, as the
//! render child does: `cargo run --release --example rows_bench -- [rows] [repeats]`.
//! With `ROWS_BENCH_STREAM` set, the rows come as a stream (chunks of 500 rows, about 35 KB;
//! the worker sends about 256 KiB at a time) and the context holds the table empty.
use reporter_ports::ports::{RenderError, RenderLimits, RowFeed, TemplateEngine};
use std::fmt::Write;
use std::time::Instant;

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

struct Feed(std::vec::IntoIter<Vec<u8>>);

impl RowFeed for Feed {
    fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, RenderError> {
        Ok(self.0.next())
    }
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let rows = args.first().copied().unwrap_or(100_000);
    let repeats = args.get(1).copied().unwrap_or(5);
    let stream = std::env::var_os("ROWS_BENCH_STREAM").is_some();
    let ctx = if stream {
        "{\"bench\":{\"ledger\":[]}}".to_owned()
    } else {
        context(rows)
    };
    let parts = if stream { chunks(rows) } else { Vec::new() };
    let engine = reporter_adapter_pongo2::Pongo2Engine::new();
    let limits = RenderLimits {
        max_output_bytes: 1 << 30,
        fuel: u64::MAX / 2,
        ..RenderLimits::default()
    };
    let run = || {
        for _ in 0..repeats {
            let started = Instant::now();
            let out = if stream {
                let mut feed = Feed(parts.clone().into_iter());
                engine.render_json_streamed(TEMPLATE, ctx.as_bytes(), &mut feed, &limits)
            } else {
                engine.render_json(TEMPLATE, ctx.as_bytes(), &limits)
            };
            let len = out.map(|o| o.len()).unwrap_or_else(|e| panic!("{e}"));
            println!("{rows} rows, {len} bytes: {:?}", started.elapsed());
        }
    };
    if std::env::var_os("ROWS_BENCH_THREAD").is_some() {
        std::thread::scope(|s| {
            std::thread::Builder::new()
                .stack_size(64 << 20)
                .spawn_scoped(s, run)
                .map(|t| t.join())
                .ok();
        });
    } else {
        run();
    }
}
