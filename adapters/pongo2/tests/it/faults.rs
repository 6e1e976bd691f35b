//! Evaluation errors name their cause and the line of the tag or `{{ }}` that failed.
use reporter_adapter_pongo2::Pongo2Engine;
use reporter_ports::ports::{
    EvaluationCause, RenderCause, RenderError, RenderFailure, RenderLimits, TemplateEngine,
};
use serde_json::json;

fn fault(source: &str) -> (EvaluationCause, Option<u32>, String) {
    let data = json!({ "bank": { "accounts": [ { "name": "Ana Secreta", "balance": 7, "day": "2024-99-99" } ] } });
    match Pongo2Engine::new().render(source, &data, &RenderLimits::default()) {
        Err(RenderError::Fault(f)) => (f.cause, f.line, f.detail),
        other => panic!("{source:?}: {other:?}"),
    }
}

#[test]
fn each_cause_is_named_at_the_line_of_its_tag() {
    let cases = [
        ("a\nb\n{% calc 1 / 0 %}", EvaluationCause::DivisionByZero, 3),
        ("a\n\n\n{{ 7 % 0 }}", EvaluationCause::DivisionByZero, 4),
        ("{{ 7 / 0 }}", EvaluationCause::DivisionByZero, 1),
        (
            "x\n{% for a in bank.accounts %}\n  {{ a.day|date:\"2006\" }}\n{% endfor %}",
            EvaluationCause::FilterFailed,
            3,
        ),
        ("\n{% calc 2 ** %}", EvaluationCause::CalcFailed, 2),
        (
            "\n\n{% sum_by bank.accounts.0 by \"balance\" %}",
            EvaluationCause::AggregationFailed,
            3,
        ),
        (
            "\n{{ bank.accounts.name }}",
            EvaluationCause::InvalidAccess,
            2,
        ),
        ("\n\n\n\n{{ bank(1) }}", EvaluationCause::InvalidCall, 5),
    ];
    for (source, cause, line) in cases {
        let (got_cause, got_line, _) = fault(source);
        assert_eq!((got_cause, got_line), (cause, Some(line)), "{source:?}");
    }
}

#[test]
fn a_multi_line_tag_fails_at_the_line_it_starts_on_and_a_macro_body_at_its_own_line() {
    let (_, line, _) = fault("a\n{{ 1\n +\n 1 / 0 }}");
    assert_eq!(line, Some(2));
    let src = "{% macro m() %}\n{{ 1 / 0 }}\n{% endmacro %}\n\n{{ m() }}";
    let (cause, line, _) = fault(src);
    assert_eq!((cause, line), (EvaluationCause::DivisionByZero, Some(2)));
}

#[test]
fn the_failure_a_report_shows_holds_no_data_value() {
    let src = "{% for a in bank.accounts %}\n{{ a.name }}\n{{ a.day|date:\"2006\" }}\n{% endfor %}";
    let (_, _, detail) = fault(src);
    assert!(
        detail.contains("2024-99-99"),
        "the log text keeps the engine's words"
    );
    let e = Pongo2Engine::new()
        .render(
            src,
            &json!({ "bank": { "accounts": [ { "name": "Ana Secreta", "day": "2024-99-99" } ] } }),
            &RenderLimits::default(),
        )
        .unwrap_err();
    let failure = e.failure();
    assert_eq!(
        failure,
        RenderFailure {
            cause: RenderCause::FilterFailed,
            line: Some(3)
        }
    );
    let shown = format!("{} {}", failure.cause.as_str(), failure.cause.message());
    assert!(!shown.contains("2024") && !shown.contains("Ana"), "{shown}");
}
