//! Round-trip property of the template builder, over HTTP: random valid block trees →
//! `generate-code` (txt, csv, xml or html, drawn with the tree) → upload as a template →
//! report over the bundled `bank` data → the artifact equals what an independent model of
//! the blocks computes from the same data (`props_builder/model.rs`: the documented layout,
//! Pongo2's whitespace control, the clean-up, and for html the sanitizer's output), and the
//! `mappedFields` of the generated code equal what the upload extracts.
//!
//! Trees (`props_builder/tree.rs`) use every block type: text, variables with the
//! catalogue's filters (floatformat, strip_zeros, percent_of, length, slice_str, replace,
//! date, where, sum, count), loops, conditionals (elif, else, inline, `filter()` in
//! conditions), sections, `with` (by `|where` or `filter()`), aggregations, counters,
//! comments, expressions, calculations, date_time (a field's date, or now), and the custom
//! tags sum_by, count_by, avg_by, min_by, max_by, calc and last_item_by_group; tags trim
//! whitespace now and then; blocks nest up to 7 levels. Trees are drawn from a "choice tape"
//! (a vector of numbers the generator consumes), so proptest's shrinking of the tape shrinks
//! the tree. The runner is seeded deterministically (same cases on every run), bounded in
//! cases and shrink steps, and writes no regression files. Text carries hostile characters
//! (`{ } % # " ' | : \` and line breaks; `< > &` outside html) but no digits or dots, so the
//! output clean-up only ever touches data values, which the model cleans the documented way.
//!
//! Agreement property: on random trees, valid or not (`props_builder/agree.rs`: operator
//! chains around every bound, unknown fields, hostile text), `validate` answers
//! `valid: true` exactly when `generate-code` answers 200, and a refusal is a 4xx with the
//! problems listed by both.
#[path = "props_builder/agree.rs"]
mod agree;
#[path = "props_builder/bank.rs"]
mod bank;
#[path = "props_builder/blocks.rs"]
mod blocks;
use crate::common;
#[path = "props_builder/layout.rs"]
mod layout;
#[path = "props_builder/model.rs"]
mod model;
#[path = "props_builder/tree.rs"]
mod tree;

use bank::Bank;
use common::{Form, TestApp, json, start, token};
use model::{cents, clean, expected, money};
use poem::http::StatusCode;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRng, TestRunner};
use serde_json::json;
use tree::{Block, Format};

const CASES: u32 = 96;

fn runner() -> TestRunner {
    let config = Config {
        cases: CASES,
        failure_persistence: None,
        max_shrink_iters: 128,
        ..Config::default()
    };
    let rng = TestRng::deterministic_rng(config.rng_algorithm);
    TestRunner::new_with_rng(config, rng)
}

// ---------------------------------------------------------------------------------------------
// The round trip
// ---------------------------------------------------------------------------------------------

fn fail(msg: String) -> TestCaseError {
    TestCaseError::fail(msg)
}

