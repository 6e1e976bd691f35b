//! Arbitrary template strings never panic — not even inside the engine, where a panic would
//! be caught and turned into an error (a panic hook records any).
use proptest::prelude::*;
use reporter_adapter_minijinja::MiniJinjaEngine;
use reporter_ports::ports::{RenderLimits, TemplateEngine};
use std::sync::atomic::{AtomicBool, Ordering};

static PANICKED: AtomicBool = AtomicBool::new(false);

fn install_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICKED.store(true, Ordering::SeqCst);
            default(info);
        }));
    });
}

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("{{".to_owned()),
        Just("}}".to_owned()),
        Just("{%".to_owned()),
        Just("%}".to_owned()),
        Just("{#".to_owned()),
        Just("#}".to_owned()),
        Just(" for r in bank.t ".to_owned()),
        Just(" endfor ".to_owned()),
        Just(" if ".to_owned()),
        Just(" endif ".to_owned()),
        Just(" macro m(x) ".to_owned()),
        Just(" endmacro ".to_owned()),
        Just(" set x = ".to_owned()),
        Just("bank.t.a".to_owned()),
        Just("|sum('a')".to_owned()),
        Just("|where('a', 1)".to_owned()),
        Just("|count".to_owned()),
        Just("|slice_str('1:')".to_owned()),
        Just("|percent_of(0)".to_owned()),
        Just("|replace(':')".to_owned()),
        Just("|strip_zeros".to_owned()),
        Just("|floatformat(-99999999999)".to_owned()),
        Just("calc('".to_owned()),
        Just("**".to_owned()),
        Just("last_item_by_group(bank.t, 'a', 'a')".to_owned()),
        Just("avg_by(".to_owned()),
        Just("counter_show(".to_owned()),
        Just("date_time('YYYY')".to_owned()),
        Just("range(".to_owned()),
        Just("'".to_owned()),
        Just("\"".to_owned()),
        Just("(".to_owned()),
        Just(")".to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just(",".to_owned()),
        Just("-".to_owned()),
        Just("0".to_owned()),
        Just("9999999999999999999999999999".to_owned()),
        "[ -~]{0,6}",
        "\\PC{0,3}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_templates_never_panic(parts in proptest::collection::vec(piece(), 0..24)) {
        install_hook();
        let src = parts.concat();
        let engine = MiniJinjaEngine::new();
        let limits = RenderLimits { fuel: 200_000, max_recursion: 16, max_output_bytes: 1 << 16 };
        let data = serde_json::json!({"bank": {"t": [{"a": "1.50"}, {"a": 2}]}});
        let _ = engine.check_syntax(&src);
        let _ = engine.render(&src, &data, &limits);
        prop_assert!(!PANICKED.load(Ordering::SeqCst), "panic on {:?}", src);
    }

    #[test]
    fn arbitrary_bytes_never_panic(src in "\\PC{0,200}") {
        install_hook();
        let engine = MiniJinjaEngine::new();
        let limits = RenderLimits { fuel: 200_000, max_recursion: 16, max_output_bytes: 1 << 16 };
        let _ = engine.render(&src, &serde_json::json!({}), &limits);
        prop_assert!(!PANICKED.load(Ordering::SeqCst), "panic on {:?}", src);
    }
}
