//! Use-case unit tests with mocked ports (mockall): the compensation paths that an in-memory
//! adapter cannot be made to fail on demand.
use super::*;
use bytes::Bytes;
use reporter_adapter_memory::MemoryStore;
use reporter_ports::StoreError;
use reporter_ports::clock::SystemClock;
use reporter_ports::ports::{MockObjectStorage, MockUnitOfWorkPort, StoredObject};

/// An app over `storage` and in-memory everything else.
pub(super) fn app_over(storage: MockObjectStorage) -> App {
    app(storage, None)
}

fn app(storage: MockObjectStorage, uow: Option<MockUnitOfWorkPort>) -> App {
    app_with_runner(storage, uow, analyzing_runner())
}

fn app_with_runner(
    storage: MockObjectStorage,
    uow: Option<MockUnitOfWorkPort>,
    runner: reporter_ports::ports::MockTemplateRunner,
) -> App {
    let store = Arc::new(MemoryStore::new());
    let uow: Arc<dyn UnitOfWorkPort> = match uow {
        Some(u) => Arc::new(u),
        None => store.clone(),
    };
    let ports = Ports {
        templates: store.clone(),
        deadlines: store.clone(),
        reports: store.clone(),
        uow,
        outbox: store.clone(),
        storage: Arc::new(storage),
        idempotency: store.clone(),
        jobs: Arc::new(reporter_adapter_memory::MemoryJobQueue::new(16).0),
        runner: Arc::new(runner),
        clock: Arc::new(SystemClock),
        deliveries: None,
    };
    App::new(
        ports,
        DataSourceCatalog::default(),
        Emitter::disabled(),
        Settings {
            max_page_limit: 100,
            layout: KeyLayout {
                tenant_prefix: false,
            },
        },
    )
}

/// A runner whose every parse succeeds and reads nothing (these tests are about storage).
fn analyzing_runner() -> reporter_ports::ports::MockTemplateRunner {
    let mut r = reporter_ports::ports::MockTemplateRunner::new();
    r.expect_analyze()
        .returning(|_, _| Ok(reporter_ports::ports::TemplateAnalysis::default()));
    r
}

fn caller() -> Caller {
    Caller {
        tenant: TenantId::default_tenant(),
        subject: "t".into(),
    }
}

fn upload() -> CreateTemplate {
    CreateTemplate {
        file: TemplateFile {
            file_name: "a.tpl".into(),
            bytes: Bytes::from_static(b"hello"),
        },
        output_format: "txt".into(),
        description: None,
        idempotency: None,
    }
}

#[tokio::test]
async fn a_failed_commit_removes_the_stored_file() {
    let mut storage = MockObjectStorage::new();
    storage
        .expect_put()
        .times(1)
        .returning(|key, _, _| Ok(format!("stored/{key}")));
    storage
        .expect_delete()
        .withf(|key| key.starts_with("stored/templates/"))
        .times(1)
        .returning(|_| Ok(()));
    let mut uow = MockUnitOfWorkPort::new();
    uow.expect_commit()
        .times(1)
        .returning(|_, _| Err(StoreError::Unavailable("down".into())));
    let err = app(storage, Some(uow))
        .create_template(&caller(), upload())
        .await
        .unwrap_err();
    assert_eq!(err.code, Code::ServiceUnavailable);
}

#[tokio::test]
async fn the_key_storage_reports_is_the_key_recorded() {
    let mut storage = MockObjectStorage::new();
    storage
        .expect_put()
        .times(1)
        .returning(|_, _, _| Ok("bucket-prefix/templates/x.tpl".into()));
    let a = app(storage, None);
    let t = a.create_template(&caller(), upload()).await.unwrap();
    assert_eq!(t.template.object_key, "bucket-prefix/templates/x.tpl");
}

#[tokio::test]
async fn storage_outage_on_upload_is_a_503_with_its_code_and_nothing_is_committed() {
    let mut storage = MockObjectStorage::new();
    storage.expect_put().returning(|_, _, _| {
        Err(StoreError::Unavailable(
            "connection refused to 10.0.0.1".into(),
        ))
    });
    let a = app(storage, None);
    let err = a.create_template(&caller(), upload()).await.unwrap_err();
    assert_eq!(err.code, Code::StorageUnavailable);
    assert!(
        !err.message.contains("10.0.0.1"),
        "internal detail leaked: {}",
        err.message
    );
    assert_eq!(a.ports.templates.count(&caller().tenant).await.unwrap(), 0);
}

