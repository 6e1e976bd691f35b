//! `/readyz`: one probe per dependency this process uses.
use super::probe;
use super::sandbox_check::{pdf_check, sandbox_check};
use crate::app::DataSourceCatalog;
use crate::http::Readiness;
use crate::http::ops::CheckProbe;
use reporter_adapter_mongo::DeploymentDatabase;
use reporter_adapter_pdf::NativePdfRenderer;
use reporter_adapter_rabbitmq::RabbitJobQueue;
use reporter_adapter_sandbox::ProcessPool;
use reporter_ports::ports::{ObjectStorage, Outbox, PdfRenderer};
use std::sync::Arc;

/// What the probes look at.
pub(super) struct Dependencies<'a> {
    pub deployment_mode: &'a str,
    pub outbox: Arc<dyn Outbox>,
    pub database: Option<DeploymentDatabase>,
    pub storage: Arc<dyn ObjectStorage>,
    /// The PDF renderer, when this process runs a worker.
    pub pdf: Option<Arc<dyn PdfRenderer>>,
    /// The same renderer when it is the native one (its children's confinement).
    pub native_pdf: Option<Arc<NativePdfRenderer>>,
    pub rabbit: Option<RabbitJobQueue>,
    pub events: Option<CheckProbe>,
    /// The template sandbox pools this process uses (their children's confinement).
    pub sandbox: Vec<ProcessPool>,
    pub catalog: &'a DataSourceCatalog,
    /// The clock the store probe reads the outbox at.
    pub clock: Arc<dyn reporter_ports::Clock>,
    /// The rate limiter's check, when rate limiting is on in this process.
    pub rate_limiter: Option<CheckProbe>,
}

/// The readiness of `d`: the store, MongoDB, object storage, the PDF renderer, RabbitMQ,
/// event publication, the template sandbox's confinement, the rate limiter and every data source; "not
/// applicable" for what this process does not use.
pub(super) fn readiness(d: Dependencies<'_>) -> Readiness {
    let (outbox, clock) = (d.outbox, d.clock);
    let mut r = Readiness::default()
        .deployment_mode(d.deployment_mode)
        .with(
            "store",
            probe(move || {
                let (outbox, now) = (outbox.clone(), clock.now());
                async move {
                    let stats = outbox.stats(now).await;
                    stats.map(|_| ()).map_err(|e| e.to_string())
                }
            }),
        );
    if let Some(db) = d.database {
        r = r.with(
            "mongodb",
            probe(move || {
                let db = db.clone();
                async move { db.ping().await }
            }),
        );
    }
    let s = d.storage;
    r = r.with(
        "objectStorage",
        probe(move || {
            let s = s.clone();
            async move { s.check().await.map_err(|e| e.to_string()) }
        }),
    );
    r = match (d.pdf, d.native_pdf) {
        (Some(_), Some(native)) => r.with_check("pdfRenderer", pdf_check(native)),
        (Some(p), None) => r.with(
            "pdfRenderer",
            probe(move || {
                let p = p.clone();
                async move { p.check().await.map_err(|e| e.to_string()) }
            }),
        ),
        (None, _) => r.not_applicable("pdfRenderer"),
    };
    r = match d.rabbit {
        Some(q) => r.with(
            "rabbitmq",
            probe(move || {
                let q = q.clone();
                async move { q.check().await.map_err(|e| e.to_string()) }
            }),
        ),
        None => r.not_applicable("rabbitmq"),
    };
    r = match d.events {
        Some(check) => r.with_check("events", check),
        None => r.not_applicable("events"),
    };
    r = r.with_check("templateSandbox", sandbox_check(d.sandbox));
    r = match d.rate_limiter {
        Some(check) => r.with_check("rateLimiter", check),
        None => r.not_applicable("rateLimiter"),
    };
    data_source_probes(r, d.catalog)
}

/// One probe per configured data source (its schema read).
fn data_source_probes(mut r: Readiness, catalog: &DataSourceCatalog) -> Readiness {
    for d in catalog.descriptors() {
        let source = catalog.get(d.id.as_str());
        r = r.with(
            format!("dataSource:{}", d.id),
            probe(move || {
                let source = source.clone();
                async move {
                    match source {
                        Some(s) => s.schema().await.map(|_| ()).map_err(|e| e.to_string()),
                        None => Err("not configured".into()),
                    }
                }
            }),
        );
    }
    r
}
