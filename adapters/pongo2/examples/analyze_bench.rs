//! Times `analyze` on 1 MiB of field references and the render of the golden corpus:
//! `cargo run --release --example analyze_bench` (run under `time` for CPU time on a busy
//! machine).
use reporter_ports::ports::{RenderLimits, TemplateEngine};
use std::time::Instant;

fn main() {
    let mut src = String::from("<html>");
    let mut i = 0;
    while src.len() < 1024 * 1024 {
        src.push_str(&format!("{{{{ bank.t{}.f{} }}}} ", i % 50, i % 200));
        i += 1;
    }
    let engine = reporter_adapter_pongo2::Pongo2Engine::new();
    let limits = RenderLimits::default();
    for _ in 0..5 {
        let started = Instant::now();
        let a = engine.analyze(&src, &limits).map(|a| a.mapped_fields.len());
        println!(
            "analyze 1 MiB ({i} references): {:?} -> {a:?}",
            started.elapsed()
        );
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut cases = Vec::new();
    for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let p = e.path();
        if let Ok(t) = std::fs::read_to_string(p.join("template.tpl")) {
            let d = std::fs::read_to_string(p.join("data.json"))
                .ok()
                .and_then(|s| serde_json::from_str(&s).ok())
                .unwrap_or(serde_json::json!({}));
            cases.push((t, d));
        }
    }
    for _ in 0..3 {
        let started = Instant::now();
        for (t, d) in &cases {
            let _ = engine.render(t, d, &limits);
        }
        println!(
            "render of the {} golden cases: {:?}",
            cases.len(),
            started.elapsed()
        );
    }
}
