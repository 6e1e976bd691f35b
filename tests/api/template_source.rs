//! `GET /v1/templates/{id}/source`: the file exactly as uploaded, then as replaced; 404 for a
//! missing, deleted or other tenant's template; 400 for an id that is not one; the scope.
use crate::common;

use common::*;

const SOURCE: &str =
    "{% for a in bank.accounts %}{{ a.account_id }};{% endfor %}\n<é & \"quoted\">\n";

#[tokio::test]
async fn the_source_is_the_uploaded_file_then_the_replacement() {
    let t = start().await;
    let id = t.upload_template("txt", SOURCE).await;
    let resp = t.get(&token(), &format!("/v1/templates/{id}/source")).await;
    resp.assert_status_is_ok();
    resp.assert_header("content-type", "text/plain; charset=utf-8");
    resp.assert_header("cache-control", "no-store");
    assert_eq!(resp.0.into_body().into_string().await.unwrap(), SOURCE);

    let replaced = "{{ bank.accounts.0.holder_name }}\n";
    let form = Form::new().file("template", "t.tpl", replaced.as_bytes());
    let resp = t
        .client
        .patch(format!("/v1/templates/{id}"))
        .header("authorization", bearer(&token()))
        .content_type(form.content_type())
        .body(form.into_body())
        .send()
        .await;
    resp.assert_status_is_ok();
    let resp = t.get(&token(), &format!("/v1/templates/{id}/source")).await;
    assert_eq!(resp.0.into_body().into_string().await.unwrap(), replaced);

    t.delete(&token(), &format!("/v1/templates/{id}"))
        .await
        .assert_status_is_ok();
    expect_error(
        t.get(&token(), &format!("/v1/templates/{id}/source")).await,
        404,
        "TPL-0011",
    )
    .await;
}

#[tokio::test]
async fn missing_malformed_and_foreign_ids_and_the_scope() {
    let t = start_with(Options {
        multi_tenant: true,
        ..Options::default()
    })
    .await;
    let a = token_for(Some("tenant-a"), &all_scopes());
    let b = token_for(Some("tenant-b"), &all_scopes());
    let form = Form::new()
        .file("template", "t.tpl", SOURCE.as_bytes())
        .text("outputFormat", "txt");
    let resp = t.upload(&a, form).await;
    let id = json(resp).await["id"].as_str().unwrap().to_owned();
    let path = format!("/v1/templates/{id}/source");
    t.get(&a, &path).await.assert_status_is_ok();
    expect_error(t.get(&b, &path).await, 404, "TPL-0011").await;
    expect_error(
        t.get(
            &a,
            "/v1/templates/019826f4-6a9c-7b31-9d40-2f1e8c5a4b77/source",
        )
        .await,
        404,
        "TPL-0011",
    )
    .await;
    expect_error(
        t.get(&a, "/v1/templates/not-an-id/source").await,
        400,
        "TPL-0009",
    )
    .await;
    let writer = token_for(Some("tenant-a"), &["templates:write"]);
    expect_error(t.get(&writer, &path).await, 403, "TPL-0403").await;
}
