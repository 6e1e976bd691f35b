//! Every helper, data addressing and decimal exactness.
use chrono::{DateTime, TimeZone, Utc};
use reporter_adapter_minijinja::{EngineOptions, MiniJinjaEngine};
use reporter_ports::Clock;
use reporter_ports::ports::{RenderError, RenderLimits, TemplateEngine};
use serde_json::json;
use std::sync::Arc;

fn data() -> serde_json::Value {
    json!({
        "bank": {
            "tx": [
                {"id": "T1", "acct": "A", "amount": "1250.00", "kind": "debit", "n": 6, "date": "2024-01-02"},
                {"id": "T2", "acct": "A", "amount": "0.50", "kind": "credit", "n": "6", "date": "2024-01-05T10:00:00Z"},
                {"id": "T3", "acct": "B", "amount": "10.25", "kind": "debit", "n": null, "date": "2024-01-03"},
                {"id": "T4", "acct": "B", "amount": "x", "kind": "debit", "date": "2024-01-01"}
            ],
            "empty": [],
            "nested": [{"address": {"state": "SP"}, "items": [{"price": "1.10"}]}]
        }
    })
}

fn render(src: &str) -> String {
    render_with(&MiniJinjaEngine::new(), src, &data())
}

fn render_with(engine: &MiniJinjaEngine, src: &str, data: &serde_json::Value) -> String {
    match engine.render(src, data, &RenderLimits::default()) {
        Ok(s) => s,
        Err(e) => panic!("render of {src:?} failed: {e}"),
    }
}

fn render_err(src: &str) -> RenderError {
    match MiniJinjaEngine::new().render(src, &data(), &RenderLimits::default()) {
        Ok(s) => panic!("render of {src:?} should fail, gave {s:?}"),
        Err(e) => e,
    }
}

#[test]
fn table_attribute_reads_the_first_row_and_still_loops() {
    assert_eq!(render("{{ bank.tx.id }}"), "T1");
    assert_eq!(render("{{ bank.tx.amount }}"), "1250.00");
    assert_eq!(render("{{ bank.tx|length }}"), "4");
    assert_eq!(render("{{ (bank.tx|first).id }}"), "T1");
    assert_eq!(render("{{ (bank.tx|last).id }}"), "T4");
    assert_eq!(
        render("{{ bank.tx[1].id }}/{{ bank.tx.2.id }}/{{ bank.tx[-1].id }}"),
        "T2/T3/T4"
    );
    assert_eq!(
        render("{% for t in bank.tx %}{{ t.id }}{% if not loop.last %},{% endif %}{% endfor %}"),
        "T1,T2,T3,T4"
    );
    assert_eq!(
        render("{{ bank.tx|map(attribute='id')|join('+') }}"),
        "T1+T2+T3+T4"
    );
    assert_eq!(render("{{ bank.nested.address.state }}"), "SP");
    // Empty tables and missing names print nothing (lenient, like the reference).
    assert_eq!(
        render("[{{ bank.empty.id }}][{{ bank.nope.x.y }}][{{ nope }}]"),
        "[][][]"
    );
    assert_eq!(
        render("{% if bank.empty %}full{% else %}empty{% endif %}{% if bank.tx %}!{% endif %}"),
        "empty!"
    );
    assert_eq!(render("{{ bank.empty|length }}"), "0");
}

#[test]
fn where_filters_rows_in_both_forms() {
    assert_eq!(render("{{ bank.tx|where('kind:debit')|length }}"), "3");
    assert_eq!(
        render("{{ bank.tx|where('kind', 'credit')|map(attribute='id')|join }}"),
        "T2"
    );
    // Loose equality: the number 6 and the string "6" both match.
    assert_eq!(
        render("{{ bank.tx|where('n', 6)|length }}/{{ bank.tx|where('n:6')|length }}"),
        "2/2"
    );
    assert_eq!(
        render("{{ bank.nested|where('address.state', 'SP')|length }}"),
        "1"
    );
    // A where result is a table too: attribute access reads its first row.
    assert_eq!(render("{{ (bank.tx|where('acct', 'B')).id }}"), "T3");
    assert!(matches!(
        render_err("{{ bank.tx|where('nocolon') }}"),
        RenderError::Evaluation(_)
    ));
    assert!(matches!(
        render_err("{{ 'text'|where('a', 1) }}"),
        RenderError::Evaluation(_)
    ));
}

