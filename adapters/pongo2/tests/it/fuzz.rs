//! Property fuzzing with a fixed seed and a case budget: `analyze` and `render` never panic
//! on arbitrary input (Unicode inside tags and comments, deep nesting, huge numbers), and
//! on generated templates rendering never reads a data field outside the mapped fields.
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use reporter_adapter_pongo2::Pongo2Engine;
use reporter_ports::ports::{RenderError, RenderLimits, TemplateEngine};

fn limits() -> RenderLimits {
    RenderLimits {
        fuel: 200_000,
        max_recursion: 16,
        max_output_bytes: 256 * 1024,
        max_memory_bytes: 4 * 1024 * 1024,
        max_nesting_depth: 64,
    }
}

fn runner(cases: u32) -> TestRunner {
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]))
}

fn data() -> serde_json::Value {
    serde_json::json!({
        "ds": {
            "t": [
                {"a": "1.50", "b": 2, "c": "x<y", "d": "2025-06-01 10:00:00 +0000 UTC", "e": {"f": [1, 2]}, "g": null, "direction": "debit"},
                {"a": "-3", "b": 0, "c": "", "d": "2024-01-01", "e": {}, "g": true, "direction": "credit"}
            ],
            "u": [{"a": 1}]
        }
    })
}

fn not_a_bug(r: &Result<impl std::fmt::Debug, RenderError>) -> bool {
    !matches!(r, Err(RenderError::Evaluation(m) | RenderError::Syntax(m)) if m.contains("bug"))
}

const PIECES: &[&str] = &[
    "{{",
    "}}",
    "{%",
    "%}",
    "{#",
    "#}",
    "{{-",
    "-}}",
    "{%-",
    "-%}",
    " ",
    "\n",
    "ds",
    "t",
    "u",
    ".",
    "0",
    "1",
    "a",
    "b",
    "c",
    "d",
    "e",
    "x",
    "|",
    ":",
    "\"",
    "'",
    "(",
    ")",
    "[",
    "]",
    "+",
    "-",
    "*",
    "/",
    "^",
    "%",
    "==",
    "<",
    "!",
    "not",
    "and",
    "or",
    "in",
    "if",
    "endif",
    "elif",
    "else",
    "for",
    "endfor",
    "empty",
    "with",
    "endwith",
    "set",
    "=",
    "macro",
    "endmacro",
    "calc",
    "**",
    "sum_by",
    "by",
    "count_by",
    "avg_by",
    "as",
    "last_item_by_group",
    "group_by",
    "order_by",
    "counter",
    "counter_show",
    "date_time",
    "upper",
    "length",
    "where",
    "sum",
    "count",
    "slice",
    "center",
    "join",
    "floatformat",
    "date",
    "add_day",
    "add_signed",
    "filter",
    "contains",
    "cycle",
    "firstof",
    "lorem",
    "widthratio",
    "spaceless",
    "endspaceless",
    "你好",
    "世界",
    "é",
    "—",
    "comentário",
    "99999999999999999999",
    "1e308",
    "-0",
    "forloop",
    "Counter",
    "autoescape",
    "off",
    "endautoescape",
    "safe",
    "escape",
    "include",
    "ifchanged",
    "endifchanged",
];

#[test]
fn arbitrary_input_never_panics() {
    let engine = Pongo2Engine::new();
    let data = data();
    let pieces = proptest::collection::vec(
        prop_oneof![
            4 => proptest::sample::select(PIECES).prop_map(str::to_owned),
            1 => any::<String>(),
        ],
        0..80,
    )
    .prop_map(|v| v.concat());
    runner(1500)
        .run(&pieces, |src| {
            let a = engine.analyze(&src, &limits());
            prop_assert!(not_a_bug(&a), "analyze: {a:?} on {src:?}");
            let r = engine.render(&src, &data, &limits());
            prop_assert!(not_a_bug(&r), "render: {r:?} on {src:?}");
            Ok(())
        })
        .expect("no panic");
}