async fn round_trip(
    app: &TestApp,
    bank: &Bank,
    format: Format,
    tree: &[Block],
) -> Result<(), TestCaseError> {
    let blocks = blocks::json_blocks(tree, 0);
    let f = format.name();
    let resp = app
        .post_json(
            &token(),
            "/v1/templates/validate",
            json!({"blocks": blocks, "format": f}),
        )
        .await;
    let v = json(resp).await;
    if v["valid"] != true {
        return Err(fail(format!("not valid: {v}\n{blocks:#}")));
    }
    let resp = app
        .post_json(
            &token(),
            "/v1/templates/generate-code",
            json!({"blocks": blocks, "format": f}),
        )
        .await;
    let status = resp.0.status();
    let generated = json(resp).await;
    if status != StatusCode::OK {
        return Err(fail(format!(
            "generate-code {status}: {generated}\n{blocks:#}"
        )));
    }
    let code = generated["code"].as_str().unwrap_or_default().to_owned();
    let form = Form::new()
        .file("template", "built.tpl", code.as_bytes())
        .text("outputFormat", f)
        .text("description", "round trip");
    let resp = app.upload(&token(), form).await;
    let status = resp.0.status();
    let uploaded = json(resp).await;
    if status != StatusCode::CREATED {
        return Err(fail(format!("upload {status}: {uploaded}\n{code}")));
    }
    if uploaded["mappedFields"] != generated["mappedFields"] {
        return Err(fail(format!(
            "mappedFields differ: generated {} uploaded {}\n{code}",
            generated["mappedFields"], uploaded["mappedFields"]
        )));
    }
    let id = uploaded["id"].as_str().unwrap_or_default().to_owned();
    let report = app.request_report(&id, json!({})).await;
    let done = app.wait_report(&report, 400).await;
    if done["status"] != "Finished" {
        return Err(fail(format!("report {done}\n{code}")));
    }
    let resp = app
        .get(&token(), &format!("/v1/reports/{report}/download"))
        .await;
    let got = resp.0.into_body().into_string().await.unwrap_or_default();
    let want = expected(bank, tree, format);
    if got != want {
        return Err(fail(format!(
            "{f} output differs\n--- code\n{code}\n--- got\n{got:?}\n--- model\n{want:?}"
        )));
    }
    Ok(())
}

#[test]
fn generated_code_uploads_renders_as_the_model_says_and_reads_its_mapped_fields() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let app = rt.block_on(start());
    let bank = Bank::load();
    let tapes = proptest::collection::vec(any::<u32>(), 0..160);
    let started = std::time::Instant::now();
    let result = runner().run(&tapes, |tape| {
        let (format, t) = tree::tree(&tape, &bank);
        rt.block_on(round_trip(&app, &bank, format, &t))
    });
    eprintln!("{CASES} round trips in {:?}", started.elapsed());
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// Validates and generates `blocks`; an error when the two answers disagree.
async fn agree(app: &TestApp, blocks: &serde_json::Value) -> Result<(), TestCaseError> {
    let body = json!({"blocks": blocks, "format": "txt"});
    let resp = app
        .post_json(&token(), "/v1/templates/validate", body.clone())
        .await;
    let status = resp.0.status();
    let v = json(resp).await;
    if status != StatusCode::OK {
        return Err(fail(format!("validate {status}: {v}")));
    }
    let resp = app
        .post_json(&token(), "/v1/templates/generate-code", body)
        .await;
    let status = resp.0.status();
    let g = json(resp).await;
    let valid = v["valid"] == true;
    let errors = v["errors"].as_array().map_or(0, Vec::len);
    let refused = status.is_client_error() && g["code"].is_string();
    match (valid, status == StatusCode::OK) {
        (true, true) if errors == 0 => Ok(()),
        (false, false) if errors > 0 && refused => Ok(()),
        _ => Err(fail(format!(
            "validate {v}\ngenerate-code {status}: {g}\n{blocks:#}"
        ))),
    }
}

#[test]
fn validate_and_generate_code_always_agree() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let app = rt.block_on(start());
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases: 64,
            failure_persistence: None,
            max_shrink_iters: 64,
            ..Config::default()
        },
        TestRng::deterministic_rng(Config::default().rng_algorithm),
    );
    let result = runner.run(&agree::blocks(), |blocks| rt.block_on(agree(&app, &blocks)));
    if let Err(e) = result {
        panic!("{e}");
    }
}

#[test]
fn the_model_cleans_like_the_documented_rule() {
    assert_eq!(clean("150000.00"), "150000");
    assert_eq!(clean("a1250.10\n"), "a1250.1\n");
    assert_eq!(clean("12.305"), "12.305");
    assert_eq!(clean("1.1.2.00.000"), "1.1.2.00.000");
    assert_eq!(clean("3.14 0.0"), "3.14 0");
    assert_eq!(money(-5), "-0.05");
    assert_eq!(cents("12.5"), Some(1250));
}