#[test]
fn count_forms() {
    assert_eq!(render("{{ bank.tx|count }}"), "4");
    assert_eq!(render("{{ bank.tx|count('kind', 'debit') }}"), "3");
    assert_eq!(render("{{ bank.tx|count('kind:credit') }}"), "1");
    // One argument without ':' counts rows whose field is not null.
    assert_eq!(render("{{ bank.tx|count('n') }}"), "2");
}

#[test]
fn sum_is_exact_and_keeps_scale() {
    // "x" is not a number and is skipped, as in the reference.
    assert_eq!(render("{{ bank.tx|sum('amount') }}"), "1260.75");
    assert_eq!(
        render("{{ bank.tx|where('acct', 'A')|sum('amount') }}"),
        "1250.50"
    );
    assert_eq!(render("{{ bank.nested|sum('items.0.price') }}"), "1.10");
    assert_eq!(render("{{ [1, 2, 3]|sum }}"), "6");
    assert_eq!(
        render("{{ [1, 2, 3]|sum + 1 }}"),
        "7",
        "integral sums are integers"
    );
    assert_eq!(render("{{ bank.empty|sum('amount') }}"), "0");
}

#[test]
fn decimal_exactness() {
    let d = json!({"m": {"f": [{"v": 0.1}, {"v": 0.2}], "s": [{"v": "0.1"}, {"v": "0.2"}]}});
    let e = MiniJinjaEngine::new();
    assert_eq!(
        render_with(
            &e,
            "{{ m.f|sum('v') }} {{ m.s|sum('v') }} {{ sum_by(m.f, 'v') }}",
            &d
        ),
        "0.3 0.3 0.3"
    );
    assert_eq!(render("{{ calc('0.1 + 0.2') }}"), "0.3");
    let cents: Vec<_> = (0..1000).map(|_| json!({"a": "0.01"})).collect();
    let d = json!({"m": {"c": cents}});
    assert_eq!(
        render_with(
            &e,
            "{{ m.c|sum('a') }} {{ sum_by(m.c, 'a') }} {{ avg_by(m.c, 'a') }}",
            &d
        ),
        "10.00 10.00 0.01"
    );
    let d = json!({"m": {"big": [{"a": "12345678901234567.89"}, {"a": "0.01"}]}});
    assert_eq!(
        render_with(&e, "{{ m.big|sum('a') }}", &d),
        "12345678901234567.90"
    );
}

#[test]
fn aggregation_functions() {
    assert_eq!(render("{{ sum_by(bank.tx, 'amount') }}"), "1260.75");
    assert_eq!(render("{{ bank.tx|sum_by('amount') }}"), "1260.75");
    assert_eq!(
        render("{{ count_by(bank.tx, 'n') }}/{{ count_by(bank.tx) }}"),
        "2/4"
    );
    assert_eq!(render("{{ avg_by(bank.tx, 'amount') }}"), "420.25");
    assert_eq!(
        render("{{ min_by(bank.tx, 'amount') }}/{{ max_by(bank.tx, 'amount') }}"),
        "0.50/1250.00"
    );
    let d = json!({"m": {"r": [{"v": 1}, {"v": 2}, {"v": 2}]}});
    assert_eq!(
        render_with(&MiniJinjaEngine::new(), "{{ avg_by(m.r, 'v') }}", &d),
        "1.6666666667"
    );
    assert_eq!(
        render(
            "{{ avg_by(bank.empty, 'v') }}/{{ min_by(bank.empty, 'v') }}/{{ max_by(bank.empty, 'v') }}"
        ),
        "0/0/0"
    );
}

#[test]
fn last_item_by_group_picks_the_latest_per_group() {
    assert_eq!(
        render(
            "{% for r in last_item_by_group(bank.tx, 'acct', 'date') %}{{ r.acct }}={{ r.id }};{% endfor %}"
        ),
        "A=T2;B=T3;"
    );
    // Composite keys, sorted by key; the result reads like a table.
    assert_eq!(
        render(
            "{% set l = bank.tx|last_item_by_group('acct,kind', 'date') %}{{ l|map(attribute='id')|join(',') }} {{ l.id }}"
        ),
        "T2,T1,T3 T2"
    );
    // Ties: the later row wins. Rows without the group field are dropped.
    let d = json!({"m": {"r": [
        {"g": "x", "d": "2024-01-01", "id": 1},
        {"g": "x", "d": "2024-01-01", "id": 2},
        {"d": "2025-01-01", "id": 3}
    ]}});
    assert_eq!(
        render_with(
            &MiniJinjaEngine::new(),
            "{{ last_item_by_group(m.r, 'g', 'd')|map(attribute='id')|join }}",
            &d
        ),
        "2"
    );
}