#[test]
fn deep_and_huge_inputs_never_panic() {
    let engine = Pongo2Engine::new();
    let data = data();
    let shapes = (0usize..6, 1usize..3000, proptest::sample::select(PIECES)).prop_map(
        |(shape, n, piece)| match shape {
            0 => format!("{}{}", "{% if x %}".repeat(n), piece),
            1 => format!("{{{{ {}{} }}}}", "(".repeat(n), piece),
            2 => format!("{{{{ {} }}}}", vec![piece; n].join("+")),
            3 => format!("{{{{ x{} }}}}", format!(".{piece}").repeat(n)),
            4 => format!("{{% calc {} %}}", vec![piece; n].join(" ")),
            _ => format!("{{{{ {}{} }}}}", "9".repeat(n), piece),
        },
    );
    runner(300)
        .run(&shapes, |src| {
            let a = engine.analyze(&src, &limits());
            prop_assert!(not_a_bug(&a), "analyze: {a:?}");
            let r = engine.render(&src, &data, &limits());
            prop_assert!(not_a_bug(&r), "render: {r:?}");
            Ok(())
        })
        .expect("no panic");
}

/// Generated templates over `ds.t` / `ds.u`: whatever rendering reads is mapped.
#[test]
fn rendering_reads_only_mapped_fields() {
    let engine = Pongo2Engine::new();
    let data = data();
    let field = proptest::sample::select(&["a", "b", "c", "d", "e", "g", "zz"][..]);
    let table = proptest::sample::select(&["t", "u"][..]);
    let fragment = (0usize..16, table, field.clone(), field).prop_map(|(k, t, f, g)| match k {
        0 => format!("{{{{ ds.{t}.0.{f} }}}}"),
        1 => format!("{{% for r in ds.{t} %}}{{{{ r.{f} }}}}{{% endfor %}}"),
        2 => format!("{{% with x = ds.{t}.1 %}}{{{{ x.{f}|default:\"-\" }}}}{{% endwith %}}"),
        3 => format!("{{% with x = filter(ds.{t}, \"{f}\", 2)[0] %}}{{{{ x.{g} }}}}{{% endwith %}}"),
        4 => format!("{{% sum_by ds.{t} by \"{f}\" if {g} %}}"),
        5 => format!("{{% count_by ds.{t} if {f} == 2 or {g} %}}"),
        6 => format!("{{{{ ds.{t}|where:\"{f}:2\"|length }}}}{{{{ ds.{t}|sum:\"{g}\" }}}}"),
        7 => format!("{{% set rows = ds.{t} %}}{{% for r in rows|slice:\":1\" %}}{{{{ r[\"{f}\"] }}}}{{% endfor %}}"),
        8 => format!("{{% calc ds.{t}.0.{f} + 1 %}}"),
        9 => format!("{{% last_item_by_group ds.{t} group_by \"{f}\" order_by \"{g}\" as l %}}{{% for r in l %}}{{{{ r.{g} }}}}{{% endfor %}}"),
        10 => format!("{{% for r in ds.{t}|add_day:\"{f}\"|add_signed:\"{g}\" %}}{{{{ r.dia }}}}{{{{ r.signed }}}}{{{{ r.{f} }}}}{{% endfor %}}"),
        11 => format!("{{% macro m(rows) %}}{{% for r in rows %}}{{{{ r.{f} }}}}{{% endfor %}}{{% endmacro %}}{{{{ m(ds.{t}) }}}}"),
        12 => format!("{{% if contains(ds.{t}.0.{f}, \"x\") %}}y{{% endif %}}{{{{ ds.{t}.0.e.f.1 }}}}"),
        13 => format!("{{{{ ds.{t}|first }}}}{{% with r = ds.{t}|last %}}{{{{ r.{f} }}}}{{% endwith %}}"),
        14 => format!("{{% for k, v in ds.{t}.0.e %}}{{{{ k }}}}{{% endfor %}}{{{{ ds.{t}.0.{f}.x }}}}"),
        _ => format!("{{% for r in ds.{t} %}}{{% ifchanged r.{f} %}}{{{{ r.{g} }}}}{{% endifchanged %}}{{% endfor %}}"),
    });
    let template = proptest::collection::vec(fragment, 1..6).prop_map(|v| v.concat());
    runner(400)
        .run(&template, |src| {
            let mapped = engine
                .analyze(&src, &limits())
                .expect("generated templates parse")
                .mapped_fields;
            let rec = engine.render_recording(&src, &data, &limits());
            prop_assert!(not_a_bug(&rec.result), "{:?}", rec.result);
            for (ds, tables) in &rec.reads {
                for (t, fields) in tables {
                    for f in fields {
                        let ok = mapped
                            .get(ds)
                            .and_then(|m| m.get(t))
                            .is_some_and(|fs| fs.contains(f));
                        prop_assert!(ok, "read {ds}.{t}.{f} not in {mapped:?} for {src}");
                    }
                }
            }
            Ok(())
        })
        .expect("reads are mapped");
}

