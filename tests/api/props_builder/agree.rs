//! Random block trees for the agreement property: `validate` answers `valid: true` exactly
//! when `generate-code` answers 200. Trees mix valid and invalid blocks, and put operator
//! chains of every length around the bounds (the builder's 100 operators, the parser's 256
//! levels, the 2000-character limit) in conditions, `with` values, expression blocks and tag
//! conditions, some inside parentheses (up to 18 levels, past the builder's 16).
use proptest::prelude::*;
use serde_json::{Value, json};

/// Operators a chain joins its terms with.
const OPERATORS: [&str; 6] = [" or ", " and ", "^", " + ", " == ", " * "];

/// A chain of `terms` terms joined by `op`, inside `parens` parentheses.
fn chain(terms: usize, op: &str, parens: usize) -> String {
    let body = vec!["1"; terms.max(1)].join(op);
    format!("{}{body}{}", "(".repeat(parens), ")".repeat(parens))
}

/// Term counts: short, around the builder's bound, around the parser's, and long.
fn terms() -> impl Strategy<Value = usize> {
    prop_oneof![
        1..6usize,
        95..106usize,
        250..262usize,
        385..395usize,
        985..995usize
    ]
}

/// An expression: mostly a chain, sometimes a path or a comparison of a loop variable.
pub fn expression() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => (terms(), 0..OPERATORS.len(), prop_oneof![4 => Just(0usize), 1 => 0..19usize])
            .prop_map(|(n, o, p)| chain(n, OPERATORS.get(o).copied().unwrap_or(" or "), p)),
        1 => Just("bank.accounts.0.currency == \"EUR\"".to_owned()),
        1 => Just("not x".to_owned()),
    ]
}

/// Text, including schema-reference look-alikes and template delimiters.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("plain".to_owned()),
        Just("bank:accounts.holder_name".to_owned()),
        Just("{{ x }} {% y %} a:b.c".to_owned()),
        Just(String::new()),
    ]
}

/// A block without children.
fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        text().prop_map(|c| json!({"type": "text", "content": c})),
        expression().prop_map(|e| json!({"type": "expression", "expression": e})),
        prop_oneof![
            Just("bank.accounts.0.currency"),
            Just("bank.accounts.0.no_such_field"),
        ]
        .prop_map(|v| json!({"type": "variable", "variable": v})),
        expression().prop_map(|e| json!({"type": "custom_tag", "tagName": "count_by",
                                          "tagArgs": format!("bank.accounts if {e}")})),
    ]
}

/// A tree of up to four levels.
pub fn blocks() -> impl Strategy<Value = Value> {
    let tree = leaf().prop_recursive(4, 24, 4, |inner| {
        let kids = proptest::collection::vec(inner, 1..4);
        prop_oneof![
            (expression(), kids.clone(), proptest::option::of(expression())).prop_map(
                |(c, k, elif)| {
                    let mut b = json!({"type": "conditional", "condition": c, "children": k});
                    if let Some(e) = elif {
                        b["elifBranches"] =
                            json!([{"condition": e, "children": [{"type": "text", "content": "e"}]}]);
                    }
                    b
                }
            ),
            kids.clone()
                .prop_map(|k| json!({"type": "section", "children": k})),
            (expression(), kids.clone()).prop_map(
                |(a, k)| json!({"type": "with", "variable": "w", "assignment": a, "children": k})
            ),
            kids.prop_map(|k| json!({"type": "loop", "iterator": "acc",
                                      "collection": "bank.accounts", "children": k})),
        ]
    });
    proptest::collection::vec(tree, 1..4).prop_map(Value::Array)
}