#[test]
fn percent_of() {
    assert_eq!(render("{{ 25|percent_of(200) }}"), "12.50%");
    assert_eq!(render("{{ percent_of('1', '3') }}"), "33.33%");
    assert_eq!(render("{{ '2'|percent_of(3) }}"), "66.67%");
    assert!(matches!(
        render_err("{{ 1|percent_of(0) }}"),
        RenderError::Evaluation(_)
    ));
    assert!(matches!(
        render_err("{{ 'a'|percent_of(2) }}"),
        RenderError::Evaluation(_)
    ));
}

#[test]
fn slice_str() {
    assert_eq!(
        render("{{ '12345678000101'|slice_str('0:8') }}"),
        "12345678"
    );
    assert_eq!(
        render(
            "{{ 'abc'|slice_str('1:100') }}|{{ 'abc'|slice_str('-5:2') }}|{{ 'abc'|slice_str('2:1') }}"
        ),
        "bc|ab|"
    );
    assert_eq!(
        render(
            "{{ 'héllo'|slice_str('1:3') }}|{{ 'héllo'|slice_str(':2') }}|{{ 'héllo'|slice_str('3:') }}"
        ),
        "él|hé|lo"
    );
    assert!(matches!(
        render_err("{{ 'abc'|slice_str('a:b') }}"),
        RenderError::Evaluation(_)
    ));
    assert!(matches!(
        render_err("{{ 'abc'|slice_str('3') }}"),
        RenderError::Evaluation(_)
    ));
}

#[test]
fn strip_zeros() {
    assert_eq!(
        render(
            "{{ '1250.00'|strip_zeros }} {{ '12.50'|strip_zeros }} {{ 3|strip_zeros }} {{ '0.000'|strip_zeros }}"
        ),
        "1250 12.5 3 0"
    );
    assert!(matches!(
        render_err("{{ 'abc'|strip_zeros }}"),
        RenderError::Evaluation(_)
    ));
}

#[test]
fn replace_in_both_forms() {
    assert_eq!(render("{{ '01310-100'|replace('-:') }}"), "01310100");
    assert_eq!(render("{{ '1234.56'|replace('.:,') }}"), "1234,56");
    // Split at the FIRST colon: the replacement may itself hold colons.
    assert_eq!(render("{{ 'a.b'|replace('.::') }}"), "a:b");
    assert_eq!(
        render("{{ 'aaa'|replace('a', 'b') }} {{ 'aaa'|replace('a', 'b', 2) }}"),
        "bbb bba"
    );
    assert!(matches!(
        render_err("{{ 'abc'|replace('nocolon') }}"),
        RenderError::Evaluation(_)
    ));
}

#[test]
fn calc_arithmetic() {
    assert_eq!(
        render(
            "{{ calc('1 + 2 * 3') }}|{{ calc('(1 + 2) * 3') }}|{{ calc('2 ** 10') }}|{{ calc('2 ** 3 ** 2') }}"
        ),
        "7|9|1024|512"
    );
    assert_eq!(
        render(
            "{{ calc('10 / 3') }}|{{ calc('-2 ** 2') }}|{{ calc('10 - 2 - 3') }}|{{ calc('2 ** -1') }}"
        ),
        "3.3333333333|-4|5|0.5"
    );
    assert_eq!(render("{{ calc('2 ** 0.5') }}"), "1.4142135624");
    assert_eq!(render("{% set x = '1250.00' %}{{ calc('x * 2') }}"), "2500");
    assert_eq!(
        render("{{ calc('bank.tx.amount + 0.5') }}|{{ calc('bank.tx.1.amount * 3') }}"),
        "1250.5|1.5"
    );
    assert_eq!(
        render("{% for t in bank.tx if t.acct == 'B' %}{{ calc('t.amount * 4') }};{% endfor %}"),
        "41;0;"
    );
    // Missing or non-numeric variables count as 0, as in the reference.
    assert_eq!(render("{{ calc('nope + 1') }}"), "1");
    assert_eq!(render("{{ calc('calc_result') }}"), "0");
    for bad in [
        "1 / 0",
        "1 +",
        "(1",
        "1 ) 2",
        "2 $ 3",
        "",
        "99999999999999999999 ** 99",
    ] {
        assert!(
            matches!(
                render_err(&format!("{{{{ calc('{bad}') }}}}")),
                RenderError::Evaluation(_)
            ),
            "{bad}"
        );
    }
    let deep = format!("{{{{ calc('{}1{}') }}}}", "(".repeat(200), ")".repeat(200));
    assert!(matches!(render_err(&deep), RenderError::Evaluation(_)));
}