/// Data values as a database could hand them over: arbitrary and tricky Unicode, integers
/// at the ends of `i64`, floats at the ends of `f64`, numeric strings of hundreds of digits,
/// time-like strings, and nesting (small trees, and chains of arrays and maps thousands deep).
fn data_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::{Value, json};
    let scalar = prop_oneof![
        any::<String>().prop_map(Value::from),
        proptest::sample::select(vec![
            "你好",
            "🙂",
            "\u{10ffff}",
            "\u{feff}",
            "e\u{301}",
            "<script>x</script>",
            "&#106;",
            "1.50",
            "-0",
            "0.00",
            "1e999",
            "-1e-999",
            "NaN",
            "2025-06-01 10:00:00 +0000 UTC",
            "2024-02-30",
            "0x7f",
            "",
            " ",
            "a:b",
            "%v%s%d",
        ])
        .prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        proptest::sample::select(vec![i64::MIN, i64::MAX, 0, -1]).prop_map(Value::from),
        proptest::sample::select(vec![
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            5e-324,
            -0.0,
            0.1
        ])
        .prop_map(|f| json!(f)),
        any::<f64>().prop_map(|f| json!(f)),
        any::<bool>().prop_map(Value::from),
        Just(Value::Null),
        "-?[0-9]{1,400}".prop_map(Value::from),
        "[0-9]{1,200}\\.[0-9]{1,200}".prop_map(Value::from),
    ];
    let tree = scalar.clone().prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map("[a-g]", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    let deep = (scalar.clone(), 1usize..3000, any::<bool>()).prop_map(|(leaf, depth, arrays)| {
        let mut v = leaf;
        // Built by moving (`json!` would serialize `v` again, recursively, at each level).
        for _ in 0..depth {
            v = if arrays {
                Value::Array(vec![v])
            } else {
                Value::Object(std::iter::once(("a".to_owned(), v)).collect())
            };
        }
        v
    });
    prop_oneof![4 => scalar, 2 => tree, 1 => deep]
}