#[tokio::test]
async fn a_failed_update_restores_the_previous_file() {
    let mut storage = MockObjectStorage::new();
    let mut seq = mockall::Sequence::new();
    // create
    storage
        .expect_put()
        .times(1)
        .in_sequence(&mut seq)
        .returning(|k, _, _| Ok(k.to_owned()));
    // update: read the previous content, write the new one, then restore the old one
    storage
        .expect_get()
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_| {
            Ok(Some(StoredObject {
                bytes: Bytes::from_static(b"hello"),
                content_type: "text/plain".into(),
            }))
        });
    storage
        .expect_put()
        .withf(|_, b, _| b.as_ref() == b"new content")
        .times(1)
        .in_sequence(&mut seq)
        .returning(|k, _, _| Ok(k.to_owned()));
    storage
        .expect_put()
        .withf(|_, b, _| b.as_ref() == b"hello")
        .times(1)
        .in_sequence(&mut seq)
        .returning(|k, _, _| Ok(k.to_owned()));
    let store = Arc::new(MemoryStore::new());
    let mut uow = MockUnitOfWorkPort::new();
    let inner = store.clone();
    let mut calls = 0;
    uow.expect_commit().times(2).returning(move |tenant, u| {
        calls += 1;
        if calls == 1 {
            // Let the create through to the real store.
            let inner = inner.clone();
            let tenant = tenant.clone();
            futures_util::FutureExt::now_or_never(async move { inner.commit(&tenant, u).await })
                .unwrap_or(Err(StoreError::Unavailable("pending".into())))
        } else {
            Err(StoreError::Unavailable("down".into()))
        }
    });
    let mut a = app(storage, Some(uow));
    a.ports.templates = store.clone();
    let created = a.create_template(&caller(), upload()).await.unwrap();
    let err = a
        .update_template(
            &caller(),
            created.template.id,
            UpdateTemplate {
                file: Some(TemplateFile {
                    file_name: "b.tpl".into(),
                    bytes: Bytes::from_static(b"new content"),
                }),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, Code::ServiceUnavailable);
}

/// Every way the sandbox can refuse an upload has its stable code, and nothing is stored.
#[tokio::test]
async fn sandbox_refusals_map_to_codes_that_name_the_bound() {
    use reporter_ports::ports::{MockTemplateRunner, RenderError, RunnerError};
    let cases: Vec<(RunnerError, Code)> = vec![
        (RenderError::Syntax("x".into()).into(), Code::TemplateSyntax),
        (
            RenderError::Evaluation("x".into()).into(),
            Code::TemplateSyntax,
        ),
        (RenderError::Timeout.into(), Code::TemplateParseTimeout),
        (
            RenderError::MemoryLimit(1).into(),
            Code::TemplateParseMemory,
        ),
        (
            RenderError::NestingTooDeep(256).into(),
            Code::TemplateTooComplex,
        ),
        (RenderError::FuelExhausted.into(), Code::TemplateTooComplex),
        (RenderError::RecursionLimit.into(), Code::TemplateTooComplex),
        (
            RenderError::OutputTooLarge(1).into(),
            Code::TemplateTooComplex,
        ),
        (
            RenderError::Crashed("stack overflow".into()).into(),
            Code::TemplateTooComplex,
        ),
        (
            RunnerError::Unavailable("no child".into()),
            Code::SandboxUnavailable,
        ),
    ];
    for (error, code) in cases {
        let mut runner = MockTemplateRunner::new();
        let e = error.clone();
        runner
            .expect_analyze()
            .returning(move |_, _| Err(e.clone()));
        let mut storage = MockObjectStorage::new();
        storage.expect_put().never();
        let err = app_with_runner(storage, None, runner)
            .create_template(&caller(), upload())
            .await
            .unwrap_err();
        assert_eq!(err.code, code, "{error:?}");
        let status = crate::http::error::status_of(err.code.kind()).as_u16();
        let want = if code == Code::SandboxUnavailable {
            503
        } else {
            400
        };
        assert_eq!(status, want, "{error:?}");
    }
}

/// generate-code answers the sandbox's analysis of the code, and an internal error when it
/// disagrees with the builder's own analysis or the code does not parse (a builder bug).
#[tokio::test]
async fn generated_code_is_confirmed_by_the_sandbox_analysis() {
    use reporter_ports::ports::{MockTemplateRunner, RenderError, RunnerError, TemplateAnalysis};
    use reporter_ports::template::MappedFields;
    let blocks = || {
        Some(builder::specs_from_json(serde_json::json!([
            {"type": "text", "content": "hi"}
        ])))
    };
    let phantom: MappedFields =
        serde_json::from_value(serde_json::json!({"x": {"y": ["z"]}})).expect("mapped fields");
    let answers: Vec<(Result<TemplateAnalysis, RunnerError>, Option<Code>)> = vec![
        (Ok(TemplateAnalysis::default()), None),
        (
            Ok(TemplateAnalysis {
                mapped_fields: phantom,
            }),
            Some(Code::Internal),
        ),
        (
            Err(RenderError::Syntax("x".into()).into()),
            Some(Code::Internal),
        ),
        (
            Err(RenderError::Timeout.into()),
            Some(Code::TemplateParseTimeout),
        ),
    ];
    for (answer, want) in answers {
        let mut runner = MockTemplateRunner::new();
        let a = answer.clone();
        runner
            .expect_analyze()
            .times(1)
            .returning(move |_, _| a.clone());
        let app = app_with_runner(MockObjectStorage::new(), None, runner);
        let got = app
            .generate_template_code(&caller(), blocks(), Some("txt".into()), builder::Locale::En)
            .await;
        match (got, want) {
            (Ok(g), None) => assert!(g.mapped_fields.is_empty(), "{answer:?}"),
            (Err(e), Some(code)) => assert_eq!(e.code, code, "{answer:?}"),
            (other, _) => panic!("{answer:?} gave {other:?}"),
        }
    }
}

