//! The worker's per-tenant bound end to end through the use cases, the in-memory job queue and
//! a render that waits until the test lets it go (no timing: every wait is on an event).
use super::*;
use crate::app::{
    Caller, CreateReport, CreateTemplate, DataSourceCatalog, Emitter, KeyLayout, Ports, Settings,
    TemplateFile,
};
use async_trait::async_trait;
use bytes::Bytes;
use reporter_adapter_memory::{
    MemoryJobConsumer, MemoryJobQueue, MemoryObjectStorage, MemoryRetryPolicy, MemoryStore,
};
use reporter_ports::ReportId;
use reporter_ports::clock::SystemClock;
use reporter_ports::ports::{MockPdfRenderer, RenderJob, RunnerError, TemplateAnalysis};
use reporter_ports::report::ReportStatus;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Renders a template whose source starts with `hold` only once `release` turns true (each
/// such render counted in `held` when it starts); any other at once.
struct HeldRunner {
    held: Arc<AtomicUsize>,
    started: tokio::sync::mpsc::UnboundedSender<()>,
    release: watch::Receiver<bool>,
}

#[async_trait]
impl TemplateRunner for HeldRunner {
    async fn analyze(
        &self,
        _source: Arc<str>,
        _limits: RenderLimits,
    ) -> Result<TemplateAnalysis, RunnerError> {
        Ok(TemplateAnalysis::default())
    }

    async fn render(&self, job: RenderJob) -> Result<String, RunnerError> {
        if job.source.starts_with("hold") {
            self.held.fetch_add(1, Ordering::SeqCst);
            let _ = self.started.send(());
            let mut release = self.release.clone();
            let _ = release.wait_for(|r| *r).await;
        }
        Ok(job.source.to_string())
    }
}

fn caller(tenant: &str) -> Caller {
    Caller {
        tenant: TenantId::parse(tenant).unwrap(),
        subject: "test".into(),
    }
}

async fn template(app: &App, caller: &Caller, source: &'static str) -> String {
    let cmd = CreateTemplate {
        file: TemplateFile {
            file_name: "t.tpl".into(),
            bytes: Bytes::from_static(source.as_bytes()),
        },
        output_format: "txt".into(),
        description: None,
        idempotency: None,
    };
    app.create_template(caller, cmd)
        .await
        .unwrap()
        .template
        .id
        .to_string()
}

async fn report(app: &App, caller: &Caller, template: &str) -> ReportId {
    let cmd = CreateReport {
        template_id: Some(template.to_owned()),
        filters: Some(Default::default()),
        request_id: None,
        idempotency: None,
    };
    app.create_report(caller, cmd).await.unwrap().id
}

/// Waits until report `id` of `caller` is terminal; its status. Polls without a deadline of
/// its own: the test's timeout bounds it.
async fn terminal(app: &App, caller: &Caller, id: ReportId) -> ReportStatus {
    loop {
        let r = app.get_report(caller, id).await.unwrap();
        if r.status.is_terminal() {
            return r.status;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Finding 7 of issue 30: tenant A's renders hold on (they never end until the test lets
/// them); with two slots and a bound of one job per tenant, only one of A's renders starts
/// and tenant B's report, queued behind A's three, is generated while A's render still runs.
#[tokio::test]
async fn another_tenants_report_does_not_wait_for_a_tenant_at_its_bound() {
    let (queue, receiver) = MemoryJobQueue::new(64);
    let held = Arc::new(AtomicUsize::new(0));
    let (started_tx, mut started) = tokio::sync::mpsc::unbounded_channel();
    let (release, release_rx) = watch::channel(false);
    let runner: Arc<dyn TemplateRunner> = Arc::new(HeldRunner {
        held: held.clone(),
        started: started_tx,
        release: release_rx,
    });
    let store = Arc::new(MemoryStore::new());
    let registry = prometheus::Registry::new();
    let ports = Ports {
        templates: store.clone(),
        deadlines: store.clone(),
        reports: store.clone(),
        uow: store.clone(),
        outbox: store.clone(),
        storage: Arc::new(MemoryObjectStorage::new()),
        idempotency: store.clone(),
        jobs: Arc::new(queue),
        runner: runner.clone(),
        clock: Arc::new(SystemClock),
        deliveries: None,
    };
    let settings = Settings {
        max_page_limit: 100,
        layout: KeyLayout {
            tenant_prefix: true,
        },
    };
    let app = Arc::new(App::new(
        ports,
        DataSourceCatalog::default(),
        Emitter::disabled(),
        settings,
    ));
    let worker = Worker {
        app: app.clone(),
        consumer: Arc::new(MemoryJobConsumer::new(
            receiver,
            MemoryRetryPolicy::default(),
        )),
        runner,
        pdf: Arc::new(MockPdfRenderer::new()),
        settings: WorkerSettings {
            concurrency: 2,
            max_jobs_per_tenant: 1,
            requeue_after: None,
            storage_sweep: None,
            ..WorkerSettings::default()
        },
        metrics: WorkerMetrics::register(&registry).unwrap(),
    };
    let (a, b) = (caller("tenant-a"), caller("tenant-b"));
    let (heavy, light) = (
        template(&app, &a, "hold: CPU-heavy").await,
        template(&app, &b, "light").await,
    );
    let mut a_reports = Vec::new();
    for _ in 0..3 {
        a_reports.push(report(&app, &a, &heavy).await);
    }
    let b_report = report(&app, &b, &light).await;
    let (stop, stop_rx) = watch::channel(false);
    let running = tokio::spawn(worker.run(stop_rx));

    let check = async {
        started.recv().await.unwrap();
        assert_eq!(
            terminal(&app, &b, b_report).await,
            ReportStatus::Finished,
            "B's report was generated while A's render held its slot"
        );
        assert_eq!(
            held.load(Ordering::SeqCst),
            1,
            "A's other jobs wait for A's first, although a slot is free"
        );
        release.send(true).unwrap();
        for id in &a_reports {
            assert_eq!(terminal(&app, &a, *id).await, ReportStatus::Finished);
        }
        assert_eq!(held.load(Ordering::SeqCst), 3);
    };
    tokio::time::timeout(Duration::from_secs(60), check)
        .await
        .expect("B's report waited for A's renders");
    stop.send(true).unwrap();
    running.await.unwrap();
    let held_back = registry
        .gather()
        .into_iter()
        .find(|f| f.name() == "reporter_jobs_held_back_total")
        .map(|f| f.get_metric()[0].get_counter().get_value());
    assert_eq!(
        held_back,
        Some(2.0),
        "A's second and third jobs were held back"
    );
}
