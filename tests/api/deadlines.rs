//! Deadlines over HTTP: every operation of `/v1/deadlines`, success paths and every documented
//! error code, template cascade and tenant isolation.
use crate::common;

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use common::*;
use poem::http::StatusCode;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// RFC 3339 (seconds, `Z`) of now + `days`.
fn due(days: i64) -> String {
    (Utc::now() + Duration::days(days)).to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// 00:00:00 UTC today: the earliest accepted due date, and already overdue.
fn today_start() -> String {
    let d = Utc::now()
        .date_naive()
        .and_hms_opt(0, 0, 0)
        .unwrap()
        .and_utc();
    d.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// `YYYY-MM-DD` of now + `days`.
fn day(days: i64) -> String {
    (Utc::now() + Duration::days(days))
        .format("%Y-%m-%d")
        .to_string()
}

/// `deadline_body(days)` with the fields of `extra` set (a `null` removes the field).
fn body(days: i64, extra: Value) -> Value {
    let mut b = deadline_body(days);
    let obj = b.as_object_mut().unwrap();
    for (k, v) in extra.as_object().unwrap() {
        if v.is_null() {
            obj.remove(k);
        } else {
            obj.insert(k.clone(), v.clone());
        }
    }
    b
}

fn id_of(v: &Value) -> String {
    v["id"].as_str().expect("id").to_owned()
}

fn instant(v: &Value) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(v.as_str().expect("date-time string"))
        .expect("RFC 3339")
        .with_timezone(&Utc)
}

fn ids(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(id_of)
        .collect()
}

async fn create(t: &TestApp, b: Value) -> String {
    id_of(&t.create_deadline(&token(), b).await)
}

async fn post_err(t: &TestApp, b: Value, status: u16, code: &str) -> Value {
    expect_error(
        t.post_json(&token(), "/v1/deadlines", b).await,
        status,
        code,
    )
    .await
}

async fn patch_err(t: &TestApp, id: &str, b: Value, status: u16, code: &str) -> Value {
    expect_error(
        t.patch_json(&token(), &format!("/v1/deadlines/{id}"), b)
            .await,
        status,
        code,
    )
    .await
}

async fn ok_json(resp: poem::test::TestResponse) -> Value {
    let status = resp.0.status();
    let v = json(resp).await;
    assert_eq!(status, StatusCode::OK, "body: {v}");
    v
}

async fn get_ok(t: &TestApp, path: &str) -> Value {
    ok_json(t.get(&token(), path).await).await
}

async fn patch_ok(t: &TestApp, id: &str, b: Value) -> Value {
    ok_json(
        t.patch_json(&token(), &format!("/v1/deadlines/{id}"), b)
            .await,
    )
    .await
}

async fn deliver(t: &TestApp, id: &str, delivered: bool) -> poem::test::TestResponse {
    t.patch_json(
        &token(),
        &format!("/v1/deadlines/{id}/deliver"),
        json!({ "delivered": delivered }),
    )
    .await
}

fn read_only() -> String {
    token_for(
        Some("default"),
        &["deadlines:read", "templates:read", "templates:write"],
    )
}

fn write_only() -> String {
    token_for(
        Some("default"),
        &["deadlines:write", "templates:read", "templates:write"],
    )
}

// ---------------------------------------------------------------------------------------------
// POST /v1/deadlines
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn create_returns_201_with_the_stored_deadline() {
    let t = start().await;
    let due_date = due(3);
    let b = body(
        3,
        json!({ "name": "  Liquidity report  ", "description": "To the central bank", "color": "#1e88e5", "dueDate": due_date }),
    );
    let resp = t.post_json(&token(), "/v1/deadlines", b).await;
    resp.assert_status(StatusCode::CREATED);
    let d = json(resp).await;
    assert!(
        uuid::Uuid::parse_str(d["id"].as_str().unwrap()).is_ok(),
        "{d}"
    );
    assert_eq!(d["name"], "Liquidity report");
    assert_eq!(d["description"], "To the central bank");
    assert_eq!(d["type"], "regulatory");
    assert_eq!(d["frequency"], "once");
    assert_eq!(d["monthsOfYear"], json!([]));
    assert_eq!(d["color"], "#1E88E5");
    assert_eq!(d["notifyDaysBefore"], 5);
    assert_eq!(d["active"], true);
    assert_eq!(d["status"], "pending");
    assert!(d["deliveredAt"].is_null());
    assert!(d["templateId"].is_null() && d["templateName"].is_null());
    assert_eq!(instant(&d["dueDate"]), instant(&json!(due_date)));
    assert_eq!(d["createdAt"], d["updatedAt"]);
    // Persisted: GET answers the same deadline.
    let got = get_ok(&t, &format!("/v1/deadlines/{}", id_of(&d))).await;
    assert_eq!(got["name"], d["name"]);
    assert_eq!(got["dueDate"], d["dueDate"]);
    assert_eq!(got["createdAt"], d["createdAt"]);
}

#[tokio::test]
async fn create_defaults_active_true_and_notify_zero() {
    let t = start().await;
    let d = t
        .create_deadline(
            &token(),
            body(3, json!({ "notifyDaysBefore": null, "active": null })),
        )
        .await;
    assert_eq!(d["active"], true);
    assert_eq!(d["notifyDaysBefore"], 0);
    let inactive = t
        .create_deadline(&token(), body(4, json!({ "active": false })))
        .await;
    assert_eq!(inactive["active"], false);
}

#[tokio::test]
async fn create_accepts_type_and_frequency_case_insensitively() {
    let t = start().await;
    let d = t
        .create_deadline(
            &token(),
            body(3, json!({ "type": "Custom", "frequency": "WEEKLY" })),
        )
        .await;
    assert_eq!(d["type"], "custom");
    assert_eq!(d["frequency"], "weekly");
}

#[tokio::test]
async fn create_semiannual_and_annual_store_sorted_months() {
    let t = start().await;
    let s = t
        .create_deadline(
            &token(),
            body(
                3,
                json!({ "frequency": "semiannual", "monthsOfYear": [9, 3] }),
            ),
        )
        .await;
    assert_eq!(s["frequency"], "semiannual");
    assert_eq!(s["monthsOfYear"], json!([3, 9]));
    let a = t
        .create_deadline(
            &token(),
            body(3, json!({ "frequency": "annual", "monthsOfYear": [12] })),
        )
        .await;
    assert_eq!(a["monthsOfYear"], json!([12]));
    for f in ["daily", "weekly", "monthly"] {
        let d = t
            .create_deadline(
                &token(),
                body(3, json!({ "frequency": f, "monthsOfYear": [] })),
            )
            .await;
        assert_eq!(d["frequency"], f);
        assert_eq!(d["monthsOfYear"], json!([]));
    }
}

#[tokio::test]
async fn create_accepts_the_start_of_today_and_shows_it_overdue() {
    let t = start().await;
    let d = t
        .create_deadline(&token(), body(0, json!({ "dueDate": today_start() })))
        .await;
    assert_eq!(d["status"], "overdue");
}

#[tokio::test]
async fn create_with_template_records_its_name() {
    let t = start().await;
    let tpl = t.create_template(&token(), "Monthly statement").await;
    let d = t
        .create_deadline(&token(), body(3, json!({ "templateId": tpl })))
        .await;
    assert_eq!(d["templateId"], tpl.as_str());
    assert_eq!(d["templateName"], "Monthly statement");
}

#[tokio::test]
async fn create_missing_fields_lists_every_missing_field() {
    let t = start().await;
    let b = post_err(&t, json!({}), 400, "TPL-0001").await;
    let fields = b["fields"].as_object().expect("fields");
    for f in ["name", "type", "dueDate", "frequency", "color"] {
        assert!(fields.contains_key(f), "{f} not listed: {b}");
    }
    assert_eq!(fields.len(), 5, "{b}");
    let b = post_err(
        &t,
        body(3, json!({ "color": null, "frequency": null })),
        400,
        "TPL-0001",
    )
    .await;
    let fields = b["fields"].as_object().expect("fields");
    assert_eq!(
        fields.keys().collect::<Vec<_>>(),
        ["color", "frequency"],
        "{b}"
    );
}

#[tokio::test]
async fn create_null_required_field_counts_as_missing() {
    let t = start().await;
    let mut b = deadline_body(3);
    b["name"] = Value::Null;
    let e = post_err(&t, b, 400, "TPL-0001").await;
    assert!(e["fields"]["name"].is_string(), "{e}");
}

#[tokio::test]
async fn create_invalid_type_is_tpl_0046() {
    let t = start().await;
    for bad in ["statutory", "", "regulatory-ish"] {
        let e = post_err(&t, body(3, json!({ "type": bad })), 400, "TPL-0046").await;
        assert!(e["fields"]["type"].is_string(), "{e}");
    }
}

#[tokio::test]
async fn create_invalid_frequency_is_tpl_0047() {
    let t = start().await;
    for bad in ["yearly", "quarterly", ""] {
        let e = post_err(&t, body(3, json!({ "frequency": bad })), 400, "TPL-0047").await;
        assert!(e["fields"]["frequency"].is_string(), "{e}");
    }
}

#[tokio::test]
async fn create_invalid_color_is_tpl_0048() {
    let t = start().await;
    for bad in ["1E88E5", "#1E88E", "#1E88E5F", "#GGGGGG", "blue", ""] {
        let e = post_err(&t, body(3, json!({ "color": bad })), 400, "TPL-0048").await;
        assert!(e["fields"]["color"].is_string(), "{bad}: {e}");
    }
}

#[tokio::test]
async fn create_months_for_non_calendar_frequency_is_tpl_0050() {
    let t = start().await;
    for f in ["once", "daily", "weekly", "monthly"] {
        // Whatever the values: out-of-range ones (negative included) are not applicable either.
        for months in [
            json!([3]),
            json!([0]),
            json!([13]),
            json!([-1]),
            json!([3, 9]),
        ] {
            post_err(
                &t,
                body(3, json!({ "frequency": f, "monthsOfYear": months })),
                400,
                "TPL-0050",
            )
            .await;
        }
    }
}

#[tokio::test]
async fn patch_months_on_a_non_calendar_frequency_is_tpl_0050() {
    let t = start().await;
    let id = create(&t, deadline_body(3)).await;
    for months in [json!([3]), json!([13]), json!([-1])] {
        patch_err(&t, &id, json!({ "monthsOfYear": months }), 400, "TPL-0050").await;
    }
}

#[tokio::test]
async fn create_semiannual_or_annual_without_months_is_tpl_0052() {
    let t = start().await;
    post_err(
        &t,
        body(3, json!({ "frequency": "annual" })),
        400,
        "TPL-0052",
    )
    .await;
    post_err(
        &t,
        body(3, json!({ "frequency": "semiannual", "monthsOfYear": [] })),
        400,
        "TPL-0052",
    )
    .await;
}

#[tokio::test]
async fn create_month_out_of_range_is_tpl_0054() {
    let t = start().await;
    post_err(
        &t,
        body(3, json!({ "frequency": "annual", "monthsOfYear": [13] })),
        400,
        "TPL-0054",
    )
    .await;
    post_err(
        &t,
        body(3, json!({ "frequency": "annual", "monthsOfYear": [0] })),
        400,
        "TPL-0054",
    )
    .await;
    post_err(
        &t,
        body(
            3,
            json!({ "frequency": "semiannual", "monthsOfYear": [3, -1] }),
        ),
        400,
        "TPL-0054",
    )
    .await;
}

#[tokio::test]
async fn create_wrong_month_count_or_duplicate_month_is_tpl_0056() {
    let t = start().await;
    post_err(
        &t,
        body(3, json!({ "frequency": "semiannual", "monthsOfYear": [3] })),
        400,
        "TPL-0056",
    )
    .await;
    post_err(
        &t,
        body(
            3,
            json!({ "frequency": "semiannual", "monthsOfYear": [3, 6, 9] }),
        ),
        400,
        "TPL-0056",
    )
    .await;
    post_err(
        &t,
        body(
            3,
            json!({ "frequency": "semiannual", "monthsOfYear": [3, 3] }),
        ),
        400,
        "TPL-0056",
    )
    .await;
    post_err(
        &t,
        body(3, json!({ "frequency": "annual", "monthsOfYear": [1, 2] })),
        400,
        "TPL-0056",
    )
    .await;
}

#[tokio::test]
async fn create_due_date_in_the_past_is_422_tpl_0055() {
    let t = start().await;
    let e = post_err(&t, body(-1, json!({})), 422, "TPL-0055").await;
    assert!(e["fields"]["dueDate"].is_string(), "{e}");
    post_err(
        &t,
        body(0, json!({ "dueDate": "2020-01-01T00:00:00Z" })),
        422,
        "TPL-0055",
    )
    .await;
}

#[tokio::test]
async fn create_invalid_due_date_format_is_tpl_0020() {
    let t = start().await;
    for bad in [
        "tomorrow",
        "2027-13-45T00:00:00Z",
        "2027-03-31",
        "31/03/2027 12:00",
        "",
    ] {
        let e = post_err(&t, body(3, json!({ "dueDate": bad })), 400, "TPL-0020").await;
        assert!(e["fields"]["dueDate"].is_string(), "{bad}: {e}");
    }
}

#[tokio::test]
async fn create_accepts_a_due_date_with_an_offset() {
    let t = start().await;
    let local = (Utc::now() + Duration::days(3))
        .with_timezone(&chrono::FixedOffset::east_opt(2 * 3600).unwrap());
    let raw = local.to_rfc3339_opts(SecondsFormat::Secs, false);
    let d = t
        .create_deadline(&token(), body(3, json!({ "dueDate": raw })))
        .await;
    assert_eq!(instant(&d["dueDate"]), instant(&json!(raw)));
}

#[tokio::test]
async fn create_invalid_template_id_is_tpl_0012() {
    let t = start().await;
    let e = post_err(
        &t,
        body(3, json!({ "templateId": "not-a-uuid" })),
        400,
        "TPL-0012",
    )
    .await;
    assert!(e["fields"]["templateId"].is_string(), "{e}");
}

#[tokio::test]
async fn create_unknown_template_is_404_tpl_0011() {
    let t = start().await;
    let e = post_err(
        &t,
        body(3, json!({ "templateId": uuid::Uuid::new_v4().to_string() })),
        404,
        "TPL-0011",
    )
    .await;
    assert!(e["fields"]["templateId"].is_string(), "{e}");
}

#[tokio::test]
async fn create_with_deleted_template_is_404_tpl_0011() {
    let t = start().await;
    let tpl = t.create_template(&token(), "gone").await;
    t.delete(&token(), &format!("/v1/templates/{tpl}"))
        .await
        .assert_status_is_ok();
    post_err(&t, body(3, json!({ "templateId": tpl })), 404, "TPL-0011").await;
}

#[tokio::test]
async fn create_duplicate_is_409_tpl_0045() {
    let t = start().await;
    let tpl = t.create_template(&token(), "Statement").await;
    let b = body(3, json!({ "templateId": tpl }));
    t.create_deadline(&token(), b.clone()).await;
    // Name, colour and the rest do not matter: (type, template, due date, frequency) does.
    let mut twin = b.clone();
    twin["name"] = json!("Another name");
    twin["color"] = json!("#000000");
    let e = post_err(&t, twin, 409, "TPL-0045").await;
    assert_eq!(e["entityType"], "Deadline", "{e}");
}

#[tokio::test]
async fn create_differing_in_one_key_field_is_not_a_duplicate() {
    let t = start().await;
    let tpl = t.create_template(&token(), "Statement").await;
    let other_tpl = t.create_template(&token(), "Other").await;
    let b = body(3, json!({ "templateId": tpl }));
    t.create_deadline(&token(), b.clone()).await;
    let mut v = b.clone();
    v["type"] = json!("custom");
    t.create_deadline(&token(), v).await;
    let mut v = b.clone();
    v["frequency"] = json!("monthly");
    t.create_deadline(&token(), v).await;
    let mut v = b.clone();
    v["dueDate"] = json!(due(4));
    t.create_deadline(&token(), v).await;
    let mut v = b.clone();
    v["templateId"] = json!(other_tpl);
    t.create_deadline(&token(), v).await;
}

#[tokio::test]
async fn create_soft_deleted_twin_does_not_block() {
    let t = start().await;
    let tpl = t.create_template(&token(), "Statement").await;
    let b = body(3, json!({ "templateId": tpl }));
    let first = create(&t, b.clone()).await;
    t.delete(&token(), &format!("/v1/deadlines/{first}"))
        .await
        .assert_status(StatusCode::NO_CONTENT);
    let second = create(&t, b).await;
    assert_ne!(first, second);
}

#[tokio::test]
async fn create_invalid_name_is_tpl_0064() {
    let t = start().await;
    for bad in [String::new(), "   ".into(), "x".repeat(201)] {
        let e = post_err(&t, body(3, json!({ "name": bad })), 400, "TPL-0064").await;
        assert!(e["fields"]["name"].is_string(), "{e}");
    }
    // 200 characters is the limit.
    t.create_deadline(&token(), body(3, json!({ "name": "x".repeat(200) })))
        .await;
}

#[tokio::test]
async fn create_invalid_notify_days_before_is_tpl_0064() {
    let t = start().await;
    for bad in [-1, 367, 100_000] {
        let e = post_err(
            &t,
            body(3, json!({ "notifyDaysBefore": bad })),
            400,
            "TPL-0064",
        )
        .await;
        assert!(e["fields"]["notifyDaysBefore"].is_string(), "{e}");
    }
    let d = t
        .create_deadline(&token(), body(3, json!({ "notifyDaysBefore": 366 })))
        .await;
    assert_eq!(d["notifyDaysBefore"], 366);
}

#[tokio::test]
async fn create_too_long_description_is_tpl_0064() {
    let t = start().await;
    let e = post_err(
        &t,
        body(3, json!({ "description": "d".repeat(2001) })),
        400,
        "TPL-0064",
    )
    .await;
    assert!(e["fields"]["description"].is_string(), "{e}");
}

#[tokio::test]
async fn create_unknown_field_is_tpl_0015() {
    let t = start().await;
    post_err(&t, body(3, json!({ "priority": "high" })), 400, "TPL-0015").await;
}

#[tokio::test]
async fn create_without_token_is_401() {
    let t = start().await;
    let resp = t
        .client
        .post("/v1/deadlines")
        .body_json(&deadline_body(3))
        .send()
        .await;
    expect_error(resp, 401, "TPL-0401").await;
}

#[tokio::test]
async fn create_without_write_scope_is_403() {
    let t = start().await;
    expect_error(
        t.post_json(&read_only(), "/v1/deadlines", deadline_body(3))
            .await,
        403,
        "TPL-0403",
    )
    .await;
    let list = get_ok(&t, "/v1/deadlines").await;
    assert_eq!(list["total"], 0);
}

// ---------------------------------------------------------------------------------------------
// GET /v1/deadlines
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn list_is_newest_first_by_default_with_the_real_total() {
    let t = start().await;
    let mut created = Vec::new();
    for i in 0..12 {
        created.push(create(&t, body(3 + i, json!({}))).await);
    }
    let page = get_ok(&t, "/v1/deadlines").await;
    assert_eq!(page["total"], 12);
    assert_eq!(page["page"], 1);
    assert_eq!(page["limit"], 10);
    let expected: Vec<String> = created.iter().rev().take(10).cloned().collect();
    assert_eq!(ids(&page), expected);
}

#[tokio::test]
async fn list_pages_in_ascending_order() {
    let t = start().await;
    let mut created = Vec::new();
    for i in 0..5 {
        created.push(create(&t, body(3 + i, json!({}))).await);
    }
    let mut seen = Vec::new();
    for (p, len) in [(1, 2), (2, 2), (3, 1), (4, 0)] {
        let page = get_ok(
            &t,
            &format!("/v1/deadlines?page={p}&limit=2&sort_order=asc"),
        )
        .await;
        assert_eq!(page["total"], 5, "{page}");
        assert_eq!(page["page"], p);
        assert_eq!(page["limit"], 2);
        assert_eq!(ids(&page).len(), len, "page {p}: {page}");
        seen.extend(ids(&page));
    }
    assert_eq!(seen, created);
    let desc = get_ok(&t, "/v1/deadlines?limit=5&sort_order=DESC").await;
    assert_eq!(
        ids(&desc),
        created.iter().rev().cloned().collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn list_excludes_deleted_deadlines_from_items_and_total() {
    let t = start().await;
    let keep = create(&t, body(3, json!({}))).await;
    let gone = create(&t, body(4, json!({}))).await;
    t.delete(&token(), &format!("/v1/deadlines/{gone}"))
        .await
        .assert_status(StatusCode::NO_CONTENT);
    let page = get_ok(&t, "/v1/deadlines").await;
    assert_eq!(page["total"], 1);
    assert_eq!(ids(&page), vec![keep]);
}

#[tokio::test]
async fn list_filters_by_status() {
    let t = start().await;
    let pending = create(&t, body(5, json!({}))).await;
    let overdue = create(&t, body(0, json!({ "dueDate": today_start() }))).await;
    let delivered = create(&t, body(6, json!({}))).await;
    deliver(&t, &delivered, true).await.assert_status_is_ok();
    for (status, id) in [
        ("pending", &pending),
        ("overdue", &overdue),
        ("delivered", &delivered),
        ("Delivered", &delivered),
    ] {
        let page = get_ok(&t, &format!("/v1/deadlines?status={status}")).await;
        assert_eq!(page["total"], 1, "{status}: {page}");
        assert_eq!(ids(&page), vec![id.clone()], "{status}");
        assert_eq!(page["items"][0]["status"], status.to_lowercase());
    }
}

#[tokio::test]
async fn list_filters_by_active() {
    let t = start().await;
    let on = create(&t, body(3, json!({}))).await;
    let off = create(&t, body(4, json!({ "active": false }))).await;
    let page = get_ok(&t, "/v1/deadlines?active=false").await;
    assert_eq!((ids(&page), page["total"].clone()), (vec![off], json!(1)));
    let page = get_ok(&t, "/v1/deadlines?active=true").await;
    assert_eq!((ids(&page), page["total"].clone()), (vec![on], json!(1)));
}

#[tokio::test]
async fn list_filters_by_type() {
    let t = start().await;
    let reg = create(&t, body(3, json!({}))).await;
    let custom = create(&t, body(4, json!({ "type": "custom" }))).await;
    let page = get_ok(&t, "/v1/deadlines?type=custom").await;
    assert_eq!(
        (ids(&page), page["total"].clone()),
        (vec![custom], json!(1))
    );
    let page = get_ok(&t, "/v1/deadlines?type=regulatory").await;
    assert_eq!((ids(&page), page["total"].clone()), (vec![reg], json!(1)));
}

#[tokio::test]
async fn list_filters_by_due_date_range() {
    let t = start().await;
    let d10 = create(&t, body(10, json!({}))).await;
    let d20 = create(&t, body(20, json!({}))).await;
    let d30 = create(&t, body(30, json!({}))).await;
    let page = get_ok(
        &t,
        &format!(
            "/v1/deadlines?startDate={}&endDate={}&sort_order=asc",
            day(15),
            day(25)
        ),
    )
    .await;
    assert_eq!(
        (ids(&page), page["total"].clone()),
        (vec![d20.clone()], json!(1))
    );
    // A YYYY-MM-DD endDate includes its whole day.
    let page = get_ok(
        &t,
        &format!("/v1/deadlines?endDate={}&sort_order=asc", day(20)),
    )
    .await;
    assert_eq!(ids(&page), vec![d10.clone(), d20.clone()]);
    // A YYYY-MM-DD startDate starts at 00:00 of its day.
    let page = get_ok(
        &t,
        &format!("/v1/deadlines?startDate={}&sort_order=asc", day(20)),
    )
    .await;
    assert_eq!(ids(&page), vec![d20.clone(), d30.clone()]);
    // RFC 3339 bounds.
    let page = get_ok(
        &t,
        &format!("/v1/deadlines?startDate={}&endDate={}", due(25), due(35)),
    )
    .await;
    assert_eq!(ids(&page), vec![d30]);
    // startDate == endDate is a valid (possibly empty) range.
    let page = get_ok(
        &t,
        &format!("/v1/deadlines?startDate={0}&endDate={0}", day(12)),
    )
    .await;
    assert_eq!(page["total"], 0);
}

#[tokio::test]
async fn list_filters_combine() {
    let t = start().await;
    let want = create(&t, body(3, json!({ "type": "custom", "active": false }))).await;
    create(&t, body(4, json!({ "type": "custom" }))).await;
    create(&t, body(5, json!({ "active": false }))).await;
    let page = get_ok(&t, "/v1/deadlines?type=custom&active=false&status=pending").await;
    assert_eq!((ids(&page), page["total"].clone()), (vec![want], json!(1)));
}

#[tokio::test]
async fn list_bad_status_filter_is_tpl_0019() {
    let t = start().await;
    let e = expect_error(
        t.get(&token(), "/v1/deadlines?status=late").await,
        400,
        "TPL-0019",
    )
    .await;
    assert!(e["fields"]["status"].is_string(), "{e}");
}

#[tokio::test]
async fn list_bad_type_filter_is_tpl_0046() {
    let t = start().await;
    expect_error(
        t.get(&token(), "/v1/deadlines?type=statutory").await,
        400,
        "TPL-0046",
    )
    .await;
}

#[tokio::test]
async fn list_bad_page_or_active_is_tpl_0019() {
    let t = start().await;
    expect_error(
        t.get(&token(), "/v1/deadlines?page=0").await,
        400,
        "TPL-0019",
    )
    .await;
    expect_error(
        t.get(&token(), "/v1/deadlines?page=abc").await,
        400,
        "TPL-0019",
    )
    .await;
    expect_error(
        t.get(&token(), "/v1/deadlines?active=maybe").await,
        400,
        "TPL-0019",
    )
    .await;
}

#[tokio::test]
async fn list_bad_date_filter_is_tpl_0020() {
    let t = start().await;
    let e = expect_error(
        t.get(&token(), "/v1/deadlines?startDate=yesterday").await,
        400,
        "TPL-0020",
    )
    .await;
    assert!(e["fields"]["startDate"].is_string(), "{e}");
    expect_error(
        t.get(&token(), "/v1/deadlines?endDate=2027-02-30").await,
        400,
        "TPL-0020",
    )
    .await;
}

#[tokio::test]
async fn list_start_after_end_is_tpl_0023() {
    let t = start().await;
    expect_error(
        t.get(
            &token(),
            &format!("/v1/deadlines?startDate={}&endDate={}", day(10), day(5)),
        )
        .await,
        400,
        "TPL-0023",
    )
    .await;
}

#[tokio::test]
async fn list_bad_limit_is_tpl_0024() {
    let t = start().await;
    for bad in ["0", "101", "-1"] {
        let e = expect_error(
            t.get(&token(), &format!("/v1/deadlines?limit={bad}")).await,
            400,
            "TPL-0024",
        )
        .await;
        assert!(e["fields"]["limit"].is_string(), "{e}");
    }
    let page = get_ok(&t, "/v1/deadlines?limit=100").await;
    assert_eq!(page["limit"], 100);
}

#[tokio::test]
async fn list_bad_sort_order_is_tpl_0025() {
    let t = start().await;
    expect_error(
        t.get(&token(), "/v1/deadlines?sort_order=newest").await,
        400,
        "TPL-0025",
    )
    .await;
}

#[tokio::test]
async fn list_without_token_is_401() {
    let t = start().await;
    expect_error(t.client.get("/v1/deadlines").send().await, 401, "TPL-0401").await;
}

#[tokio::test]
async fn list_without_read_scope_is_403() {
    let t = start().await;
    expect_error(t.get(&write_only(), "/v1/deadlines").await, 403, "TPL-0403").await;
}

// ---------------------------------------------------------------------------------------------
// GET /v1/deadlines/notifications
// ---------------------------------------------------------------------------------------------

/// Creates the notification fixture; answers (overdue, warning+1, warning+3, info+20).
async fn notification_fixture(t: &TestApp) -> [String; 4] {
    let info = create(
        t,
        body(20, json!({ "notifyDaysBefore": 30, "name": "info" })),
    )
    .await;
    let warn3 = create(
        t,
        body(3, json!({ "notifyDaysBefore": 5, "name": "warn3" })),
    )
    .await;
    let overdue = create(
        t,
        body(
            0,
            json!({ "dueDate": today_start(), "notifyDaysBefore": 0, "name": "overdue" }),
        ),
    )
    .await;
    let warn1 = create(
        t,
        body(1, json!({ "notifyDaysBefore": 1, "name": "warn1" })),
    )
    .await;
    // Not notified: outside the window, inactive, delivered, deleted.
    create(t, body(20, json!({ "notifyDaysBefore": 5 }))).await;
    create(
        t,
        body(2, json!({ "notifyDaysBefore": 5, "active": false })),
    )
    .await;
    let delivered = create(t, body(2, json!({ "notifyDaysBefore": 5 }))).await;
    deliver(t, &delivered, true).await.assert_status_is_ok();
    let deleted = create(t, body(2, json!({ "notifyDaysBefore": 5 }))).await;
    t.delete(&token(), &format!("/v1/deadlines/{deleted}"))
        .await
        .assert_status(StatusCode::NO_CONTENT);
    [overdue, warn1, warn3, info]
}

#[tokio::test]
async fn notifications_are_most_urgent_first_with_severity() {
    let t = start().await;
    let expected = notification_fixture(&t).await;
    let n = get_ok(&t, "/v1/deadlines/notifications").await;
    assert_eq!(n["total"], 4, "{n}");
    assert_eq!(ids(&n), expected.to_vec(), "{n}");
    let sev: Vec<&str> = n["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["severity"].as_str().unwrap())
        .collect();
    assert_eq!(sev, ["overdue", "warning", "warning", "info"]);
    let days: Vec<i64> = n["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["daysUntilDue"].as_i64().unwrap())
        .collect();
    assert_eq!(days, [0, 1, 3, 20]);
    assert_eq!(n["items"][3]["notifyDaysBefore"], 30);
    assert_eq!(n["items"][3]["name"], "info");
}

#[tokio::test]
async fn notifications_limit_truncates_but_total_counts_all() {
    let t = start().await;
    let expected = notification_fixture(&t).await;
    let n = get_ok(&t, "/v1/deadlines/notifications?limit=2").await;
    assert_eq!(n["total"], 4, "{n}");
    assert_eq!(ids(&n), expected[..2].to_vec());
    let n = get_ok(&t, "/v1/deadlines/notifications?limit=1").await;
    assert_eq!(ids(&n), expected[..1].to_vec());
    let n = get_ok(&t, "/v1/deadlines/notifications?limit=100").await;
    assert_eq!(ids(&n).len(), 4);
}

#[tokio::test]
async fn notifications_empty_when_nothing_is_due() {
    let t = start().await;
    create(&t, body(30, json!({ "notifyDaysBefore": 5 }))).await;
    let n = get_ok(&t, "/v1/deadlines/notifications").await;
    assert_eq!(n["total"], 0);
    assert_eq!(n["items"], json!([]));
}

#[tokio::test]
async fn notifications_default_limit_is_10() {
    let t = start().await;
    for i in 0..12 {
        create(
            &t,
            body(
                1 + (i % 5),
                json!({ "notifyDaysBefore": 10, "name": format!("n{i}") }),
            ),
        )
        .await;
    }
    let n = get_ok(&t, "/v1/deadlines/notifications").await;
    assert_eq!(n["total"], 12);
    assert_eq!(ids(&n).len(), 10);
}

#[tokio::test]
async fn notifications_bad_limit_is_tpl_0024() {
    let t = start().await;
    for bad in ["0", "101", "-5"] {
        expect_error(
            t.get(
                &token(),
                &format!("/v1/deadlines/notifications?limit={bad}"),
            )
            .await,
            400,
            "TPL-0024",
        )
        .await;
    }
    expect_error(
        t.get(&token(), "/v1/deadlines/notifications?limit=ten")
            .await,
        400,
        "TPL-0019",
    )
    .await;
}

#[tokio::test]
async fn notifications_without_token_is_401() {
    let t = start().await;
    expect_error(
        t.client.get("/v1/deadlines/notifications").send().await,
        401,
        "TPL-0401",
    )
    .await;
}

#[tokio::test]
async fn notifications_without_read_scope_is_403() {
    let t = start().await;
    expect_error(
        t.get(&write_only(), "/v1/deadlines/notifications").await,
        403,
        "TPL-0403",
    )
    .await;
}

// ---------------------------------------------------------------------------------------------
// GET /v1/deadlines/{id}
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn get_returns_the_deadline() {
    let t = start().await;
    let created = t
        .create_deadline(
            &token(),
            body(3, json!({ "frequency": "annual", "monthsOfYear": [6] })),
        )
        .await;
    let got = get_ok(&t, &format!("/v1/deadlines/{}", id_of(&created))).await;
    for f in [
        "id",
        "name",
        "type",
        "dueDate",
        "frequency",
        "monthsOfYear",
        "color",
        "status",
        "createdAt",
        "updatedAt",
    ] {
        assert_eq!(got[f], created[f], "{f}");
    }
}

#[tokio::test]
async fn get_unknown_is_404_tpl_0011() {
    let t = start().await;
    let e = expect_error(
        t.get(&token(), &format!("/v1/deadlines/{}", uuid::Uuid::new_v4()))
            .await,
        404,
        "TPL-0011",
    )
    .await;
    assert_eq!(e["entityType"], "Deadline", "{e}");
}

#[tokio::test]
async fn get_soft_deleted_is_404_tpl_0011() {
    let t = start().await;
    let id = create(&t, deadline_body(3)).await;
    t.delete(&token(), &format!("/v1/deadlines/{id}"))
        .await
        .assert_status(StatusCode::NO_CONTENT);
    expect_error(
        t.get(&token(), &format!("/v1/deadlines/{id}")).await,
        404,
        "TPL-0011",
    )
    .await;
}

#[tokio::test]
async fn get_invalid_id_is_tpl_0009() {
    let t = start().await;
    let e = expect_error(
        t.get(&token(), "/v1/deadlines/not-a-uuid").await,
        400,
        "TPL-0009",
    )
    .await;
    assert!(e["fields"]["id"].is_string(), "{e}");
}

#[tokio::test]
async fn get_without_token_is_401() {
    let t = start().await;
    let id = create(&t, deadline_body(3)).await;
    expect_error(
        t.client.get(format!("/v1/deadlines/{id}")).send().await,
        401,
        "TPL-0401",
    )
    .await;
}

#[tokio::test]
async fn get_without_read_scope_is_403() {
    let t = start().await;
    let id = create(&t, deadline_body(3)).await;
    expect_error(
        t.get(&write_only(), &format!("/v1/deadlines/{id}")).await,
        403,
        "TPL-0403",
    )
    .await;
}

// ---------------------------------------------------------------------------------------------
// PATCH /v1/deadlines/{id}
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn patch_updates_only_the_sent_fields() {
    let t = start().await;
    let created = t
        .create_deadline(&token(), body(3, json!({ "description": "keep me" })))
        .await;
    let id = id_of(&created);
    let new_due = due(9);
    let d = patch_ok(
        &t,
        &id,
        json!({ "name": " Renamed ", "notifyDaysBefore": 12, "active": false, "color": "#abcdef", "type": "custom", "dueDate": new_due }),
    )
    .await;
    assert_eq!(d["name"], "Renamed");
    assert_eq!(d["notifyDaysBefore"], 12);
    assert_eq!(d["active"], false);
    assert_eq!(d["color"], "#ABCDEF");
    assert_eq!(d["type"], "custom");
    assert_eq!(instant(&d["dueDate"]), instant(&json!(new_due)));
    assert_eq!(d["description"], "keep me");
    assert_eq!(d["frequency"], "once");
    assert_eq!(d["createdAt"], created["createdAt"]);
    assert!(instant(&d["updatedAt"]) >= instant(&created["updatedAt"]));
    let got = get_ok(&t, &format!("/v1/deadlines/{id}")).await;
    assert_eq!(got["name"], "Renamed");
    assert_eq!(got["active"], false);
}

#[tokio::test]
async fn patch_empty_body_is_tpl_0001() {
    let t = start().await;
    let id = create(&t, deadline_body(3)).await;
    patch_err(&t, &id, json!({}), 400, "TPL-0001").await;
}

#[tokio::test]
async fn patch_template_id_null_unlinks() {
    let t = start().await;
    let tpl = t.create_template(&token(), "Statement").await;
    let id = create(&t, body(3, json!({ "templateId": tpl }))).await;
    let d = patch_ok(&t, &id, json!({ "templateId": null })).await;
    assert!(d["templateId"].is_null(), "{d}");
    assert!(d["templateName"].is_null(), "{d}");
    let got = get_ok(&t, &format!("/v1/deadlines/{id}")).await;
    assert!(got["templateId"].is_null());
}

#[tokio::test]
async fn patch_template_id_links_a_template() {
    let t = start().await;
    let tpl = t.create_template(&token(), "Linked later").await;
    let id = create(&t, deadline_body(3)).await;
    let d = patch_ok(&t, &id, json!({ "templateId": tpl })).await;
    assert_eq!(d["templateId"], tpl.as_str());
    assert_eq!(d["templateName"], "Linked later");
}

#[tokio::test]
async fn patch_description_null_clears_it() {
    let t = start().await;
    let id = create(&t, body(3, json!({ "description": "to clear" }))).await;
    let d = patch_ok(&t, &id, json!({ "description": null })).await;
    assert!(d["description"].is_null(), "{d}");
    let got = get_ok(&t, &format!("/v1/deadlines/{id}")).await;
    assert!(got["description"].is_null());
}

#[tokio::test]
async fn patch_absent_description_is_kept() {
    let t = start().await;
    let id = create(&t, body(3, json!({ "description": "stays" }))).await;
    let d = patch_ok(&t, &id, json!({ "name": "x" })).await;
    assert_eq!(d["description"], "stays");
}

#[tokio::test]
async fn patch_revalidates_the_merged_deadline() {
    let t = start().await;
    let id = create(&t, deadline_body(3)).await;
    // annual without months on a `once` deadline: the merged deadline has no months.
    patch_err(&t, &id, json!({ "frequency": "annual" }), 400, "TPL-0052").await;
    patch_err(
        &t,
        &id,
        json!({ "frequency": "semiannual", "monthsOfYear": [4] }),
        400,
        "TPL-0056",
    )
    .await;
    // months on the current `once` frequency.
    patch_err(&t, &id, json!({ "monthsOfYear": [4] }), 400, "TPL-0050").await;
    // Nothing changed.
    let got = get_ok(&t, &format!("/v1/deadlines/{id}")).await;
    assert_eq!(got["frequency"], "once");
    // With the months it is fine.
    let d = patch_ok(
        &t,
        &id,
        json!({ "frequency": "semiannual", "monthsOfYear": [10, 4] }),
    )
    .await;
    assert_eq!(d["monthsOfYear"], json!([4, 10]));
    // Only the months: validated against the stored frequency.
    patch_err(&t, &id, json!({ "monthsOfYear": [4] }), 400, "TPL-0056").await;
    let d = patch_ok(&t, &id, json!({ "monthsOfYear": [1, 7] })).await;
    assert_eq!(d["monthsOfYear"], json!([1, 7]));
}

#[tokio::test]
async fn patch_to_a_frequency_without_months_clears_them() {
    let t = start().await;
    let id = create(
        &t,
        body(3, json!({ "frequency": "annual", "monthsOfYear": [5] })),
    )
    .await;
    let d = patch_ok(&t, &id, json!({ "frequency": "monthly" })).await;
    assert_eq!(d["frequency"], "monthly");
    assert_eq!(d["monthsOfYear"], json!([]));
    // annual → semiannual keeps the one stored month, which is not enough.
    let id = create(
        &t,
        body(3, json!({ "frequency": "annual", "monthsOfYear": [5] })),
    )
    .await;
    patch_err(
        &t,
        &id,
        json!({ "frequency": "semiannual" }),
        400,
        "TPL-0056",
    )
    .await;
}

#[tokio::test]
async fn patch_rule_violations_answer_their_codes() {
    let t = start().await;
    let id = create(
        &t,
        body(3, json!({ "frequency": "annual", "monthsOfYear": [5] })),
    )
    .await;
    patch_err(&t, &id, json!({ "type": "statutory" }), 400, "TPL-0046").await;
    patch_err(&t, &id, json!({ "frequency": "hourly" }), 400, "TPL-0047").await;
    patch_err(&t, &id, json!({ "color": "#12" }), 400, "TPL-0048").await;
    patch_err(&t, &id, json!({ "monthsOfYear": [13] }), 400, "TPL-0054").await;
    patch_err(&t, &id, json!({ "monthsOfYear": [-2] }), 400, "TPL-0054").await;
    patch_err(&t, &id, json!({ "monthsOfYear": [5, 6] }), 400, "TPL-0056").await;
    patch_err(&t, &id, json!({ "monthsOfYear": [] }), 400, "TPL-0052").await;
    patch_err(&t, &id, json!({ "name": "  " }), 400, "TPL-0064").await;
    patch_err(&t, &id, json!({ "name": "n".repeat(201) }), 400, "TPL-0064").await;
    patch_err(&t, &id, json!({ "notifyDaysBefore": 367 }), 400, "TPL-0064").await;
    patch_err(&t, &id, json!({ "notifyDaysBefore": -1 }), 400, "TPL-0064").await;
    patch_err(
        &t,
        &id,
        json!({ "description": "d".repeat(2001) }),
        400,
        "TPL-0064",
    )
    .await;
    patch_err(&t, &id, json!({ "dueDate": "next week" }), 400, "TPL-0020").await;
    patch_err(&t, &id, json!({ "dueDate": due(-2) }), 422, "TPL-0055").await;
    patch_err(&t, &id, json!({ "templateId": "nope" }), 400, "TPL-0012").await;
    patch_err(
        &t,
        &id,
        json!({ "templateId": uuid::Uuid::new_v4().to_string() }),
        404,
        "TPL-0011",
    )
    .await;
    // Nothing was applied.
    let got = get_ok(&t, &format!("/v1/deadlines/{id}")).await;
    assert_eq!(got["monthsOfYear"], json!([5]));
    assert_eq!(got["name"], "Liquidity report");
    assert!(got["templateId"].is_null());
}

#[tokio::test]
async fn patch_into_a_live_twin_is_409_tpl_0045() {
    let t = start().await;
    let tpl = t.create_template(&token(), "Statement").await;
    let due_date = due(3);
    create(
        &t,
        body(3, json!({ "templateId": tpl, "dueDate": due_date })),
    )
    .await;
    let other = create(&t, body(3, json!({ "templateId": tpl, "dueDate": due(4) }))).await;
    patch_err(&t, &other, json!({ "dueDate": due_date }), 409, "TPL-0045").await;
}

#[tokio::test]
async fn patch_unknown_deadline_is_404_tpl_0011() {
    let t = start().await;
    patch_err(
        &t,
        &uuid::Uuid::new_v4().to_string(),
        json!({ "name": "x" }),
        404,
        "TPL-0011",
    )
    .await;
}

#[tokio::test]
async fn patch_soft_deleted_deadline_is_404_tpl_0011() {
    let t = start().await;
    let id = create(&t, deadline_body(3)).await;
    t.delete(&token(), &format!("/v1/deadlines/{id}"))
        .await
        .assert_status(StatusCode::NO_CONTENT);
    patch_err(&t, &id, json!({ "name": "x" }), 404, "TPL-0011").await;
}

#[tokio::test]
async fn patch_invalid_id_is_tpl_0009() {
    let t = start().await;
    patch_err(&t, "123", json!({ "name": "x" }), 400, "TPL-0009").await;
}

#[tokio::test]
async fn patch_unknown_field_is_tpl_0015() {
    let t = start().await;
    let id = create(&t, deadline_body(3)).await;
    patch_err(
        &t,
        &id,
        json!({ "name": "x", "owner": "me" }),
        400,
        "TPL-0015",
    )
    .await;
}

#[tokio::test]
async fn patch_without_token_is_401() {
    let t = start().await;
    let id = create(&t, deadline_body(3)).await;
    let resp = t
        .client
        .patch(format!("/v1/deadlines/{id}"))
        .body_json(&json!({ "name": "x" }))
        .send()
        .await;
    expect_error(resp, 401, "TPL-0401").await;
}

#[tokio::test]
async fn patch_without_write_scope_is_403() {
    let t = start().await;
    let id = create(&t, deadline_body(3)).await;
    expect_error(
        t.patch_json(
            &read_only(),
            &format!("/v1/deadlines/{id}"),
            json!({ "name": "x" }),
        )
        .await,
        403,
        "TPL-0403",
    )
    .await;
    assert_eq!(
        get_ok(&t, &format!("/v1/deadlines/{id}")).await["name"],
        "Liquidity report"
    );
}

// ---------------------------------------------------------------------------------------------
// DELETE /v1/deadlines/{id}
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn delete_answers_204_and_the_deadline_is_gone() {
    let t = start().await;
    let id = create(&t, deadline_body(3)).await;
    t.delete(&token(), &format!("/v1/deadlines/{id}"))
        .await
        .assert_status(StatusCode::NO_CONTENT);
    expect_error(
        t.get(&token(), &format!("/v1/deadlines/{id}")).await,
        404,
        "TPL-0011",
    )
    .await;
    assert_eq!(get_ok(&t, "/v1/deadlines").await["total"], 0);
}

#[tokio::test]
async fn delete_twice_is_404_tpl_0011() {
    let t = start().await;
    let id = create(&t, deadline_body(3)).await;
    t.delete(&token(), &format!("/v1/deadlines/{id}"))
        .await
        .assert_status(StatusCode::NO_CONTENT);
    expect_error(
        t.delete(&token(), &format!("/v1/deadlines/{id}")).await,
        404,
        "TPL-0011",
    )
    .await;
}

#[tokio::test]
async fn delete_unknown_is_404_tpl_0011() {
    let t = start().await;
    expect_error(
        t.delete(&token(), &format!("/v1/deadlines/{}", uuid::Uuid::new_v4()))
            .await,
        404,
        "TPL-0011",
    )
    .await;
}

#[tokio::test]
async fn delete_invalid_id_is_tpl_0009() {
    let t = start().await;
    expect_error(
        t.delete(&token(), "/v1/deadlines/zzz").await,
        400,
        "TPL-0009",
    )
    .await;
}

#[tokio::test]
async fn delete_without_token_is_401() {
    let t = start().await;
    let id = create(&t, deadline_body(3)).await;
    expect_error(
        t.client.delete(format!("/v1/deadlines/{id}")).send().await,
        401,
        "TPL-0401",
    )
    .await;
}

#[tokio::test]
async fn delete_without_write_scope_is_403() {
    let t = start().await;
    let id = create(&t, deadline_body(3)).await;
    expect_error(
        t.delete(&read_only(), &format!("/v1/deadlines/{id}")).await,
        403,
        "TPL-0403",
    )
    .await;
    get_ok(&t, &format!("/v1/deadlines/{id}")).await;
}

// ---------------------------------------------------------------------------------------------
// PATCH /v1/deadlines/{id}/deliver
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn deliver_then_revert() {
    let t = start().await;
    let id = create(&t, deadline_body(3)).await;
    let before = Utc::now() - Duration::seconds(1);
    let d = ok_json(deliver(&t, &id, true).await).await;
    assert_eq!(d["status"], "delivered");
    let at = instant(&d["deliveredAt"]);
    assert!(
        at >= before && at <= Utc::now() + Duration::seconds(1),
        "{d}"
    );
    let got = get_ok(&t, &format!("/v1/deadlines/{id}")).await;
    assert_eq!(got["status"], "delivered");
    assert_eq!(got["deliveredAt"], d["deliveredAt"]);
    let d = ok_json(deliver(&t, &id, false).await).await;
    assert_eq!(d["status"], "pending");
    assert!(d["deliveredAt"].is_null(), "{d}");
    let got = get_ok(&t, &format!("/v1/deadlines/{id}")).await;
    assert_eq!(got["status"], "pending");
    // And again.
    assert_eq!(
        ok_json(deliver(&t, &id, true).await).await["status"],
        "delivered"
    );
}

#[tokio::test]
async fn revert_of_an_overdue_deadline_shows_it_overdue_again() {
    let t = start().await;
    let id = create(&t, body(0, json!({ "dueDate": today_start() }))).await;
    assert_eq!(
        ok_json(deliver(&t, &id, true).await).await["status"],
        "delivered"
    );
    assert_eq!(
        ok_json(deliver(&t, &id, false).await).await["status"],
        "overdue"
    );
}

#[tokio::test]
async fn deliver_twice_is_422_tpl_0065() {
    let t = start().await;
    let id = create(&t, deadline_body(3)).await;
    deliver(&t, &id, true).await.assert_status_is_ok();
    let e = expect_error(deliver(&t, &id, true).await, 422, "TPL-0065").await;
    assert_eq!(e["entityType"], "Deadline");
}

#[tokio::test]
async fn revert_when_not_delivered_is_422_tpl_0066() {
    let t = start().await;
    let id = create(&t, deadline_body(3)).await;
    let e = expect_error(deliver(&t, &id, false).await, 422, "TPL-0066").await;
    assert_eq!(e["entityType"], "Deadline");
}

#[tokio::test]
async fn deliver_without_the_flag_is_tpl_0001() {
    let t = start().await;
    let id = create(&t, deadline_body(3)).await;
    let e = expect_error(
        t.patch_json(&token(), &format!("/v1/deadlines/{id}/deliver"), json!({}))
            .await,
        400,
        "TPL-0001",
    )
    .await;
    assert!(e["fields"]["delivered"].is_string(), "{e}");
}

#[tokio::test]
async fn deliver_unknown_field_is_tpl_0015() {
    let t = start().await;
    let id = create(&t, deadline_body(3)).await;
    let resp = t
        .patch_json(
            &token(),
            &format!("/v1/deadlines/{id}/deliver"),
            json!({ "delivered": true, "at": "now" }),
        )
        .await;
    expect_error(resp, 400, "TPL-0015").await;
}

#[tokio::test]
async fn deliver_unknown_deadline_is_404_tpl_0011() {
    let t = start().await;
    expect_error(
        deliver(&t, &uuid::Uuid::new_v4().to_string(), true).await,
        404,
        "TPL-0011",
    )
    .await;
}

#[tokio::test]
async fn deliver_soft_deleted_deadline_is_404_tpl_0011() {
    let t = start().await;
    let id = create(&t, deadline_body(3)).await;
    t.delete(&token(), &format!("/v1/deadlines/{id}"))
        .await
        .assert_status(StatusCode::NO_CONTENT);
    expect_error(deliver(&t, &id, true).await, 404, "TPL-0011").await;
}

#[tokio::test]
async fn deliver_invalid_id_is_tpl_0009() {
    let t = start().await;
    expect_error(deliver(&t, "not-a-uuid", true).await, 400, "TPL-0009").await;
}

#[tokio::test]
async fn deliver_without_token_is_401() {
    let t = start().await;
    let id = create(&t, deadline_body(3)).await;
    let resp = t
        .client
        .patch(format!("/v1/deadlines/{id}/deliver"))
        .body_json(&json!({ "delivered": true }))
        .send()
        .await;
    expect_error(resp, 401, "TPL-0401").await;
}

#[tokio::test]
async fn deliver_without_write_scope_is_403() {
    let t = start().await;
    let id = create(&t, deadline_body(3)).await;
    let resp = t
        .patch_json(
            &read_only(),
            &format!("/v1/deadlines/{id}/deliver"),
            json!({ "delivered": true }),
        )
        .await;
    expect_error(resp, 403, "TPL-0403").await;
    assert_eq!(
        get_ok(&t, &format!("/v1/deadlines/{id}")).await["status"],
        "pending"
    );
}

// ---------------------------------------------------------------------------------------------
// Template cascade
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn template_delete_cascades_to_its_live_deadlines() {
    let t = start().await;
    let tpl = t.create_template(&token(), "Statement").await;
    let other = t.create_template(&token(), "Other").await;
    let a = create(&t, body(3, json!({ "templateId": tpl }))).await;
    let b = create(&t, body(4, json!({ "templateId": tpl, "type": "custom" }))).await;
    let already_gone = create(&t, body(5, json!({ "templateId": tpl }))).await;
    t.delete(&token(), &format!("/v1/deadlines/{already_gone}"))
        .await
        .assert_status(StatusCode::NO_CONTENT);
    let unlinked = create(&t, body(6, json!({ "templateId": tpl }))).await;
    patch_ok(&t, &unlinked, json!({ "templateId": null })).await;
    let standalone = create(&t, body(7, json!({}))).await;
    let elsewhere = create(&t, body(8, json!({ "templateId": other }))).await;

    let resp = ok_json(t.delete(&token(), &format!("/v1/templates/{tpl}")).await).await;
    assert_eq!(resp["cascadedDeadlineCount"], 2, "{resp}");
    assert_eq!(resp["id"], tpl.as_str());
    for id in [&a, &b] {
        expect_error(
            t.get(&token(), &format!("/v1/deadlines/{id}")).await,
            404,
            "TPL-0011",
        )
        .await;
    }
    for id in [&unlinked, &standalone, &elsewhere] {
        get_ok(&t, &format!("/v1/deadlines/{id}")).await;
    }
    assert_eq!(get_ok(&t, "/v1/deadlines").await["total"], 3);
}

#[tokio::test]
async fn template_delete_without_deadlines_cascades_none() {
    let t = start().await;
    let tpl = t.create_template(&token(), "Lonely").await;
    let resp = ok_json(t.delete(&token(), &format!("/v1/templates/{tpl}")).await).await;
    assert_eq!(resp["cascadedDeadlineCount"], 0);
}

// ---------------------------------------------------------------------------------------------
// Tenant isolation
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn tenants_cannot_see_or_touch_each_others_deadlines() {
    let t = start_with(Options {
        multi_tenant: true,
        ..Default::default()
    })
    .await;
    let scopes = all_scopes();
    let a = token_for(Some("tenant-a"), &scopes);
    let b = token_for(Some("tenant-b"), &scopes);
    let id = id_of(&t.create_deadline(&a, deadline_body(3)).await);
    let path = format!("/v1/deadlines/{id}");

    expect_error(t.get(&b, &path).await, 404, "TPL-0011").await;
    expect_error(
        t.patch_json(&b, &path, json!({ "name": "hijacked" })).await,
        404,
        "TPL-0011",
    )
    .await;
    expect_error(
        t.patch_json(&b, &format!("{path}/deliver"), json!({ "delivered": true }))
            .await,
        404,
        "TPL-0011",
    )
    .await;
    expect_error(t.delete(&b, &path).await, 404, "TPL-0011").await;
    let list = ok_json(t.get(&b, "/v1/deadlines").await).await;
    assert_eq!(
        (list["total"].clone(), list["items"].clone()),
        (json!(0), json!([]))
    );

    // Tenant A still has it, untouched.
    let got = ok_json(t.get(&a, &path).await).await;
    assert_eq!(got["name"], "Liquidity report");
    assert_eq!(got["status"], "pending");
    let list = ok_json(t.get(&a, "/v1/deadlines").await).await;
    assert_eq!(list["total"], 1);
}

#[tokio::test]
async fn tenants_do_not_see_each_others_notifications() {
    let t = start_with(Options {
        multi_tenant: true,
        ..Default::default()
    })
    .await;
    let scopes = all_scopes();
    let a = token_for(Some("tenant-a"), &scopes);
    let b = token_for(Some("tenant-b"), &scopes);
    t.create_deadline(&a, body(2, json!({ "notifyDaysBefore": 5 })))
        .await;
    assert_eq!(
        ok_json(t.get(&a, "/v1/deadlines/notifications").await).await["total"],
        1
    );
    let n = ok_json(t.get(&b, "/v1/deadlines/notifications").await).await;
    assert_eq!(
        (n["total"].clone(), n["items"].clone()),
        (json!(0), json!([]))
    );
}

#[tokio::test]
async fn tenants_cannot_link_each_others_templates() {
    let t = start_with(Options {
        multi_tenant: true,
        ..Default::default()
    })
    .await;
    let scopes = all_scopes();
    let a = token_for(Some("tenant-a"), &scopes);
    let b = token_for(Some("tenant-b"), &scopes);
    let tpl = t.create_template(&a, "A's template").await;
    let resp = t
        .post_json(&b, "/v1/deadlines", body(3, json!({ "templateId": tpl })))
        .await;
    expect_error(resp, 404, "TPL-0011").await;
    t.create_deadline(&a, body(3, json!({ "templateId": tpl })))
        .await;
}