/// validate and generate-code run one check, the sandbox's analysis included: for every
/// answer of the sandbox, `valid` is true exactly when generate-code succeeds, a refusal is a
/// finding of validate about the template as a whole and generate-code's code for that bound
/// (the upload's), and what stops the check (the sandbox unavailable, a builder bug) is the
/// same error on both.
#[tokio::test]
async fn validate_and_generate_code_agree_on_every_sandbox_answer() {
    use reporter_ports::ports::{MockTemplateRunner, RenderError, RunnerError, TemplateAnalysis};
    let blocks = || {
        Some(builder::specs_from_json(serde_json::json!([
            {"type": "text", "content": "hi"}
        ])))
    };
    let answers: Vec<(Result<TemplateAnalysis, RunnerError>, Option<Code>)> = vec![
        (Ok(TemplateAnalysis::default()), None),
        (
            Err(RenderError::NestingTooDeep(256).into()),
            Some(Code::TemplateTooComplex),
        ),
        (
            Err(RenderError::FuelExhausted.into()),
            Some(Code::TemplateTooComplex),
        ),
        (
            Err(RenderError::RecursionLimit.into()),
            Some(Code::TemplateTooComplex),
        ),
        (
            Err(RenderError::OutputTooLarge(1).into()),
            Some(Code::TemplateTooComplex),
        ),
        (
            Err(RenderError::Crashed("x".into()).into()),
            Some(Code::TemplateTooComplex),
        ),
        (
            Err(RenderError::Timeout.into()),
            Some(Code::TemplateParseTimeout),
        ),
        (
            Err(RenderError::MemoryLimit(1).into()),
            Some(Code::TemplateParseMemory),
        ),
    ];
    let app_answering = |a: Result<TemplateAnalysis, RunnerError>| {
        let mut runner = MockTemplateRunner::new();
        runner
            .expect_analyze()
            .times(1)
            .returning(move |_, _| a.clone());
        app_with_runner(MockObjectStorage::new(), None, runner)
    };
    let en = builder::Locale::En;
    for (answer, want) in answers {
        let generated = app_answering(answer.clone())
            .generate_template_code(&caller(), blocks(), Some("txt".into()), en)
            .await;
        let validated = app_answering(answer.clone())
            .validate_template_blocks(&caller(), blocks(), Some("txt".into()), en)
            .await
            .expect("validate answers");
        assert_eq!(validated.valid, generated.is_ok(), "{answer:?}");
        match (generated, want) {
            (Ok(_), None) => assert!(validated.errors.is_empty(), "{answer:?}"),
            (Err(e), Some(code)) => {
                assert_eq!(e.code, code, "{answer:?}");
                let where_: Vec<_> = validated
                    .errors
                    .iter()
                    .map(|p| (p.block_id.as_str(), p.field.as_str()))
                    .collect();
                assert_eq!(where_, [("", "blocks")], "{answer:?}");
            }
            (other, _) => panic!("{answer:?} gave {other:?}"),
        }
    }
    // What stops the check is the same error on both.
    let stops: Vec<Result<TemplateAnalysis, RunnerError>> = vec![
        Err(RunnerError::Unavailable("x".into())),
        Err(RenderError::Syntax("x".into()).into()),
    ];
    for answer in stops {
        let generated = app_answering(answer.clone())
            .generate_template_code(&caller(), blocks(), Some("txt".into()), en)
            .await
            .map(|_| ());
        let validated = app_answering(answer.clone())
            .validate_template_blocks(&caller(), blocks(), Some("txt".into()), en)
            .await
            .map(|_| ());
        let codes = (generated.map_err(|e| e.code), validated.map_err(|e| e.code));
        assert!(
            matches!(codes, (Err(a), Err(b)) if a == b),
            "{answer:?} gave {codes:?}"
        );
    }
}