/// Templates that put every kind of value through printing, filters, tags and helpers.
const DATA_TEMPLATES: &[&str] = &[
    "{{ ds.t.0.a }}|{{ ds.t.0.a|length }}|{{ ds.t.0.a|floatformat:2 }}|{{ ds.t.0.a|add: ds.t.0.b }}|{{ ds.t.0.a|stringformat:\"%v\" }}",
    "{% for r in ds.t %}{{ r.a|upper }}{{ r.b|slice:\":3\" }}{{ r.c|title }}{{ r.a|escapejs }}{{ r.b|urlencode }}{% endfor %}",
    "{% sum_by ds.t by \"a\" %} {% avg_by ds.t by \"b\" %} {% min_by ds.t by \"c\" %} {% max_by ds.t by \"a\" as m %}{{ m }} {% count_by ds.t if a > b %}",
    "{% calc ds.t.0.a * ds.t.0.b + 1 %} {% calc ds.t.1.a ** ds.t.0.c as p %}{{ p }}",
    "{{ ds.t|sum:\"a\" }} {{ ds.t|where:\"a:1\"|length }} {{ ds.t|count:\"b:x\" }} {{ ds.t.0.a|percent_of: ds.t.0.b }}",
    "{{ ds.t.0.a|date:\"2006-01-02\" }} {{ ds.t.0.b|time:\"15:04\" }}{% for r in ds.t|add_day:\"a\"|add_signed:\"b\" %}{{ r.dia }} {{ r.signed }}{% endfor %}",
    "{% for k, v in ds.t.0.a %}{{ k }}={{ v }};{% endfor %}{% for x in ds.t.0.b %}{{ x }},{% empty %}-{% endfor %}",
    "{{ ds.t.0.a|join:\",\" }} {{ ds.t.0.a|first }} {{ ds.t.0.a|last }} {{ ds.t.0.a|make_list|length }} {{ ds.t.0.a|slice_str:\"1:3\" }} {{ ds.t.0.a|strip_zeros }} {{ ds.t.0.a|replace:\"1:2\" }}",
    "{% if ds.t.0.a == ds.t.0.b %}eq{% elif ds.t.0.a > ds.t.0.b %}gt{% endif %}{% if ds.t.0.a in ds.t.0.c %}in{% endif %}{{ ds.t.0.a|yesno }}{{ ds.t.0.a|default:\"d\" }}{{ ds.t.0.a|divisibleby:3 }}{{ ds.t.0.a|get_digit:2 }}",
    "{% last_item_by_group ds.t group_by \"a\" order_by \"b\" as l %}{{ l|length }}{% for r in ds.t %}{% ifchanged r.a %}x{% endifchanged %}{% endfor %}{{ ds.t.0.a|truncatechars:5 }}{{ ds.t.0.a|wordwrap:3 }}{{ ds.t.0.a|center:9 }}",
    "{{ ds.t.0.a|integer }} {{ ds.t.0.a|float }} {{ ds.t.0.a|pluralize }} {{ ds.t.0.a|linebreaksbr }} {{ ds.t.0.a|striptags }} {{ ds.t.0.a|safe }} {{ filter(ds.t, \"a\", ds.t.0.b)|length }} {{ contains(ds.t.0.a, ds.t.0.b) }}",
    "{{ ds.t.0.a.x.y }}{{ ds.t.0.a.0.0 }}{{ ds.t.0.a[ds.t.0.b] }}{% with v = ds.t.0.a %}{{ v|length }}{% endwith %}{{ ds.t|length }}{{ ds.t }}{{ ds.t.0 }}",
];

/// Fuzzed data values under fixed templates: rendering never panics (nor overflows the
/// stack: a crash fails the test binary), and reads only mapped fields.
#[test]
fn fuzzed_data_values_render_without_panic() {
    let engine = Pongo2Engine::new();
    let rows = proptest::collection::vec(
        (data_value(), data_value(), data_value()).prop_map(|(a, b, c)| {
            let row = [("a", a), ("b", b), ("c", c)].map(|(k, v)| (k.to_owned(), v));
            serde_json::Value::Object(row.into_iter().collect())
        }),
        0..4,
    );
    let template = proptest::sample::select(DATA_TEMPLATES);
    runner(600)
        .run(&(rows, template), |(rows, src)| {
            let one = |k: &str, v| {
                serde_json::Value::Object(std::iter::once((k.to_owned(), v)).collect())
            };
            let data = one("ds", one("t", serde_json::Value::Array(rows)));
            let mapped = engine
                .analyze(src, &limits())
                .expect("the data templates parse")
                .mapped_fields;
            let rec = engine.render_recording(src, &data, &limits());
            prop_assert!(not_a_bug(&rec.result), "{:?} on {src}", rec.result);
            for (ds, tables) in &rec.reads {
                for (t, fields) in tables {
                    for f in fields {
                        let ok = mapped
                            .get(ds)
                            .and_then(|m| m.get(t))
                            .is_some_and(|fs| fs.contains(f));
                        prop_assert!(ok, "read {ds}.{t}.{f} not in {mapped:?} for {src}");
                    }
                }
            }
            Ok(())
        })
        .expect("fuzzed data renders");
}
