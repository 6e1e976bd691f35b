//! Hostile templates: each ends quickly in its bounded error, never in a panic, a stack
//! overflow or an allocation the budget did not allow. Runs on a thread with a 2 MiB stack
//! (a Tokio blocking thread's, in a debug build) to prove the depth bounds protect the stack.
use reporter_adapter_pongo2::Pongo2Engine;
use reporter_ports::ports::{RenderError, RenderLimits, TemplateEngine};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy)]
enum Want {
    Syntax,
    Nesting,
    Fuel,
    Recursion,
    Memory,
    Output,
    Evaluation,
    /// Any outcome but a panic, within the time bound.
    Bounded,
}

fn matches(want: Want, got: &Result<String, RenderError>) -> bool {
    match (want, got) {
        (Want::Syntax, Err(RenderError::Syntax(_))) => true,
        (Want::Nesting, Err(RenderError::NestingTooDeep(_))) => true,
        (Want::Fuel, Err(RenderError::FuelExhausted)) => true,
        (Want::Recursion, Err(RenderError::RecursionLimit)) => true,
        (Want::Memory, Err(RenderError::MemoryLimit(_))) => true,
        (Want::Output, Err(RenderError::OutputTooLarge(_))) => true,
        (Want::Evaluation, Err(RenderError::Evaluation(m))) => !m.contains("bug"),
        (Want::Evaluation, Err(RenderError::Fault(_))) => true,
        (Want::Bounded, Err(RenderError::Evaluation(m))) => !m.contains("bug"),
        (Want::Bounded, _) => true,
        _ => false,
    }
}

fn cases() -> Vec<(&'static str, String, Want)> {
    let n = 100_000;
    vec![
        ("operator chain", format!("{{{{ {} }}}}", vec!["1"; n].join("+")), Want::Nesting),
        ("and chain", format!("{{% if {} %}}x{{% endif %}}", vec!["a"; n].join(" and ")), Want::Nesting),
        ("comparison chain", format!("{{{{ {} }}}}", vec!["a"; n].join(" == ")), Want::Nesting),
        ("power chain", format!("{{{{ {} }}}}", vec!["2"; n].join("^")), Want::Nesting),
        ("filter chain", format!("{{{{ \"a\"{} }}}}", "|upper".repeat(n)), Want::Bounded),
        ("attribute chain", format!("{{{{ x{} }}}}", ".x".repeat(n)), Want::Nesting),
        ("not chain", format!("{{{{ {}x }}}}", "not ".repeat(n)), Want::Syntax),
        ("parentheses", format!("{{{{ {}1{} }}}}", "(".repeat(n), ")".repeat(n)), Want::Nesting),
        ("subscripts", format!("{{{{ {}0{} }}}}", "x[".repeat(n), "]".repeat(n)), Want::Nesting),
        ("call arguments", format!("{{{{ {}1{} }}}}", "contains(".repeat(n), ")".repeat(n)), Want::Nesting),
        ("nested ifs", format!("{}{}", "{% if a %}".repeat(20_000), "{% endif %}".repeat(20_000)), Want::Nesting),
        ("nested fors", format!("{}{}", "{% for a in b %}".repeat(20_000), "{% endfor %}".repeat(20_000)), Want::Nesting),
        ("unclosed ifs", "{% if a %}".repeat(20_000), Want::Nesting),
        ("calc parentheses", format!("{{% calc {}1{} %}}", "(".repeat(n), ")".repeat(n)), Want::Bounded),
        ("huge loops", "{% for a in \"x\"|center:100000 %}{% for b in \"x\"|center:100000 %}.{% endfor %}{% endfor %}".into(), Want::Fuel),
        ("macro recursion", "{% macro m(n) %}{{ m(n) }}{% endmacro %}{{ m(1) }}".into(), Want::Recursion),
        ("mutual macro recursion", "{% macro a() %}{{ b() }}{% endmacro %}{% macro b() %}{{ a() }}{% endmacro %}{{ a() }}".into(), Want::Recursion),
        ("center bomb", "{{ \"x\"|center:999999999 }}".into(), Want::Memory),
        ("ljust bomb", "{{ \"x\"|ljust:999999999 }}".into(), Want::Memory),
        ("rjust bomb", "{{ \"x\"|rjust:999999999 }}".into(), Want::Memory),
        ("floatformat bomb", "{{ 1.5|floatformat:999999999 }}".into(), Want::Memory),
        ("stringformat bomb", "{{ 1|stringformat:\"%999999999d\" }}".into(), Want::Memory),
        ("make_list bomb", "{{ \"x\"|center:50000000|make_list|length }}".into(), Want::Memory),
        ("join separator bomb", "{% with sep = \"x\"|center:50000000 %}{{ \"abcdefgh\"|make_list|join:sep }}{% endwith %}".into(), Want::Memory),
        ("string doubling", "{% with s = \"xxxxxxxx\" %}{% for i in \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\" %}{% set s = s + s %}{% endfor %}{{ s|length }}{% endwith %}".into(), Want::Memory),
        ("add doubling", "{% with s = \"xxxxxxxx\" %}{% for i in \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\" %}{% set s = s|add:s %}{% endfor %}{% endwith %}".into(), Want::Memory),
        ("replace bomb", "{{ \"x\"|center:100000|replace:\":xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"|replace:\":xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\" }}".into(), Want::Memory),
        ("lorem count", "{% lorem 100001 p %}".into(), Want::Evaluation),
        ("lorem output", "{% for i in \"x\"|center:200 %}{% lorem 100000 w %}{% endfor %}".into(), Want::Output),
        ("output bomb", "{% for i in \"x\"|center:100000 %}{% for j in \"x\"|center:1000 %}xxxxxxxxxxxxxxxxxxxx{% endfor %}{% endfor %}".into(), Want::Output),
        ("pow overflow", "{{ 10 ^ 99999 }}{% calc 10 ** 99999 %}".into(), Want::Bounded),
        ("integer overflow", "{{ 9223372036854775807 + 1 }}{{ 9223372036854775807 * 9223372036854775807 }}{{ -9223372036854775807 - 10 }}".into(), Want::Bounded),
        ("divide by zero", "{{ 1 % 0 }}".into(), Want::Evaluation),
        ("widthratio by zero", "{% widthratio 1 0 100 %}".into(), Want::Evaluation),
        ("huge integer literal", "{{ 99999999999999999999999 }}".into(), Want::Syntax),
        ("wordwrap remainder", "{{ \"a b c d e f g\"|wordwrap:5 }}".into(), Want::Bounded),
        ("negative truncation", "{{ \"abc\"|truncatechars:-5 }}{{ \"abc\"|slice_str:\"-1:-1\" }}{{ \"日本語\"|slice_str:\"1:2\" }}".into(), Want::Bounded),
        ("file access", "{% include \"/etc/passwd\" %}".into(), Want::Syntax),
        ("nested filter blocks", format!("{}x{}", "{% filter upper %}".repeat(300), "{% endfilter %}".repeat(300)), Want::Nesting),
    ]
}

