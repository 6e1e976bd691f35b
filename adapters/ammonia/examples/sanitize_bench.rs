//! Times the sanitizer on the HTML of the bench's five-column table (`report-client`'s HTML
//! report): `cargo run --release -p reporter-adapter-ammonia --example sanitize_bench [ROWS]
//! [ITERATIONS]` (default 10,000 rows, 20 iterations). Prints the median time per document.
use reporter_adapter_ammonia::DocumentSanitizer;
use reporter_ports::ports::HtmlSanitizer;
use std::time::Instant;

/// The document the bench's HTML template renders for `rows` rows.
fn document(rows: usize) -> String {
    let mut html = String::from(
        "<html><body><table><tr><th>id</th><th>label</th><th>amount</th><th>booked on</th><th>memo</th></tr>\n",
    );
    for id in 1..=rows {
        html.push_str(&format!(
            "<tr><td>{id}</td><td>entry {id}</td><td>{}.{}</td><td>2024-{:02}-{:02}</td><td>{}</td></tr>\n",
            id * 7 % 10_000,
            id % 100,
            id % 12 + 1,
            id % 28 + 1,
            "memo text of fifty characters for the wide table x"
        ));
    }
    html.push_str("</table></body></html>");
    html
}

fn main() {
    let mut args = std::env::args().skip(1);
    let rows = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let iterations: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20);
    let html = document(rows);
    let sanitizer = DocumentSanitizer::new();
    let mut times = Vec::with_capacity(iterations);
    let mut out_len = 0;
    for _ in 0..iterations {
        let started = Instant::now();
        let out = sanitizer.sanitize(&html);
        times.push(started.elapsed().as_secs_f64() * 1e3);
        out_len = out.len();
    }
    times.sort_by(f64::total_cmp);
    println!(
        "{rows} rows, {} bytes in, {out_len} out: median {:.2} ms, min {:.2} ms over {iterations}",
        html.len(),
        times[times.len() / 2],
        times[0]
    );
}
