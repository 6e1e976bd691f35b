//! Use-case unit tests with mocked ports (mockall): the compensation paths that an in-memory
//! adapter cannot be made to fail on demand.
use super::*;
use bytes::Bytes;
use reporter_adapter_memory::{MemoryIdempotencyStore, MemoryStore};
use reporter_ports::StoreError;
use reporter_ports::clock::SystemClock;
use reporter_ports::ports::{MockObjectStorage, MockUnitOfWorkPort, StoredObject};

fn app(storage: MockObjectStorage, uow: Option<MockUnitOfWorkPort>) -> App {
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
        idempotency: Arc::new(MemoryIdempotencyStore::new()),
        jobs: Arc::new(reporter_adapter_memory::MemoryJobQueue::new(16).0),
        engine: Arc::new(reporter_adapter_minijinja::MiniJinjaEngine::new()),
        clock: Arc::new(SystemClock),
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