fn limits() -> RenderLimits {
    RenderLimits {
        fuel: 5_000_000,
        max_recursion: 64,
        max_output_bytes: 8 * 1024 * 1024,
        max_memory_bytes: 64 * 1024 * 1024,
        max_nesting_depth: 256,
    }
}

#[test]
fn hostile_templates_end_in_their_bound() {
    let handle = std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(|| {
            let engine = Pongo2Engine::new();
            let data = serde_json::json!({"b": {"t": [{"x": 1}]}});
            let mut failures = Vec::new();
            let mut timings = Vec::new();
            for (name, src, want) in cases() {
                let started = Instant::now();
                let analyzed = engine.analyze(&src, &limits());
                let rendered = engine.render(&src, &data, &limits());
                let took = started.elapsed();
                // Analysis fails exactly when the template does not parse.
                let parse_error = matches!(
                    analyzed,
                    Err(RenderError::Syntax(_) | RenderError::NestingTooDeep(_))
                );
                let render_parse_error = matches!(
                    rendered,
                    Err(RenderError::Syntax(_) | RenderError::NestingTooDeep(_))
                );
                if parse_error != render_parse_error {
                    failures.push(format!(
                        "{name}: analyze {analyzed:?} but render {rendered:?}"
                    ));
                }
                if !matches(want, &rendered) {
                    let shown: String = format!("{rendered:?}").chars().take(200).collect();
                    failures.push(format!("{name}: expected {want:?}, got {shown}"));
                }
                if took > Duration::from_secs(20) {
                    failures.push(format!("{name}: took {took:?}"));
                }
                timings.push(format!("{name}: {took:?}"));
            }
            reporter_contract::figure!("hostile templates in the engine:\n{}", timings.join("\n"));
            failures
        })
        .expect("thread");
    let failures = handle.join().expect("no stack overflow, no panic");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_mebibyte_of_field_references_analyzes_in_linear_time() {
    let mut src = String::from("<html>");
    let mut i = 0;
    while src.len() < 1024 * 1024 {
        src.push_str(&format!("{{{{ bank.t{}.f{} }}}} ", i % 50, i % 200));
        i += 1;
    }
    let engine = Pongo2Engine::new();
    let started = Instant::now();
    let a = engine
        .analyze(&src, &RenderLimits::default())
        .expect("parses");
    let took = started.elapsed();
    reporter_contract::figure!("1 MiB of field references analyzed in {took:?}");
    assert_eq!(a.mapped_fields["bank"].len(), 50);
    // Debug builds are ~10x slower than release; release measures well under a second.
    assert!(took < Duration::from_secs(10), "took {took:?}");
}