#[derive(Debug)]
struct Fixed(DateTime<Utc>);

impl Clock for Fixed {
    fn now(&self) -> DateTime<Utc> {
        self.0
    }
}

#[test]
fn date_time_formats_now_with_reference_tokens() {
    let Some(at) = Utc.with_ymd_and_hms(2024, 3, 31, 23, 59, 7).single() else {
        panic!("bad date")
    };
    let engine = MiniJinjaEngine::with_options(EngineOptions {
        clock: Arc::new(Fixed(at)),
        ..EngineOptions::default()
    });
    assert_eq!(
        render_with(
            &engine,
            "{{ date_time('YYYY-MM-dd HH:mm:ss') }}|{{ date_time('dd/MM/YYYY') }}|{{ date_time('at YYYYMMdd') }}",
            &data()
        ),
        "2024-03-31 23:59:07|31/03/2024|at 20240331"
    );
    let now = render("{{ date_time('YYYY') }}");
    assert_eq!(now.len(), 4);
}

#[test]
fn counters_are_per_render() {
    let src = "{{ counter('a') }}{{ counter('a') }}{{ counter('b') }}{% for t in bank.tx %}{{ counter('c') }}{% endfor %}{{ counter_show('a') }}/{{ counter_show('a', 'b') }}/{{ counter_show('c') }}/{{ counter_show('zz') }}";
    assert_eq!(render(src), "2/3/4/0");
    assert_eq!(render(src), "2/3/4/0", "no state leaks between renders");
}

#[test]
fn floatformat_like_django() {
    assert_eq!(
        render(
            "{{ '1234.5'|floatformat(2) }} {{ 3|floatformat }} {{ '3.14159'|floatformat }} {{ '2.675'|floatformat(2) }}"
        ),
        "1234.50 3 3.1 2.68"
    );
    assert_eq!(
        render(
            "{{ '3.0'|floatformat(-2) }} {{ '3.456'|floatformat(-2) }} {{ 'x'|floatformat(2) }}|"
        ),
        "3 3.46 |"
    );
}

#[test]
fn context_helpers_filter_and_contains() {
    assert_eq!(render("{{ filter(bank.tx, 'acct', 'A')|length }}"), "2");
    assert_eq!(
        render(
            "{{ contains('abc', 'b') }} {{ contains(['x', 'y'], 'y') }} {{ contains(bank.tx|map(attribute='id')|list, 'T9') }}"
        ),
        "True True False"
    );
}

#[test]
fn autoescape_is_off_by_default_and_can_be_enabled() {
    let d = json!({"m": {"t": [{"name": "<b>A&B</b>"}]}});
    assert_eq!(
        render_with(
            &MiniJinjaEngine::new(),
            "{{ m.t.name }}|{{ m.t.name|e }}",
            &d
        ),
        "<b>A&B</b>|&lt;b&gt;A&amp;B&lt;&#x2f;b&gt;"
    );
    let html = MiniJinjaEngine::with_options(EngineOptions {
        html_autoescape: true,
        ..EngineOptions::default()
    });
    assert_eq!(
        render_with(&html, "{{ m.t.name }}|{{ m.t.name|safe }}", &d),
        "&lt;b&gt;A&amp;B&lt;&#x2f;b&gt;|<b>A&B</b>"
    );
}

#[test]
fn syntax_errors_are_reported_as_syntax() {
    let e = MiniJinjaEngine::new();
    for bad in [
        "{% for %}",
        "{{ a ",
        "{% if x %}",
        "{% endfor %}",
        "{{ 'abc }}",
    ] {
        assert!(
            matches!(e.check_syntax(bad), Err(RenderError::Syntax(_))),
            "{bad}"
        );
        assert!(
            matches!(
                e.render(bad, &data(), &RenderLimits::default()),
                Err(RenderError::Syntax(_))
            ),
            "{bad}"
        );
    }
    assert_eq!(
        e.check_syntax("{{ bank.tx|sum('amount') }}{{ calc('1+1') }}"),
        Ok(())
    );
    assert!(matches!(
        render_err("{{ bank.tx|no_such_filter }}"),
        RenderError::Evaluation(_)
    ));
}

#[test]
fn trailing_newline_is_kept() {
    assert_eq!(render("a\n"), "a\n");
}
