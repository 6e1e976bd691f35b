//! Property tests of deadlines over HTTP: random create payloads against an independent
//! oracle of the creation rules, and pagination visiting every deadline exactly once.
//!
//! The runners are seeded deterministically (same cases on every run) and never write
//! regression files.
use crate::common;

use chrono::{Duration, SecondsFormat, Utc};
use common::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRng, TestRunner};
use serde_json::{Map, Value, json};

const CASES: u32 = 64;

fn runner() -> TestRunner {
    let config = Config {
        cases: CASES,
        failure_persistence: None,
        max_shrink_iters: 256,
        ..Config::default()
    };
    let rng = TestRng::deterministic_rng(config.rng_algorithm);
    TestRunner::new_with_rng(config, rng)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn fail(msg: String) -> TestCaseError {
    TestCaseError::fail(msg)
}

// ---------------------------------------------------------------------------------------------
// Create payloads and their oracle
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Due {
    Missing,
    /// now + days.
    Offset(i64),
    /// A raw (malformed) string.
    Raw(&'static str),
}

#[derive(Debug, Clone)]
enum Tpl {
    None,
    Malformed(&'static str),
    /// A well-formed id of no template.
    Unknown(u128),
}

#[derive(Debug, Clone)]
struct Input {
    name: Option<String>,
    kind: Option<&'static str>,
    frequency: Option<&'static str>,
    months: Option<Vec<i64>>,
    color: Option<&'static str>,
    notify: Option<i64>,
    due: Due,
    template: Tpl,
}

impl Input {
    fn body(&self) -> Value {
        let mut m = Map::new();
        if let Some(n) = &self.name {
            m.insert("name".into(), json!(n));
        }
        if let Some(k) = self.kind {
            m.insert("type".into(), json!(k));
        }
        if let Some(f) = self.frequency {
            m.insert("frequency".into(), json!(f));
        }
        if let Some(ms) = &self.months {
            m.insert("monthsOfYear".into(), json!(ms));
        }
        if let Some(c) = self.color {
            m.insert("color".into(), json!(c));
        }
        if let Some(n) = self.notify {
            m.insert("notifyDaysBefore".into(), json!(n));
        }
        match &self.due {
            Due::Missing => {}
            Due::Offset(d) => {
                let at =
                    (Utc::now() + Duration::days(*d)).to_rfc3339_opts(SecondsFormat::Secs, true);
                m.insert("dueDate".into(), json!(at));
            }
            Due::Raw(r) => {
                m.insert("dueDate".into(), json!(r));
            }
        }
        match &self.template {
            Tpl::None => {}
            Tpl::Malformed(s) => {
                m.insert("templateId".into(), json!(s));
            }
            Tpl::Unknown(n) => {
                m.insert(
                    "templateId".into(),
                    json!(uuid::Uuid::from_u128(*n).to_string()),
                );
            }
        }
        Value::Object(m)
    }
}

/// What the service must answer: `Ok(())` for 201, else (status, code).
///
/// Precedence (from `App::create_deadline`): missing required fields, name, type, frequency,
/// monthsOfYear (not applicable, required, range, count), color, notifyDaysBefore, dueDate
/// format, dueDate in the past, templateId format, template existence.
fn oracle(i: &Input) -> Result<(), (u16, &'static str)> {
    let missing = i.name.is_none()
        || i.kind.is_none()
        || i.frequency.is_none()
        || i.color.is_none()
        || matches!(i.due, Due::Missing);
    if missing {
        return Err((400, "TPL-0001"));
    }
    let name = i.name.as_deref().unwrap().trim();
    if name.is_empty() || name.chars().count() > 200 {
        return Err((400, "TPL-0064"));
    }
    let kind = i.kind.unwrap().trim().to_lowercase();
    if kind != "regulatory" && kind != "custom" {
        return Err((400, "TPL-0046"));
    }
    let needed = months_needed(i.frequency.unwrap())?;
    months_rule(needed, &i.months.clone().unwrap_or_default())?;
    let color = i.color.unwrap().trim();
    let color_ok = color.len() == 7
        && color.starts_with('#')
        && color[1..].bytes().all(|b| b.is_ascii_hexdigit());
    if !color_ok {
        return Err((400, "TPL-0048"));
    }
    if let Some(n) = i.notify
        && !(0..=366).contains(&n)
    {
        return Err((400, "TPL-0064"));
    }
    match i.due {
        Due::Raw(_) => return Err((400, "TPL-0020")),
        Due::Offset(d) if d < 0 => return Err((422, "TPL-0055")),
        _ => {}
    }
    match i.template {
        Tpl::Malformed(_) => Err((400, "TPL-0012")),
        Tpl::Unknown(_) => Err((404, "TPL-0011")),
        Tpl::None => Ok(()),
    }
}

/// How many months a frequency takes (`None`: none allowed); `Err` for an unknown frequency.
fn months_needed(frequency: &str) -> Result<Option<usize>, (u16, &'static str)> {
    match frequency.trim().to_lowercase().as_str() {
        "once" | "daily" | "weekly" | "monthly" => Ok(None),
        "semiannual" => Ok(Some(2)),
        "annual" => Ok(Some(1)),
        _ => Err((400, "TPL-0047")),
    }
}

/// The monthsOfYear rules, in the order: not applicable, required, range, count/duplicate.
fn months_rule(needed: Option<usize>, months: &[i64]) -> Result<(), (u16, &'static str)> {
    match needed {
        None if !months.is_empty() => Err((400, "TPL-0050")),
        None => Ok(()),
        Some(_) if months.is_empty() => Err((400, "TPL-0052")),
        Some(_) if months.iter().any(|m| !(1..=12).contains(m)) => Err((400, "TPL-0054")),
        Some(n) => {
            let distinct: std::collections::BTreeSet<_> = months.iter().collect();
            if months.len() != n || distinct.len() != n {
                Err((400, "TPL-0056"))
            } else {
                Ok(())
            }
        }
    }
}

fn input_strategy() -> impl Strategy<Value = Input> {
    let name = prop_oneof![
        12 => "[A-Za-z][A-Za-z0-9 ]{0,30}".prop_map(Some),
        1 => Just(Some("  padded  ".to_owned())),
        1 => Just(Some(String::new())),
        1 => Just(Some("   ".to_owned())),
        1 => Just(Some("n".repeat(201))),
        1 => Just(None),
    ];
    let kind = prop_oneof![
        6 => Just(Some("regulatory")),
        6 => Just(Some("custom")),
        1 => Just(Some(" Custom ")),
        1 => Just(Some("REGULATORY")),
        1 => Just(Some("statutory")),
        1 => Just(Some("")),
        1 => Just(None),
    ];
    let frequency = prop_oneof![
        3 => Just(Some("once")),
        2 => Just(Some("daily")),
        2 => Just(Some("weekly")),
        2 => Just(Some("monthly")),
        5 => Just(Some("semiannual")),
        5 => Just(Some("annual")),
        1 => Just(Some("Annual")),
        1 => Just(Some("yearly")),
        1 => Just(Some("")),
        1 => Just(None),
    ];
    let months = prop_oneof![
        2 => Just(None),
        4 => proptest::collection::vec(-1i64..14, 0..4).prop_map(Some),
        3 => proptest::collection::vec(1i64..=12, 1..=2).prop_map(Some),
    ];
    let color = prop_oneof![
        6 => Just(Some("#1E88E5")),
        4 => Just(Some("#abcdef")),
        1 => Just(Some(" #00ff00 ")),
        1 => Just(Some("1E88E5")),
        1 => Just(Some("#12345")),
        1 => Just(Some("#GGGGGG")),
        1 => Just(Some("#1234567")),
        1 => Just(Some("red")),
        1 => Just(None),
    ];
    let notify = prop_oneof![
        3 => Just(None),
        10 => (0i64..=366).prop_map(Some),
        1 => Just(Some(-1)),
        1 => Just(Some(367)),
    ];
    let due = prop_oneof![
        12 => (-3i64..400).prop_map(Due::Offset),
        1 => Just(Due::Missing),
        1 => prop_oneof![Just("tomorrow"), Just("2027-13-01T00:00:00Z"), Just("2027-03-31"), Just("")].prop_map(Due::Raw),
    ];
    let template = prop_oneof![
        10 => Just(Tpl::None),
        1 => prop_oneof![Just("not-a-uuid"), Just(""), Just("1234")].prop_map(Tpl::Malformed),
        1 => any::<u128>().prop_map(Tpl::Unknown),
    ];
    (name, kind, frequency, months, color, notify, due, template).prop_map(
        |(name, kind, frequency, months, color, notify, due, template)| Input {
            name,
            kind,
            frequency,
            months,
            color,
            notify,
            due,
            template,
        },
    )
}

/// Checks a 201 body against the input.
fn check_created(i: &Input, d: &Value) -> Result<(), TestCaseError> {
    let want_months: Vec<i64> = {
        let mut m = i.months.clone().unwrap_or_default();
        m.sort_unstable();
        m
    };
    let checks = [
        ("name", json!(i.name.as_deref().unwrap().trim())),
        ("type", json!(i.kind.unwrap().trim().to_lowercase())),
        (
            "frequency",
            json!(i.frequency.unwrap().trim().to_lowercase()),
        ),
        ("monthsOfYear", json!(want_months)),
        ("color", json!(i.color.unwrap().trim().to_uppercase())),
        ("notifyDaysBefore", json!(i.notify.unwrap_or(0))),
        ("active", json!(true)),
        ("status", json!("pending")),
    ];
    for (field, want) in checks {
        if d[field] != want {
            return Err(fail(format!(
                "{field}: expected {want}, got {} in {d}",
                d[field]
            )));
        }
    }
    Ok(())
}

#[test]
fn create_answers_exactly_what_the_oracle_predicts() {
    let rt = runtime();
    let t = rt.block_on(async { start().await });
    let tok = token();
    let outcomes = std::cell::RefCell::new(std::collections::BTreeMap::<String, u32>::new());
    let result = runner().run(&input_strategy(), |input| {
        let expected = oracle(&input);
        *outcomes
            .borrow_mut()
            .entry(format!("{expected:?}"))
            .or_default() += 1;
        rt.block_on(async {
            let resp = t.post_json(&tok, "/v1/deadlines", input.body()).await;
            let status = resp.0.status().as_u16();
            let body = json(resp).await;
            match expected {
                Ok(()) => {
                    if status != 201 {
                        return Err(fail(format!("expected 201, got {status}: {body}")));
                    }
                    check_created(&input, &body)
                }
                Err((want_status, want_code)) => {
                    if (status, body["code"].as_str()) != (want_status, Some(want_code)) {
                        return Err(fail(format!(
                            "expected {want_status} {want_code}, got {status}: {body}"
                        )));
                    }
                    Ok(())
                }
            }
        })
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    // The generator must exercise both outcomes.
    let outcomes = outcomes.into_inner();
    assert!(
        outcomes.contains_key("Ok(())"),
        "no valid input generated: {outcomes:?}"
    );
    assert!(
        outcomes.len() > 5,
        "too few distinct outcomes: {outcomes:?}"
    );
}

/// The months rules on their own (every other field valid), so each month-related code is hit
/// many times.
#[test]
fn months_of_year_answers_what_the_oracle_predicts() {
    let rt = runtime();
    let t = rt.block_on(async { start().await });
    let tok = token();
    let strategy = (
        prop_oneof![
            Just("once"),
            Just("daily"),
            Just("weekly"),
            Just("monthly"),
            Just("semiannual"),
            Just("annual")
        ],
        proptest::option::of(proptest::collection::vec(-1i64..14, 0..4)),
    );
    let result = runner().run(&strategy, |(frequency, months)| {
        let input = Input {
            name: Some("Months".into()),
            kind: Some("custom"),
            frequency: Some(frequency),
            months,
            color: Some("#123456"),
            notify: None,
            due: Due::Offset(30),
            template: Tpl::None,
        };
        let expected = oracle(&input);
        rt.block_on(async {
            let resp = t.post_json(&tok, "/v1/deadlines", input.body()).await;
            let status = resp.0.status().as_u16();
            let body = json(resp).await;
            let actual = if status == 201 {
                Ok(())
            } else {
                Err((status, body["code"].as_str().unwrap_or_default().to_owned()))
            };
            let expected = expected.map_err(|(s, c)| (s, c.to_owned()));
            if actual != expected {
                return Err(fail(format!(
                    "expected {expected:?}, got {actual:?}: {body}"
                )));
            }
            Ok(())
        })
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

// ---------------------------------------------------------------------------------------------
// Pagination
// ---------------------------------------------------------------------------------------------

fn page_ids(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|d| d["id"].as_str().expect("id").to_owned())
        .collect()
}

#[test]
fn walking_pages_visits_every_deadline_once_in_created_order() {
    let rt = runtime();
    let tok = token();
    let result = runner().run(&(0usize..25, 1u32..=30), |(n, limit)| {
        rt.block_on(async {
            let t = start().await;
            let mut created = Vec::with_capacity(n);
            for i in 0..n {
                let mut b = deadline_body(1 + i as i64);
                b["name"] = json!(format!("deadline {i}"));
                created.push(
                    t.create_deadline(&tok, b).await["id"]
                        .as_str()
                        .expect("id")
                        .to_owned(),
                );
            }
            for (order, expected) in [
                ("asc", created.clone()),
                ("desc", created.iter().rev().cloned().collect()),
            ] {
                let mut seen = Vec::new();
                let mut page = 1u32;
                loop {
                    let resp = t
                        .get(
                            &tok,
                            &format!("/v1/deadlines?page={page}&limit={limit}&sort_order={order}"),
                        )
                        .await;
                    let status = resp.0.status().as_u16();
                    let body = json(resp).await;
                    if status != 200 {
                        return Err(fail(format!("page {page}: {status} {body}")));
                    }
                    if body["total"] != json!(n)
                        || body["page"] != json!(page)
                        || body["limit"] != json!(limit)
                    {
                        return Err(fail(format!("page {page} of {n} by {limit}: {body}")));
                    }
                    let items = page_ids(&body);
                    let offset = (page as usize - 1) * limit as usize;
                    let want_len = n.saturating_sub(offset).min(limit as usize);
                    if items.len() != want_len {
                        return Err(fail(format!(
                            "page {page}: {} items, expected {want_len}",
                            items.len()
                        )));
                    }
                    if items.is_empty() {
                        break;
                    }
                    seen.extend(items);
                    page += 1;
                }
                let unique: std::collections::HashSet<_> = seen.iter().collect();
                if unique.len() != seen.len() {
                    return Err(fail(format!("{order}: an id was visited twice")));
                }
                if seen != expected {
                    return Err(fail(format!(
                        "{order}: visited {seen:?}, expected {expected:?}"
                    )));
                }
            }
            Ok(())
        })
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

// ---------------------------------------------------------------------------------------------
// PATCH re-validates the merged deadline
// ---------------------------------------------------------------------------------------------

/// Expected answer of a PATCH of `frequency` / `monthsOfYear` on a deadline stored with
/// (`stored_freq`, `stored_months`): `Ok((frequency, sorted months))` or (status, code).
///
/// Rules (from `App::update_deadline`): an empty patch is TPL-0001; an unknown frequency is
/// TPL-0047; the merged months are the sent ones, else none when the merged frequency takes
/// none, else the stored ones; they are validated against the merged frequency.
#[allow(clippy::type_complexity)]
fn patch_oracle(
    stored_freq: &str,
    stored_months: &[i64],
    frequency: Option<&str>,
    months: Option<&[i64]>,
) -> Result<(String, Vec<i64>), (u16, &'static str)> {
    if frequency.is_none() && months.is_none() {
        return Err((400, "TPL-0001"));
    }
    if let Some(f) = frequency {
        months_needed(f)?;
    }
    let merged_freq = frequency.unwrap_or(stored_freq).trim().to_lowercase();
    let needed = months_needed(&merged_freq)?;
    let merged_months: Vec<i64> = match (months, needed) {
        (Some(m), _) => m.to_vec(),
        (None, None) => Vec::new(),
        (None, Some(_)) => stored_months.to_vec(),
    };
    months_rule(needed, &merged_months)?;
    let mut sorted = merged_months;
    sorted.sort_unstable();
    Ok((merged_freq, sorted))
}

#[test]
fn patch_revalidates_frequency_and_months_against_the_merged_deadline() {
    let rt = runtime();
    let t = rt.block_on(async { start().await });
    let tok = token();
    let stored = prop_oneof![
        Just(("once", vec![])),
        Just(("monthly", vec![])),
        Just(("annual", vec![5i64])),
        Just(("semiannual", vec![3i64, 9])),
    ];
    let frequency = proptest::option::of(prop_oneof![
        Just("once"),
        Just("weekly"),
        Just("monthly"),
        Just("semiannual"),
        Just("annual"),
        Just("SemiAnnual"),
        Just("fortnightly"),
    ]);
    let months = proptest::option::of(prop_oneof![
        proptest::collection::vec(-1i64..14, 0..4),
        proptest::collection::vec(1i64..=12, 1..=2),
    ]);
    let result = runner().run(
        &(stored, frequency, months),
        |((stored_freq, stored_months), frequency, months)| {
            let expected = patch_oracle(stored_freq, &stored_months, frequency, months.as_deref());
            rt.block_on(async {
                let mut b = deadline_body(10);
                b["frequency"] = json!(stored_freq);
                b["monthsOfYear"] = json!(stored_months);
                let id = t.create_deadline(&tok, b).await["id"]
                    .as_str()
                    .expect("id")
                    .to_owned();
                let mut patch = Map::new();
                if let Some(f) = frequency {
                    patch.insert("frequency".into(), json!(f));
                }
                if let Some(m) = &months {
                    patch.insert("monthsOfYear".into(), json!(m));
                }
                let path = format!("/v1/deadlines/{id}");
                let resp = t.patch_json(&tok, &path, Value::Object(patch)).await;
                let status = resp.0.status().as_u16();
                let body = json(resp).await;
                let actual = if status == 200 {
                    Ok((
                        body["frequency"].as_str().unwrap_or_default().to_owned(),
                        serde_json::from_value::<Vec<i64>>(body["monthsOfYear"].clone())
                            .unwrap_or_default(),
                    ))
                } else {
                    Err((status, body["code"].as_str().unwrap_or_default().to_owned()))
                };
                let expected = expected.clone().map_err(|(s, c)| (s, c.to_owned()));
                if actual != expected {
                    return Err(fail(format!(
                        "expected {expected:?}, got {actual:?}: {body}"
                    )));
                }
                // A refused patch changes nothing.
                if expected.is_err() {
                    let got = json(t.get(&tok, &path).await).await;
                    if got["frequency"] != json!(stored_freq)
                        || got["monthsOfYear"] != json!(stored_months)
                    {
                        return Err(fail(format!("a refused patch changed the deadline: {got}")));
                    }
                }
                Ok(())
            })
        },
    );
    if let Err(e) = result {
        panic!("{e}");
    }
}
