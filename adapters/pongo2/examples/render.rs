//! Renders a template file over a JSON data file: `cargo run --example render -- t.tpl [d.json]`.
use reporter_ports::ports::{RenderLimits, TemplateEngine};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(tpl) = args.get(1).and_then(|p| std::fs::read_to_string(p).ok()) else {
        eprintln!("usage: render <template> [data.json]");
        std::process::exit(2);
    };
    let data = args
        .get(2)
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(serde_json::json!({}));
    let engine = reporter_adapter_pongo2::Pongo2Engine::new();
    let limits = RenderLimits::default();
    match engine.analyze(&tpl, &limits) {
        Ok(a) => eprintln!("mapped: {:?}", a.mapped_fields),
        Err(e) => eprintln!("analyze: {e}"),
    }
    match engine.render(&tpl, &data, &limits) {
        Ok(s) => print!("{s}"),
        Err(e) => eprintln!("render: {e}"),
    }
}
